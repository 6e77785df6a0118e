"""The 8 symmetries of the square about the depot: distance-preserving copies of an
instance, shared by every environment's augmentation.

The 4 rotations by 90 degrees and the 4 reflections, applied to the coordinates
relative to the depot, preserve all distances, so the same routes have the same
cost in every copy, while a learned policy sees 8 different inputs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pyg_routing.options import NUM_SYMMETRIES, check_augment

#: ``(a, b, c, d)``: ``(dx, dy) -> (a dx + b dy, c dx + d dy)``; identity first.
SYMMETRIES = (
    (1, 0, 0, 1), (0, -1, 1, 0), (-1, 0, 0, -1), (0, 1, -1, 0),    # rotations
    (1, 0, 0, -1), (-1, 0, 0, 1), (0, 1, 1, 0), (0, -1, -1, 0),    # reflections
)
if len(SYMMETRIES) != NUM_SYMMETRIES:     # the count the options' checks use
    raise ImportError(f"{len(SYMMETRIES)} symmetries, options.NUM_SYMMETRIES says "
                      f"{NUM_SYMMETRIES}")


def random_symmetries(num: int, generator: torch.Generator | None = None) -> list[int]:
    """``num`` symmetries drawn uniformly with repeats (N2S's random augmentations: a
    random rotation and random flips per copy, which are the 8 symmetries)."""
    check_augment(num, distinct=False)
    return torch.randint(len(SYMMETRIES), (num,), generator=generator).tolist()


def augment_positions(pos: Tensor, num: int = 8, which: list[int] | None = None) -> Tensor:
    """The first ``num`` symmetries of ``pos [B, M, 2]`` about node 0 (the depot), or
    the symmetries ``which`` (``num`` indices into :data:`SYMMETRIES`, repeats allowed),
    stacked copy-major: ``[num * B, M, 2]`` (row ``c * B + b`` = copy ``c`` of ``b``)."""
    if which is None:
        check_augment(num)
        which = list(range(num))
    elif len(which) != num or not all(0 <= int(w) < len(SYMMETRIES) for w in which):
        raise ValueError(f"which must be {num} symmetry indices in 0..{len(SYMMETRIES) - 1}, "
                         f"got {which!r}")
    depot = pos[:, :1]
    d = pos - depot
    mats = torch.tensor([SYMMETRIES[int(w)] for w in which], dtype=pos.dtype,
                        device=pos.device).view(num, 1, 1, 2, 2)
    # Products by 0 and ±1 summed elementwise, not a matmul: exact, also under
    # torch.autocast (which would round a matmul's coordinates to 16 bits).
    out = (mats * d.unsqueeze(-2).unsqueeze(0)).sum(-1) + depot.unsqueeze(0)
    return out.reshape(num * pos.size(0), *pos.shape[1:])
