"""Print pip constraints that pin every dependency of pyproject.toml (and its ``test``
extra) at its stated lower bound: ``name>=X`` becomes ``name==X``.

torch is left out: ``.ci/lower-bounds`` holds it at the CPU wheel (torch==2.13.0),
because any other torch release pulls gigabytes of CUDA packages; its bound is checked
by reading torch's sources (see docs/design.md, "Dependency bounds").
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

HELD = {"torch"}


def main() -> int:
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    for spec in wanted:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([^,;\s]+)\s*(,.*)?", spec)
        if m is None:
            print(f"no lower bound in {spec!r}", file=sys.stderr)
            return 1
        name = re.sub(r"\[.*\]", "", m.group(1))
        if name not in HELD:
            print(f"{name}=={m.group(2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
