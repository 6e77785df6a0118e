"""The ``pyg-routing`` commands, each a parser and a run function over the library.

* :mod:`.train`: ``train`` (and what the training and test commands share);
* :mod:`.compare`: ``compare``, the paper's controlled comparison (Tab. 2);
* :mod:`.evaluate`: ``evaluate``, every backbone's test search;
* :mod:`.search`: ``search``, NDS's front end, and the job helpers both share;
* :mod:`.probe`: ``probe``, the paper's probes;
* :mod:`.reproduce`: ``reproduce``, every table of the paper as resumable, shardable cells
  of the commands above;
* :mod:`.import_checkpoint`: ``import-checkpoint``, the original NDS and N2S checkpoints
  as ours;
* :mod:`.parser`: the command line's argparse parser class (one-line errors, no
  abbreviations, given options recorded), shared by the CLI and ``reproduce``.

:mod:`pyg_routing.cli` dispatches to them. They sit above :mod:`pyg_routing.training`
and import nothing the library itself needs.
"""
