"""The README's Python examples run as written, top to bottom like a notebook."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert tuple(namespace["ds"][0].pe.shape) == (21, 72)
    assert tuple(namespace["h"].shape) == (168, 128)
    assert namespace["result"].cost.shape == (4,)
