"""The n-step PPO training rule's options (DACT's and N2S's): the ``train``,
``validate`` and ``test`` sections both backbones share, torch-free so that the
command line reads them without importing torch (:mod:`.ppo` trains by them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyg_routing.options import check_augment
from pyg_routing.training.sections import TestOptions, TrainOptions, ValidateOptions, bound


@dataclass
class PPOTrain(TrainOptions):
    """Training: n-step PPO (DACT's and N2S's rule)"""

    init: str | None = None
    """initial solutions of training and validation (null: the backbone's)"""
    t_train: int = bound(200, low=1)
    """environment steps per training batch (T_train)"""
    n_step: int = bound(4, low=1)
    """PPO n-step length (divides --train.t_train)"""
    ppo_epochs: int = bound(3, low=1)
    """PPO updates per n-step chunk (K)"""
    clip: float = bound(0.1, positive=True)
    """PPO ratio clip epsilon (also the value clip)"""
    gamma: float = bound(0.999, low=0.0, high=1.0)
    """discount"""
    lr_actor: float = bound(1e-4, positive=True)
    """Adam learning rate of encoder + decoder"""
    lr_critic: float = bound(3e-5, positive=True)
    """Adam learning rate of the critic"""
    lr_decay: float = bound(0.985, positive=True)
    """learning-rate decay per epoch"""
    max_grad_norm: float | None = bound(0.2, positive=True)
    """gradient-norm clip (null: no clipping)"""
    value_coef: float = bound(1.0, low=0.0)
    """weight of the value loss"""
    warm_up: float = bound(2.0, low=0.0)
    """curriculum: floor(epoch / warm_up) policy steps before each rollout (0: none)"""
    # -- the training rules VRP-DACT adds (issue 38); N2S keeps the first of each
    curriculum: Literal["floor", "sigmoid"] = "floor"
    """policy steps before each rollout: floor (floor(epoch / --train.warm_up), N2S's) or
    sigmoid (VRP-DACT's normalised sigmoid over the epochs times --train.xi_cl)"""
    xi_cl: float = bound(1.0, low=0.0)
    """VRP-DACT's Xi_CL: the sigmoid curriculum reaches epochs * xi_cl warm-up steps at the
    last epoch"""
    curriculum_start: Literal["last", "best"] = "last"
    """the solution the rollout starts from after the warm-up: last, or best (the best of
    the warm-up, VRP-DACT's --best_cl)"""
    grad_clip: Literal["joint", "per_group"] = "joint"
    """gradient-norm clipping: joint (one norm over all parameters) or per_group (actor and
    critic each to --train.max_grad_norm, as VRP-DACT)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.t_train % self.n_step:
            raise ValueError(f"--train.t_train {self.t_train} must be a multiple of "
                             f"--train.n_step {self.n_step}")


@dataclass
class StepValidate(ValidateOptions):
    """Validation: the step search on a fixed set after every epoch"""

    sample: bool = False
    """sample the policy's moves (false: argmax)"""


@dataclass
class StepTest(TestOptions):
    """Test protocol: the step search of evaluate, compare and reproduce"""

    init: str | None = None
    """starting solutions (null: the environment's first rule)"""
    starts: Literal["shared", "independent"] | None = None
    """augmented copies start from the same solutions or each from its own (null: the
    backbone's)"""
    compile: bool = False
    """run the policy's search network under torch.compile (the encoder and decoders of
    DACT and N2S; needs a C++ compiler on CPU)"""
    symmetries: Literal["distinct", "random"] = "distinct"
    """the copies' symmetries: distinct (the first --test.augment of the 8, at most 8) or
    random (each drawn at random, repeats allowed, any count: N2S's augmentations)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            check_augment(self.augment, distinct=self.symmetries == "distinct")
        except ValueError as err:
            raise ValueError(f"--test.augment: {err} (--test.symmetries random takes any "
                             f"count)") from None
