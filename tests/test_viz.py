import io
import runpy
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import CVRPGenerator, RoutingData
from pyg_routing.data.solvers import solve_instances
from pyg_routing.functional.route_pe import ipexpe
from pyg_routing.viz import node_order, plot_encoding, plot_pe_distance, plot_solution

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def data():
    inst = CVRPGenerator(20, seed=0).sample(1).to_data_list()
    return solve_instances(inst, solver="nearest_neighbor", progress=False)[0]


def _png_bytes(ax) -> int:
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png")
    return buf.getbuffer().nbytes


def test_plot_solution_headless(data):
    ax = plot_solution(data, arrows=True, labels=True)
    assert len(ax.texts) >= data.num_nodes            # arrows and labels are annotations
    assert _png_bytes(ax) > 5000
    ax = plot_solution(data)
    assert len(ax.lines) == len(data.routes())
    inst = RoutingData.from_instance("cvrp", torch.rand(5, 2), demand=[0, 1, 1, 1, 1],
                                     capacity=4)
    assert _png_bytes(plot_solution(inst)) > 1000      # no solution: nodes only


def test_plot_encoding_and_distance_heatmap(data):
    pe = ipexpe(data.cum_dist, data.route_length, data.depot_angle, dim=8,
                route_pos=data.route_pos, depot_mask=data.depot_mask)
    ax = plot_encoding(data, pe, channel=1)
    assert len(ax.figure.axes) == 2 and _png_bytes(ax) > 5000      # with a colorbar
    ax = plot_pe_distance(data, pe)
    image = ax.images[0].get_array()
    assert image.shape == (20, 20) and float(image.max()) > 0
    assert abs(image.diagonal()).max() == 0
    order = node_order(data)
    assert sorted(order.tolist()) == list(range(1, 21))
    dense = torch.cdist(pe, pe)
    same = plot_pe_distance(data, dense).images[0].get_array()      # [N, N] pairwise input
    assert abs(same - image).max() < 1e-5


def test_plots_reject_a_multi_instance_batch(data):
    with pytest.raises(ValueError, match="one instance"):
        plot_solution(Batch.from_data_list([data, data]))


def test_plot_encodings_example_writes_pngs(tmp_path):
    module = runpy.run_path(str(EXAMPLES / "plot_encodings.py"))
    paths = module["main"](str(tmp_path), solver="nearest_neighbor", num_customers=20)
    assert len(paths) == 6
    for p in paths:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and Path(p).stat().st_size > 5000
