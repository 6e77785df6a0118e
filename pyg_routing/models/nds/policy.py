"""``NDSPolicy``: the removal policy of Neural Deconstruction Search (Hottung et al.
2025) with the encoding as one argument.

The policy reads an observation of the deconstruction search by duck typing (the
fields of :class:`pyg_routing.envs.deconstruction.NDSObservation`: ``x [S, M, F]``,
``pred, succ, tour [S, N]``, ``route_pos, route_id [S, M]``, ``num_depots`` (default
1: the encoder embeds and the decoder masks every depot row) and the route
quantities its encoding reads); its input width is the environment's
(``DeconstructionEnv.feature_width``). One forward is one NDS
iteration's network work: one encoder pass per solution, then ``K`` rollouts of ``k``
picks each (:class:`~pyg_routing.models.nds.decoder.NDSDecoder`).

Parameter names follow NDS (``encoder.*``, ``decoder.*``, ``start_last_node``), so an
NDS checkpoint's ``model_state_dict`` loads into ``NDSPolicy.build(problem)`` (``pe =
"none"``) with ``load_state_dict``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pyg_routing.envs.deconstruction.env import DeconstructionEnv
from pyg_routing.models.gps_encoder import GPSEncoder, check_encoder
from pyg_routing.models.nds.decoder import Z_DIM, NDSDecoder, sample_z
from pyg_routing.models.nds.encoder import NDSEncoder
from pyg_routing.models.pe.positional import PositionalEncoding
from pyg_routing.models.policy import RoutingPolicy


def nds_problem(problem: Any) -> str:
    """The problem's name if NDS's environment supports it.

    Raises:
        UnsupportedProblemError: any other problem, listing the supported ones.
    """
    return DeconstructionEnv.check_problem(problem).value


class NDSPolicy(RoutingPolicy):
    r"""NDS's removal policy: :class:`NDSEncoder` + :class:`NDSDecoder` + the learned
    first decoder input ``start_last_node``.

    Args:
        encoder: the encoder. decoder: the decoder (same ``dim``).
        problem: the problem the policy is for (cvrp, vrptw, pcvrp).

    Attributes:
        problem: the problem's name.
    """

    def __init__(self, encoder: NDSEncoder | GPSEncoder, decoder: NDSDecoder,
                 problem: Any) -> None:
        super().__init__()
        self.problem = nds_problem(problem)
        if encoder.feature_width != DeconstructionEnv.feature_width(self.problem):
            raise ValueError(f"a {self.problem} policy needs an encoder of "
                             f"{DeconstructionEnv.feature_width(self.problem)} node features, got "
                             f"{encoder.feature_width}")
        if encoder.dim != decoder.dim:
            raise ValueError(f"encoder dim {encoder.dim} != decoder dim {decoder.dim}")
        self.encoder = encoder
        self.decoder = decoder
        # NDS's name and place (top level): its checkpoints load unchanged.
        self.start_last_node = nn.Parameter(torch.zeros(encoder.dim))

    @classmethod
    def build(cls, problem: Any, pe: str | PositionalEncoding = "none", dim: int = 128,
              heads: int = 8, ff_hidden: int = 512, pe_dim: int = 32, num_bands: int = 4,
              poly_embedding_dim: int = 256, z_dim: int = Z_DIM, logit_clipping: float = 10.0,
              directed: bool | None = None, encoder: str = "native",
              **encoder_kwargs: Any) -> NDSPolicy:
        """NDS's policy for ``problem`` with encoding ``pe`` (NDS's sizes by default).

        Args:
            problem: cvrp, vrptw or pcvrp (anything else raises ``ValueError``).
            pe: the encoding (``"none"``: NDS as released), or a built
                :class:`~pyg_routing.models.pe.PositionalEncoding`.
            directed: separate predecessor / successor projections in the
                message-passing layer (default: NDS's choice, VRPTW only).
            encoder: NDS's own encoder (``"native"``) or :class:`GPSEncoder`
                (``"gps"``: same width and heads, ``encoder_layer_num +
                encoder_layer_num_2`` layers, the depot marked by a feature channel);
                the decoder is NDS's either way.
            encoder_kwargs: more encoder arguments (``tour_layer``,
                ``message_passing_layer_num``, ``max_route_len``, the encoding's own).
        """
        key = nds_problem(problem)
        if check_encoder(encoder) == "gps":
            if directed is not None or ff_hidden != 512:
                raise ValueError("directed and ff_hidden are options of NDS's own encoder; "
                                 "the gps encoder has no such setting")
            layers = (encoder_kwargs.pop("encoder_layer_num", 2)
                      + encoder_kwargs.pop("encoder_layer_num_2", 2))
            enc = GPSEncoder(in_channels=DeconstructionEnv.feature_width(key) + 1, dim=dim,
                             heads=heads, num_layers=layers, pe=pe, pe_dim=pe_dim,
                             num_bands=num_bands, mark_depot=True, **encoder_kwargs)
        else:
            enc = NDSEncoder(in_features=DeconstructionEnv.feature_width(key),
                             directed=(key == "vrptw") if directed is None else directed,
                             dim=dim, heads=heads, ff_hidden=ff_hidden, pe=pe, pe_dim=pe_dim,
                             num_bands=num_bands, **encoder_kwargs)
        dec = NDSDecoder(dim, heads, poly_embedding_dim, z_dim, logit_clipping)
        return cls(enc, dec, key)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()
        nn.init.zeros_(self.start_last_node)

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
                           temperature, num_depots=getattr(obs, "num_depots", 1))

    def decode(self, h: Tensor, num_rollouts: int, k: int = 15,
               generator: torch.Generator | None = None, selected: Tensor | None = None,
               z: Tensor | None = None, temperature: float = 1.0, num_depots: int = 1
               ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`forward` from the encoder outputs ``h [S, M, dim]`` (:meth:`embed`):
        e.g. one encoder pass shared by sampling without gradient and scoring the
        chosen rollouts with it. ``num_depots``: the observation's number of depots
        (its depot rows 0 and ``N+1..M-1`` are never picked)."""
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
                                     temperature=temperature, num_depots=num_depots)
        return sel, log_prob, z

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.parameters())
        return (f"{type(self).__name__}(problem={self.problem!r}, pe={self.encoder.pe!r}, "
                f"dim={self.encoder.dim}, parameters={n})")
