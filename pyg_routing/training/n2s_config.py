"""N2S's configuration: its sections and defaults with their sources in
yining043/PDP-N2S, torch-free so that the command line reads them without importing
torch (:mod:`.n2s` builds the backbone from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.ppo_config import PPOTrain, StepTest, StepValidate
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
        from pyg_routing.envs import PairReinsertionEnv  # its problems and inits

        self.check_environment(PairReinsertionEnv())
        self.train.init = self.train.init or "random"
        for flag, init in (("--train.init", self.train.init), ("--test.init", self.test.init)):
            if init is not None and init not in PairReinsertionEnv.inits:
                raise ValueError(f"{flag}: unknown init {init!r}; choose from "
                                 f"{', '.join(PairReinsertionEnv.inits)}")
