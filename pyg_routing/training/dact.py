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

from dataclasses import dataclass
from typing import Any, ClassVar

from pyg_routing.data.problems import Problem
from pyg_routing.envs import TwoOptEnv
from pyg_routing.models import DACTPolicy
from pyg_routing.models.gps_encoder import ENCODERS
from pyg_routing.training.config import GPS_OPTIONS, option
from pyg_routing.training.ppo import CURRICULA, PPOConfig, PPOLightning
from pyg_routing.transforms.dact_cpe import SCOPES

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
class DACTConfig(PPOConfig):
    """DACT's model and PPO hyper-parameters (the defaults of :class:`PPOConfig`)."""

    backbone = "dact"
    greedy_validation: ClassVar[bool] = False       # VRP-DACT validates by sampling
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (*PPOConfig.ARCHITECTURE, "encoder", "cpe_scope")

    encoder: str = option(
        "native", "the network: native (DACT's dual-aspect encoder, MHC decoder and one-layer "
                  "attention critic, as released in yining043/VRP-DACT) or gps (the "
                  "GraphGPS-style encoder with our pair decoder and pooled value head)",
        choices=ENCODERS)
    pe_dim: int = option(
        0, "width of node encodings (dact: 0 = the model width with --encoder native, "
           "where DACT feeds its CPE at the embedding width, 32 with gps)", low=0)
    cpe_scope: str | None = option(
        None, "--pe dact_cpe: the position it encodes, route (within each route, the "
              "paper's App. E) or tour (along the whole solution with its depot copies, "
              "as VRP-DACT's CVRP model reads it); default tour with --encoder native, "
              "route with gps", choices=SCOPES)
    val_steps: int = option(1500, "search steps per validation instance (dact: sampled, "
                                  "VRP-DACT's T_max)", low=0)
    curriculum: str = option(
        "sigmoid", "policy steps before each rollout: floor (floor(epoch / --warm-up), "
                   "N2S's) or sigmoid (VRP-DACT's normalised sigmoid over the epochs times "
                   "--xi-cl)", choices=CURRICULA)
    xi_cl: float = option(-1.0, "VRP-DACT's Xi_CL: the sigmoid curriculum reaches epochs * "
                                "xi_cl warm-up steps at the last epoch (dact: -1 = its "
                                "README's, 2 on TSP, 1 otherwise)")
    curriculum_start: str = option(
        "best", "the solution the rollout starts from after the warm-up: last, or best (the "
                "best of the warm-up, VRP-DACT's --best_cl)", choices=("last", "best"))
    grad_clip: str = option(
        "per_group", "gradient-norm clipping: joint (one norm over all parameters) or "
                     "per_group (actor and critic each to --max-grad-norm, as VRP-DACT)",
        choices=("joint", "per_group"))
    depot_rate: float | None = option(
        None, "depot copies of CVRP/VRPTW as DACT's --dummy_rate: ceil(N (1 + rate)) - N for "
              "N customers (DACT: 0.5 at 20, 0.4 at 50, 0.2 at 100; default: enough for the "
              "initial routes and the capacity bound + 2)", positive=True)

    def __post_init__(self) -> None:
        native = self.encoder == "native"
        if self.xi_cl == -1.0:
            self.xi_cl = XI_CL.get(Problem.parse(self.problem), 1.0)
        if not self.xi_cl >= 0:
            raise ValueError(f"--xi-cl must be >= 0, got {self.xi_cl!r}")
        if self.pe_dim == 0:
            self.pe_dim = self.dim if native else 32
        super().__post_init__()
        if self.pe != "dact_cpe" and self.cpe_scope is not None:
            raise ValueError(f"--cpe-scope is an option of the dact_cpe encoding; --pe "
                             f"{self.pe} has no such setting")
        if self.pe == "dact_cpe" and self.cpe_scope is None:
            self.cpe_scope = "tour" if native else "route"
        if native:
            # the GPS network's options, refused by name rather than ignored
            for name, default in {**GPS_OPTIONS, "compiled": False}.items():
                if getattr(self, name) != default:
                    flag = "--compile" if name == "compiled" else f"--{name.replace('_', '-')}"
                    raise ValueError(f"{flag} is an option of the GPS network (--encoder "
                                     f"gps); DACT's own network has no such setting")
        TwoOptEnv().check_problem(Problem.parse(self.problem))
        if self.depot_rate is not None and Problem.parse(self.problem).single_route:
            raise ValueError(f"--depot-rate sets the depot copies of CVRP/VRPTW; "
                             f"{self.problem} has one route")
        self.init = self.init or default_init(self.problem)
        if self.init not in TwoOptEnv.inits:
            raise ValueError(f"unknown init {self.init!r}; choose from {TwoOptEnv.inits}")

    def encoding_options(self) -> dict[str, Any]:
        """The encoding's transform options, with DACT CPE's scope (:data:`SCOPES`)."""
        options = super().encoding_options()
        if self.pe == "dact_cpe":
            options["scope"] = self.cpe_scope
        return options


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
        gps = {"local_mp": c.local_mp, "pe_init": c.pe_init, "compiled": c.compiled} \
            if c.encoder == "gps" else {}
        return DACTPolicy.build(c.problem, pe=c.pe, dim=c.dim, heads=c.heads,
                                num_layers=c.num_layers, pe_dim=c.pe_dim,
                                num_bands=c.num_bands, encoder=c.encoder, **gps,
                                **c.encoding_options())
