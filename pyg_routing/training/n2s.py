"""N2S as one configuration of the shared n-step PPO: the pair removal-reinsertion
environment, the :class:`~pyg_routing.models.N2SPolicy` and N2S's published settings.

The algorithm is N2S's (Ma et al., "Efficient Neural Neighborhood Search for Pickup
and Delivery Problems", IJCAI 2022, repository yining043/PDP-N2S); the paper's App.
"HA-N2S configuration" keeps it unchanged and replaces only the positional encoding.
Defaults, from N2S's options and README: model width 128, 4 heads, 3 layers, FF 128,
node codes of width 128 (N2S's CPE); actor lr ``8e-5``, critic lr ``2e-5``, decay
``0.985`` per epoch, ``gamma=0.999``, ``n_step=5``, ``K=3``, ``clip=0.1``,
``t_train=250``, batch 600, random initial tours, gradient norms clipped per parameter
group (``grad_clip="per_group"``, N2S's ``utils.clip_grad_norms``), and per problem size the
curriculum ``warm_up`` (20 customers: 2, 50: 1.5, 100: 1) and ``max_grad_norm``
(0.05, 0.15, 0.3; sizes in between take the next larger size's value).

Deviations (docs/design.md): the removal-history window is ``2P`` in training AND search
(N2S: ``2P`` / ``P``, see :mod:`pyg_routing.envs.pair_reinsertion.env`); the test-time
copies use the 8 distinct symmetries, each with its own random start (N2S: random
symmetries, repeats possible).
"""

from __future__ import annotations

from dataclasses import replace

from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.models import N2SPolicy
from pyg_routing.search import StepSearch
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.n2s_config import N2SConfig
from pyg_routing.training.ppo import PPOLightning


class N2SLightning(PPOLightning):
    """N2S policy + n-step PPO. Keyword arguments: the fields of :class:`N2SConfig`."""

    config_class = N2SConfig

    @classmethod
    def make_env(cls, config: BackboneConfig | None = None) -> PairReinsertionEnv:
        return PairReinsertionEnv()

    @classmethod
    def test_search(cls, config: N2SConfig) -> StepSearch:
        """The step search of :class:`ImprovementLightning` over an environment with the
        test's removal-history window."""
        search = super().test_search(config)
        return replace(search, env=PairReinsertionEnv(config.test.window))

    def validation_search(self) -> StepSearch:
        """Sampled, with the validation's removal-history window."""
        return replace(super().validation_search(),
                       env=PairReinsertionEnv(self.config.validate.window))

    def build_policy(self) -> N2SPolicy:
        c, m = self.config, self.config.model
        gps = {"local_mp": m.local_mp, "pe_init": m.pe_init} if m.encoder == "gps" else {}
        return N2SPolicy.build(c.problem, pe=c.encoding_spec, dim=m.dim, heads=m.heads,
                               num_layers=m.layers, encoder=m.encoder, **gps)
