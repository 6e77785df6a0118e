"""The arithmetic floor of an N2S step on this machine: the work N2S's architecture
needs whatever the implementation, timed alone on random tensors of the right shapes
(the conventions of ``_floor.py``: full shapes, outputs allocated once).

Inference, per step, for ``B`` instances of ``M = 2P + 1`` nodes, ``N = B M`` rows,
width ``D``, ``H`` heads of ``d = D / H``, ``K = P (2P - 1)`` reinsertion places:

* the node embedding (``N x 2 x D``);
* the positional (CPE) scores, once per step: the code's query and key projections
  (``N x W x D`` twice) and their per-head product (``B H x M x d x M``);
* per Synthesis Attention layer: the QKV projection (``N x D x 3D``), the node scores
  (``B H x M x d x M``), the pair MLP over the ``2H`` score channels of all ``B M^2``
  pairs (``2H -> 2H -> H``: ``B x 2H x 2H x M^2`` and ``B x H x 2H x M^2``), the
  softmax, the values (``B H x M x M x d``), the output projection, the feed-forward
  block (``N x D x F``, ``N x F x D``) and two instance norms;
* the decoders: the decoder input (``N x D x D``; the graph part is per instance),
  the removal's per-head bilinear forms (``N x D x H D`` and ``N x H x D x 2``), its
  MLP over the ``B P`` pairs (``2H + 4 -> 32 -> 32 -> 1``) and softmax; the
  reinsertion's compatibilities (``B x M x D x 4H``), its MLP's separable first
  layer (``N x 2H x 32`` twice), the ``32 -> 32 -> 1`` layers over all ``B K``
  places and the softmax over the places.

Left out (an implementation may fuse or skip them): permutes, bias adds, ReLUs,
tanh, gathers, the sampling, the environment step.

Training, per step of n-step PPO with ``K`` updates: ``K`` actor and critic forwards
(the rollout's own forward is the first update's), the bootstrap encoder and critic
``K / n_step`` times, and ``K`` backward passes counted as two products per forward
product (the input and the weight gradient) and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from _floor import Op, backward_shapes, floor_tensor, gemms, run_ops

from pyg_routing.models.n2s.synthesis_attention import instance_norm

Gemm = tuple[int, int, int, int]           # (batch, rows, inner, columns)


def encoder_gemms(b: int, m: int, dim: int, heads: int, layers: int, ff: int,
                  code: int = 128, features: int = 2) -> list[Gemm]:
    """The encoder's products (embedding, CPE scores, ``layers`` layers)."""
    d, n, pairs = dim // heads, b * m, m * m
    out = [(1, n, features, dim), (1, n, code, dim), (1, n, code, dim), (b * heads, m, d, m)]
    per_layer = [(1, n, dim, 3 * dim), (b * heads, m, d, m),
                 (b, 2 * heads, 2 * heads, pairs), (b, heads, 2 * heads, pairs),
                 (b * heads, m, m, d), (1, n, dim, dim), (1, n, dim, ff), (1, n, ff, dim)]
    return out + per_layer * layers


def decoder_gemms(b: int, m: int, dim: int, heads: int, hidden: int = 32) -> list[Gemm]:
    """The two decoders' products."""
    n, p = b * m, (m - 1) // 2
    places = p * (2 * p - 1)
    removal = [(1, n, dim, dim), (1, n, dim, heads * dim), (n, heads, dim, 2),
               (1, b * p, 2 * heads + 4, hidden), (1, b * p, hidden, hidden),
               (1, b * p, hidden, 1)]
    reinsertion = [(b, m, dim, 4 * heads), (1, n, 2 * heads, hidden), (1, n, 2 * heads, hidden),
                   (1, b * places, hidden, hidden), (1, b * places, hidden, 1)]
    return removal + reinsertion


def critic_gemms(b: int, m: int, dim: int, heads: int) -> list[Gemm]:
    d = dim // heads
    return [(1, b * m, dim, 3 * dim), (b * heads, m, d, m), (b * heads, m, m, d),
            (1, b * m, dim, dim), (1, b * m, dim, dim), (1, b * m, dim, dim),
            (1, b * m, dim, dim // 2)]


def _softmax_ops(b: int, m: int, heads: int, layers: int) -> list[Op]:
    """The layers' attention softmaxes and the decoders' (removal, reinsertion)."""
    p = (m - 1) // 2
    scores, removal = floor_tensor(b, heads, m, m), floor_tensor(b, p)
    places = floor_tensor(b, p * (2 * p - 1))
    return [lambda: torch.softmax(scores, -1)] * layers + [
        lambda: torch.softmax(removal, -1), lambda: torch.softmax(places, -1)]


def _norm_ops(b: int, m: int, dim: int, layers: int) -> list[Op]:
    h = floor_tensor(b, m, dim)
    return [lambda: instance_norm(h)] * (2 * layers)


class N2SFloor:
    """The floor of one N2S step (see the module docstring) for ``b`` instances of
    ``m`` nodes; :attr:`search` is one search step's ops; ``inference(steps)`` and
    ``training(steps, n_step, k)`` return runners ``run(round) -> seconds`` like the
    other runners of ``_n2s_vs_rl4co.py``."""

    def __init__(self, b: int, m: int, dim: int = 128, heads: int = 4, layers: int = 3,
                 ff: int = 128, code: int = 128) -> None:
        encoder = encoder_gemms(b, m, dim, heads, layers, ff, code)
        actor = encoder + decoder_gemms(b, m, dim, heads)
        critic = critic_gemms(b, m, dim, heads)
        rest = _softmax_ops(b, m, heads, layers) + _norm_ops(b, m, dim, layers)
        self.search = gemms(actor) + rest
        self.actor_critic = gemms(actor + critic) + rest
        self.bootstrap = gemms(encoder + critic) + _norm_ops(b, m, dim, layers)
        self.backward = gemms(backward_shapes(actor + critic))

    @staticmethod
    def _timed(ops: list[Op], times: int) -> float:
        start = time.perf_counter()
        run_ops(ops, times)
        return time.perf_counter() - start

    def inference(self, steps: int) -> Callable[[int], float]:
        self._timed(self.search, 1)                                    # warm-up
        return lambda _: self._timed(self.search, steps)

    def training(self, steps: int, n_step: int, k: int = 3) -> Callable[[int], float]:
        def run(_: int) -> float:
            return (self._timed(self.actor_critic, k * steps)
                    + self._timed(self.backward, k * steps)
                    + self._timed(self.bootstrap, k * steps // n_step))
        run(0)                                                         # warm-up
        return run
