"""Every ``memory-es`` command driven with generated arguments (issue 13 item 13; SPEC C).

Whatever the arguments (junk text, unpaired surrogates and undecodable bytes, NaN, negative
and huge numbers, empty strings, hostile config files, a missing or non-root ``--root``), the
CLI never shows a traceback, exits with a code of the contract (0 ok, 1 findings/refused,
2 usage, 3 could not run), prints an error as one line (or one JSON error object under
``--json``), and a call that does not succeed changes no stored byte.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main

VALID_ID = hashlib.sha256(b"run-1").hexdigest()
# The Lite memory of run-0 (sha256 of its run hash and index 0), for show.
MEMORY_ID = hashlib.sha256(f"{hashlib.sha256(b'run-0').hexdigest()}:0".encode()).hexdigest()
EXIT_CODES = {0, 1, 2, 3}

# Values that sit on the edges of every range the CLI takes.
EDGES = ["", " ", "-", "0", "1", "-1", "5", "25", "26", "50", "51", "nan", "-nan", "inf",
         "-inf", "1e20", "1e308", "99999999999999999999", "0.5", "9999-12-31", "0001-01-01",
         "2026-12-02", "2026-02-30", "UTC", "Europe/Berlin", "localtime", "Mars/Olympus",
         "\udcff", "\udcff\udcfe", "\ud800", "x\udc80y", "a" * 64, "A" * 64, VALID_ID,
         "provider-retired", "Bad Slug", "x.y", "-x", "--", "\x00", "é☕", "NOTHING_TO_REPORT",
         "human-turn", "trigger", "cron", "webhook", "success", "failed"]
junk = st.one_of(
    st.sampled_from(EDGES),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
    st.integers(-10**25, 10**25).map(str),
    st.floats().map(repr),
)

# command -> [(option or None for a positional, takes a value)]
COMMANDS: dict[str, list[tuple[str | None, bool]]] = {
    "validate": [],
    "admit": [("--run-id", True), ("--answer", True), ("--session", True),
              ("--speaker-kind", True), ("--trigger", True), ("--outcome", True),
              ("--capture-text-file", True)],
    "remember": [(None, True), ("--session", True), ("--about", True), ("--supersedes", True),
                 ("--replaceable", False), ("--valid-from", True), ("--valid-to", True),
                 ("--due", True)],
    "set-status": [(None, True), (None, True), ("--reason", True)],
    "mark": [(None, True), ("--insight", False), ("--no-insight", False)],
    "inspect": [(None, True)],
    "export": [("--journal", True)],
    "drain": [("--timeout", True), ("--no-embed", False)],
    "retry": [(None, True), ("--lock-timeout", True)],
    "resolve": [(None, True), (None, True), ("--lock-timeout", True)],
    "rebuild": [("--lock-timeout", True)],
    "consolidate": [("--lock-timeout", True)],
    "replay": [(None, True)],
    "health": [("--expect-anchor", True)],
    "anchor": [],
    "profile": [],
    "search": [(None, True), ("--limit", True), ("--explain", False), ("--as-of", True)],
    "calibrate": [(None, True)],
    "journal": [("--from", True), ("--through", True), ("--tz", True), ("--limit", True),
                ("--cursor", True), ("--page", True)],
    "list": [("--status", True), ("--since", True), ("--limit", True), ("--cursor", True)],
    "show": [(None, True)],
    "reflect": [("--as-of", True), ("--tz", True), ("--soon", True)],
    "migrate": [("--yes", False), ("--lock-timeout", True)],
    "curate": [(None, True), (None, True), (None, True), ("--as", True), ("--all", False),
               ("--tz", True)],
    "forget": [(None, True), ("--run-id", True), ("--query", True), ("--reason", True),
               ("--dry-run", False), ("--show-text", False), ("--yes", False),
               ("--lock-timeout", True)],
}


# mostly given, or most calls stop there
REQUIRED = {"--run-id", "--answer", "--journal", "--reason"}
# Plausible values, so that many calls get past the checks and really run.
GOOD: dict[str, list[str]] = {
    "--run-id": ["run-1", "run-2", "run-new", "run-9"], "--answer": ["Booked.", "-", "x"],
    "--session": ["s-1"], "--speaker-kind": ["unknown", "trigger"],
    "--trigger": ["human", "cron"], "--outcome": ["success", "failed"],
    "--timeout": ["0", "1", "5"], "--lock-timeout": ["0", "0.1"], "--limit": ["1", "5", "10"],
    "--from": ["2026-12-02", "2000-01-01"], "--through": ["2026-12-02", "2026-12-31"],
    "--tz": ["UTC", "Europe/Berlin"], "--page": ["1", "2"], "--cursor": ["x.y"],
    "inspect": [VALID_ID], "retry": [VALID_ID], "resolve": [VALID_ID, "provider-retired"],
    "search": ["dentist", "café", "nothing here"],
    "--expect-anchor": ["files/anchor.json"],
    "--status": ["open", "done", "superseded", "invalidated"],
    "--since": ["2026-12-02", "2000-01-01T00:00:00Z", "2026-12-02T10:00+01:00"],
    "--as-of": ["2026-12-02T10:00+01:00", "2000-01-01T00:00:00Z", "2999-01-01T00:00Z"],
    "show": [MEMORY_ID, MEMORY_ID[:8], MEMORY_ID[:12], "0" * 64],
    "set-status": [MEMORY_ID[:8], "done", "dropped", "open", "finished"],
    "mark": [MEMORY_ID[:8], "0" * 64],
    "--about": [MEMORY_ID[:8]], "--supersedes": [MEMORY_ID[:8]],
    "--valid-from": ["2026-12-02"], "--valid-to": ["2026-12-31T18:00:00+01:00", "soon"],
    "--due": ["2026-12-09"],
    "forget": [MEMORY_ID, "0" * 64], "--reason": ["user-request", "by-hand", "Bad Slug"],
    "--query": ["dentist", "nothing here"],
}


def stored(base: Path) -> dict[str, str]:
    """Every stored byte under ``base`` but SQLite's shared-memory index files and empty
    write-ahead logs (a read-only index open may leave an empty ``-wal`` that the next writer
    open removes: no stored byte changes either way)."""
    return {str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*"))
            if p.is_file() and not p.name.endswith("-shm")
            and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory holding a populated Lite root, its export and config files."""
    base = tmp_path_factory.mktemp("cli-property")
    root = base / "root"
    with MemoryStore.open(root, background=False) as store:
        for i, answer in enumerate(["Booked the dentist.", "Dana owns the summary.",
                                    "Checked.\nNOTHING_TO_REPORT", "Ordered café beans."]):
            store.persist_completed_turn(CompletedTurn(run_id=f"run-{i}", outcome="success",
                                                       answer=answer))
        store.drain()
        store.persist_completed_turn(CompletedTurn(run_id="run-9", outcome="success",
                                                   answer="Still pending."))
        store.project()  # at rest: a refused command's open has nothing left to catch up
    files = base / "files"
    files.mkdir()
    assert main(["--root", str(root), "export", "--journal", str(files / "export.jsonl")]) == 0
    (files / "lite.json").write_text('{"memory": {"mode": "lite"}}')
    (files / "invalid.json").write_text('{"memory": {"mode": "lite", "writeMode": "capture"}}')
    (files / "deep.json").write_text("[" * 900 + "]" * 900)
    (files / "bignum.json").write_text('{"memory": {"maxBytes": ' + "9" * 5000 + "}}")
    (files / "hugedim.json").write_text('{"memory": {"mode": "journal", "embeddings": '
                                        '{"dim": 1' + "0" * 30 + "}}}")
    (files / "latin1.json").write_bytes(b'{"memory": {"path": "\xff"}}')
    (files / "capture.txt").write_text("User: hi\nAssistant: hello\n")
    (files / "notutf8.txt").write_bytes(b"\xff\xfe")
    (files / "labelled.json").write_text('{"questions": []}')
    (files / "anchor.json").write_text(MemoryRoot.open(root).anchor().line())
    return base


