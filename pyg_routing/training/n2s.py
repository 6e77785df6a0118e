"""N2S as one configuration of the shared n-step PPO: the pair removal-reinsertion
environment, the :class:`~pyg_routing.models.N2SPolicy` and N2S's published settings.

The algorithm is N2S's (Ma et al., "Efficient Neural Neighborhood Search for Pickup
and Delivery Problems", IJCAI 2022, repository yining043/PDP-N2S); the paper's App.
"HA-N2S configuration" keeps it unchanged and replaces only the positional encoding.
Defaults, from N2S's options and README: model width 128, 4 heads, 3 layers, FF 128,
node codes of width 128 (N2S's CPE); actor lr ``8e-5``, critic lr ``2e-5``, decay
``0.985`` per epoch, ``gamma=0.999``, ``n_step=5``, ``K=3``, ``clip=0.1``,
``t_train=250``, batch 600, random initial tours, and per problem size the
curriculum ``warm_up`` (20 customers: 2, 50: 1.5, 100: 1) and ``max_grad_norm``
(0.05, 0.15, 0.3; sizes in between take the next larger size's value).

Deviations (docs/design.md): gradient-norm clipping over all parameters at once (N2S:
per parameter group); the removal-history window is ``2P`` in training AND search
(N2S: ``2P`` / ``P``, see :mod:`pyg_routing.envs.pair_reinsertion.env`); the test-time
copies use the 8 distinct symmetries, each with its own random start (N2S: random
symmetries, repeats possible).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyg_routing.data.problems import Problem
from pyg_routing.envs import PairReinsertionEnv
from pyg_routing.models import N2SPolicy
from pyg_routing.training.config import (
    TrainConfig,
    encoder_option,
    option,
    refuse_gps_options,
)
from pyg_routing.training.ppo import PPOConfig, PPOLightning

#: N2S's README settings per size: customers -> (warm_up, max_grad_norm)
SIZE_SETTINGS = {20: (2.0, 0.05), 50: (1.5, 0.15), 100: (1.0, 0.3)}


def size_settings(num_customers: int) -> tuple[float, float]:
    """``(warm_up, max_grad_norm)`` of N2S for ``num_customers`` (the next larger
    published size; above 100, 100's)."""
    for size in sorted(SIZE_SETTINGS):
        if num_customers <= size:
            return SIZE_SETTINGS[size]
    return SIZE_SETTINGS[max(SIZE_SETTINGS)]


@dataclass
class N2SConfig(PPOConfig):
    """N2S's model and PPO hyper-parameters (see the module docstring)."""

    backbone = "n2s"
    greedy_validation: ClassVar[bool] = False       # N2S always samples
    independent_starts: ClassVar[bool] = True
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (*PPOConfig.ARCHITECTURE, "encoder")

    problem: str = option("pdtsp", "routing problem", cli=False)
    pe: str = option("dact_cpe", "positional encoding", cli=False)
    dim: int = option(128, "model width", low=1)
    pe_dim: int = option(128, "width of node encodings", low=1)
    encoder: str = encoder_option("Synthesis Attention")
    t_train: int = option(250, "environment steps per training batch", low=1)
    n_step: int = option(5, "PPO n-step length (divides --t-train)", low=1)
    lr_actor: float = option(8e-5, "Adam learning rate of encoder + decoder", positive=True)
    lr_critic: float = option(2e-5, "Adam learning rate of the critic", positive=True)
    batch_size: int = option(600, "instances per training batch", low=1)
    max_grad_norm: float | None = option(
        -1.0, "gradient-norm clip ('none': no clipping; n2s: by size, 0.05/0.15/0.3 for "
              "20/50/100 customers)")
    warm_up: float = option(-1.0, "curriculum: floor(epoch / warm-up) policy steps before "
                                  "each rollout (0: none; n2s: by size, 2/1.5/1)")

    def __post_init__(self) -> None:
        # -1: N2S's per-size value (a CLI option left out keeps the field default).
        warm_up, max_grad_norm = size_settings(int(self.num_customers))
        if self.warm_up == -1.0:
            self.warm_up = warm_up
        if self.max_grad_norm == -1.0:
            self.max_grad_norm = max_grad_norm
        self.init = self.init or "random"
        super().__post_init__()
        PairReinsertionEnv().check_problem(Problem.parse(self.problem))
        if self.init not in PairReinsertionEnv.inits:
            raise ValueError(f"unknown init {self.init!r}; choose from "
                             f"{PairReinsertionEnv.inits}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"--max-grad-norm must be > 0, got {self.max_grad_norm!r}")
        if not self.warm_up >= 0:
            raise ValueError(f"--warm-up must be >= 0, got {self.warm_up!r}")
        refuse_gps_options(self, self.backbone)


class N2SLightning(PPOLightning):
    """N2S policy + n-step PPO. Keyword arguments: the fields of :class:`N2SConfig`."""

    config_class = N2SConfig

    @classmethod
    def make_env(cls, config: TrainConfig | None = None) -> PairReinsertionEnv:
        return PairReinsertionEnv()

    def build_policy(self) -> N2SPolicy:
        c = self.config
        gps = {"local_mp": c.local_mp, "pe_init": c.pe_init} if c.encoder == "gps" else {}
        return N2SPolicy.build(c.problem, pe=c.pe, dim=c.dim, heads=c.heads,
                               num_layers=c.num_layers, pe_dim=c.pe_dim,
                               num_bands=c.num_bands, encoder=c.encoder, **gps,
                               **c.encoding_options())
