"""Every benchmark runs, at its smallest size, as a smoke test (issue 16: CI runs the small
sizes, with no timing assertion). A bench that rots (a changed API, a root it can no longer
open, a figure it can no longer encode) fails here instead of at the next ``make bench``.

Each runs as its own process from the checkout, as ``make bench`` runs it, and must exit 0 and
end with its one JSON line of figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

SMALL = {
    "admission": ["--n", "50", "--rounds", "1", "--total", "320", "--busy-backlog", "60",
                  "--burst", "20", "--gap-ms", "1"],
    "rebuild": ["--observations", "300", "--rounds", "1"],
    "worker": ["--admissions", "300", "--rounds", "1"],
    "recall_latency": ["--small"],
    "capture": ["--quick"],
    "remember": ["--sizes", "200", "--rounds", "1", "--per-round", "20"],
    "embedding": ["--small"],
    "scale": ["--sizes", "500", "--queries", "10", "--turns", "10", "--no-plot"],
    "recall_quality": ["--small"],
    "cli_start": ["--small"],
    "mcp": ["--small"],
    "question_axis": ["--check"],
    "pg_roots": ["--roots", "1,2", "--per-root", "5", "--no-plot"],
    "web": ["--small"],
}


def test_every_bench_script_has_a_smoke_run() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py")}
    # comparisons run by hand (README) with libraries the project does not install
    helpers = {"models", "recall_transform", "ann"}
    assert scripts - helpers == set(SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_bench_runs_small_and_ends_with_its_json_line(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *SMALL[name]],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(figures, dict) and figures["bench"] == name
    if name == "recall_quality":  # gold ids map onto the store's ids: every ranker finds some
        assert set(figures["sets"]) == {"recall_labelled", "recall_heldout", "conversations",
                                        "conversations_fresh"}  # the test-only set too
        for found in figures["sets"].values():
            assert all(found[r]["recall_at_5"] > 0 for r in ("lexical", "cosine", "shipped"))


@pytest.mark.slow
def test_admission_bench_on_postgres_runs_small(tmp_path: Path) -> None:
    """Issue 18: ``bench/admission.py --backend postgres`` starts its own throwaway server and
    reports the PostgreSQL figures (no timing asserted)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(BENCH / "admission.py"), "--backend", "postgres",
                           "--n", "20", "--rounds", "1", "--total", "64", "--writers", "1,2"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["backend"] == "postgres" and figures["processes2_per_s"] > 0
    assert figures["threads2_ceiling_per_s"] > 0 and figures["processes2_ceiling_per_s"] > 0
    assert figures["floor_median_ms"] > 0 and figures["threads2_batch"]["max"] >= 1
