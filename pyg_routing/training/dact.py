"""DACT as one configuration of the shared n-step PPO: the 2-opt environment, the
:class:`~pyg_routing.models.DACTPolicy` and DACT's published settings.

The algorithm is DACT's (Ma et al., "Learning to Iteratively Solve Routing Problems
with Dual-Aspect Collaborative Transformer", NeurIPS 2021; yining043/VRP-DACT); the
paper's App. I keeps the published configuration and replaces only the positional
encoding. From VRP-DACT (``options.py``, ``agent/ppo.py``, README):

* the network: its own (``encoder="native"``: dual-aspect encoder, MHC decoder,
  one-layer attention critic; width 64, 4 heads, 3 layers), its node features (the
  2-opt environment's, :mod:`pyg_routing.envs.two_opt.features`);
* PPO: ``ppo_epochs=3``, ``clip=0.1``, ``gamma=0.999``, ``lr_actor=1e-4``,
  ``lr_critic=3e-5``, ``lr_decay=0.985`` per epoch, gradient norms clipped per
  parameter group (``grad_clip="per_group"``);
* the curriculum: its normalised sigmoid (``curriculum="sigmoid"``, ``xi_cl`` 2 on TSP
  and 1 otherwise, its README's training commands), the rollout starting from the best
  warm-up solution (``curriculum_start="best"``, ``--best_cl``);
* initial solutions: first fit in index order on CVRP (``init="first_fit"``, its
  ``'random'`` rule, which is deterministic), a random tour on TSP;
* validation: sampled, over its ``T_max = 1500`` steps, on a fixed set.

Not yet VRP-DACT's (the recipes' business): ``t_train=200`` / ``n_step=4`` (its CVRP
command: 250 / 5), ``max_grad_norm=0.2`` (its CVRP default: 0.04), ``batch_size=512``
(its 600). Kept on purpose: our environment forbids no-op moves, which VRP-DACT allows.
Deviations: one Adam with two parameter groups (DACT: the same, one optimizer).
"""

from __future__ import annotations

from pyg_routing.envs import TwoOptEnv
from pyg_routing.models import DACTPolicy
from pyg_routing.training.dact_config import DACTConfig
from pyg_routing.training.ppo import PPOLightning


class DACTLightning(PPOLightning):
    """DACT policy + n-step PPO. Keyword arguments: the fields of :class:`DACTConfig`
    (its sections as mappings, or flat option names: see
    :meth:`~pyg_routing.training.config.BackboneConfig.create`)."""

    config_class = DACTConfig

    @classmethod
    def make_env(cls, config: DACTConfig | None = None) -> TwoOptEnv:
        return TwoOptEnv(depot_rate=None if config is None else config.model.depot_rate)

    def build_policy(self) -> DACTPolicy:
        c = self.config
        m = c.model
        gps = {"local_mp": m.local_mp, "pe_init": m.pe_init} if m.encoder == "gps" else {}
        return DACTPolicy.build(c.problem, pe=c.encoding_spec, dim=m.dim, heads=m.heads,
                                num_layers=m.layers, encoder=m.encoder, compiled=m.compiled,
                                **gps)
