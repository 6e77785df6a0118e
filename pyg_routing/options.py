"""The closed vocabularies of the library's options, and the constants their bounds
read: one definition of each, importing neither torch nor PyG.

The command line builds every command's help and refuses a bad value from these
lists before it imports torch, PyG or Lightning (``pyg-routing train --help`` stays
fast). The modules that implement each name import its list from here, so a new
choice is added in one place.
"""

from __future__ import annotations

import math

# --------------------------------------------------------------------- encodings
#: IPE's direction variants (the problem's own, ``auto``, is added by the transforms)
DIRECTIONS = ("aware", "invariant")
#: The IPE transforms' ``direction`` choices: the problem's own variant, or either forced.
IPE_DIRECTIONS = ("auto", *DIRECTIONS)
#: IPE's phase: the distance along the route (the paper's IPE) or the within-route index
#: (Tab. 8's "index-based" ablation)
PHASES = ("distance", "index")
#: IPE's frequency ladders
FREQUENCIES = ("harmonic", "geometric")
#: IPE amplitude schedules and their exponent ``p`` (channel ``k`` scaled by ``(k+1)^-p``).
AMPLITUDES = {"inverse_square": 2.0, "inverse": 1.0, "flat": 0.0}
#: XPE's choices: the per-node angle, or one of the per-route aggregations
AGGREGATIONS = ("node", "mean", "circular_mean", "demand_mean", "median", "midpoint")
#: XPE's reference point on multi-depot solutions (:mod:`pyg_routing.functional.depot_reference`):
#: node 0 (the paper's one depot), the route's own depot, or the route's own depot plus a
#: code of that depot
XPE_REFERENCES = ("first", "route", "route_code")

# ------------------------------------------------------------------------ models
#: the encoders a backbone with an architecture of its own (DACT, N2S, NDS) can take:
#: its own (``native``, for fidelity to the original) or the GraphGPS-style one (``gps``)
ENCODERS = ("native", "gps")
#: Local message passing over the route graph (see :class:`~pyg_routing.models.GPSEncoder`).
LOCAL_MPS = ("directed", "undirected", "none")
#: Named ways the GPS encoder's first-layer weights on the node code start; a number
#: ``s >= 0`` is accepted too (a code block ``s`` times PyTorch's own draw).
PE_INITS = ("zero", "default")
#: options of ``DACTPolicy.build`` that only the GPS network takes
DACT_GPS_ONLY = ("local_mp", "pe_init")
#: Width of PolyNet's binary latent in NDS (so at most ``2 ** NDS_Z_DIM`` distinct
#: rollouts per solution)
NDS_Z_DIM = 10

# ------------------------------------------------------------------ environments
#: the symmetries of the square about the depot that augmentation applies
#: (:data:`pyg_routing.envs.augment.SYMMETRIES`)
NUM_SYMMETRIES = 8

#: the originals whose checkpoints ``import-checkpoint --from`` reads -> our backbone
ORIGINALS = {"nds": "nds", "n2s": "n2s", "dact": "dact"}

# -------------------------------------------------------------------------- data
#: The generators' cost models (option ``costs``).
COST_MODELS = ("euclidean", "streets")
#: Defaults of the ``streets`` model: a 10 x 10 grid, every inner street one-way.
DEFAULT_GRID, DEFAULT_ONE_WAY = 10, 1.0
#: The generator presets (``--data.preset``; :data:`pyg_routing.data.presets.PRESETS`
#: defines each under these names): the paper's App. F data, NDS's data and Tab. 6's
#: two shifted families
PRESET_NAMES = ("paper", "nds", "nds_low_capacity", "nds_clustered")


def check_pe_init(pe_init: str | float) -> str | float:
    """``pe_init`` as ``"zero"``, ``"default"`` or a finite float ``>= 0`` (a string
    such as ``"0.25"``, as the CLI passes it, becomes the float); anything else is
    refused with the valid choices."""
    if isinstance(pe_init, str) and pe_init in PE_INITS:
        return pe_init
    try:
        scale = float(pe_init)
    except (TypeError, ValueError):
        scale = float("nan")
    if isinstance(pe_init, bool) or not (scale >= 0.0 and math.isfinite(scale)):
        raise ValueError(f"unknown pe_init {pe_init!r}; choose from {PE_INITS} or a "
                         f"number >= 0 (the code block's scale)")
    return scale


def check_augment(num: int, distinct: bool = True) -> None:
    """Refuse an augmentation count outside ``1 .. 8`` (``distinct`` symmetries; drawn at
    random, any count ``>= 1``), naming it."""
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"augment must be an integer >= 1, got {num!r}")
    if distinct and num > NUM_SYMMETRIES:
        raise ValueError(f"augment must be an integer in 1..{NUM_SYMMETRIES}, got {num!r} "
                         f"(the distinct symmetries of the square)")
