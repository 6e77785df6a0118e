"""``NDSPolicy``: the removal policy of Neural Deconstruction Search (Hottung et al.
2025) with the encoding as one argument.

The policy reads an observation of the deconstruction search by duck typing (the
fields of :class:`pyg_routing.envs.deconstruction.NDSObservation`: ``x [S, M, F]``,
``pred, succ, tour [S, N]``, ``pe [S, M, w]`` or ``None``, ``route_pos, route_id
[S, M]``), so this module does not import the environments. One forward is one NDS
iteration's network work: one encoder pass per solution, then ``K`` rollouts of ``k``
picks each (:class:`~pyg_routing.models.nds_decoder.NDSDecoder`).

Parameter names follow NDS (``encoder.*``, ``decoder.*``, ``start_last_node``), so an
NDS checkpoint's ``model_state_dict`` loads into ``NDSPolicy.build(problem)`` (``pe =
"none"``) with ``load_state_dict``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pyg_routing.data.problems import Problem
from pyg_routing.models.nds_decoder import Z_DIM, NDSDecoder, sample_z
from pyg_routing.models.nds_encoder import NDSEncoder

#: problems NDS is defined for, with their customer-feature widths (x, y, demand / C,
#: then the time window (VRPTW) or the prize (PCVRP))
NDS_FEATURES = {"cvrp": 3, "vrptw": 5, "pcvrp": 4}
NDS_PROBLEMS = tuple(NDS_FEATURES)


def nds_problem(problem: Any) -> str:
    """The problem's name if NDS supports it.

    Raises:
        ValueError: any other problem, listing the supported ones.
    """
    key = str(getattr(problem, "value", problem)).lower()
    if key not in NDS_FEATURES:
        raise ValueError(f"NDS supports the problems {', '.join(NDS_PROBLEMS)}; "
                         f"got {problem!r}")
    return Problem.parse(key).value


class NDSPolicy(nn.Module):
    r"""NDS's removal policy: :class:`NDSEncoder` + :class:`NDSDecoder` + the learned
    first decoder input ``start_last_node``.

    Args:
        encoder: the encoder. decoder: the decoder (same ``dim``).
        problem: the problem the policy is for (cvrp, vrptw, pcvrp).

    Attributes:
        problem: the problem's name.
    """

    def __init__(self, encoder: NDSEncoder, decoder: NDSDecoder, problem: Any) -> None:
        super().__init__()
        self.problem = nds_problem(problem)
        if encoder.in_features != NDS_FEATURES[self.problem]:
            raise ValueError(f"a {self.problem} policy needs an encoder with in_features="
                             f"{NDS_FEATURES[self.problem]}, got {encoder.in_features}")
        if encoder.dim != decoder.dim:
            raise ValueError(f"encoder dim {encoder.dim} != decoder dim {decoder.dim}")
        self.encoder = encoder
        self.decoder = decoder
        # NDS's name and place (top level): its checkpoints load unchanged.
        self.start_last_node = nn.Parameter(torch.zeros(encoder.dim))

    @classmethod
    def build(cls, problem: Any, pe: str = "none", dim: int = 128, heads: int = 8,
              ff_hidden: int = 512, pe_dim: int = 32, num_bands: int = 4,
              poly_embedding_dim: int = 256, z_dim: int = Z_DIM, logit_clipping: float = 10.0,
              directed: bool | None = None, **encoder_kwargs: Any) -> NDSPolicy:
        """NDS's policy for ``problem`` with encoding ``pe`` (NDS's sizes by default).

        Args:
            problem: cvrp, vrptw or pcvrp (anything else raises ``ValueError``).
            pe: the encoding (``"none"``: NDS as released).
            directed: separate predecessor / successor projections in the
                message-passing layer (default: NDS's choice, VRPTW only).
            encoder_kwargs: more :class:`NDSEncoder` arguments (``tour_layer``,
                ``message_passing_layer_num``, ``max_route_len``, the encoding's own).
        """
        key = nds_problem(problem)
        enc = NDSEncoder(in_features=NDS_FEATURES[key],
                         directed=(key == "vrptw") if directed is None else directed,
                         dim=dim, heads=heads, ff_hidden=ff_hidden, pe=pe, pe_dim=pe_dim,
                         num_bands=num_bands, **encoder_kwargs)
        dec = NDSDecoder(dim, heads, poly_embedding_dim, z_dim, logit_clipping)
        return cls(enc, dec, key)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()
        nn.init.zeros_(self.start_last_node)

    def embed(self, obs: Any) -> Tensor:
        """Encoder outputs ``[S, M, dim]`` of the observation."""
        return self.encoder(obs.x, obs.pred, obs.succ, obs.tour, getattr(obs, "pe", None),
                            getattr(obs, "route_pos", None), getattr(obs, "route_id", None))

    def forward(self, obs: Any, num_rollouts: int, k: int = 15,
                generator: torch.Generator | None = None, selected: Tensor | None = None,
                z: Tensor | None = None, temperature: float = 1.0
                ) -> tuple[Tensor, Tensor, Tensor]:
        """Sample ``num_rollouts`` removal sets of ``k`` customers per solution, or
        score given ones.

        Args:
            obs: the observation of ``S`` solutions.
            num_rollouts: ``K`` rollouts per solution (``<= 2^z_dim`` = 1024).
            k: customers per set (NDS: 15).
            generator: RNG of the latents and the sampling (on the policy's device).
            selected: ``[S, K, k]`` sets to score (training re-evaluation); needs ``z``.
            z: ``[S, K, z_dim]`` the latents to use (default: fresh distinct ones).
            temperature: softmax temperature (NDS: 1).

        Returns:
            ``selected [S, K, k]`` long customer ids in pick order, ``log_prob [S, K]``
            float32 (sum over the picks), ``z [S, K, z_dim]`` (store it with the
            rollout to score it again).
        """
        return self.decode(self.embed(obs), num_rollouts, k, generator, selected, z,
                           temperature)

    def decode(self, h: Tensor, num_rollouts: int, k: int = 15,
               generator: torch.Generator | None = None, selected: Tensor | None = None,
               z: Tensor | None = None, temperature: float = 1.0
               ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`forward` from the encoder outputs ``h [S, M, dim]`` (:meth:`embed`):
        e.g. one encoder pass shared by sampling without gradient and scoring the
        chosen rollouts with it."""
        s = h.shape[0]
        if z is None:
            if selected is not None:
                raise ValueError("scoring given sets needs the latents z they were sampled "
                                 "with")
            z = sample_z(s, num_rollouts, self.decoder.z_dim, generator, h.device)
        elif z.shape[:2] != (s, num_rollouts):
            raise ValueError(f"z must be [S, K, z_dim] with S = {s}, K = {num_rollouts}; got "
                             f"{tuple(z.shape)}")
        sel, log_prob = self.decoder(h, z.to(h.device), self.start_last_node, k,
                                     generator=generator, selected=selected,
                                     temperature=temperature)
        return sel, log_prob, z

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.parameters())
        return (f"{type(self).__name__}(problem={self.problem!r}, pe={self.encoder.pe!r}, "
                f"dim={self.encoder.dim}, parameters={n})")
