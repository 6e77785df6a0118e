"""``N2SPolicy``: N2S's actor-critic (Synthesis Attention encoder, removal and
reinsertion decoders, critic) with any encoding, for pair removal-reinsertion.

The policy reads the observation of
:class:`~pyg_routing.envs.PairReinsertionEnv` by duck typing (``x, pe, route_pos,
route_id, succ, mask, history, extra``); its input width is the environment's
(``PairReinsertionEnv.feature_width``) and the reinsertion places are its own rule
(:mod:`pyg_routing.functional.pickup_delivery`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pyg_routing.data.problems import Problem
from pyg_routing.envs.pair_reinsertion.env import PairReinsertionEnv
from pyg_routing.functional.pickup_delivery import candidate_index, reinsertion_candidates
from pyg_routing.models.gps_encoder import GPSEncoder, check_encoder
from pyg_routing.models.n2s.critic import N2SCritic
from pyg_routing.models.n2s.decoders import ReinsertionDecoder, RemovalDecoder
from pyg_routing.models.n2s.encoder import N2SEncoder
from pyg_routing.models.pe.positional import PositionalEncoding
from pyg_routing.models.policy import ImprovementPolicy
from pyg_routing.models.sampling import choose, log_prob_entropy

#: the encoder of each ``encoder`` choice (both read coordinates only)
ENCODER_CLASSES = {"native": N2SEncoder, "gps": GPSEncoder}


class N2SPolicy(ImprovementPolicy):
    r"""Actor-critic of N2S (Ma et al., IJCAI 2022) with the encoding as one argument.

    Action ``[B, 3] = (pair, first, second)``: remove pair ``pair`` (sampled from
    ``clip * tanh`` removal logits, ``obs.mask [B, P]``), reinsert its pickup after
    ``first`` and its delivery after ``second`` (sampled among the allowed places).
    ``log_prob`` is the sum of both choices'; ``entropy`` the sum of both
    distributions' (N2S logs the reinsertion's only; it is not in the loss).

    Args:
        encoder: an :class:`N2SEncoder` (or a :class:`GPSEncoder` on the coordinates).
        clip: logit clipping ``C`` of both decoders (N2S: 6).
        problem: the problem the policy is for (PDTSP).
    """

    def __init__(self, encoder: N2SEncoder | GPSEncoder, clip: float = 6.0,
                 problem: str | Problem | None = "pdtsp") -> None:
        super().__init__()
        self.problem = None if problem is None else Problem.parse(problem).value
        self.encoder = encoder
        dim, heads = encoder.dim, encoder.heads
        self.clip = clip
        self.project_node = nn.Linear(dim, dim, bias=False)
        self.project_graph = nn.Linear(dim, dim, bias=False)
        self.removal = RemovalDecoder(dim, heads)
        self.reinsertion = ReinsertionDecoder(dim, heads)
        self.critic = N2SCritic(dim, heads)

    @classmethod
    def build(cls, problem: Any = "pdtsp", pe: str | PositionalEncoding = "dact_cpe",
              dim: int = 128, heads: int = 4, num_layers: int = 3, pe_dim: int = 128,
              num_bands: int = 4, encoder: str = "native",
              **encoder_kwargs: Any) -> N2SPolicy:
        """A policy for ``problem`` (PDTSP) with encoding ``pe`` (a name or a built
        :class:`~pyg_routing.models.pe.PositionalEncoding`). ``encoder``: N2S's own
        Synthesis Attention (``"native"``) or :class:`GPSEncoder` (``"gps"``), same
        width, decoders unchanged; extra keyword arguments go to the encoder."""
        key = PairReinsertionEnv.check_problem(problem).value
        kind = ENCODER_CLASSES[check_encoder(encoder)]
        enc = kind(in_channels=PairReinsertionEnv.feature_width(key), dim=dim, heads=heads,
                   num_layers=num_layers, pe=pe, pe_dim=pe_dim, num_bands=num_bands,
                   **encoder_kwargs)
        return cls(enc, problem=key)

    def reset_parameters(self) -> None:
        for mod in (self.encoder, self.project_node, self.project_graph, self.removal,
                    self.reinsertion, self.critic):
            mod.reset_parameters()

    def decode(self, h: Tensor, obs: Any, action: Tensor | None, greedy: bool,
               generator: torch.Generator | None) -> tuple[Tensor, Tensor, Tensor]:
        """Pick (or score the given ``action [B, 3]``) a removal, then a reinsertion."""
        action, removal, pair, place, k = self._choose(h, obs, action, greedy, generator)
        lp_pair, ent_pair = log_prob_entropy(removal, pair)
        lp_place, ent_place = log_prob_entropy(place, k)
        return action, lp_pair + lp_place, ent_pair + ent_place

    def act(self, obs: Any, greedy: bool = False,
            generator: torch.Generator | None = None) -> Tensor:
        """Only the action (the draws :meth:`decode` makes for the same ``generator``
        state), without log-probabilities and entropies: the search path."""
        return self._choose(self.embed(obs), obs, None, greedy, generator)[0]

    def _choose(self, h: Tensor, obs: Any, action: Tensor | None, greedy: bool,
                generator: torch.Generator | None
                ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(action, removal logits [B, P], pair [B], place logits [B, K], place
        index [B])``: picked, or of the given ``action``."""
        b, m, _ = h.shape
        p = (m - 1) // 2
        hs = self.project_node(h) + self.project_graph(h.amax(1)).unsqueeze(1)
        removal = self.clip * torch.tanh(self.removal(hs, obs.succ, obs.history).float())
        removal = removal.masked_fill(~obs.mask, float("-inf"))
        pair = choose(removal, greedy, generator) if action is None else action[:, 0]
        pickup = pair + 1
        delivery = pickup + p
        rank = obs.route_pos
        order = torch.empty_like(rank).scatter_(
            1, rank, torch.arange(m, device=rank.device).expand_as(rank))
        first, second = reinsertion_candidates(order, rank, pickup, delivery)     # [B, K]
        place = self.reinsertion(hs, obs.succ, pickup, delivery, first, second).float()
        place = self.clip * torch.tanh(place)
        if action is None:
            k = choose(place, greedy, generator)
            action = torch.stack([pair, first.gather(1, k.unsqueeze(1)).squeeze(1),
                                  second.gather(1, k.unsqueeze(1)).squeeze(1)], 1)
        else:
            k = candidate_index(rank, pickup, delivery, action[:, 1], action[:, 2])
        return action, removal, pair, place, k

    def critic_value(self, h: Tensor, obs: Any) -> Tensor:
        return self.critic(h, obs.extra)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.encoder!r}, clip={self.clip})"
