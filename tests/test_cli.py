"""The ``memory-es`` command (SPEC C1, C2, C5, C10; A3, A4, A6, A8, B3, B4; DESIGN 2, 3).

Commands run in-process through ``memory_es.cli.main`` (asserting on captured output), plus a
few real runs of the installed console script where a separate process matters: stdin, the
writer lock held by another process, and the traceback-free error path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from helpers_lock import LockHolder, hold_writer_lock
from memory_es.cli import main
from memory_es.history import open_reader
from memory_es.intake import CompletedTurn
from memory_es.journal import GENESIS, chain_link
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

CLI = str(Path(sys.executable).with_name("memory-es"))
ADMITTED_TOPIC = "memory_es/Intake.Admitted"
CAPTURE_ERROR = 'memory.writeMode: "capture" requires memory.mode "bujo"'
BUJO_CAPTURE = {
    "mode": "bujo",
    "writeMode": "capture",
    "embeddings": {"dim": 384},
    "llm": {"provider": "ollama", "model": "m"},
}


def rh(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()


def write_config(path: Path, block: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"memory": block}), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def admit(
    capsys: pytest.CaptureFixture[str], root: Path, run_id: str, answer: str, *extra: str
) -> tuple[int, dict[str, Any]]:
    code, out, _err = run(
        capsys, "--root", str(root), "admit", "--run-id", run_id, "--answer", answer, *extra
    )
    lines = out.splitlines()
    assert len(lines) == 1, out
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    return code, obj


def assert_one_error_line(err: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memory-es: error:"), err
    assert "Traceback" not in err


def assert_one_error(out: str, err: str, *, json_mode: bool) -> str:
    """The contract's error: one line on stderr, or under --json one JSON error object on
    stdout (stderr empty); returns the message."""
    if not json_mode:
        assert out == ""
        assert_one_error_line(err)
        return err
    assert err == ""
    assert len(out.splitlines()) == 1, out
    error = json.loads(out)["error"]
    assert set(error) == {"code", "message"} and "\n" not in error["message"]
    assert isinstance(error["message"], str)
    return error["message"]


def cli_subprocess(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=HANG_S, **kw)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def populated(root: Path) -> dict[str, str]:
    """A root with three admitted turns (through the library); returns run id -> answer."""
    turns = {
        "run-1": "ANSWER-ONE booked the dentist",
        "run-2": "ANSWER-TWO ordered café ☕ beans",
        "run-3": "ANSWER-THREE\nsecond line",
    }
    with MemoryStore.open(root, background=False) as store:
        for run_id, answer in turns.items():
            result = store.persist_completed_turn(
                CompletedTurn(
                    run_id=run_id, outcome="success", answer=answer, session=f"SESSION-{run_id}"
                )
            )
            assert result.status == "admitted"
    return turns


# --------------------------------------------------------------------------------------------
# validate (C10, A5)


def test_c10_validate_without_config_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate")
    assert code == 0
    assert out.startswith("OK")


@pytest.mark.parametrize("form", ["global", "sub"])
def test_c10_validate_valid_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, form: str
) -> None:
    path = write_config(tmp_path / "c.json", BUJO_CAPTURE)
    argv = (
        ["--config", str(path), "validate"]
        if form == "global"
        else ["validate", "--config", str(path)]
    )
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert out.strip() == "OK"


@pytest.mark.parametrize("form", ["global", "sub"])
def test_c10_a5_validate_invalid_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, form: str
) -> None:
    path = write_config(tmp_path / "c.json", {"mode": "lite", "writeMode": "capture"})
    argv = (
        ["--config", str(path), "validate"]
        if form == "global"
        else ["validate", "--config", str(path)]
    )
    code, out, _ = run(capsys, *argv)
    assert code == 1
    assert CAPTURE_ERROR in out.splitlines()
    assert "OK" not in out


def test_c10_validate_missing_file_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "validate", "--config", str(tmp_path / "absent.json"))
    assert code == 1
    assert "not found" in out


# --------------------------------------------------------------------------------------------
# admit (A3, A6, A8, B3, B4)


def test_admit_exit_codes_and_json(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    code, obj = admit(capsys, root, "r1", "First answer.")
    assert code == 0
    assert obj == {"status": "admitted", "intake_id": rh("r1"), "code": None}

    code, obj = admit(capsys, root, "r1", "First answer.")
    assert code == 0
    assert obj == {"status": "duplicate", "intake_id": rh("r1"), "code": None}

    code, obj = admit(capsys, root, "r2", "Checked.\nNOTHING_TO_REPORT")
    assert code == 0
    assert (obj["status"], obj["code"], obj["intake_id"]) == (
        "skipped",
        "nothing_to_report",
        rh("r2"),
    )

    code, obj = admit(capsys, root, "r1", "Another answer.")
    assert code == 1
    assert (obj["status"], obj["code"], obj["intake_id"]) == (
        "rejected",
        "run_id_conflict",
        rh("r1"),
    )

    code, obj = admit(capsys, root, "r3", "partial", "--outcome", "failed")
    assert code == 1
    assert (obj["status"], obj["code"]) == ("rejected", "turn_not_successful")

    code, obj = admit(capsys, root, "r4", "x", "--speaker-kind", "human-turn", "--trigger", "cron")
    assert code == 1
    assert (obj["status"], obj["code"]) == ("rejected", "invalid_turn")

    report = MemoryRoot.open(root).inspect()
    assert [r.id for r in report.records] == [rh("r1")]


def test_admit_options_reach_the_event(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    code, obj = admit(
        capsys,
        root,
        "hook",
        "Build passed.",
        "--session",
        "s-9",
        "--speaker-kind",
        "trigger",
        "--trigger",
        "webhook",
    )
    assert (code, obj["status"]) == (0, "admitted")
    with open_reader(root) as opened:
        (row,) = [r for r in opened.recorder.rows() if r[3] != ROOT_CONFIGURED]
        # the summary is sealed under its record key (issue 14): open it to read it
        state = json.loads(opened.recorder.sealer.unseal(row[3], row[1], row[2], row[4]).state)
    assert row[3] == ADMITTED_TOPIC
    assert state["summary"] == "Build passed."
    assert state["session"] == "s-9"
    assert state["speaker_kind"] == "trigger"
    assert state["trigger"] == "webhook"
    assert state["source_label"] == "webhook"


def test_admit_answer_from_stdin_subprocess(root: Path) -> None:
    proc = cli_subprocess(
        "--root",
        str(root),
        "admit",
        "--run-id",
        "stdin-run",
        "--answer",
        "-",
        input="line one from stdin\nline two ☕\n",
    )
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert obj == {"status": "admitted", "intake_id": rh("stdin-run"), "code": None}
    with open_reader(root) as opened:
        (row,) = [r for r in opened.recorder.rows() if r[3] != ROOT_CONFIGURED]
        state = json.loads(opened.recorder.sealer.unseal(row[3], row[1], row[2], row[4]).state)
    assert state["summary"].rstrip("\n") == "line one from stdin\nline two ☕"


def test_admit_capture_text_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    config = write_config(tmp_path / "c.json", BUJO_CAPTURE)
    text = "User: please remember the café ☕ order\nAssistant: Done.\n"
    capture = tmp_path / "capture.txt"
    capture.write_text(text, encoding="utf-8")
    code, out, _ = run(
        capsys,
        "--root",
        str(root),
        "--config",
        str(config),
        "admit",
        "--run-id",
        "cap",
        "--answer",
        "Done.",
        "--capture-text-file",
        str(capture),
    )
    assert code == 0
    assert json.loads(out)["status"] == "admitted"
    with open_reader(root) as opened:
        stored = opened.recorder.payload(rh("cap"))
        (row,) = [r for r in opened.recorder.rows() if r[3] != ROOT_CONFIGURED]
    assert stored is not None
    assert stored.data == text.encode("utf-8")
    state = json.loads(row[4])
    # sealed: no digest or length of the text in the clear (its AES-GCM tag checks it)
    assert (state["payload_sha256"], state["payload_bytes"]) == ("sealed", 0)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest().encode() not in row[4]
    assert state["write_mode"] == "capture"


def test_admit_unreadable_capture_file_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    config = write_config(tmp_path / "c.json", BUJO_CAPTURE)
    code, out, err = run(
        capsys,
        "--root",
        str(root),
        "--config",
        str(config),
        "admit",
        "--run-id",
        "cap",
        "--answer",
        "Done.",
        "--capture-text-file",
        str(tmp_path / "missing.txt"),
    )
    assert code == 2
    assert out == ""
    assert_one_error_line(err)


def test_admit_root_resolution(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--root wins, then config memory.path, then ./.memory in the working directory."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    from_config = tmp_path / "from-config"
    config = write_config(tmp_path / "c.json", {"path": str(from_config)})
    explicit = tmp_path / "explicit"

    code, out, _ = run(
        capsys,
        "--root",
        str(explicit),
        "--config",
        str(config),
        "admit",
        "--run-id",
        "a",
        "--answer",
        "to explicit",
    )
    assert code == 0
    code, out, _ = run(
        capsys, "--config", str(config), "admit", "--run-id", "b", "--answer", "to config path"
    )
    assert code == 0
    code, out, _ = run(capsys, "admit", "--run-id", "c", "--answer", "to default")
    assert code == 0

    assert [r.id for r in MemoryRoot.open(explicit).inspect().records] == [rh("a")]
    assert [r.id for r in MemoryRoot.open(from_config).inspect().records] == [rh("b")]
    assert [r.id for r in MemoryRoot.open(cwd / ".memory").inspect().records] == [rh("c")]
    # inspect resolves the same way
    code, out, _ = run(capsys, "--config", str(config), "inspect", "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)["records"]] == [rh("b")]
    code, out, _ = run(capsys, "inspect", "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)["records"]] == [rh("c")]


# --------------------------------------------------------------------------------------------
# inspect (C1, C2)


def test_c1_inspect_human_output(
    capsys: pytest.CaptureFixture[str], root: Path, populated: dict[str, str]
) -> None:
    code, out, _ = run(capsys, "--root", str(root), "inspect")
    assert code == 0
    tokens = set(out.split())
    for token in ("pending=3", "due=3", "active=3", "total=3", "dead=0", "resolved=0"):
        assert token in tokens, out
    for run_id in populated:
        assert rh(run_id) in out
    for answer in populated.values():
        assert answer.split()[0] not in out
    assert "SESSION-" not in out


def test_c1_inspect_json_is_content_free(
    capsys: pytest.CaptureFixture[str], root: Path, populated: dict[str, str]
) -> None:
    code, out, _ = run(capsys, "--root", str(root), "inspect", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["counts"]["pending"] == 3
    assert report["counts"]["total"] == 3
    assert [r["id"] for r in report["records"]] == [rh(x) for x in populated]
    assert all(r["state"] == "pending" for r in report["records"])
    for answer in populated.values():
        assert answer.split()[0] not in out
    assert "SESSION-" not in out
    assert "summary" not in out


def test_c2_inspect_one_id_json(
    capsys: pytest.CaptureFixture[str], root: Path, populated: dict[str, str]
) -> None:
    code, out, _ = run(capsys, "--root", str(root), "inspect", rh("run-2"), "--json")
    assert code == 0
    record = json.loads(out)
    assert record["id"] == rh("run-2")
    assert record["state"] == "pending"
    assert "ANSWER-TWO" not in out
    full = MemoryRoot.open(root).inspect()
    assert record == next(r.to_json() for r in full.records if r.id == rh("run-2"))


@pytest.mark.parametrize("bad_id", ["abc", "g" * 64, "a" * 63, "a" * 65])
def test_c2_inspect_malformed_id_exits_2(
    capsys: pytest.CaptureFixture[str], root: Path, populated: dict[str, str], bad_id: str
) -> None:
    """C2: the id is 64 hex characters; anything else is a usage error naming the rule."""
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, "--root", str(root), "inspect", bad_id, *extra)
        assert code == 2
        message = assert_one_error(out, err, json_mode=bool(extra))
        assert "64" in message
        assert bad_id in message


def test_c2_inspect_unknown_id_exits_2(
    capsys: pytest.CaptureFixture[str], root: Path, populated: dict[str, str]
) -> None:
    unknown = rh("never-admitted")
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, "--root", str(root), "inspect", unknown, *extra)
        assert code == 2
        assert unknown in assert_one_error(out, err, json_mode=bool(extra))


def test_inspect_missing_root_subprocess(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-root"
    proc = cli_subprocess("--root", str(missing), "inspect")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert_one_error_line(proc.stderr)
    assert not missing.exists(), "a read-only command must not create a root"


def test_inspect_missing_root_in_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--root", str(tmp_path / "none"), "inspect", "--json")
    assert code == 2
    assert "no memory root here" in assert_one_error(out, err, json_mode=True)


# --------------------------------------------------------------------------------------------
# export (C5)


ROOT_CONFIGURED = "memory_es/Root.Configured"


def _check_canonical_export(data: bytes, n: int) -> list[dict[str, Any]]:
    """Every line canonical and chained; returns the ``n`` turn events (the root's recorded
    configuration, line 1, is checked and left out)."""
    lines = data.split(b"\n")
    assert lines[-1] == b"", "export must end with a newline"
    lines = lines[:-1]
    assert len(lines) == n + 1
    rows = []
    chain = GENESIS
    for i, line in enumerate(lines, start=1):
        obj = json.loads(line)
        canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert line == canonical.encode("utf-8")
        assert obj["position"] == i
        assert set(obj) >= {
            "position",
            "originator_id",
            "originator_version",
            "topic",
            "state",
            "chain",
        }
        state = json.dumps(
            obj["state"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
        chain = chain_link(
            chain, i, obj["originator_id"], obj["originator_version"], obj["topic"], state
        )
        assert obj["chain"] == chain.hex(), "exported state/chain do not verify"
        rows.append(obj)
    assert rows[0]["topic"] == ROOT_CONFIGURED
    return rows[1:]


def test_c5_export_is_canonical_jsonl(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, populated: dict[str, str]
) -> None:
    out_file = tmp_path / "export.jsonl"
    code, out, err = run(capsys, "--root", str(root), "export", "--journal", str(out_file))
    assert code == 0
    assert out == ""
    assert "exported 4 events" in err  # the root's configuration and three turns
    data = out_file.read_bytes()
    rows = _check_canonical_export(data, 3)
    assert [r["topic"] for r in rows] == [ADMITTED_TOPIC] * 3
    assert [r["state"]["summary"] for r in rows] == list(populated.values())
    assert stat.S_IMODE(out_file.stat().st_mode) == 0o600

    again = tmp_path / "again.jsonl"
    assert main(["--root", str(root), "export", "--journal", str(again)]) == 0
    assert again.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.jsonl", "export.jsonl", "root"]


def test_c5_export_replaces_a_world_readable_target_with_0600(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, populated: dict[str, str]
) -> None:
    out_file = tmp_path / "export.jsonl"
    out_file.write_text("old")
    out_file.chmod(0o644)
    code, _, _ = run(capsys, "--root", str(root), "export", "--journal", str(out_file))
    assert code == 0
    assert stat.S_IMODE(out_file.stat().st_mode) == 0o600
    _check_canonical_export(out_file.read_bytes(), 3)


def test_c5_export_to_stdout(
    capsysbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
    root: Path,
    populated: dict[str, str],
) -> None:
    assert main(["--root", str(root), "export", "--journal", str(tmp_path / "f.jsonl")]) == 0
    capsysbinary.readouterr()
    assert main(["--root", str(root), "export", "--journal", "-"]) == 0
    out, _ = capsysbinary.readouterr()
    assert out == (tmp_path / "f.jsonl").read_bytes()


def _root_digest(root: Path) -> dict[str, str]:
    """Hash every file of the root except SQLite's -shm (a shared-memory index readers update)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
        if not p.name.endswith("-shm")
    } | {"__names__": ",".join(str(p.relative_to(root)) for p in files)}