def paths(base: Path) -> st.SearchStrategy[str]:
    files = base / "files"
    return st.sampled_from([
        str(base / "root"), str(files / "export.jsonl"), str(files / "lite.json"),
        str(files / "capture.txt"), str(files / "notutf8.txt"), str(files / "labelled.json"),
        str(files), str(base / "missing" / "x"), os.fsdecode(b"\xff-dir"), "out.jsonl", "",
    ])


@st.composite
def invocation(draw: st.DrawFn, base: Path) -> list[str]:
    files = base / "files"
    command = draw(st.sampled_from(sorted(COMMANDS)))
    argv: list[str] = []
    for option, takes_value in COMMANDS[command]:
        if option is not None and not draw(st.booleans()) \
                and (option not in REQUIRED or draw(st.integers(0, 9)) == 0):
            continue
        good = GOOD.get(option or command, [])
        value = st.one_of(junk, paths(base)) if not good or draw(st.integers(0, 3)) == 0 \
            else st.sampled_from(good)
        if option is None:
            argv.append(draw(value))
        elif takes_value:
            argv += [option, draw(value)]
        else:
            argv.append(option)
    globals_: list[str] = []
    root = draw(st.sampled_from([str(base / "root")] * 6 + [None,
                                 str(files / "lite.json"), str(base / "fresh"),
                                 os.fsdecode(b"root-\xff")]))
    if root is not None:
        globals_ += ["--root", root]
    config = draw(st.sampled_from([None] * 6 + [
        "lite.json", "invalid.json", "deep.json", "bignum.json", "hugedim.json", "latin1.json",
        "absent.json"]))
    if config is not None:
        globals_ += ["--config", str(files / config)]
    if command != "demo" and draw(st.booleans()):
        globals_.append("--json")
    before = draw(st.booleans())
    return [*globals_, command, *argv] if before else [command, *argv, *globals_]


