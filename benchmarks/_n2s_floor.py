"""The arithmetic floor of an N2S step on this machine: the work N2S's architecture
needs whatever the implementation, timed alone on random tensors of the right shapes.

Inference, per step: every matrix product of the actor at its shape (3 Synthesis
Attention layers: QKV, ``Q K^T``, ``A V``, output, 2 feed-forward; the decoder input
projection; the removal decoder's bilinear form; the reinsertion compatibilities and
the pair MLP's hidden layer over the ``P (2P - 1)`` places), plus the softmaxes and
instance norms of the layers. What is left out is what an implementation may fuse or
skip: permutes, bias adds, ReLUs, gathers, the pair MLP's first and last layers, the
sampling, the environment step.

Training, per step of n-step PPO with ``K`` updates: ``K`` actor and critic forwards
(the rollout's own forward is the first update's), the bootstrap encoder and critic
``K / n_step`` times, and ``K`` backward passes counted as two products per forward
product (the input and the weight gradient) and nothing else.

So ``rl4co's time / floor time`` is the most any eager implementation of the same
model could be faster than rl4co here, the ceiling of the speed-up targets.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor

from pyg_routing.models.n2s.synthesis_attention import instance_norm

Gemm = tuple[int, int, int, int]           # (batch, rows, inner, columns)


def encoder_gemms(b: int, m: int, dim: int, heads: int, layers: int, ff: int) -> list[Gemm]:
    d = dim // heads
    per_layer = [(1, b * m, dim, 3 * dim), (b * heads, m, d, m), (b * heads, m, m, d),
                 (1, b * m, dim, dim), (1, b * m, dim, ff), (1, b * m, ff, dim)]
    return per_layer * layers


def decoder_gemms(b: int, m: int, dim: int, heads: int, hidden: int = 32) -> list[Gemm]:
    pairs = (m - 1) // 2
    places = pairs * (2 * pairs - 1)
    return [(1, b * m, dim, dim), (1, b * m, dim, heads * dim), (b, m, dim, 4 * heads),
            (1, b * places, hidden, hidden)]


def critic_gemms(b: int, m: int, dim: int, heads: int) -> list[Gemm]:
    d = dim // heads
    return [(1, b * m, dim, 3 * dim), (b * heads, m, d, m), (b * heads, m, m, d),
            (1, b * m, dim, dim), (1, b * m, dim, dim), (1, b * m, dim, dim),
            (1, b * m, dim, dim // 2)]


def backward_gemms(gemms: list[Gemm]) -> list[Gemm]:
    """The input and the weight gradient of every product."""
    out = []
    for batch, rows, inner, cols in gemms:
        out += [(batch, rows, cols, inner), (batch, inner, rows, cols)]
    return out


def _gemm_ops(gemms: list[Gemm]) -> list[Callable[[], Tensor]]:
    ops = []
    for batch, rows, inner, cols in gemms:
        a, w = torch.randn(batch, rows, inner), torch.randn(batch, inner, cols)
        out = torch.empty(batch, rows, cols)
        ops.append(lambda a=a, w=w, out=out: torch.bmm(a, w, out=out))
    return ops


def _layer_ops(b: int, m: int, dim: int, heads: int, layers: int) -> list[Callable[[], Tensor]]:
    scores, h = torch.randn(b, heads, m, m), torch.randn(b, m, dim)
    return [lambda: torch.softmax(scores, -1), lambda: instance_norm(h),
            lambda: instance_norm(h)] * layers


class N2SFloor:
    """The floor of one N2S step (see the module docstring) for ``b`` instances of
    ``m`` nodes; ``inference(steps)`` and ``training(steps, n_step, k)`` return
    runners ``run(round) -> seconds`` like the benchmark's others."""

    def __init__(self, b: int, m: int, dim: int = 128, heads: int = 4, layers: int = 3,
                 ff: int = 128) -> None:
        encoder = encoder_gemms(b, m, dim, heads, layers, ff)
        actor = encoder + decoder_gemms(b, m, dim, heads)
        critic = critic_gemms(b, m, dim, heads)
        norms = _layer_ops(b, m, dim, heads, layers)
        self.actor = _gemm_ops(actor) + norms
        self.actor_critic = _gemm_ops(actor + critic) + norms
        self.bootstrap = _gemm_ops(encoder + critic) + norms
        self.backward = _gemm_ops(backward_gemms(actor + critic))

    @staticmethod
    def _timed(ops: list[Callable[[], Tensor]], times: int) -> float:
        start = time.perf_counter()
        for _ in range(times):
            for op in ops:
                op()
        return time.perf_counter() - start

    def inference(self, steps: int) -> Callable[[int], float]:
        self._timed(self.actor, 1)                                     # warm-up
        return lambda _: self._timed(self.actor, steps)

    def training(self, steps: int, n_step: int, k: int = 3) -> Callable[[int], float]:
        def run(_: int) -> float:
            return (self._timed(self.actor_critic, k * steps)
                    + self._timed(self.backward, k * steps)
                    + self._timed(self.bootstrap, k * steps // n_step))
        run(0)                                                         # warm-up
        return run
