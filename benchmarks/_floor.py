"""Shared parts of the floor benchmarks (``bench_dact.py``, ``bench_n2s.py``,
``bench_nds.py``): the floor's operations, and interleaved timing with CPU time, wall
time and page faults.

The floor of a unit of work (a search step, a decoder pass, a training batch) is
the arithmetic its architecture must do whatever the implementation: every matrix
product at its shape, the attention, the softmaxes and the norms, each timed alone
on random tensors, at the model's full shapes, into outputs allocated once (no
allocation, no page fault, no permute, no bias add, no ReLU, no gather, no sampling,
no environment). Tensors past 64 MB are views of one buffer per role (inputs,
outputs; :data:`SHARE_BYTES`), so the training floors at batch 512 fit in memory.
``floor / ours`` is the share of our time that is this arithmetic. It is not a
hardware bound: memory-bound operations run faster in cache-sized slices than at full
shape, so an implementation that slices can beat a floor row.

Timing: every runner is timed once per round, rounds interleaved, so a slow phase
of the machine hits every row alike; medians over the rounds. The main figure is the
process CPU time on ONE torch thread (:func:`pyg_routing.threads.apply_threads` with
``PYG_ROUTING_THREADS=1`` unless the user set it): on a machine shared with other
jobs a descheduled process does not accrue CPU time, where its wall time would grow.
Wall time is printed beside it. Page faults are the process's minor faults
(``ru_minflt``) during the unit: fresh pages the kernel had to map and zero. The
process keeps the memory it frees, as the commands' processes do
(:mod:`pyg_routing.memory`); ``PYG_ROUTING_MALLOC=glibc`` times glibc's defaults, what
a Python program that does not set them gets.

On CUDA (``--device cuda``, :func:`use_device`) the floor's tensors live on the GPU,
in half precision under ``--precision bf16|16`` (the products autocast would run),
and the main figure is the wall time from a synchronized start to a synchronized end:
process CPU time says nothing of the GPU's work.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from pyg_routing.memory import apply_memory_policy
from pyg_routing.models.compiled import set_compiled
from pyg_routing.threads import THREADS_ENV, apply_threads

Op = Callable[[], object]

#: Where the floor's tensors live and their dtype (:func:`use_device`).
_DEVICE = torch.device("cpu")
_DTYPE = torch.float32
#: the process's memory policy, as :func:`as_a_command` set it (for :func:`machine_line`)
_MEMORY = "glibc's malloc defaults"
#: ``--precision`` -> the autocast dtype (``None``: full precision).
PRECISIONS = {"32": None, "bf16": torch.bfloat16, "16": torch.float16}


def use_device(device: str, precision: str = "32") -> torch.device:
    """Put the floor on ``device``, in the half precision ``precision`` names (products
    under autocast run in it; on the CPU only ``"32"``). Returns the device."""
    global _DEVICE, _DTYPE
    _DEVICE = torch.device(device)
    if _DEVICE.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {device}: no CUDA device is available here")
    if precision not in PRECISIONS:
        raise SystemExit(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")
    if precision != "32" and _DEVICE.type != "cuda":
        raise SystemExit(f"--precision {precision}: half precision is timed on CUDA only")
    _DTYPE = PRECISIONS[precision] or torch.float32
    return _DEVICE


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    """``--device`` and ``--precision``, the same in every floor benchmark."""
    parser.add_argument("--device", default="cpu",
                        help="cpu or cuda (CUDA rows are synchronized wall time)")
    parser.add_argument("--precision", default="32", choices=list(PRECISIONS),
                        help="on CUDA: ours under torch.autocast in bf16 or 16, the floor in it")


def under_precision(fn: Op, precision: str) -> Op:
    """``fn`` under ``torch.autocast`` in ``precision``'s dtype (unchanged for ``"32"``)."""
    dtype = PRECISIONS[precision]
    if dtype is None:
        return fn

    def run() -> object:
        with torch.autocast(_DEVICE.type, dtype=dtype):
            return fn()
    return run


#: Floor tensors of at least this many bytes are views of one buffer per role (inputs,
#: outputs, zeros) as large as the largest of them: operations run one at a time, and
#: past the caches' sizes sharing changes no time. With separate tensors the training
#: floor of DACT's own network at CVRP-100, batch 512 (a dozen pair tensors ``[B M², 32]``
#: of 850 MB each) outgrew 24 GB; now it takes 11 GB, mostly its tensors below the bound.
SHARE_BYTES = 1 << 26
_POOLS: dict[tuple, torch.Tensor] = {}
_VIEWS: dict[tuple, list[torch.Tensor]] = {}


