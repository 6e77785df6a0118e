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

from dataclasses import dataclass, field, replace
from typing import Literal

from pyg_routing.data.problems import Problem
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.models import N2SPolicy
from pyg_routing.search import StepSearch
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.ppo import PPOLightning, PPOTrain, StepTest, StepValidate
from pyg_routing.training.sections import Encoder, EncodingOptions, ModelOptions, bound


@dataclass
class N2SModel(ModelOptions):
    """Model: N2S's policy network"""

    encoder: Encoder = "native"
    """the encoder: native (Synthesis Attention, as in the original) or gps (the
    GraphGPS-style encoder of DACT, same width; the decoders are unchanged)"""
    dim: int = bound(128, low=1)
    """model width"""
    heads: int = bound(4, low=1)
    """attention heads (must divide --model.dim)"""
    layers: int = bound(3, low=1)
    """encoder layers"""


@dataclass
class N2STrain(PPOTrain):
    """Training: n-step PPO with N2S's hyper-parameters"""

    batch_size: int = bound(600, low=1)
    """instances per training batch"""
    t_train: int = bound(250, low=1)
    """environment steps per training batch (T_train)"""
    n_step: int = bound(5, low=1)
    """PPO n-step length (divides --train.t_train)"""
    lr_actor: float = bound(8e-5, positive=True)
    """Adam learning rate of encoder + decoder"""
    lr_critic: float = bound(2e-5, positive=True)
    """Adam learning rate of the critic"""
    max_grad_norm: float | None = bound(0.05, positive=True)
    """gradient-norm clip (null: no clipping)"""
    grad_clip: Literal["joint", "per_group"] = "per_group"
    """gradient-norm clipping: joint (one norm over all parameters) or per_group (actor and
    critic each to --train.max_grad_norm, as PDP-N2S's utils.clip_grad_norms)"""


@dataclass
class N2SValidate(StepValidate):
    """Validation: the step search on a fixed set after every epoch"""

    sample: bool = True
    """sample the policy's moves (N2S always samples)"""
    window: int | None = bound(None, low=1)
    """removal-history window of validation (null: as in training, 2P = the customers;
    PDP-N2S validates with P, agent/ppo.py rollout)"""


@dataclass
class N2STest(StepTest):
    """Test protocol: the step search of evaluate, compare and reproduce"""

    starts: Literal["shared", "independent"] | None = "independent"
    """augmented copies start from the same solutions or each from its own (N2S: its
    own)"""
    window: int | None = bound(None, low=1)
    """removal-history window of the test search (null: as in training, 2P = the
    customers; PDP-N2S's inference: P)"""


@dataclass
class N2SConfig(BackboneConfig):
    """N2S: remove one pickup-delivery pair and reinsert it, trained by n-step PPO"""

    backbone = "n2s"

    problem: str = "pdtsp"
    """routing problem"""
    pe: str = "dact_cpe"
    """positional encoding: none, ape, sin, rope, rpe, alibi, lap, rwse, spd, dact_cpe,
    cycleformer, ipe, xpe or ipexpe"""
    encoding: EncodingOptions = field(default_factory=lambda: EncodingOptions(dim=128))
    model: N2SModel = field(default_factory=N2SModel)
    train: N2STrain = field(default_factory=N2STrain)
    validate: N2SValidate = field(default_factory=N2SValidate)
    test: N2STest = field(default_factory=N2STest)

    def __post_init__(self) -> None:
        super().__post_init__()
        PairReinsertionEnv().check_problem(Problem.parse(self.problem))
        self.train.init = self.train.init or "random"
        for flag, init in (("--train.init", self.train.init), ("--test.init", self.test.init)):
            if init is not None and init not in PairReinsertionEnv.inits:
                raise ValueError(f"{flag}: unknown init {init!r}; choose from "
                                 f"{', '.join(PairReinsertionEnv.inits)}")


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
