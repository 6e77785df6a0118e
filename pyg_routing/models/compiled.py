"""``torch.compile`` for the search's no-gradient networks.

A search step is hundreds of small operations per slice of the batch: products, and
between them bias adds, ReLUs, residual adds, layer norms, head-layout copies and
casts, each a pass over the slice's activations. Eagerly every pass streams its
tensor and most allocate one; Inductor fuses the elementwise passes into the
products' neighbours. On DACT's GPS network (one CPU thread), compiling the encoder's
slices and the pair scores brought a search step from 0.63-0.66 of its arithmetic floor
to 0.87-0.96 at CVRP-100, batch 512 and TSP-50, batch 64 (``benchmarks/bench_dact.py
--compiled``, docs/experiments.md). DACT's own network searches 17-20 % faster. N2S's
encoder and decoders took its step from 0.62 to 0.77 of its floor at PDP-101.

Where a module's eager form is written for eager PyTorch, its compiled body takes
another form of the same function under ``torch.compiler.is_compiling()``: Inductor
copies the broadcast bias of an ``addmm`` or ``baddbmm`` to the output's full size
before the product, and a product with 4 or 8 inner channels is memory-bound, so the
small per-pair MLPs run as broadcasts and sums or bias-free products that fuse with
their neighbours. NDS's decoder has no compiled path: its per-pick network took the
same time compiled.

A module opts in with a ``compiled`` attribute (``False`` by default): where it is
set and nothing needs a gradient, the module runs its per-slice body through
:func:`compiled_function`. Training keeps the eager code and its hand-written backward
passes (compiling the GPS encoder's forward and backward gained about 12 % in a trial).
:func:`set_compiled` sets the attribute on every module of a policy that has one.

The first call of each shape compiles (12-45 s on the 2-core development VM; a C++
compiler on CPU, Triton on CUDA); Inductor caches the result on disk for later
processes, and :class:`~pyg_routing.search.StepSearch` makes that call untimed. The
values equal the eager code's within float reassociation (fused sums run in another
order), so a sampled move may differ where two moves' scores tie to the last bit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor, nn

from pyg_routing.functional.chunks import needs_grad


@functools.cache
def compiled_function(fn: Callable) -> Callable:
    """``torch.compile(fn)``, built once per process and function. A method is
    compiled unbound (called with its module first), so the cache holds no module.

    Each configuration of a module (an encoding, a width) compiles a graph of its own
    for the same method. Past Dynamo's default of 8 graphs per function the later ones
    would run eagerly: ``compare --test.compile true`` over the 14 encodings would time
    compiled policies against eager ones. The limit is 64 graphs per function."""
    return torch.compile(fn, recompile_limit=64)


def search_body(module: nn.Module, method: str, *inputs: Tensor | None) -> Callable:
    """``module``'s ``method`` (e.g. its per-slice body): compiled where
    ``module.compiled`` is set and nothing needs a gradient (``inputs``: the tensors it
    will read), the module's own bound method otherwise."""
    if getattr(module, "compiled", False) and not needs_grad(module, *inputs):
        return functools.partial(compiled_function(getattr(type(module), method)), module)
    return getattr(module, method)


def is_compiled(policy: nn.Module) -> bool:
    """Whether some module of ``policy`` runs its search path compiled."""
    return any(getattr(mod, "compiled", False) is True for mod in policy.modules())


def set_compiled(policy: nn.Module, compiled: bool) -> list[str]:
    """Set ``compiled`` on every module of ``policy`` that has the attribute; returns
    their qualified names (empty: nothing in this policy can run compiled)."""
    names = []
    for name, mod in policy.named_modules():
        if isinstance(getattr(mod, "compiled", None), bool):
            mod.compiled = compiled
            names.append(name or type(mod).__name__)
    return names
