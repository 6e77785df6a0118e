"""DACT's configuration: its sections and defaults with their sources in
yining043/VRP-DACT, torch-free so that the command line reads them without importing
torch (:mod:`.dact` builds the backbone from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pyg_routing.data.problems import Problem
from pyg_routing.options import DACT_GPS_ONLY
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.ppo_config import PPOTrain, StepTest, StepValidate
from pyg_routing.training.sections import Encoder, EncodingOptions, ModelOptions, bound

#: VRP-DACT's initial solutions of training and validation, per problem: its CVRP rule
#: is first fit in index order, its TSP rule a random tour; VRPTW (ours) starts from
#: nearest neighbour (random giant tours are rarely time-window feasible), PDTSP from a
#: random feasible tour
DEFAULT_INIT = {Problem.TSP: "random", Problem.CVRP: "first_fit",
                Problem.VRPTW: "nearest_neighbor", Problem.PDTSP: "random"}
#: VRP-DACT's Xi_CL per problem (README: TSP 2, CVRP 1; ours take CVRP's)
XI_CL = {Problem.TSP: 2.0}


def default_init(problem: str | Problem) -> str:
    """The initial-solution rule DACT trains and validates from (:data:`DEFAULT_INIT`)."""
    return DEFAULT_INIT[Problem.parse(problem)]


@dataclass
class DACTEncoding(EncodingOptions):
    """Positional encoding: the options of the node code that --pe names"""

    dim: int | None = bound(None, low=1)
    """width of node codes (null: the model width with the native network, where
    VRP-DACT feeds its CPE at the embedding width; 32 with gps)"""
    cpe_scope: Literal["route", "tour"] | None = None
    """dact_cpe: the position it encodes, route (within each route, the paper's App. E)
    or tour (along the whole solution with its depot copies, as VRP-DACT's CVRP model
    reads it) (null: tour with the native network, route with gps)"""


@dataclass
class DACTModel(ModelOptions):
    """Model: DACT's policy network"""

    encoder: Encoder = "native"
    """the network: native (DACT's dual-aspect encoder, MHC decoder and one-layer
    attention critic, as released in yining043/VRP-DACT) or gps (the GraphGPS-style
    encoder with our pair decoder and pooled value head)"""
    dim: int = bound(64, low=1)
    """model width"""
    heads: int = bound(4, low=1)
    """attention heads (must divide --model.dim)"""
    layers: int = bound(3, low=1)
    """encoder layers"""
    compiled: bool = False
    """run the network's search path (encoder, pair scores) under torch.compile where no
    gradient flows (validation, warm-up, the saved policy's search; needs a C++ compiler
    on CPU; the first call of a shape compiles)"""
    depot_rate: float | None = bound(None, positive=True)
    """CVRP/VRPTW depot copies as DACT's --dummy_rate: ceil(N (1 + rate)) - N for N
    customers (DACT: 0.5 at 20, 0.4 at 50, 0.2 at 100; null: enough for the initial
    routes and the capacity bound + 2)"""

    #: the options DACTPolicy.build refuses with the native network, one list for both
    GPS_ONLY: ClassVar[tuple[str, ...]] = DACT_GPS_ONLY


@dataclass
class DACTTrain(PPOTrain):
    """Training: n-step PPO with DACT's training rules"""

    batch_size: int = bound(512, low=1)
    """instances per training batch"""
    curriculum: Literal["floor", "sigmoid"] = "sigmoid"
    """policy steps before each rollout: floor (floor(epoch / --train.warm_up), N2S's) or
    sigmoid (VRP-DACT's normalised sigmoid over the epochs times --train.xi_cl)"""
    xi_cl: float | None = bound(None, low=0.0)
    """VRP-DACT's Xi_CL: the sigmoid curriculum reaches epochs * xi_cl warm-up steps at the
    last epoch (null: its README's, 2 on TSP, 1 otherwise)"""
    curriculum_start: Literal["last", "best"] = "best"
    """the solution the rollout starts from after the warm-up: last, or best (the best of
    the warm-up, VRP-DACT's --best_cl)"""
    grad_clip: Literal["joint", "per_group"] = "per_group"
    """gradient-norm clipping: joint (one norm over all parameters) or per_group (actor and
    critic each to --train.max_grad_norm, as VRP-DACT)"""


@dataclass
class DACTValidate(StepValidate):
    """Validation: the step search on a fixed set after every epoch"""

    steps: int = bound(1500, low=0)
    """search iterations per validation instance (VRP-DACT's T_max)"""
    sample: bool = True
    """sample the policy's moves (VRP-DACT validates by sampling)"""


@dataclass
class DACTConfig(BackboneConfig):
    """DACT: 2-opt moves scored by a pair decoder, trained by n-step PPO"""

    backbone = "dact"

    pe: str = "ipexpe"
    """positional encoding: none, ape, sin, rope, rpe, alibi, lap, rwse, spd, dact_cpe,
    cycleformer, ipe, xpe or ipexpe"""
    encoding: DACTEncoding = field(default_factory=DACTEncoding)
    model: DACTModel = field(default_factory=DACTModel)
    train: DACTTrain = field(default_factory=DACTTrain)
    validate: DACTValidate = field(default_factory=DACTValidate)
    test: StepTest = field(default_factory=StepTest)

    def __post_init__(self) -> None:
        super().__post_init__()
        native = self.model.encoder == "native"
        # the values that stand for "the network's own" resolved once, here, so the
        # checkpoint records what was built
        if self.encoding.dim is None:
            self.encoding.dim = self.model.dim if native else 32
        if self.encoding.cpe_scope is None:
            self.encoding.cpe_scope = "tour" if native else "route"
        if self.train.xi_cl is None:
            self.train.xi_cl = XI_CL.get(Problem.parse(self.problem), 1.0)
        from pyg_routing.envs import TwoOptEnv  # its problems and inits; torch when built

        self.check_environment(TwoOptEnv())
        if self.model.depot_rate is not None and Problem.parse(self.problem).single_route:
            raise ValueError(f"--model.depot_rate sets the depot copies of CVRP/VRPTW; "
                             f"{self.problem} has one route")
        self.train.init = self.train.init or default_init(self.problem)
        for flag, init in (("--train.init", self.train.init), ("--test.init", self.test.init)):
            if init is not None and init not in TwoOptEnv.inits:
                raise ValueError(f"{flag}: unknown init {init!r}; choose from "
                                 f"{', '.join(TwoOptEnv.inits)}")
