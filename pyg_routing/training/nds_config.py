"""NDS's configuration: its sections and defaults with their sources in ahottung/NDS
and the paper, torch-free so that the command line reads them without importing torch
(:mod:`.nds` builds the backbone from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyg_routing.options import NDS_Z_DIM as Z_DIM
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.sections import (
    DataOptions,
    Encoder,
    ModelOptions,
    TestOptions,
    TrainOptions,
    ValidateOptions,
    bound,
)


@dataclass
class NDSModel(ModelOptions):
    """Model: NDS's removal policy"""

    encoder: Encoder = "native"
    """the encoder: native (NDS's Transformer with tour and neighbour layers) or gps
    (the GraphGPS-style encoder of DACT, same width; the decoder is unchanged)"""
    layers: int = bound(4, low=2)
    """encoder layers (NDS: half before, half after its tour and message-passing
    layers)"""


@dataclass
class NDSTrain(TrainOptions):
    """Training: NDS's winner-takes-all policy gradient inside its search"""

    rollouts: int = bound(128, low=1, high=2**Z_DIM)
    """removal sets (K) sampled per solution and training iteration, each with its own
    latent z"""
    remove: int = bound(15, low=1)
    """customers per removal set (k)"""
    recreate: int = bound(5, low=1)
    """greedy repairs per removal set, the best kept"""
    warmup_steps: int = bound(10, low=0)
    """improvement rounds (J) of the current policy before a batch's training
    iterations"""
    iterations: int = bound(100, low=1)
    """training iterations (I) per batch; their gradients are summed into one optimizer
    step"""
    lr: float = bound(1e-4, positive=True)
    """Adam learning rate"""
    weight_decay: float = bound(1e-6, low=0.0)
    """Adam weight decay"""
    lr_milestones: list[int] = bound(low=1, factory=list)
    """epochs at which the learning rate is multiplied by --train.lr_gamma (MultiStepLR)"""
    lr_gamma: float = bound(0.1, positive=True)
    """the factor of every --train.lr_milestones epoch"""
    lr_warmup_steps: int = bound(0, low=0)
    """optimizer steps of a linear learning-rate warm-up (0: none)"""
    lr_warmup_start: float = bound(0.01, positive=True, high=1.0)
    """the warm-up's first factor (it rises linearly to 1)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        for m in self.lr_milestones:
            if isinstance(m, bool) or not isinstance(m, int) or m < 1:
                raise ValueError(f"--train.lr_milestones must be integers >= 1, got "
                                 f"{self.lr_milestones!r}")
        if list(self.lr_milestones) != sorted(set(self.lr_milestones)):
            raise ValueError(f"--train.lr_milestones must increase, got "
                             f"{self.lr_milestones!r}")

    def lr_factor(self, step: int, epoch: int) -> float:
        """The learning rate's factor at optimizer step ``step`` (0-based) of epoch
        ``epoch``: the linear warm-up from ``lr_warmup_start`` to 1 over
        ``lr_warmup_steps`` steps, times ``lr_gamma`` per milestone reached (the paper's
        MultiStepLR with linear warm-up, App. tab:hyperparams)."""
        warm = 1.0
        if step < self.lr_warmup_steps:
            warm = self.lr_warmup_start + (1.0 - self.lr_warmup_start) * step \
                / self.lr_warmup_steps
        return warm * self.lr_gamma ** sum(epoch >= m for m in self.lr_milestones)


@dataclass
class NDSValidate(ValidateOptions):
    """Validation: NDS's search at T = 0 on a fixed set after every epoch"""

    steps: int = bound(50, low=0)
    """search iterations per validation instance"""
    rollouts: int = bound(100, low=1, high=2**Z_DIM)
    """removal sets per slot and validation iteration"""
    augment: int = bound(8, low=1)
    """solution slots (symmetries) per validation instance"""


@dataclass
class NDSTest(TestOptions):
    """Test protocol: NDS's augmented simulated annealing"""

    rollouts: int = bound(200, low=1)
    """removal sets per slot and iteration"""
    recreate: int | None = bound(None, low=1)
    """repairs per removal set (null: as trained)"""
    remove: int | None = bound(None, low=1)
    """customers per removal set (null: as trained; the non-learned destroys: 15)"""
    exact: bool = False
    """nds presets: NDS's own test instances (its random streams; with seed 1234 and
    NDS's instance count this rebuilds its test file)"""


@dataclass
class NDSConfig(BackboneConfig):
    """NDS: a learned policy removes customers, exact greedy repair, simulated
    annealing"""

    backbone = "nds"

    num_customers: int = bound(100, low=1)
    """customers per instance"""
    data: DataOptions = field(default_factory=lambda: DataOptions(preset="nds"))
    model: NDSModel = field(default_factory=NDSModel)
    train: NDSTrain = field(default_factory=NDSTrain)
    validate: NDSValidate = field(default_factory=NDSValidate)
    test: NDSTest = field(default_factory=NDSTest)

    BASELINES: ClassVar[tuple[str, ...]] = ("random", "sisr")
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (*BackboneConfig.ARCHITECTURE,)

    def __post_init__(self) -> None:
        super().__post_init__()
        from pyg_routing.envs.deconstruction import DeconstructionEnv  # its problems

        self.check_environment(DeconstructionEnv(self.train.recreate))

    def check_training(self) -> None:
        super().check_training()
        if self.train.remove > self.num_customers:
            raise ValueError(f"--train.remove {self.train.remove} exceeds the "
                             f"{self.num_customers} customers per instance")