def run(argv: list[str]) -> tuple[int, str, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO("an answer from stdin ☕\n".encode()), encoding="utf-8")
    old_stdin = sys.stdin
    sys.stdin = stdin
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        sys.stdin = old_stdin
    out.flush()
    raw = out.buffer.getvalue()  # type: ignore[attr-defined]
    return code, raw.decode("utf-8", "replace"), err.getvalue()


def check(argv: list[str], base: Path) -> None:
    before = stored(base)
    with contextlib.chdir(base):
        code, out, err = run(argv)
    event(f"{argv[argv.index(next(c for c in argv if c in COMMANDS))]} exit {code}")
    shown = f"argv={argv!r}\nexit={code}\nstdout={out[-800:]!r}\nstderr={err[-800:]!r}"
    assert "Traceback" not in out + err, shown
    assert code in EXIT_CODES, shown
    assert "internal error" not in out + err and "internal_error" not in out + err, shown
    if code in (2, 3) or (code == 1 and '"error"' in out):
        if "--json" in argv and '"error"' in out:
            (line,) = [x for x in out.splitlines() if x.startswith('{"error"')]
            error: dict[str, Any] = json.loads(line)["error"]
            assert error["code"] and "\n" not in error["message"], shown
        elif "memory-es: error:" in err:
            assert len(err.strip().splitlines()) == 1, shown
    if code != 0:
        assert stored(base) == before, shown


SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(data=st.data())
def test_every_command_with_generated_arguments(sandbox: Path, data: st.DataObject) -> None:
    check(data.draw(invocation(sandbox)), sandbox)


@SETTINGS
@given(command=st.sampled_from(sorted(COMMANDS)), words=st.lists(junk, max_size=6))
def test_every_command_with_arbitrary_words(sandbox: Path, command: str,
                                            words: list[str]) -> None:
    """No grammar at all: the command followed by any words."""
    check(["--root", str(sandbox / "root"), command, *words], sandbox)
