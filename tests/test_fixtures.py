"""Golden replay fixtures (replay_fixtures/): replay each journal from scratch, diff byte-exact.

Regenerate with ``python replay_fixtures/regenerate.py`` and review the ``git diff``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memory_es.reader import export_journal_to_file, health
from memory_es.transfer import replay_export

FIXTURES = Path(__file__).resolve().parent.parent / "replay_fixtures"
REQUIRED = {"lite", "journal-repeats", "bujo-audit", "escaping-unicode"}


def _load_regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replay_fixtures_regenerate",
                                                  FIXTURES / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


regen = _load_regenerate()
FIXTURE_DIRS = regen.fixture_dirs(FIXTURES)


def _tree_under(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` by relative path ({} when it does not exist)."""
    if not directory.is_dir():
        return {}
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_at_least_four_fixtures_are_committed() -> None:
    names = {d.name for d in FIXTURE_DIRS}
    assert len(names) >= 4, names
    assert names >= REQUIRED, REQUIRED - names
    for d in FIXTURE_DIRS:
        assert (d / "expected" / "index.jsonl").is_file(), d.name
        assert _tree_under(d / "expected" / "daily") or _tree_under(d / "expected" / "audit"), (
            f"{d.name}: a fixture with no Markdown checks nothing")


@pytest.mark.parametrize("fixture", FIXTURE_DIRS, ids=[d.name for d in FIXTURE_DIRS])
def test_replaying_the_journal_reproduces_the_expected_tree(fixture: Path,
                                                            tmp_path: Path) -> None:
    journal = fixture / "journal.jsonl"
    expected = fixture / "expected"
    root = tmp_path / "root"
    replay_export(journal, root)

    for kind in ("daily", "audit"):
        want, have = _tree_under(expected / kind), _tree_under(root / kind)
        assert sorted(have) == sorted(want), kind
        for name, data in want.items():
            assert have[name] == data, f"{kind}/{name} differs from the fixture"

    assert regen.index_dump(root) == (expected / "index.jsonl").read_bytes()

    re_export = tmp_path / "re-export.jsonl"
    export_journal_to_file(root, re_export)
    assert re_export.read_bytes() == journal.read_bytes()

    report = health(root)
    assert report.status == "clean", report.to_json()
    assert report.findings == []
    assert report.projection_position == report.journal_position > 0


def test_fixture_shapes_match_their_tier() -> None:
    """bujo fixtures are audit-only; lite/journal fixtures write no audit (D2, D7, D8)."""
    by_name = {d.name: d for d in FIXTURE_DIRS}
    for spec in regen.SPECS:
        expected = by_name[spec.name] / "expected"
        daily, audit = _tree_under(expected / "daily"), _tree_under(expected / "audit")
        if spec.config.get("mode") == "bujo":
            assert audit and not daily, spec.name
        else:
            assert daily and not audit, spec.name
    lite = _tree_under(by_name["lite"] / "expected" / "daily")
    assert len(lite) >= 2, "the lite fixture must span two days"


def test_regeneration_reproduces_the_committed_fixtures(tmp_path: Path) -> None:
    """A behaviour change fails here; regenerating then shows it as a reviewable diff."""
    names = regen.build_all(tmp_path)
    assert sorted(names) == sorted(d.name for d in FIXTURE_DIRS)
    differences = list(regen.iter_differences(FIXTURES, tmp_path))
    assert differences == [], (
        "fixtures are stale: run `python replay_fixtures/regenerate.py` and review git diff")
    for name in names:
        assert _tree_under(tmp_path / name) == _tree_under(FIXTURES / name), name


def test_regeneration_refuses_a_spec_whose_steps_do_not_behave(tmp_path: Path) -> None:
    """The script checks each step's admission status, so a silently changed rule cannot
    slip into a fixture."""
    lite = next(s for s in regen.SPECS if s.name == "lite")
    broken = regen.Spec(name="broken", description="", config=lite.config,
                        steps=(regen.Admit("x", "NOTHING_TO_REPORT"),))
    with pytest.raises(AssertionError, match="got 'skipped', expected 'admitted'"):
        regen.build_all(tmp_path, (broken,))
    assert not (tmp_path / "broken").exists()
