"""DACT as one configuration of the shared n-step PPO: the 2-opt environment, the
:class:`~pyg_routing.models.DACTPolicy` and DACT's published hyper-parameters.

The algorithm is DACT's (Ma et al., "Learning to Iteratively Solve Routing Problems
with Dual-Aspect Collaborative Transformer", NeurIPS 2021); the paper's App. I states
that the DACT layer uses the published configuration unchanged, only the positional
encoding being replaced. Defaults (DACT paper Sec. 5 / its repository):
``t_train=200``, ``n_step=4``, ``ppo_epochs=3``, ``clip=0.1``, ``gamma=0.999``,
``lr_actor=1e-4``, ``lr_critic=3e-5``, ``lr_decay=0.985`` per epoch, ``batch_size=512``,
``init="random"``. ``max_grad_norm=0.2`` and ``warm_up=2`` are the values of DACT's
training commands as recalled from its repository README (TSP; CVRP used
``max_grad_norm=0.05``); they could not be checked here. Deviations: one Adam with
two parameter groups (DACT: one optimizer per module) and gradient-norm clipping
over all parameters at once (DACT: per group).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyg_routing.data.problems import Problem
from pyg_routing.envs import TwoOptEnv
from pyg_routing.models import DACTPolicy
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.ppo import PPOLightning, PPOTrain, StepTest, StepValidate
from pyg_routing.training.sections import Encoder, ModelOptions, bound


def default_init(problem: str | Problem) -> str:
    """DACT trains from random solutions; random giant tours are rarely
    time-window feasible, so VRPTW starts from nearest-neighbour solutions."""
    return "nearest_neighbor" if Problem.parse(problem) is Problem.VRPTW else "random"


@dataclass
class DACTModel(ModelOptions):
    """Model: DACT's policy network"""

    encoder: Encoder = "gps"
    """the encoder: gps (the GraphGPS-style encoder with DACT's pair decoder)"""
    dim: int = bound(64, low=1)
    """model width"""
    heads: int = bound(4, low=1)
    """attention heads (must divide --model.dim)"""
    layers: int = bound(3, low=1)
    """encoder layers"""
    compiled: bool = False
    """score move pairs with torch.compile where no gradient flows (validation, warm-up,
    the saved policy's search; needs a C++ compiler on CPU)"""
    depot_rate: float | None = bound(None, positive=True)
    """CVRP/VRPTW depot copies as DACT's --dummy_rate: ceil(N (1 + rate)) - N for N
    customers (null: enough for the initial routes and the capacity bound + 2)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.encoder != "gps":
            raise ValueError(f"--model.encoder {self.encoder}: DACT has the gps encoder "
                             f"only")


@dataclass
class DACTTrain(PPOTrain):
    """Training: n-step PPO with DACT's hyper-parameters"""

    batch_size: int = bound(512, low=1)
    """instances per training batch"""


@dataclass
class DACTConfig(BackboneConfig):
    """DACT: 2-opt moves scored by a pair decoder, trained by n-step PPO"""

    backbone = "dact"

    pe: str = "ipexpe"
    """positional encoding: none, ape, sin, rope, rpe, alibi, lap, rwse, spd, dact_cpe,
    cycleformer, ipe, xpe or ipexpe"""
    model: DACTModel = field(default_factory=DACTModel)
    train: DACTTrain = field(default_factory=DACTTrain)
    validate: StepValidate = field(default_factory=StepValidate)
    test: StepTest = field(default_factory=StepTest)

    def __post_init__(self) -> None:
        super().__post_init__()
        TwoOptEnv().check_problem(Problem.parse(self.problem))
        if self.model.depot_rate is not None and Problem.parse(self.problem).single_route:
            raise ValueError(f"--model.depot_rate sets the depot copies of CVRP/VRPTW; "
                             f"{self.problem} has one route")
        self.train.init = self.train.init or default_init(self.problem)
        for flag, init in (("--train.init", self.train.init), ("--test.init", self.test.init)):
            if init is not None and init not in TwoOptEnv.inits:
                raise ValueError(f"{flag}: unknown init {init!r}; choose from "
                                 f"{', '.join(TwoOptEnv.inits)}")


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
        return DACTPolicy.build(c.problem, pe=c.encoding_spec, dim=m.dim, heads=m.heads,
                                num_layers=m.layers, pe_init=m.pe_init,
                                compiled=m.compiled, local_mp=m.local_mp)