def test_c5_export_and_inspect_leave_the_root_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, populated: dict[str, str]
) -> None:
    before = _root_digest(root)
    assert {"journal.db", "journal.catalog"} <= set(before)
    assert main(["--root", str(root), "export", "--journal", str(tmp_path / "e.jsonl")]) == 0
    assert main(["--root", str(root), "inspect", "--json"]) == 0
    assert main(["--root", str(root), "inspect", rh("run-1")]) == 0
    capsys.readouterr()
    assert _root_digest(root) == before


@pytest.fixture
def live_writer(root: Path) -> Iterator[LockHolder]:
    """Another process holding the root's writer lock (an agent that is running)."""
    with hold_writer_lock(root, [("live-1", "live answer 1"), ("live-2", "live answer 2")]) as h:
        yield h


def test_c5_export_works_while_a_writer_holds_the_lock(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    root: Path,
    live_writer: LockHolder,
) -> None:
    out_file = tmp_path / "live.jsonl"
    codes: list[int] = []
    thread = threading.Thread(
        target=lambda: codes.append(
            main(["--root", str(root), "export", "--journal", str(out_file)])
        ),
        daemon=True,
    )
    thread.start()
    thread.join(timeout=HANG_S)
    assert not thread.is_alive(), "export blocked on a live writer"
    assert codes == [0]
    rows = _check_canonical_export(out_file.read_bytes(), 2)
    assert [r["state"]["summary"] for r in rows] == ["live answer 1", "live answer 2"]

    # inspect is read-only too and does not wait for the writer
    code, out, _ = run(capsys, "--root", str(root), "inspect", "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)["records"]] == [rh("live-1"), rh("live-2")]

    # the writer is unaffected and shuts down cleanly
    assert live_writer.release() == (0, "closed\n"), live_writer.stderr


# --------------------------------------------------------------------------------------------
# demo


@pytest.fixture
def restore_logger_level() -> Iterator[None]:
    logger = logging.getLogger("memory_es")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.mark.usefixtures("restore_logger_level")
def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo runs the whole Lite flow (projections issue, item 9), then BuJo capture."""
    code, out, _ = run(capsys, "demo")
    assert code == 0
    results = [json.loads(line.split("-> ", 1)[1]) for line in out.splitlines() if "-> " in line]
    statuses = [(r["status"], r["code"]) for r in results]
    assert ("admitted", None) in statuses
    assert ("duplicate", None) in statuses
    assert ("rejected", "run_id_conflict") in statuses
    assert ("skipped", "nothing_to_report") in statuses
    admitted = statuses.count(("admitted", None))
    assert f"ran {admitted} attempts" in out
    counts = re.search(r"^.*\bpending=(\d+)\b.*\bresolved=(\d+)\b.*$", out, re.MULTILINE)
    assert counts is not None, out
    assert (int(counts.group(1)), int(counts.group(2))) == (0, admitted)
    ids = {r["intake_id"] for r in results if r["status"] == "admitted"}
    assert all(i in out.split("$ memory-es inspect", 1)[1] for i in ids)
    assert "- Booked the dentist for 2026-12-09 at 10:00.\n  <!--mem id=" in out
    search = out.split("$ memory-es search dentist", 1)[1].split("==", 1)[0]
    assert "Booked the dentist" in search
    healths = out.split("$ memory-es health")[1:]
    assert len(healths) == 4
    assert healths[0].lstrip().startswith("clean:")
    assert "file_mismatch  daily/" in healths[1] and "[exit 1]" in healths[1]
    assert healths[2].lstrip().startswith("clean:")
    # then BuJo capture (issue 6): the correction supersedes, with graph and sidecar, clean
    capture = out.split("== BuJo capture", 1)[1]
    assert "demo-capture-2: admitted, then captured (model calls so far: extract, review, " \
           "extract, review, reconcile)" in capture
    assert re.search(r"lives in Berlin\n  <!--mem id=\w+ type=note status=superseded .*"
                     r"superseded_by=\w+ source_session=web:demo-->", capture)
    assert "lives in Madrid (moved 2026-11)" in capture.split("--- daily/", 1)[0]  # recalled
    assert '"kind":"relation"' in capture and '"status":"superseded"' in capture
    assert "The assistant looked up nothing" not in capture  # E18: under the floor
    assert healths[3].lstrip().startswith("clean:")


def test_demo_keeps_its_roots_at_root(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``demo --root keepme`` honours the option: the Lite root is made at ``keepme`` (the
    BuJo one at ``keepme-bujo``), both kept and healthy afterwards, their keys in the user's
    key store; a used directory is refused before anything is written."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "demo", "--root", "keepme")
    assert code == 0
    assert out.splitlines()[0] == "memory root: keepme"
    assert "kept the demo roots: keepme (Lite) and keepme-bujo (BuJo capture)" in out
    for kept in ("keepme", "keepme-bujo"):
        assert MemoryRoot.open(tmp_path / kept).health().status == "clean", kept
    assert main(["--root", "keepme", "search", "dentist"]) == 0
    assert "Booked the dentist" in capsys.readouterr().out
    before = sorted(p.name for p in (tmp_path / "keepme").iterdir())
    code, _, err = run(capsys, "demo", "--root", "keepme")  # used: refused, nothing lost
    assert code == 1 and "new or empty directory" in err and err.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "keepme").iterdir()) == before


def test_demo_subprocess_leaves_no_root_behind(tmp_path: Path) -> None:
    proc = cli_subprocess("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run_id_conflict" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []
    root_line = proc.stdout.splitlines()[0]
    assert root_line.startswith("memory root: ")
    assert not os.path.exists(root_line.removeprefix("memory root: "))
