"""The Spearman probe on open routes: the half-period IPE phase against the closed
formula (why the library halves the period on open routes)."""

from pyg_routing.data import RoutingData, make_generator
from pyg_routing.data.solvers.constructive import nearest_neighbor, tours_to_routes
from pyg_routing.probes.spearman import open_route_variants, spearman_probe


def _open_solutions(n: int = 20, b: int = 30):
    inst = make_generator("cvrp", n, seed=0, open_routes=True).sample(b)
    routes = tours_to_routes(nearest_neighbor(inst))
    return [RoutingData.from_routes(inst[i], routes[i]) for i in range(b)]


def test_half_period_follows_the_open_route_and_the_closed_phase_does_not():
    ours = spearman_probe(_open_solutions(), open_route_variants(16), num_pairs=20000, seed=0)
    half, closed = ours["IPE (open: half period)"], ours["IPE (open: closed phase)"]
    # D1 (distance along the route) is the desideratum of a path; the closed phase gives
    # the last customer the depot's code and loses it, and wins only the cyclic D2
    assert half["D1"] > closed["D1"] + 0.05
    assert closed["D2"] > half["D2"]


def test_probe_command_takes_open_routes_and_refuses_them_for_tsp(tmp_path, capsys):
    from pyg_routing.cli import main

    code = main(["probe", "spearman", "--problem", "cvrp", "--num-customers", "8",
                 "--instances", "4", "--data.open-routes", "true", "--solver",
                 "nearest_neighbor",
                 "--encodings", "builtin", "--pairs", "500", "--root", str(tmp_path),
                 "--no-progress", "--json"])
    out = capsys.readouterr()
    assert code == 0 and "IPE (open: half period)" in out.out
    code = main(["probe", "spearman", "--problem", "tsp", "--num-customers", "8",
                 "--instances", "4", "--data.open-routes", "true", "--root", str(tmp_path)])
    assert code == 2 and "has no generator option 'open_routes'" in capsys.readouterr().err


def test_the_probe_graph_encodings_read_the_open_route_graph():
    import torch
    from torch_geometric.data import Batch

    from pyg_routing.functional.index_pe import dense_route_inputs
    from pyg_routing.functional.pair_pe import hop_distance
    from pyg_routing.probes.representations import probe_representations

    b = Batch.from_data_list(_open_solutions(n=12, b=3))
    reps = probe_representations(dim=8)
    route_pos, route_id, mask = dense_route_inputs(b)
    hops = hop_distance(route_pos, route_id, mask, open_routes=torch.ones(3, dtype=bool))
    spd = reps["SPD"](b)
    assert torch.equal(spd, torch.where(hops < 0, hops.max() + 1, hops).double())
    # the last customer of an open route is `m` hops from the depot, not one
    assert not torch.equal(spd, hop_distance(route_pos, route_id, mask).double())
    for name in ("Laplacian PE", "RWSE"):                 # no refusal on open routes
        assert torch.isfinite(reps[name](b)).all()
    assert spearman_probe(_open_solutions(n=12, b=6), reps, num_pairs=2000, seed=0)["SPD"]
