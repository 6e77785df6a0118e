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

from dataclasses import dataclass

from pyg_routing.data.problems import Problem
from pyg_routing.envs import TwoOptEnv
from pyg_routing.models import DACTPolicy
from pyg_routing.training.config import option
from pyg_routing.training.ppo import PPOConfig, PPOLightning


def default_init(problem: str | Problem) -> str:
    """DACT trains from random solutions; random giant tours are rarely
    time-window feasible, so VRPTW starts from nearest-neighbour solutions."""
    return "nearest_neighbor" if Problem.parse(problem) is Problem.VRPTW else "random"


@dataclass
class DACTConfig(PPOConfig):
    """DACT's model and PPO hyper-parameters (the defaults of :class:`PPOConfig`)."""

    backbone = "dact"

    depot_rate: float | None = option(
        None, "depot copies of CVRP/VRPTW as DACT's --dummy_rate: ceil(N (1 + rate)) - N for "
              "N customers (DACT: 0.5 at 20, 0.4 at 50, 0.2 at 100; default: enough for the "
              "initial routes and the capacity bound + 2)", positive=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        TwoOptEnv().check_problem(Problem.parse(self.problem))
        if self.depot_rate is not None and Problem.parse(self.problem).single_route:
            raise ValueError(f"--depot-rate sets the depot copies of CVRP/VRPTW; "
                             f"{self.problem} has one route")
        self.init = self.init or default_init(self.problem)
        if self.init not in TwoOptEnv.inits:
            raise ValueError(f"unknown init {self.init!r}; choose from {TwoOptEnv.inits}")


class DACTLightning(PPOLightning):
    """DACT policy + n-step PPO. Keyword arguments: the fields of :class:`DACTConfig`
    (``problem, num_customers, pe, dim, heads, num_layers, pe_dim, num_bands,
    batch_size, t_train, n_step, ppo_epochs, clip, gamma, lr_actor, lr_critic,
    lr_decay, max_grad_norm, value_coef, warm_up, init, val_steps, seed, pe_init,
    compiled, ipe_frequencies, ipe_amplitude, ipe_direction, ipe_phase, xpe_aggregation,
    local_mp``)."""

    config_class = DACTConfig

    @classmethod
    def make_env(cls, config: DACTConfig | None = None) -> TwoOptEnv:
        return TwoOptEnv(depot_rate=None if config is None else config.depot_rate)

    def build_policy(self) -> DACTPolicy:
        c = self.config
        return DACTPolicy.build(c.problem, pe=c.pe, dim=c.dim, heads=c.heads,
                                num_layers=c.num_layers, pe_dim=c.pe_dim,
                                num_bands=c.num_bands, pe_init=c.pe_init,
                                compiled=c.compiled, local_mp=c.local_mp,
                                **c.encoding_options())
