"""The contract of improvement policies (the policy seam).

An :class:`ImprovementPolicy` reads an observation of its environment (duck-typed:
the fields of :class:`pyg_routing.envs.Observation`) and answers

* ``forward(obs, action=None, greedy=False, generator=None, detach_critic=False)
  -> (action, log_prob, entropy, value)``: sample (or argmax) an action, or score
  a given ``action`` (PPO's re-evaluation); ``value`` is the critic's ``V(s)``
  (``None`` for a policy without critic);
* ``act(obs, greedy=False, generator=None) -> action``: only the action (search);
* ``value(obs) -> [B]``: only the critic (bootstrapping).

A subclass writes three pieces: :meth:`embed` (observation -> embeddings),
:meth:`decode` (embeddings -> action, log-probability, entropy) and
:meth:`critic_value` (embeddings -> value); the actor-critic forward exists once,
here. Policies record the ``problem`` they were built for (``None``: any).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn


class ImprovementPolicy(nn.Module):
    """Base of the improvement policies (see the module docstring).

    Attributes:
        problem: the problem's name the policy was built for, or ``None``.
    """

    problem: str | None = None

    def embed(self, obs: Any) -> Tensor:
        """Node embeddings ``[B, M, dim]`` of the observation."""
        raise NotImplementedError

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
