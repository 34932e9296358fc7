"""Shared by the import tests (test_imports.py, test_import_reference.py); not a test module.

Regenerate each format's expected tree after a deliberate change with
``python tests/helpers_imports.py --regenerate`` and review the ``git diff``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ceilings import HANG_S
from memory_es import MemoryRoot
from memory_es.config import parse_config
from memory_es.events import Root
from memory_es.imports import apply_import

SAMPLES = Path(__file__).resolve().parent / "import_samples"
SOURCES = {"mem0": "mem0/memories.json", "notes": "notes/source",
           "chatgpt": "chatgpt/conversations.json", "memory-es": "memory-es/journal.jsonl",
           "mcp-memory": "mcp-memory/memory.jsonl"}
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}
AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UNDATED_NOTE = "projects/untitled.md"  # no date in its front matter: its file time counts
FILE_TIME = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).timestamp()
CLI = [sys.executable, "-m", "memory_es.cli"]
SIDECAR = ".replay-projection-v1.json"


def source(fmt: str, workdir: Path) -> Path:
    """The sample, copied where its file time counts (git keeps none: the undated note and
    the MCP graph, whose format holds no time, get a known one)."""
    sample = SAMPLES / SOURCES[fmt]
    workdir.mkdir(parents=True, exist_ok=True)
    if sample.is_dir():
        copy = workdir / "source"
        shutil.copytree(sample, copy)
        os.utime(copy / UNDATED_NOTE, (FILE_TIME, FILE_TIME))
        return copy
    if fmt == "mcp-memory":
        copy = Path(shutil.copy(sample, workdir / sample.name))
        os.utime(copy, (FILE_TIME, FILE_TIME))
        return copy
    return sample


def imported(fmt: str, workdir: Path) -> tuple[Path, Any]:
    root = workdir / "root"
    report = apply_import(root, source(fmt, workdir), fmt, config=parse_config(JOURNAL),
                          clock=lambda: AT)
    return root, report


def tree(root: Path) -> dict[str, bytes]:
    """What an import is pinned by: the exported journal and the daily Markdown."""
    out = io.BytesIO()
    MemoryRoot.open(root).export(out)
    files = {f"daily/{p.name}": p.read_bytes() for p in sorted((root / "daily").glob("*.md"))}
    return {"journal.jsonl": out.getvalue(), **files}


def expected(fmt: str) -> dict[str, bytes]:
    base = SAMPLES / fmt / "expected"
    return {p.relative_to(base).as_posix(): p.read_bytes()
            for p in sorted(base.rglob("*")) if p.is_file()}


def receipts(root: Path) -> list[Root.Imported]:
    return [e for _, e in MemoryRoot.open(root).events() if isinstance(e, Root.Imported)]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=HANG_S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def big_mem0(path: Path, count: int) -> Path:
    rows = [{"id": f"id-{i:05d}", "memory": f"Fact number {i} about topic {i % 97}",
             "created_at": f"2025-01-{1 + i % 28:02d}T10:00:00Z"} for i in range(count)]
    path.write_text(json.dumps(rows))
    return path


def regenerate() -> None:
    """Write each format's expected tree from the current code (a deliberate change)."""
    import tempfile

    os.environ["MEMORY_ES_KEY_STORE"] = tempfile.mkdtemp()
    for fmt in SOURCES:
        with tempfile.TemporaryDirectory() as work:
            root, _ = imported(fmt, Path(work))
            base = SAMPLES / fmt / "expected"
            shutil.rmtree(base, ignore_errors=True)
            for name, data in tree(root).items():
                (base / name).parent.mkdir(parents=True, exist_ok=True)
                (base / name).write_bytes(data)
            print(f"{fmt}: {len(tree(root))} files")


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    regenerate()
