"""Lightning training of improvement policies (n-step PPO, DACT)."""

from pyg_routing.training.callbacks import ValidationCurve
from pyg_routing.training.datamodule import EpochBatchSampler, GeneratedBatches, RoutingDataModule
from pyg_routing.training.ppo import DACTLightning, load_policy

__all__ = ["DACTLightning", "EpochBatchSampler", "GeneratedBatches", "RoutingDataModule",
           "ValidationCurve", "load_policy"]