def _floor_buffer(role: str, shape: tuple[int, ...],
                  fill: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """A tensor of ``shape`` filled by ``fill``; past :data:`SHARE_BYTES` a view of the
    role's shared buffer, which grows to the largest asked for (the views handed out
    before are moved onto the new one)."""
    numel = math.prod(shape)
    if numel * _DTYPE.itemsize < SHARE_BYTES:
        return fill(torch.empty(shape, device=_DEVICE, dtype=_DTYPE))
    key = (role, _DEVICE, _DTYPE)
    pool, views = _POOLS.get(key), _VIEWS.setdefault(key, [])
    if pool is None or pool.numel() < numel:
        pool = _POOLS[key] = fill(torch.empty(numel, device=_DEVICE, dtype=_DTYPE))
        for view in views:
            view.set_(pool.untyped_storage(), 0, view.shape)
    view = torch.empty(0, device=_DEVICE, dtype=_DTYPE).set_(pool.untyped_storage(), 0, shape)
    views.append(view)
    return view


def floor_tensor(*shape: int) -> torch.Tensor:
    """A random tensor of ``shape`` on the floor's device, in its dtype (past
    :data:`SHARE_BYTES` a view of the inputs' shared buffer)."""
    return _floor_buffer("input", shape, lambda t: t.normal_())


def _empty(*shape: int) -> torch.Tensor:
    return _floor_buffer("output", shape, lambda t: t)


def as_a_command() -> int:
    """The process set up as the commands set theirs, on one thread: torch on one
    thread unless ``PYG_ROUTING_THREADS`` says otherwise, and the commands' memory
    policy (:mod:`pyg_routing.memory`: freed memory kept; ``PYG_ROUTING_MALLOC=glibc``
    times glibc's defaults instead). Returns the thread count."""
    global _MEMORY
    os.environ.setdefault(THREADS_ENV, "1")
    _MEMORY = "freed memory kept" if apply_memory_policy() else "glibc's malloc defaults"
    return apply_threads()


def machine_line() -> str:
    """Cores, torch threads, load average, memory policy: the state the numbers were
    taken in."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    gpu = (f", {torch.cuda.get_device_name(_DEVICE)} ({str(_DTYPE).removeprefix('torch.')} "
           f"floor)" if _DEVICE.type == "cuda" else "")
    return (f"{os.cpu_count()} cores, torch {torch.__version__} on "
            f"{torch.get_num_threads()} thread(s), {_MEMORY}, load average {load}{gpu}")


# ------------------------------------------------------------------ floor ops
def gemm(batch: int, rows: int, inner: int, cols: int) -> Op:
    """``[batch, rows, inner] @ [batch, inner, cols]`` into a reused output."""
    a, w = floor_tensor(batch, rows, inner), floor_tensor(batch, inner, cols)
    out = _empty(batch, rows, cols)
    return lambda: torch.bmm(a, w, out=out)


def gemms(shapes: list[tuple[int, int, int, int]]) -> list[Op]:
    """:func:`gemm` of each ``(batch, rows, inner, cols)``."""
    return [gemm(*s) for s in shapes]


def backward_shapes(shapes: list[tuple[int, int, int, int]]
                    ) -> list[tuple[int, int, int, int]]:
    """The input and the weight gradient of every product (two per product)."""
    out = []
    for batch, rows, inner, cols in shapes:
        out += [(batch, rows, cols, inner), (batch, inner, rows, cols)]
    return out


def attention(batch: int, heads: int, length: int, head_dim: int, keys: int | None = None,
              mask: bool = False) -> Op:
    """Scaled dot-product attention (PyTorch's fused kernel): ``batch x heads`` queries
    ``[length, head_dim]`` over ``keys`` keys (default ``length``), optionally with an
    additive ``[batch, 1, length, keys]`` mask."""
    keys = length if keys is None else keys
    q = floor_tensor(batch, heads, length, head_dim)
    k, v = floor_tensor(batch, heads, keys, head_dim), floor_tensor(batch, heads, keys, head_dim)
    bias = _floor_buffer("zeros", (batch, 1, length, keys), torch.Tensor.zero_) \
        if mask else None
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


def layer_norm(rows: int, width: int) -> Op:
    """``layer_norm`` over the last dim of ``[rows, width]``."""
    x = floor_tensor(rows, width)
    return lambda: F.layer_norm(x, (width,))


def instance_norm(batch: int, channels: int, length: int) -> Op:
    """``instance_norm`` of ``[batch, channels, length]`` (per instance and channel)."""
    x = floor_tensor(batch, channels, length)
    return lambda: F.instance_norm(x)


def softmax(rows: int, cols: int) -> Op:
    """A softmax over ``cols`` for ``rows`` rows, into a reused output."""
    x, out = floor_tensor(rows, cols), _empty(rows, cols)
    return lambda: torch.softmax(x, -1, out=out)


def run_ops(ops: list[Op], times: int = 1) -> None:
    for _ in range(times):
        for op in ops:
            op()


# ------------------------------------------------------------------ ours
def search_runners(env: Any, state: Any, policy: torch.nn.Module, precision: str,
                   label: str = "ours", seed: int = 0) -> dict[str, tuple[Op, int]]:
    """``{label}: search step`` (what :class:`~pyg_routing.search.StepSearch` does per
    step: the observation, the policy's move and the environment's step, from ``state``
    on) and ``{label}: policy`` (the move alone on ``state``'s observation), without
    gradients, under ``precision``; the draws come from a generator of ``seed``."""
    device = state.order.device
    gen = torch.Generator(device=device).manual_seed(seed)
    current = [state]
    fixed = env.policy_observation(state, torch.float32)

    def search_step() -> None:
        policy.eval()
        with torch.no_grad():
            obs = env.policy_observation(current[0], torch.float32)
            current[0] = env.step(current[0], policy.act(obs, generator=gen))[0]

    def policy_move() -> None:
        policy.eval()
        with torch.no_grad():
            policy.act(fixed, generator=gen)

    return {f"{label}: search step": (under_precision(search_step, precision), 1),
            f"{label}: policy": (under_precision(policy_move, precision), 1)}


def compiled_copy(policy: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``policy`` (same weights) whose search path runs under
    ``torch.compile`` (:func:`pyg_routing.models.compiled.set_compiled`)."""
    twin = copy.deepcopy(policy)
    if not set_compiled(twin, True):
        raise SystemExit(f"--compiled: nothing in {type(policy).__name__} runs compiled")
    return twin


# ------------------------------------------------------------------ timing
@dataclass
class Sample:
    """One timed call: CPU and wall seconds and minor page faults, per unit (on CUDA,
    ``cpu`` is the synchronized wall time: the main figure, see the module's text)."""

    cpu: float
    wall: float
    faults: float


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(fn: Op, units: int = 1) -> Sample:
    """``fn()`` once, per unit of work (``units``: how many units one call does)."""
    cuda = _DEVICE.type == "cuda"
    if cuda:
        torch.cuda.synchronize(_DEVICE)
    f0, c0, w0 = _faults(), time.process_time(), time.perf_counter()
    fn()
    if cuda:
        torch.cuda.synchronize(_DEVICE)
    wall = (time.perf_counter() - w0) / units
    cpu = wall if cuda else (time.process_time() - c0) / units
    return Sample(cpu, wall, (_faults() - f0) / units)


@dataclass
class Row:
    """Medians of a runner's samples."""

    name: str
    cpu: float
    wall: float
    faults: float
    spread: tuple[float, float]         # min and max CPU time


def interleaved(runners: dict[str, tuple[Op, int]], rounds: int,
                warmup: int = 1) -> dict[str, Row]:
    """Each runner ``name -> (call, units per call)`` once per round after ``warmup``
    untimed rounds; medians per runner."""
    for _ in range(warmup):
        for fn, _units in runners.values():
            fn()
    samples: dict[str, list[Sample]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, (fn, units) in runners.items():
            samples[name].append(timed(fn, units))
    rows = {}
    for name, got in samples.items():
        cpu = [s.cpu for s in got]
        rows[name] = Row(name, statistics.median(cpu), statistics.median(s.wall for s in got),
                         statistics.median(s.faults for s in got), (min(cpu), max(cpu)))
    return rows


def print_table(title: str, rows: dict[str, Row], floor: str | None,
                ours: list[str]) -> dict[str, float]:
    """The rows with ``floor / row`` (CPU time; on CUDA synchronized wall time) for
    every row of ``ours``; returns those ratios by name (none without a ``floor``)."""
    print(f"\n{title}")
    main = "GPU ms" if _DEVICE.type == "cuda" else "CPU ms"
    print(f"{'row':<34}{main:>10}{'(min-max)':>16}{'wall ms':>10}{'faults':>10}"
          f"{'floor/ours':>12}")
    base = rows[floor].cpu if floor is not None else None
    ratios = {}
    for name, row in rows.items():
        ratio = ""
        if name in ours and base is not None:
            ratios[name] = base / row.cpu
            ratio = f"{ratios[name]:.2f}"
        spread = f"({1e3 * row.spread[0]:.0f}-{1e3 * row.spread[1]:.0f})"
        print(f"{name:<34}{1e3 * row.cpu:>10.1f}{spread:>16}{1e3 * row.wall:>10.1f}"
              f"{row.faults:>10.0f}{ratio:>12}")
    return ratios

