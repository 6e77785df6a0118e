from pyg_routing.probes.representations import probe_representations
from pyg_routing.probes.spearman import spearman_probe
from tests.helpers import fixed_route_batch


def test_probe_representations_cover_the_paper_table():
    reps = probe_representations(dim=16)
    assert len(reps) == 13   # the 14 names without NoPE
    result = spearman_probe(fixed_route_batch(num=4), reps, num_pairs=2000, seed=0)
    for name, row in result.items():
        for key in ("D1", "D2", "D3"):
            assert row[key] is None or -1.0 <= row[key] <= 1.0, (name, key)
    # Distance-aware encodings track the travel-distance gap within routes.
    assert result["SPD"]["D1"] > 0.3
    assert result["XPE"]["D3"] > 0
