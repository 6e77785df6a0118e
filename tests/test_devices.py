"""The same code runs on every available device and gives the CPU's answer."""

import pytest
import torch
from torch_geometric.data import Batch

from pyg_routing.data import RoutingData, dense_route_quantities, make_generator

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem", ["cvrp", "vrptw", "pcvrp", "pdtsp", "tsp"])
def test_generators_sample_on_the_device(device, problem):
    inst = make_generator(problem, 10, seed=0, device=device).sample(4)
    assert inst.pos.device.type == device
    assert inst[0].pos.device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_route_quantities_and_cost_on_the_device(device):
    inst = make_generator("vrptw", 12, seed=1, capacity=1000).sample(3)
    tours = torch.tensor([[0] + sum(([v, 0] for v in range(1, 13)), [])] * 3)
    ref = dense_route_quantities(inst.pos, tours)
    got = dense_route_quantities(inst.pos.to(device), tours.to(device))
    for a, b in zip(ref, got):
        assert b.device.type == device
        torch.testing.assert_close(b.cpu(), a)
    datas = [RoutingData.from_routes(inst[i], [[v] for v in range(1, 13)]) for i in range(3)]
    batch = Batch.from_data_list(datas)
    moved = batch.clone().to(device)           # PyG's ``to`` moves the object itself
    torch.testing.assert_close(moved.cost().cpu(), batch.cost())
    assert moved.is_feasible().all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pe", ["ipexpe", "alibi", "rope", "lap"])
def test_encoder_runs_on_the_device(device, pe):
    from pyg_routing.models import GPSEncoder

    inst = make_generator("cvrp", 8, seed=0).sample(2)
    batch = Batch.from_data_list([RoutingData.from_routes(inst[i], [[1, 2, 3], [4, 5, 6, 7, 8]])
                                  for i in range(2)]).to(device)
    enc = GPSEncoder(2, 16, 2, 1, pe=pe, pe_dim=8).to(device)
    out = enc(batch)
    assert out.device.type == device and torch.isfinite(out).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("backbone", ["n2s", "dact"])
def test_pdtsp_search_on_the_device_matches_the_cpu(device, backbone):
    """Greedy search from the same given tours: the device's moves are the CPU's."""
    from pyg_routing.envs import PairReinsertionEnv, TwoOptEnv
    from pyg_routing.models import DACTPolicy, N2SPolicy
    from pyg_routing.search import improve

    inst = make_generator("pdtsp", 10, seed=3).sample(3)
    torch.manual_seed(0)
    if backbone == "n2s":
        policy, env = N2SPolicy.build("pdtsp", pe="ipexpe", dim=16, heads=2, num_layers=1), \
            PairReinsertionEnv()
    else:
        policy, env = DACTPolicy.build("pdtsp", pe="ipexpe", dim=16, heads=2, num_layers=1), \
            TwoOptEnv()
    runs = []
    for dev in ("cpu", device):
        res = improve(inst.to(dev), policy.to(dev), steps=6, init="nearest_neighbor",
                      greedy=True, env=env)
        assert res.cost.device.type == dev
        runs.append(res)
    assert runs[0].routes == runs[1].routes
    torch.testing.assert_close(runs[1].cost.cpu(), runs[0].cost, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["32-true", "16-mixed", "bf16-mixed"])
def test_n2s_and_dact_train_on_cuda_with_mixed_precision(tmp_path, precision):
    import math

    import lightning as L

    from pyg_routing.training import DACTLightning, N2SLightning, RoutingDataModule
    from tests.helpers import TINY, TINY_DATA

    for cls in (N2SLightning, DACTLightning):
        torch.manual_seed(0)
        model = cls(problem="pdtsp", pe="ipexpe", **TINY)
        data = RoutingDataModule("pdtsp", TINY["num_customers"], batch_size=TINY["batch_size"],
                                 **TINY_DATA)
        trainer = L.Trainer(max_epochs=1, accelerator="gpu", devices=1, precision=precision,
                            logger=False, enable_progress_bar=False, enable_model_summary=False,
                            enable_checkpointing=False, num_sanity_val_steps=0,
                            default_root_dir=tmp_path)
        trainer.fit(model, datamodule=data)
        for key in ("train/reward", "val/cost"):
            assert math.isfinite(float(trainer.callback_metrics[key])), (cls.__name__, key)


@pytest.mark.parametrize("backbone", ["n2s", "dact", "nds"])
def test_every_backbone_trains_under_cpu_bf16_mixed(tmp_path, backbone):
    """Lightning offers ``bf16-mixed`` on the CPU: every backbone trains under it, and
    the observations stay full precision (NDS's policy checks its instances'
    distances against float32 coordinates and refused bf16-rounded ones)."""
    import math

    import lightning as L

    from pyg_routing.training import DACTLightning, N2SLightning, NDSLightning, RoutingDataModule
    from tests.helpers import NDS_TINY, TINY

    torch.manual_seed(0)
    if backbone == "nds":
        model = NDSLightning(problem="cvrp", pe="ipexpe", **NDS_TINY)
        data = RoutingDataModule("cvrp", NDS_TINY["num_customers"],
                                 batch_size=NDS_TINY["batch_size"], batches_per_epoch=1,
                                 val_size=3, val_batch_size=3, seed=0, preset="paper")
        keys = ("train/loss", "val/cost")
    else:
        cls = N2SLightning if backbone == "n2s" else DACTLightning
        model = cls(problem="pdtsp", pe="ipexpe", **TINY)
        data = RoutingDataModule("pdtsp", TINY["num_customers"], batch_size=TINY["batch_size"],
                                 batches_per_epoch=1, val_size=4)
        keys = ("train/reward", "val/cost")
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", precision="bf16-mixed", logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=False, num_sanity_val_steps=0,
                        default_root_dir=tmp_path)
    trainer.fit(model, datamodule=data)
    for key in keys:
        assert math.isfinite(float(trainer.callback_metrics[key])), key
