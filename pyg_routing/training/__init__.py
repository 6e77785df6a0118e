"""Lightning training of improvement policies on shared seams.

* :mod:`.config`, :mod:`.sections`: a backbone's recipe as a dataclass of sections,
  which the command line, YAML recipes, checkpoints and the ``LightningModule`` share;
* :mod:`.base`: :class:`ImprovementLightning`, seeding, resume checks and
  validation by search, shared by every learning rule;
* :mod:`.ppo`: backbone-neutral n-step PPO (:class:`PPOLightning`);
* :mod:`.dact`: DACT as one configuration of it (:class:`DACTLightning`);
* :mod:`.n2s`: N2S as another (:class:`N2SLightning`);
* :mod:`.nds`: NDS's removal policy trained by winner-takes-all policy gradient in the
  destroy-and-repair search (:class:`NDSLightning`);
* :mod:`.backbones`: the registry behind ``--backbone`` and :func:`load_policy`.
"""

from pyg_routing.training.backbones import load_policy
from pyg_routing.training.base import ImprovementLightning
from pyg_routing.training.callbacks import ValidationCurve
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.dact import DACTConfig, DACTLightning
from pyg_routing.training.datamodule import EpochBatchSampler, GeneratedBatches, RoutingDataModule
from pyg_routing.training.n2s import N2SConfig, N2SLightning
from pyg_routing.training.nds import NDSConfig, NDSLightning, winner_takes_all_loss
from pyg_routing.training.ppo import PPOLightning, PPOTrain

__all__ = ["BackboneConfig", "DACTConfig", "DACTLightning", "EpochBatchSampler",
           "GeneratedBatches", "ImprovementLightning", "N2SConfig", "N2SLightning",
           "NDSConfig", "NDSLightning", "PPOLightning", "PPOTrain", "RoutingDataModule",
           "ValidationCurve", "load_policy", "winner_takes_all_loss"]
