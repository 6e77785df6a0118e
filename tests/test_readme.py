"""The README's Python examples run as written when pasted, in order, into a script file
(no ``if __name__ == "__main__":`` guard), in a fresh interpreter."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
CHECKS = """
assert tuple(ds[0].pe.shape) == (21, 72)
assert tuple(h.shape) == (168, 128)
assert result.cost.shape == (4,)
print("README blocks ran")
"""


@pytest.mark.slow
def test_readme_python_blocks_run_as_a_script(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    script = tmp_path / "readme_example.py"
    script.write_text("\n".join(blocks) + CHECKS)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "README blocks ran" in run.stdout


def test_readme_command_lines_parse_with_the_grammar():
    """Every ``pyg-routing train|compare`` line of the README's shell blocks is a valid
    command line of today's grammar (parsed, not run)."""
    import importlib

    from pyg_routing.commands.grammar import normalize

    shell = "\n".join(re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S))
    lines = [seg.strip().split("#")[0].split(">")[0].split()
             for line in shell.splitlines() for seg in line.split("&&")
             if seg.strip().startswith("pyg-routing ")]
    checked = 0
    for argv in lines:
        if argv[1] in ("train", "compare"):
            module = importlib.import_module(f"pyg_routing.commands.{argv[1]}")
            module.parse(normalize(argv[2:]))
            checked += 1
    assert checked >= 3
