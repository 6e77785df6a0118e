Route #1: 1 5 2
Route #2: 4 3
Cost 51
