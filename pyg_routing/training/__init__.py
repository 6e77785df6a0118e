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

Every name below is imported from its submodule on first use
(:mod:`pyg_routing._lazy`).
"""

from pyg_routing._lazy import lazy_exports

#: public name -> the submodule that defines it
_EXPORTS = {
    "BackboneConfig": "config",
    "DACTConfig": "dact_config",
    "DACTLightning": "dact",
    "EpochBatchSampler": "datamodule",
    "GeneratedBatches": "datamodule",
    "ImprovementLightning": "base",
    "load_policy": "backbones",
    "N2SConfig": "n2s_config",
    "N2SLightning": "n2s",
    "NDSConfig": "nds_config",
    "NDSLightning": "nds",
    "PPOLightning": "ppo",
    "PPOTrain": "ppo_config",
    "RoutingDataModule": "datamodule",
    "ValidationCurve": "callbacks",
    "winner_takes_all_loss": "nds",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
