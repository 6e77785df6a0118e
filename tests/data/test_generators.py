import pytest
import torch

from pyg_routing.data import RoutingData, capacity_for
from pyg_routing.data.generators import (
    CVRPGenerator,
    PCVRPGenerator,
    PDTSPGenerator,
    TSPGenerator,
    VRPTWGenerator,
    make_generator,
)
from pyg_routing.errors import InvalidInstanceError


@pytest.mark.parametrize("n, cap", [(10, 30), (20, 30), (21, 34), (50, 40), (100, 50),
                                    (500, 130), (1000, 230), (2000, 260)])
def test_capacity_formula_of_the_paper(n, cap):
    assert capacity_for(n) == cap


@pytest.mark.parametrize("problem", ["tsp", "cvrp", "vrptw", "pcvrp", "pdtsp"])
def test_seeded_and_reproducible(problem):
    a = make_generator(problem, 20, seed=7).sample(4)
    b = make_generator(problem, 20, seed=7).sample(4)
    c = make_generator(problem, 20, seed=8).sample(4)
    assert torch.equal(a.pos, b.pos)
    assert not torch.equal(a.pos, c.pos)
    assert a.pos.min() >= 0 and a.pos.max() <= 1
    for i in range(4):
        assert isinstance(a[i], RoutingData)


def test_sizes_and_depot_conventions():
    assert TSPGenerator(20, seed=0).sample(3).pos.shape == (3, 20, 2)
    cv = CVRPGenerator(100, seed=0).sample(5)
    assert cv.pos.shape == (5, 101, 2)
    assert (cv.demand[:, 0] == 0).all()
    assert cv.demand[:, 1:].min() >= 1 and cv.demand[:, 1:].max() <= 9
    assert set(cv.demand[:, 1:].unique().tolist()) == set(range(1, 10))
    assert (cv.capacity == 50).all()
    pd = PDTSPGenerator(50, seed=0).sample(2)
    assert pd.pos.shape == (2, 51, 2)
    assert pd.pickup_delivery_index.tolist() == [list(range(1, 26)), list(range(26, 51))]
    with pytest.raises(InvalidInstanceError, match="even number"):
        PDTSPGenerator(7)


def test_vrptw_windows_follow_the_paper_and_admit_a_schedule():
    inst = VRPTWGenerator(50, seed=1, capacity=1000).sample(16)
    st, tw = inst.service_time[:, 1:], inst.time_window[:, 1:]
    assert st.min() >= 0.15 and st.max() <= 0.18
    width = tw[..., 1] - tw[..., 0]
    assert width.min() >= 0.18 - 1e-6 and width.max() <= 0.20 + 1e-6
    for i in range(0, 16, 5):
        RoutingData.from_routes(inst[i], [[v] for v in range(1, 51)]).check()


def test_pcvrp_kappa_makes_about_half_the_customers_attractive():
    from pyg_routing.data.solvers.constructive import nearest_neighbor

    gen = PCVRPGenerator(50, seed=123)
    inst = gen.sample(64)                 # a fresh sample, not the calibration one
    visited = (nearest_neighbor(inst) > 0).float().sum().item() / (64 * 50)
    assert 0.4 < visited < 0.6
    assert gen.kappa == PCVRPGenerator(50, seed=5).kappa   # independent of the seed
    assert PCVRPGenerator(50, kappa=2.0).kappa == 2.0
    ratio = inst.prize[:, 1:] / (gen.kappa * inst.demand[:, 1:])
    assert ratio.min() >= 0.8 - 1e-6 and ratio.max() <= 1.2 + 1e-6
    assert (inst.prize[:, 0] == 0).all()


def test_clustered_layout_is_more_concentrated_than_uniform():
    def mean_nn_dist(pos):
        d = torch.cdist(pos, pos) + torch.eye(pos.size(1)) * 10
        return d.min(-1).values.mean().item()

    uni = CVRPGenerator(100, seed=0).sample(32).pos[:, 1:]
    clu = CVRPGenerator(100, seed=0, distribution="clustered").sample(32).pos[:, 1:]
    assert clu.min() >= 0 and clu.max() <= 1
    assert mean_nn_dist(clu) < 0.8 * mean_nn_dist(uni)


def test_bad_generator_arguments():
    with pytest.raises(InvalidInstanceError, match="unknown distribution"):
        CVRPGenerator(10, distribution="gaussian")
    with pytest.raises(InvalidInstanceError, match="num_customers must be >= 1"):
        CVRPGenerator(0)
    with pytest.raises(InvalidInstanceError, match="no generator for 'pdptw'"):
        make_generator("pdptw", 10)
