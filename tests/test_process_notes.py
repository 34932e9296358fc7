"""Code and the living architecture speak of the code: no issue or session numbers in
``src/`` or ``docs/ARCHITECTURE.md`` (history lives in git). SPEC IDs stay where they name a
requirement."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTE = re.compile(r"\b(?:issues?|sessions?) \d+\b", re.IGNORECASE)


def process_notes(files: list[Path]) -> list[str]:
    """``path:line: text`` of every line that cites an issue or session number."""
    found = []
    for path in files:
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if NOTE.search(line):
                found.append(f"{path.relative_to(path.anchor)}:{number}: {line.strip()}")
    return found


def test_src_and_the_architecture_cite_no_issue_or_session_number() -> None:
    files = [*sorted((REPO / "src").rglob("*.py")), REPO / "docs" / "ARCHITECTURE.md"]
    assert len(files) > 100
    assert process_notes(files) == []


def test_the_scan_finds_a_planted_note(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""Fast recall (issue 16 item 2; G31)."""\n# see Session 12\nx = 1  # G5\n',
                       "utf-8")
    assert [line.rsplit(":", 2)[-2] for line in process_notes([planted])] == ["1", "2"]
