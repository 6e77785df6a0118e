"""In-place operations where they save a pass, and not where autograd makes them cost.

``nn.Linear`` on a contiguous ``[B, M, C]`` input multiplies its rows and returns a
*view* of the ``[B M, C']`` product (so does a ``reshape`` of it). An in-place op on
such a view is recorded by autograd as a write into the view's base: in the backward it
rebuilds the base's gradient (``CopySlices``: a fresh strided tensor, a clone, the op's
gradient and two copies), about five passes over the activation where the out-of-place
op's backward makes one or none. Every feed-forward block over nodes (DACT's encoder and
critic, N2S's critic and decoders, the GPS layers, NDS's encoder) had one such ReLU per
training pass, each GPS layer a residual sum in place on its attention's output, and
NDS's decoder a ReLU and a sum per pick.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def writable(x: Tensor) -> bool:
    """Whether an in-place op on ``x`` is as cheap as it looks: ``x`` is not a view
    that autograd records (without autograd, or on a fresh tensor, it is)."""
    return x._base is None or not (x.requires_grad and torch.is_grad_enabled())


def inplace_relu(x: Tensor) -> Tensor:
    """``x.relu_()`` where :func:`writable`, else ``torch.relu(x)``: the same values and
    gradients."""
    return x.relu_() if writable(x) else torch.relu(x)


def inplace_add(x: Tensor, other: Tensor) -> Tensor:
    """``x.add_(other)`` where :func:`writable`, else ``x + other``: the same values and
    gradients."""
    return x.add_(other) if writable(x) else x + other


class InplaceReLU(nn.ReLU):
    """:func:`inplace_relu` as a module (``nn.ReLU(inplace=True)`` in the MLPs).
    Shapes: any -> the same."""

    def __init__(self) -> None:
        super().__init__(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        return inplace_relu(x)
