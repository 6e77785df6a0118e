"""Batch slices for the no-gradient hot paths of the search, and the budget of the
training passes that keep their slices' activations (:func:`keeps_activations`).

A search step over ``B`` instances of ``M`` nodes makes temporaries of ``B * M * dim``
(encoder) and ``B * M * M * hidden`` (pair scores) elements. At the batch sizes users
run (CVRP-100 at ``B = 512``: 58 000 rows, 6.6 M pairs) every such temporary is tens
to hundreds of megabytes: glibc serves allocations above 32 MB with fresh maps and
gives them back on free, so each step faults and zeroes them again (about 300 000
page faults per step), and each elementwise pass streams them through main memory.
Run on slices of the batch instead, the same computations keep every temporary a few
megabytes (cache-resident, reused by the allocator: no fault in steady state).

Only where nothing needs a gradient: with autograd, slices would change the sum order
of the weight gradients (and the saved activations are needed whole anyway). The
operations sliced are row-wise over the batch, so a slice computes what the whole
batch computes, bit for bit on one thread except in the layers with a single output
column (MKL's matrix-vector products sum in an order that depends on the number of
rows: a last-bit difference; tests check both per model) and, on some CPUs, in products
of 1-3 rows or on several threads (``docs/design.md``, which has the measurements).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from pyg_routing.memory import available_memory

#: elements of a slice's temporaries (``2^20`` floats: 4 MB, about the L2 cache of the
#: development machine): above it the passes leave the cache, far below it the
#: per-slice dispatch dominates. Measured on DACT at CVRP-100, B = 512, one thread (a
#: loaded machine, +-10 %): the encoder was fastest on slices of 12-24 instances, the
#: pair scores on 1-5 instances (13 000-65 000 pairs); 2^20 gives 17 and 2.
CHUNK_ELEMENTS = 1 << 20


#: on a GPU the caching allocator never faults and every op is a kernel launch: slices
#: only bound the memory (256 MB of float32), they are not for the cache.
CUDA_CHUNK_ELEMENTS = 1 << 26


#: the bytes of activations a training pass in slices keeps for its backward rather than
#: recompute them there, whatever the free memory: on the CPU half the free memory the
#: commands keep (:mod:`pyg_routing.memory`: 256 MB), so kept activations come back from
#: the heap each update instead of as fresh, faulted pages; on a GPU 1 GB.
KEEP_BYTES = 1 << 27
CUDA_KEEP_BYTES = 1 << 30
#: above those, a pass whose recomputation is a whole forward keeps what fits this share
#: of the memory still free (the device's, or the machine's capped by the process's
#: control group): the rest of the update's activations then have three quarters of it
KEEP_SHARE = 4


def keeps_activations(saved_bytes: int, device: torch.device | str, *,
                      up_to_free: bool = False) -> bool:
    """Whether a training pass whose slices save ``saved_bytes`` in all for the
    backward keeps them (else its backward recomputes each slice): up to
    :data:`KEEP_BYTES` on the CPU and :data:`CUDA_KEEP_BYTES` on a GPU; with
    ``up_to_free``, beyond that up to a :data:`KEEP_SHARE`-th of the memory free at the
    call. Either way the gradients are the same, bit for bit.

    ``up_to_free`` is for passes whose recomputation is a whole forward: DACT's decoder
    slices, each rerun with its dropout under ``torch.utils.checkpoint`` (its own PPO
    update at CVRP-100, ``B`` = 512: 14 % faster keeping 4.3 GB, with the kept pages
    faulted afresh each update). N2S's functions recompute two products a slice, and
    there the faults cost more than they spared (PDP-101, ``B`` = 300: 6 % slower). Each
    pass is judged when it runs, so a later pass sees what an earlier one kept as taken.
    """
    device = torch.device(device)
    if device.type == "cuda":
        floor = CUDA_KEEP_BYTES
        free = _free_cuda_bytes(device) if up_to_free else None
    else:
        floor, free = KEEP_BYTES, available_memory() if up_to_free else None
    return saved_bytes <= max(floor, (free or 0) // KEEP_SHARE)


def _free_cuda_bytes(device: torch.device) -> int:
    """The device's free memory and what PyTorch's caching allocator holds unused."""
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def chunk_budget(device: torch.device | str) -> int:
    """Elements of the largest temporary of a chunk on ``device``."""
    return CUDA_CHUNK_ELEMENTS if torch.device(device).type == "cuda" else CHUNK_ELEMENTS


def instances_per_chunk(per_instance: int, budget: int = CHUNK_ELEMENTS) -> int:
    """How many instances a chunk holds when each brings ``per_instance`` elements
    to the largest temporary (at least one)."""
    return max(1, budget // max(1, per_instance))


def batch_slices(batch: int, per_chunk: int, min_size: int = 1) -> Iterator[slice]:
    """``slice``\\ s of ``per_chunk`` instances covering ``range(batch)``; a last slice
    shorter than ``min_size`` joins the one before it (a product whose rows are the
    instances takes another MKL path, with another summation order, for one row)."""
    per_chunk = max(per_chunk, min_size)
    starts = list(range(0, batch, per_chunk))
    if len(starts) > 1 and batch - starts[-1] < min_size:
        starts.pop()
    for i, start in enumerate(starts):
        yield slice(start, batch if i == len(starts) - 1 else start + per_chunk)


def in_slices(body: Callable[..., Tensor], tensors: Sequence[Tensor | None], per_chunk: int,
              out: Tensor) -> Tensor:
    """``out[sl] = body(*(t[sl] for t in tensors))`` for the slices of ``per_chunk``
    instances (:func:`batch_slices` over ``out``'s first dimension; a ``None`` stays
    ``None``); returns ``out``."""
    for sl in batch_slices(out.size(0), per_chunk):
        out[sl] = body(*(None if t is None else t[sl] for t in tensors))
    return out


def needs_grad(module: nn.Module | None, *tensors: Tensor | None) -> bool:
    """Whether autograd will record a computation on ``tensors`` with ``module``'s
    parameters (the chunked paths run only where it will not)."""
    if not torch.is_grad_enabled():
        return False
    if module is not None and any(p.requires_grad for p in module.parameters()):
        return True
    return any(t is not None and t.requires_grad for t in tensors)
