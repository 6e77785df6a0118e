"""``pyg-routing import-checkpoint --from nds|n2s|dact FILE --out CKPT``: an original NDS
(``checkpoint-*.pt``), N2S or DACT (``epoch-*.pt``) checkpoint as our training checkpoint,
which every command that takes ``--checkpoint`` then runs in our search
(:mod:`pyg_routing.training.import_checkpoint`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pyg_routing.commands.dataset import Parsed
from pyg_routing.commands.grammar import CommandParser, count, typed
from pyg_routing.options import ORIGINALS

NDS_PROBLEMS = ("cvrp", "vrptw", "pcvrp")


def parse(argv: Sequence[str]) -> Parsed:
    p = CommandParser(
        prog="pyg-routing import-checkpoint",
        description="Convert a checkpoint saved by an original's code (" + ", ".join(
            ORIGINALS) + ") into a pyg-routing checkpoint for evaluate, search "
                         "--checkpoint and compare.")
    p.add_argument("--from", dest="original", required=True, choices=tuple(ORIGINALS),
                   help="the code that saved FILE")
    p.add_argument("file", metavar="FILE", help="the original checkpoint")
    p.add_argument("--out", required=True, help="our checkpoint to write (.ckpt)")
    p.add_argument("--problem", choices=NDS_PROBLEMS, default=None,
                   help="nds: the problem, checked against the file (default: the file's)")
    p.add_argument("--num_customers", type=count(1), default=None,
                   help="customers per instance the model was trained on (n2s, dact: required, "
                        "the file does not say; nds: default the file's problem_size)")
    p.add_argument("--heads", type=count(1), default=None,
                   help="nds: attention heads when the file's model_params cannot be read "
                        "(default: the file's head_num, else NDS's 8)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.add_argument("--trust_checkpoint", action="store_true",
                   help="UNSAFE: read FILE with full unpickling, which runs code from it; "
                        "only for files you made or trust")
    return Parsed(p.parse_args(list(argv)), typed(argv), "import-checkpoint")


def run(parsed: Parsed) -> dict[str, Any]:
    """Import ``FILE`` and write ``--out``; returns what was written. A bad ``--out`` is
    refused before the file is read, so nothing is written."""
    from pyg_routing.training.import_checkpoint import (  # torch: not for --help
        check_out_path,
        import_original,
        write_checkpoint,
    )

    args = parsed.options
    check_out_path(args.out)
    options: dict[str, Any] = {"num_customers": args.num_customers}
    if args.original == "nds":
        options |= {"problem": args.problem, "heads": args.heads}
    elif args.problem is not None or args.heads is not None:
        raise ValueError("--problem and --heads apply to --from nds only (the other "
                         "originals' problem and heads are read from the file)")
    ckpt = import_original(args.original, args.file, trust=args.trust_checkpoint, **options)
    out = write_checkpoint(ckpt, args.out)
    hp = ckpt["hyper_parameters"]
    return {"from": args.original, "file": os.fspath(args.file), "out": os.fspath(out),
            **{k: hp[k] for k in ("backbone", "problem", "num_customers", "pe")},
            "model": hp["model"],
            "parameters": sum(v.numel() for v in ckpt["state_dict"].values())}
