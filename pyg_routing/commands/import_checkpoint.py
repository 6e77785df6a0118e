"""``pyg-routing import-checkpoint --from nds|n2s|dact FILE --out CKPT``: an original NDS
(``checkpoint-*.pt``), N2S or DACT (``epoch-*.pt``) checkpoint as our training checkpoint,
which every command that takes ``--checkpoint`` then runs in our search
(:mod:`pyg_routing.training.import_checkpoint`).

Wire into :mod:`pyg_routing.cli` with :func:`add_import_checkpoint_parser` and
:func:`run_import_checkpoint` (Namespace -> dict).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from pyg_routing.training.backbones import add_trust_option
from pyg_routing.training.fit import count
from pyg_routing.training.import_checkpoint import ORIGINALS, import_original, write_checkpoint

NDS_PROBLEMS = ("cvrp", "vrptw", "pcvrp")


def add_import_checkpoint_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``import-checkpoint`` to an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "import-checkpoint", help="an original NDS, N2S or DACT checkpoint as ours",
        description="Convert a checkpoint saved by the original NDS (ahottung/NDS, "
                    "checkpoint-*.pt), N2S (yining043/PDP-N2S, epoch-*.pt) or DACT "
                    "(yining043/VRP-DACT, epoch-*.pt) code into a "
                    "pyg-routing checkpoint for evaluate, search --checkpoint and compare.")
    p.add_argument("--from", dest="original", required=True, choices=tuple(ORIGINALS),
                   help="the code that saved FILE")
    p.add_argument("file", metavar="FILE", help="the original checkpoint")
    p.add_argument("--out", required=True, help="our checkpoint to write (.ckpt)")
    p.add_argument("--problem", choices=NDS_PROBLEMS, default=None,
                   help="nds: the problem, checked against the file (default: the file's)")
    p.add_argument("--num-customers", type=count(1), default=None,
                   help="customers per instance the model was trained on (n2s, dact: "
                        "required, the file does not say; nds: default the file's "
                        "problem_size)")
    p.add_argument("--heads", type=count(1), default=None,
                   help="nds: attention heads when the file's model_params cannot be read "
                        "(default: the file's head_num, else NDS's 8)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    add_trust_option(p)
    return p


def run_import_checkpoint(args: argparse.Namespace) -> dict[str, Any]:
    """Import ``args.file`` and write ``args.out``; returns what was written."""
    options: dict[str, Any] = {"num_customers": args.num_customers}
    if args.original == "nds":
        options |= {"problem": args.problem, "heads": args.heads}
    elif args.problem is not None or args.heads is not None:
        raise ValueError("--problem and --heads apply to --from nds only (an N2S or DACT "
                         "file's problem and heads are read from its weights)")
    ckpt = import_original(args.original, args.file,
                           trust=getattr(args, "trust_checkpoint", False), **options)
    out = write_checkpoint(ckpt, args.out)
    hp = ckpt["hyper_parameters"]
    keep = ("backbone", "problem", "num_customers", "pe", "dim", "heads", "num_layers")
    return {"from": args.original, "file": os.fspath(args.file), "out": os.fspath(out),
            **{k: hp[k] for k in keep},
            "parameters": sum(v.numel() for v in ckpt["state_dict"].values())}
