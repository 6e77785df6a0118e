"""``DACTPolicy``: GPS encoder + pair decoder + critic for 2-opt improvement.

The policy takes the dense fields of an observation (``x, edge_index, pe,
route_pos, route_id, mask, extra``; see :class:`pyg_routing.envs.Observation`) by duck
typing; its input width is the 2-opt environment's (``TwoOptEnv.feature_width``).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import Tensor

from pyg_routing.data.problems import Problem
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.functional.chunks import batch_slices, needs_grad
from pyg_routing.models.dact.pair_decoder import PairDecoder, ValueHead
from pyg_routing.models.gps_encoder import GPSEncoder, slice_inputs
from pyg_routing.models.policy import ImprovementPolicy
from pyg_routing.models.sampling import uniforms


class ObservationLike(Protocol):
    """The fields :meth:`DACTPolicy.forward` reads (shapes as in ``Observation``);
    ``succ`` may be ``None`` or absent (the encoder then scatters over ``edge_index``)."""

    x: Tensor
    edge_index: Tensor
    succ: Tensor | None
    pe: Tensor | None
    route_pos: Tensor
    route_id: Tensor
    mask: Tensor
    extra: Tensor


class DACTPolicy(ImprovementPolicy):
    r"""Actor-critic for DACT-style 2-opt improvement with any encoding.

    ``h = GPSEncoder.forward_dense(x, edge_index, pe, route_pos, route_id, succ=succ)``
    (``[B, M, dim]``); the :class:`PairDecoder` scores every move ``(i, j)``
    (``[B, M, M]``, masked) and the :class:`ValueHead` (mean/max pooling plus the
    ``extra = (cost, best_cost)`` features) gives ``V(s)``.

    Args:
        encoder: a :class:`GPSEncoder` (its ``in_channels`` must match ``x``).
        decoder_heads: compatibility heads of the pair decoder.
        critic_hidden: hidden width of the value head.
        clip: logit clipping of the pair decoder.
        compiled: score move pairs with ``torch.compile`` (see :class:`PairDecoder`;
            also settable later as ``policy.decoder.compiled``).
        problem: the problem the policy is for (``None``: not recorded); the
            search refuses instances of another problem.
    """

    def __init__(self, encoder: GPSEncoder, decoder_heads: int = 4, critic_hidden: int = 64,
                 clip: float = 6.0, compiled: bool = False,
                 problem: str | Problem | None = None) -> None:
        super().__init__()
        self.problem = None if problem is None else Problem.parse(problem).value
        self.encoder = encoder
        self.decoder = PairDecoder(encoder.dim, heads=decoder_heads, clip=clip,
                                   compiled=compiled)
        self.critic = ValueHead(encoder.dim, extra=2, hidden=critic_hidden)

    @classmethod
    def build(cls, problem: Any = "cvrp", pe: str = "ipexpe", dim: int = 64, heads: int = 4,
              num_layers: int = 3, pe_dim: int = 32, num_bands: int = 4,
              compiled: bool = False, **encoder_kwargs: Any) -> DACTPolicy:
        """A policy for ``problem`` (a name or a ``Problem`` of the 2-opt environment,
        whose feature width the encoder reads) with encoding ``pe``; ``heads`` is used
        by the encoder and the decoder. Extra keyword arguments go to
        :class:`GPSEncoder`.

        Raises:
            UnsupportedProblemError: a problem the 2-opt environment does not support.
        """
        key = TwoOptEnv.check_problem(problem).value
        enc = GPSEncoder(in_channels=TwoOptEnv.feature_width(key), dim=dim, heads=heads,
                         num_layers=num_layers, pe=pe, pe_dim=pe_dim, num_bands=num_bands,
                         **encoder_kwargs)
        return cls(enc, decoder_heads=heads, compiled=compiled, problem=key)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()
        self.critic.reset_parameters()

    def decode(self, h: Tensor, obs: ObservationLike, action: Tensor | None, greedy: bool,
               generator: torch.Generator | None) -> tuple[Tensor, Tensor, Tensor]:
        """Score every move ``(i, j)`` (``obs.mask [B, M, M]``, True = allowed) and
        sample one (``greedy``: argmax), or score the given ``action [B, 2]``.

        Raises:
            ValueError: an instance has no allowed move.
        """
        return self.decoder.act(h, obs.mask, action, greedy, generator)

    def critic_value(self, h: Tensor, obs: ObservationLike) -> Tensor:
        return self.critic(h, extra=obs.extra.to(h.dtype))

    def act(self, obs: ObservationLike, greedy: bool = False,
            generator: torch.Generator | None = None) -> Tensor:
        """Only the move ``[B, 2]`` (the draw :meth:`forward` makes for the same
        ``generator`` state), scored without log-probability and entropy.

        Without gradients, encoder and decoder run slice by slice of the batch
        (:mod:`~pyg_routing.functional.chunks`), so no ``[B, M, dim]`` embedding or
        ``[B, M, M]`` score exists at once; the same moves (the pair MLP's one-column
        output layer may differ in its last bit, see ``functional/chunks.py``). An
        encoder without :meth:`GPSEncoder.slices_without_arcs` embeds the whole batch
        and the decoder slices alone."""
        if not hasattr(self.encoder, "slices_without_arcs"):
            return self.decoder.select(self.embed(obs), obs.mask, greedy, generator)
        inputs = self.encoder.dense_inputs(obs)
        b, m = obs.x.shape[:2]
        per_chunk = self.encoder.slices_without_arcs(b, m, inputs)
        if per_chunk is None or needs_grad(self.decoder):
            return self.decoder.select(self.encoder.forward_dense(**inputs), obs.mask, greedy,
                                       generator)
        u = None if greedy else uniforms(b, generator, obs.x.device)
        flat = torch.empty(b, dtype=torch.long, device=obs.x.device)
        picked = torch.empty(b, device=obs.x.device)
        for sl in batch_slices(b, per_chunk):
            h = self.encoder.forward_dense(**slice_inputs(inputs, sl))
            flat[sl], picked[sl] = self.decoder.select_slices(
                h, obs.mask[sl], None if u is None else u[sl])
        self.decoder.check_picked(picked, obs.mask)
        return torch.stack([flat // m, flat % m], dim=-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.encoder!r}, {self.decoder!r})"
