"""``DACTPolicy``: the 2-opt actor-critic, with DACT's own network (``encoder="native"``:
dual-aspect encoder, MHC decoder, one-layer attention critic) or ours (``"gps"``: the
GPS encoder, the pair decoder and a pooled value head).

The policy takes the dense fields of an observation (``x, edge_index, succ, pe,
route_pos, route_id, mask, extra``; see :class:`pyg_routing.envs.Observation`) by duck
typing; its input width is the 2-opt environment's (``TwoOptEnv.feature_width``).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import Tensor, nn

from pyg_routing.data.problems import Problem
from pyg_routing.envs.two_opt.env import TwoOptEnv
from pyg_routing.functional.chunks import batch_slices, needs_grad
from pyg_routing.models.dact.dual_aspect import DualAspectEncoder
from pyg_routing.models.dact.mhc import DACTCritic, MHCDecoder
from pyg_routing.models.dact.pair_decoder import MoveDecoder, PairDecoder, ValueHead
from pyg_routing.models.gps_encoder import GPSEncoder, check_encoder, slice_inputs
from pyg_routing.models.policy import ImprovementPolicy
from pyg_routing.models.sampling import uniforms
from pyg_routing.options import DACT_GPS_ONLY as GPS_ONLY


class ObservationLike(Protocol):
    """The fields :meth:`DACTPolicy.forward` reads (shapes as in ``Observation``);
    ``succ`` may be ``None`` or absent for the GPS network (its encoder then scatters
    over ``edge_index``); DACT's own decoder needs it."""

    x: Tensor
    edge_index: Tensor
    succ: Tensor | None
    pe: Tensor | None
    route_pos: Tensor
    route_id: Tensor
    mask: Tensor
    extra: Tensor


class DACTPolicy(ImprovementPolicy):
    r"""Actor-critic for 2-opt improvement with any encoding.

    ``h = encoder(obs)``; the ``decoder`` (a :class:`MoveDecoder`) scores every move
    ``(i, j)`` (``[B, M, M]``, masked) and the ``critic`` gives ``V(s)`` (it reads the
    observation's ``extra = (cost, best_cost)`` when its ``extra`` says so).

    Args:
        encoder: a :class:`GPSEncoder` or a :class:`DualAspectEncoder` (its
            ``in_channels`` must match ``x``).
        decoder: the move decoder (:class:`PairDecoder` or :class:`MHCDecoder`).
        critic: :class:`ValueHead` or :class:`DACTCritic`.
        problem: the problem the policy is for (``None``: not recorded); the
            search refuses instances of another problem.
    """

    def __init__(self, encoder: nn.Module, decoder: MoveDecoder, critic: nn.Module,
                 problem: str | Problem | None = None) -> None:
        super().__init__()
        self.problem = None if problem is None else Problem.parse(problem).value
        self.encoder, self.decoder, self.critic = encoder, decoder, critic

    @classmethod
    def build(cls, problem: Any = "cvrp", pe: str = "ipexpe", dim: int = 64, heads: int = 4,
              num_layers: int = 3, pe_dim: int = 32, num_bands: int = 4,
              compiled: bool = False, encoder: str = "gps", critic_heads: int = 6,
              **encoder_kwargs: Any) -> DACTPolicy:
        """A policy for ``problem`` (a name or a ``Problem`` of the 2-opt environment,
        whose feature width the encoder reads) with encoding ``pe``.

        ``encoder="native"``: DACT's network (:class:`DualAspectEncoder` of two aspects of
        width ``dim``, :class:`MHCDecoder`, :class:`DACTCritic` with ``critic_heads`` on
        the ``2 dim`` concatenated aspects; ``heads`` in the encoder and the decoder).
        ``encoder="gps"``: :class:`GPSEncoder` (width ``dim``), :class:`PairDecoder`,
        :class:`ValueHead`. ``compiled``: encoder and decoder under ``torch.compile``
        where no gradient flows (:mod:`~pyg_routing.models.compiled`). Extra keyword
        arguments go to the encoder.

        Raises:
            UnsupportedProblemError: a problem the 2-opt environment does not support.
            ValueError: an unknown ``encoder``, or a GPS-only option with ``"native"``.
        """
        key = TwoOptEnv.check_problem(problem).value
        width = TwoOptEnv.feature_width(key)
        if check_encoder(encoder) == "native":
            given = [name for name in GPS_ONLY if name in encoder_kwargs]
            if given:
                raise ValueError(f"{given[0]!r} is an option of the GPS network "
                                 f"(encoder='gps'); DACT's own network has no such setting")
            enc = DualAspectEncoder(width, dim=dim, heads=heads, num_layers=num_layers, pe=pe,
                                    pe_dim=pe_dim, num_bands=num_bands, compiled=compiled,
                                    **encoder_kwargs)
            return cls(enc, MHCDecoder(dim, heads, compiled=compiled),
                       DACTCritic(enc.out_dim, critic_heads), problem=key)
        gps = GPSEncoder(in_channels=width, dim=dim, heads=heads, num_layers=num_layers,
                         pe=pe, pe_dim=pe_dim, num_bands=num_bands, compiled=compiled,
                         **encoder_kwargs)
        # The critic reads the node embeddings only, as DACT's own: fed the raw current
        # and best cost (8-12 on CVRP-20) it made a near-constant negative advantage
        # while training was stuck, and the policy flattened back towards random moves
        # on one seed in three (docs/experiments.md, 2026-11-27, the GPS critic)
        return cls(gps, PairDecoder(dim, heads=heads, compiled=compiled),
                   ValueHead(dim, hidden=64), problem=key)

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
        return self.decoder.act(h, obs.mask, action, greedy, generator,
                                succ=getattr(obs, "succ", None))

    def critic_value(self, h: Tensor, obs: ObservationLike) -> Tensor:
        if self.critic.extra:
            return self.critic(h, extra=obs.extra.to(h.dtype))
        return self.critic(h)

    def act(self, obs: ObservationLike, greedy: bool = False,
            generator: torch.Generator | None = None) -> Tensor:
        """Only the move ``[B, 2]`` (the draw :meth:`forward` makes for the same
        ``generator`` state), scored without log-probability and entropy.

        With the GPS network and no gradients, encoder and decoder run slice by slice of
        the batch (:mod:`~pyg_routing.functional.chunks`), so no ``[B, M, dim]``
        embedding or ``[B, M, M]`` score exists at once; the same moves (the pair MLP's
        one-column output layer may differ in its last bit, see
        ``functional/chunks.py``). An encoder without
        :meth:`GPSEncoder.slices_without_arcs` (DACT's own) embeds the whole batch."""
        succ = getattr(obs, "succ", None)
        if not hasattr(self.encoder, "slices_without_arcs"):
            return self.decoder.select(self.embed(obs), obs.mask, greedy, generator, succ=succ)
        inputs = self.encoder.dense_inputs(obs)
        b, m = obs.x.shape[:2]
        per_chunk = self.encoder.slices_without_arcs(b, m, inputs)
        if per_chunk is None or needs_grad(self.decoder):
            return self.decoder.select(self.encoder.forward_dense(**inputs), obs.mask, greedy,
                                       generator, succ=succ)
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
