"""A fourth backbone from an environment, a policy and a config only: "relocate one
city" on TSP (move city ``u`` to just after city ``v``), trained by the shared n-step
PPO and searched by the shared step search. Nothing outside this file knows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from pyg_routing.data.problems import Problem
from pyg_routing.envs import ImprovementEnv, Observation
from pyg_routing.envs.base import BatchedState
from pyg_routing.models import ImprovementPolicy
from pyg_routing.models.sampling import sample_categorical
from pyg_routing.training.config import BackboneConfig
from pyg_routing.training.ppo import PPOLightning
from pyg_routing.training.ppo_config import PPOTrain, StepTest, StepValidate
from pyg_routing.training.sections import ModelOptions, bound


def tour_cost(pos: Tensor, tour: Tensor) -> Tensor:
    p = pos.gather(1, tour.unsqueeze(-1).expand(-1, -1, 2))
    return (p - p.roll(-1, 1)).norm(dim=-1).sum(1)


@dataclass
class RelocateState(BatchedState):
    pos: Tensor            # [B, N, 2]
    tour: Tensor           # [B, N] cities in visiting order, city 0 first
    cost: Tensor
    best_tour: Tensor
    best_cost: Tensor
    BEST_FIELDS: ClassVar[tuple[str, ...]] = ("best_cost", "best_tour")

    def rank(self) -> Tensor:
        """``[B, N]`` position of every city in its tour."""
        ar = torch.arange(self.tour.size(1), device=self.device).expand_as(self.tour)
        return torch.empty_like(self.tour).scatter_(1, self.tour, ar)


class RelocateEnv(ImprovementEnv):
    name = "relocate"
    problems = (Problem.TSP,)
    inits = ("random",)

    def start(self, instances: Any, init: str, generator: Any = None) -> RelocateState:
        b, n = instances.pos.shape[:2]
        rest = torch.rand(b, n - 1, generator=generator).argsort(1) + 1
        tour = torch.cat([torch.zeros(b, 1, dtype=torch.long), rest], 1).to(instances.device)
        cost = tour_cost(instances.pos, tour)
        return RelocateState(instances.pos, tour, cost, tour.clone(), cost.clone())

    def action_mask(self, state: RelocateState) -> Tensor:       # [B, N (u), N (v)]
        rank = state.rank()
        u = torch.arange(rank.size(1), device=state.device).view(1, -1, 1)
        v = u.view(1, 1, -1)
        return (u > 0) & (u != v) & (rank.unsqueeze(1) != rank.unsqueeze(2) - 1)

    def random_action(self, state: RelocateState, mask: Tensor | None = None,
                      generator: Any = None) -> Tensor:
        mask = self.action_mask(state) if mask is None else mask
        return torch.multinomial(mask.flatten(1).float(), 1, generator=generator).squeeze(1)

    def step(self, state: RelocateState, action: Tensor) -> tuple[RelocateState, Tensor]:
        b, n = state.tour.shape
        rank, rows = state.rank(), torch.arange(b, device=state.device)
        key = torch.arange(n, device=state.device).double().expand(b, n).clone()  # positions
        key[rows, rank[rows, action // n]] = rank[rows, action % n].double() + 0.5  # after v
        tour = state.tour.gather(1, key.argsort(1))
        cost = tour_cost(state.pos, tour)
        better = cost < state.best_cost
        new = RelocateState(state.pos, tour, cost,
                            torch.where(better.unsqueeze(1), tour, state.best_tour),
                            torch.where(better, cost, state.best_cost))
        return new, (state.best_cost - cost).clamp(min=0)

    def observe(self, state: RelocateState, mask: Tensor | None = None,
                dtype: Any = None) -> Observation:
        b, n = state.tour.shape
        succ = torch.empty_like(state.tour).scatter_(1, state.tour, state.tour.roll(-1, 1))
        rank = state.rank()
        offset = (torch.arange(b, device=state.device) * n).unsqueeze(1)
        edges = torch.stack([(torch.arange(n, device=state.device) + offset).flatten(),
                             (succ + offset).flatten()])
        x = torch.cat([state.pos, (rank.float() / n).unsqueeze(-1)], -1)
        return Observation(x, edges, succ, None, rank, offset.expand(b, n).clone(),
                           self.action_mask(state) if mask is None else mask,
                           torch.stack([state.cost, state.best_cost], -1), None)

    def to_routes(self, state: RelocateState, best: bool = True) -> list[list[list[int]]]:
        return [[row[1:]] for row in (state.best_tour if best else state.tour).tolist()]

    def solution_cost(self, state: RelocateState, pos: Tensor, best: bool) -> Tensor:
        return tour_cost(pos, state.best_tour if best else state.tour)


class RelocatePolicy(ImprovementPolicy):
    def __init__(self, problem: str, dim: int) -> None:
        super().__init__()
        self.problem = problem
        self.node = nn.Linear(6, dim)
        self.query, self.key = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.critic = nn.Linear(dim, 1)

    def embed(self, obs: Observation) -> Tensor:
        nxt = obs.x.gather(1, obs.succ.unsqueeze(-1).expand_as(obs.x))
        return torch.relu(self.node(torch.cat([obs.x, nxt], -1)))

    def decode(self, h: Tensor, obs: Observation, action: Tensor | None, greedy: bool,
               generator: Any) -> tuple[Tensor, Tensor, Tensor]:
        logits = (self.query(h) @ self.key(h).transpose(1, 2)).flatten(1)
        logp = logits.masked_fill(~obs.mask.flatten(1), float("-inf")).log_softmax(-1)
        if action is None:
            action = logp.argmax(1) if greedy else sample_categorical(logp.exp(), generator)
        p = logp.exp()
        entropy = -(p * logp.clamp(min=-1e9)).sum(1)
        return action, logp.gather(1, action.unsqueeze(1)).squeeze(1), entropy

    def critic_value(self, h: Tensor, obs: Observation) -> Tensor:
        return self.critic(h.mean(1)).squeeze(-1)


@dataclass
class RelocateModel(ModelOptions):
    """Model: the toy's scorer"""

    dim: int = bound(32, low=1)
    """model width"""
    heads: int = bound(1, low=1)
    """unused"""


@dataclass
class RelocateConfig(BackboneConfig):
    """Relocate one city (a toy backbone)"""

    backbone = "relocate"
    problem: str = "tsp"
    """routing problem"""
    model: RelocateModel = field(default_factory=RelocateModel)
    train: PPOTrain = field(default_factory=lambda: PPOTrain(init="random"))
    validate: StepValidate = field(default_factory=StepValidate)
    test: StepTest = field(default_factory=StepTest)


class RelocateLightning(PPOLightning):
    config_class = RelocateConfig

    @classmethod
    def make_env(cls, config: object = None) -> RelocateEnv:
        return RelocateEnv()

    def build_policy(self) -> RelocatePolicy:
        return RelocatePolicy(self.config.problem, self.config.model.dim)
