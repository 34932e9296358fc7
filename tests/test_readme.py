"""The README is the front door: every ```python block in it runs, as a new user would run
it, in a fresh folder with the installed package (nothing else prepared)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.S)


def test_readme_has_the_api_examples() -> None:
    assert len(BLOCKS) >= 2  # the MemoryStore/MemoryRoot block and the BuJo capture block
    assert any("MemoryRoot.open" in b for b in BLOCKS)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index: int, tmp_path: Path) -> None:
    block = BLOCKS[index]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert (tmp_path / ".memory" / "journal.db").exists()  # the block really wrote a root
