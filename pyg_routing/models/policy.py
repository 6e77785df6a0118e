"""The contract of policies (the policy seam).

Every policy is a :class:`RoutingPolicy`: an encoder over its environment's
observation (``embed``, ``prepare``). A step policy, :class:`ImprovementPolicy`,
reads an observation of its environment (duck-typed: the fields of
:class:`pyg_routing.envs.Observation`) and answers

* ``forward(obs, action=None, greedy=False, generator=None, detach_critic=False)
  -> (action, log_prob, entropy, value)``: sample (or argmax) an action, or score
  a given ``action`` (PPO's re-evaluation); ``value`` is the critic's ``V(s)``
  (``None`` for a policy without critic);
* ``act(obs, greedy=False, generator=None) -> action``: only the action (search);
* ``value(obs) -> [B]``: only the critic (bootstrapping).

A step policy writes three pieces: :meth:`RoutingPolicy.embed` (observation ->
embeddings; by default its ``encoder``'s ``forward_observation``, which computes the
node code from the observation's route quantities), :meth:`decode` (embeddings ->
action, log-probability, entropy) and
:meth:`critic_value` (embeddings -> value); the actor-critic forward exists once,
here. Policies record the ``problem`` they were built for (``None``: any).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn


class RoutingPolicy(nn.Module):
    """What every policy is: an ``encoder`` over an environment's observation.

    :meth:`embed` runs the encoder's ``forward_observation`` (the encoder computes
    the node code of its :class:`~pyg_routing.models.pe.PositionalEncoding` from the
    observation's route quantities); :meth:`prepare` computes that code once for an
    observation a trainer scores several times. A step policy
    (:class:`ImprovementPolicy`) adds the actor-critic of one move per step; NDS's
    destroy policy adds the removal sets of one destroy-and-repair round.

    Attributes:
        problem: the problem's name the policy was built for, or ``None``.
    """

    problem: str | None = None

    def embed(self, obs: Any) -> Tensor:
        """Node embeddings ``[B, M, dim]`` of the observation (default: the
        ``encoder``'s ``forward_observation``)."""
        return self.encoder.forward_observation(obs)

    def prepare(self, obs: Any) -> Any:
        """``obs`` with this policy's node code computed from its route quantities and
        stored as ``obs.pe``: a trainer that scores one observation several times (PPO)
        computes it once. A policy without a node code returns ``obs`` as it is."""
        positional = getattr(getattr(self, "encoder", None), "positional", None)
        if positional is None or positional.node_pe is None or obs.pe is not None:
            return obs
        return replace(obs, pe=positional.observed_code(obs, _dtype_of(self)))


class ImprovementPolicy(RoutingPolicy):
    """Base of the step policies (see the module docstring)."""

    def decode(self, h: Tensor, obs: Any, action: Tensor | None, greedy: bool,
               generator: torch.Generator | None) -> tuple[Tensor, Tensor, Tensor]:
        """``(action, log_prob [B], entropy [B])``: sampled, argmax (``greedy``) or
        the given ``action`` scored."""
        raise NotImplementedError

    def critic_value(self, h: Tensor, obs: Any) -> Tensor | None:
        """``V(s)`` ``[B]`` from the embeddings (``None``: no critic)."""
        return None

    def forward(self, obs: Any, action: Tensor | None = None, greedy: bool = False,
                generator: torch.Generator | None = None, detach_critic: bool = False
                ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """Sample (``greedy``: argmax) an action, or score the given ``action``.

        Args:
            obs: an observation of the policy's environment.
            action: actions to score instead of sampling (PPO re-evaluation).
            greedy: take the most likely action.
            generator: RNG of the sampling (default: the global one).
            detach_critic: the critic reads DETACHED embeddings, so its loss does
                not train the encoder (DACT's PPO).

        Returns:
            ``action``, ``log_prob [B]``, ``entropy [B]``, ``value [B]`` (float32).
        """
        h = self.embed(obs)
        action, log_prob, entropy = self.decode(h, obs, action, greedy, generator)
        value = self.critic_value(h.detach() if detach_critic else h, obs)
        return action, log_prob, entropy, None if value is None else value.float()

    def act(self, obs: Any, greedy: bool = False,
            generator: torch.Generator | None = None) -> Tensor:
        """Only the action (what a search loop needs)."""
        h = self.embed(obs)
        return self.decode(h, obs, None, greedy, generator)[0]

    def value(self, obs: Any) -> Tensor:
        """The critic's ``V(s)`` ``[B]`` (float32)."""
        value = self.critic_value(self.embed(obs), obs)
        if value is None:
            raise TypeError(f"{type(self).__name__} has no critic")
        return value.float()


def _dtype_of(module: nn.Module) -> torch.dtype:
    return next(module.parameters()).dtype
