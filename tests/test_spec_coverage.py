"""The SPEC coverage generator (``docs/spec_coverage.py``) parses, matches and renders right.

The suite runs on a small SPEC written here, never on ``../shared/SPEC.md``: the README's test
command must pass in a bare clone. Whether the committed ``docs/SPEC-COVERAGE.md`` is current
against the real SPEC is a step of ``.ci/run`` of its own (``make spec-coverage-check``), run
where the requirements file is present.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "docs" / "spec_coverage.py"

# A SPEC in the real file's shape: sections, core/host tags, a requirement that runs on over
# indented lines. The IDs are ones this suite's own test names carry (J7, N4, G5).
SMALL_SPEC = """\
# SPEC

## G. Recall scoring
- **G5** [core] Anchor bonus:
  - an anchor adds to the score.
- **G34** [host] `useOriginalQuery: true` mode.
- **G99** [core] A requirement no test names.

## J. Remember
- **J7** [core] `about` links an **existing** person entity.

## N. Health auditor
- **N4** [core] **An index `source_session` that disagrees** is reported.
"""


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spec_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@dataclass(frozen=True)
class Scan:
    spec: Any  # spec_coverage.Spec
    coverage: Any  # spec_coverage.Coverage


@pytest.fixture(scope="module")
def scan() -> Scan:
    """The small SPEC and this repository's test sources, parsed once for the module."""
    spec = gen.parse_spec(SMALL_SPEC)
    files = sorted((REPO / "tests").glob("test_*.py"))
    return Scan(spec, gen.scan_tests(files, set(spec.requirements)))


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    path = tmp_path / "SPEC.md"
    path.write_text(SMALL_SPEC, encoding="utf-8")
    return path


def _row(table: str, rid: str) -> list[str]:
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if cells[0] == rid:
            return cells
    raise AssertionError(f"no row for {rid} in the table")


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_parser_finds_names_in_any_place_and_case(scan: Scan) -> None:
    """J7 is named by ``test_j7_...`` in test_remember_bujo.py; a broken parser loses it."""
    table = gen.render(scan.spec, scan.coverage, {})
    assert _row(table, "J7")[2] == "tested"
    assert _row(table, "G99")[2:] == ["not yet", ""]
    assert "- **G34** [host]" in table  # host IDs are listed apart, not counted
    named = scan.coverage.named
    assert any(t.startswith("test_remember_bujo.py::test_j7_") for t in named["J7"])
    assert "test_health.py::test_index_source_session_change_is_reported_n4" in named["N4"]
    assert any(t.startswith("test_scoring.py::test_G5_") for t in named["G5"])


def test_matching_rules() -> None:
    assert gen.name_ids("test_k14_h6_statuses_render") == ["K14", "H6"]
    assert gen.name_ids("test_utf16_length_counts_sha256") == []
    assert gen.class_ids("TestG15Validity") == ["G15"]
    assert gen.class_ids("TestOllamaChat") == []
    assert gen.prose_ids("SPEC J1, J2 (J5); M10-M12, B12–B17; UTF-8, E2E, DESIGN 9.4") == [
        "J1", "J2", "J5", "M10", "M11", "M12", "B12", "B13", "B14", "B15", "B16", "B17",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("Z99: no such thing\n", "not a SPEC ID"),
        ("G34: host\n", "not [core]"),
        ("G5\n", "expected 'ID: reason'"),
        ("G5: a\nG5: b\n", "listed twice"),
    ],
)
def test_malformed_not_applicable_lines_are_rejected(scan: Scan, content: str, error: str) -> None:
    with pytest.raises(gen.InputError, match=re.escape(error)):
        gen.parse_not_applicable(content, scan.spec)


def test_a_tested_id_cannot_be_not_applicable(scan: Scan) -> None:
    reasons = gen.parse_not_applicable("J7: said to be out of scope\n", scan.spec)
    with pytest.raises(gen.InputError, match="marked not applicable but"):
        gen.render(scan.spec, scan.coverage, reasons)


def test_a_not_applicable_reason_replaces_the_tests(scan: Scan) -> None:
    rid = next(
        r.id
        for r in scan.spec.requirements.values()
        if r.tag == "core" and r.id not in scan.coverage.named
    )
    reasons = gen.parse_not_applicable(f"# comment\n\n{rid}: the host | not us\n", scan.spec)
    table = gen.render(scan.spec, scan.coverage, reasons)
    assert _row(table, rid)[2:] == ["not applicable", "the host \\| not us"]
    assert _row(table, "**All**")[-1].startswith("1 (")  # counted in the summary


def test_missing_spec_exits_2(tmp_path: Path) -> None:
    run = _check(str(tmp_path / "SPEC.md"))
    assert run.returncode == 2
    assert "SPEC.md not found" in run.stderr


def test_current_table_exits_0_and_a_stale_one_exits_1_with_the_differing_lines(
    small_spec: Path, tmp_path: Path
) -> None:
    table = tmp_path / "SPEC-COVERAGE.md"
    none_excused = tmp_path / "not_applicable.txt"
    none_excused.write_text("", encoding="utf-8")
    args = [str(small_spec), "--output", str(table), "--not-applicable", str(none_excused)]
    written = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert written.returncode == 0, written.stderr
    assert _check(*args).returncode == 0
    table.write_text(table.read_text(encoding="utf-8").replace("| J7 |", "| J7x |"), "utf-8")
    run = _check(*args)
    assert run.returncode == 1
    assert any(line.startswith("-| J7x |") for line in run.stdout.splitlines())
    assert any(line.startswith("+| J7 |") for line in run.stdout.splitlines())
    assert "make spec-coverage" in run.stderr
