"""The CLI's exit-code contract and bad-input hardening (issue 13 items 13 and 14; SPEC C, O).

Exit codes: 0 ok, 1 findings or a refused operation, 2 usage error, 3 could not run. An error is
one line on stderr (``memory-es: error: ...``) naming the argument and its allowed range, or
under ``--json`` a JSON error object on stdout; never a traceback, and a rejected call changes
nothing stored.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import logging
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ceilings import HANG_S
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import build_parser, main
from memory_es.config import load_config
from memory_es.errors import ConfigError, InvalidArgumentError, MemoryEsError
from memory_es.transfer import rebuild_root

CLI = str(Path(sys.executable).with_name("memory-es"))


def digest(root: Path) -> dict[str, str]:
    """Every stored byte of the root but SQLite's shared-memory index and an empty write-ahead
    log (a reader's first query of a WAL database makes both; neither holds anything)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith("-shm")
            and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    with MemoryStore.open(path, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="Booked the dentist."))
        store.drain()
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> str:
    path.write_text(text, "utf-8")
    return str(path)


# (argv after --root ROOT, exit code, words the one-line error must hold)
CASES: list[tuple[list[str], int, list[str]]] = [
    (["admit", "--run-id", "\udcff", "--answer", "x"], 2, ["--run-id", "UTF-8", "0xff"]),
    (["search", "\udcff\udcfe"], 2, ["query", "UTF-8", "0xff"]),
    (["search", "dentist\ud800"], 2, ["query", "surrogate"]),
    (["admit", "--run-id", "r9", "--answer", "x", "--session", "\udc80"], 2, ["--session"]),
    (["journal", "--from", "9999-12-31", "--through", "9999-12-31", "--tz", "UTC"], 2,
     ["--from", "9999-12-30"]),
    (["journal", "--from", "2026-01-01", "--through", "9999-12-31", "--tz", "UTC"], 2,
     ["--through", "0001-01-02 to 9999-12-30"]),
    (["export", "--journal", ""], 2, ["--journal", "file path or '-'"]),
    (["retry", ""], 2, ["id", "64 lowercase hex"]),
    (["resolve", "", "slug"], 2, ["id", "64 lowercase hex"]),
    (["inspect", ""], 2, ["id", "64 lowercase hex"]),
    (["search", "dentist", "--limit", "-1"], 2, ["--limit", "1 to 50"]),
    (["search", "dentist", "--limit", "0"], 2, ["--limit", "1 to 50"]),
    (["search", "dentist", "--limit", "nan"], 2, ["--limit", "int"]),
    (["journal", "--from", "2026-01-01", "--through", "2026-01-01", "--tz", "UTC",
      "--limit", "-3"], 2, ["--limit", "1 to 25"]),
    (["journal", "--from", "2026-01-01", "--through", "2026-01-01", "--tz", "UTC",
      "--page", "-1"], 2, ["--page", "1 to 1000"]),
    (["journal", "--from", "2026-01-01", "--through", "2026-01-01", "--tz", "UTC",
      "--page", "99999999999999999999"], 2, ["--page", "1 to 1000"]),
    (["drain", "--timeout", "nan"], 2, ["--timeout", "0 to 86400", "nan"]),
    (["drain", "--timeout", "-1"], 2, ["--timeout", "0 to 86400"]),
    (["drain", "--timeout", "inf"], 2, ["--timeout", "0 to 86400"]),
    (["drain", "--timeout", "1e20"], 2, ["--timeout", "0 to 86400"]),
    (["retry", "--lock-timeout", "nan"], 2, ["--lock-timeout", "0 to 86400"]),
    (["resolve", "a" * 64, "slug", "--lock-timeout", "-0.5"], 2, ["--lock-timeout"]),
    (["rebuild", "--lock-timeout", "1e300"], 2, ["--lock-timeout", "0 to 86400"]),
    (["frobnicate"], 2, ["COMMAND", "invalid choice"]),
    (["admit", "--answer", "x"], 2, ["--run-id", "required"]),
    (["resolve", "a" * 64, "slug"], 2, ["no intake"]),
]


@pytest.mark.parametrize(("argv", "exit_code", "words"), CASES,
                         ids=[" ".join(c[0])[:40].encode("ascii", "backslashreplace").decode()
                              for c in CASES])
@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_bad_input_is_one_line_naming_the_argument(
        capsys: pytest.CaptureFixture[str], root: Path, argv: list[str], exit_code: int,
        words: list[str], json_mode: bool) -> None:
    """Item 13: each bad input is one line naming the argument and its range, with the
    contract's exit code (the same under --json), and leaves the root untouched."""
    before = digest(root)
    code, out, err = cli(capsys, "--root", str(root), *argv, *(["--json"] if json_mode else []))
    assert code == exit_code, (out, err)
    assert "Traceback" not in out + err
    if json_mode:
        assert err == ""
        (line,) = out.splitlines()
        error = json.loads(line)["error"]
        message = error["message"]
        assert isinstance(error["code"], str) and error["code"]
    else:
        assert out == ""
        (line,) = err.splitlines()
        assert line.startswith("memory-es: error: ")
        message = line
    for word in words:
        assert word in message, message
    assert digest(root) == before


def test_retry_of_an_empty_id_no_longer_retries_everything(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Item 13: `retry ''` was falsy, so it retried every dead/delayed intake."""
    path = tmp_path / "r"
    with MemoryStore.open(path, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="x", outcome="success", answer="y"))
    code, _, err = cli(capsys, "--root", str(path), "retry", "")
    assert code == 2 and "argument id" in err


@pytest.mark.parametrize(("document", "words"), [
    ("[" * 900 + "]" * 900, ["nested more than 32 levels"]),
    ('{"memory": ' + '{"a": ' * 900 + "1" + "}" * 901, ["nested more than 32 levels"]),
    ('{"memory": {"maxBytes": ' + "9" * 5000 + "}}", ["more than 4300 digits"]),
    ('{"memory": {"mode": "journal", "embeddings": {"dim": 1' + "0" * 30 + "}}}",
     ["memory.embeddings.dim", "1 to 65536", "31-digit"]),
    ('{"memory": {"mode": "bujo", "embeddings": {"dim": 8}, "llm": {"provider": "ollama", '
     '"model": "m", "timeoutMs": 1' + "0" * 20 + "}}}",
     ["memory.llm.timeoutMs", "1 to 3600000"]),
])
@pytest.mark.parametrize("command", ["inspect", "validate", "admit"])
def test_hostile_config_files(capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path,
                              document: str, words: list[str], command: str) -> None:
    """Item 13: a config nested 900 deep, a 5,000-digit number, dim 10^30, timeoutMs 10^20."""
    config = write(tmp_path / "c.json", document)
    before = digest(root)
    extra = ["--run-id", "r2", "--answer", "x"] if command == "admit" else []
    code, out, err = cli(capsys, "--root", str(root), "--config", config, command, *extra)
    if command == "validate":  # validate's findings are its output: exit 1
        assert code == 1 and err == ""
        text = out
    else:
        assert code == 2 and out == ""
        (text,) = err.splitlines()
    for word in words:
        assert word in text, text
    assert "Traceback" not in out + err
    assert digest(root) == before
    with pytest.raises(ConfigError):
        load_config(config)


# -- the API: the same ranges, refused before anything is opened ------------------------------


def test_api_lone_surrogates_are_refused_cleanly(
        root: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Item 13: a lone surrogate in the API is a clean rejection, never internal_error with a
    logged traceback."""
    caplog.set_level(logging.WARNING, "memory_es")
    with MemoryStore.open(root, background=False) as store:
        result = store.persist_completed_turn(
            CompletedTurn(run_id="\ud800", outcome="success", answer="x"))
        assert (result.status, result.code) == ("rejected", "invalid_turn")
        assert result.detail is not None and result.detail.startswith("run_id:")
        for call in (lambda: store.recall("\ud800 dentist"),
                     lambda: store.lexical_search("x\udcff"),
                     lambda: store.retry("\ud800" * 64)):
            with pytest.raises(MemoryEsError):
                call()
    assert not [r for r in caplog.records if r.exc_info]
    reader = MemoryRoot.open(root)
    with pytest.raises(MemoryEsError) as err:
        reader.recall("\ud800 dentist")
    assert err.value.code == "recall_invalid_query"


@pytest.mark.parametrize("value", [math.nan, -1.0, math.inf, 1e20, True, "5"])
def test_api_timeouts_are_checked_before_opening(root: Path, value: Any) -> None:
    before = digest(root)
    with pytest.raises(InvalidArgumentError, match="lock_timeout must be a number of seconds "
                                                   "from 0 to 86400"):
        MemoryStore.open(root, lock_timeout=value, background=False)
    with pytest.raises(InvalidArgumentError, match="lock_timeout"):
        rebuild_root(root, lock_timeout=value)
    with MemoryStore.open(root, background=False) as store, \
            pytest.raises(InvalidArgumentError, match="timeout must be"):
        store.drain(timeout=value)
    assert digest(root) == before


def test_api_journal_date_range(root: Path) -> None:
    reader = MemoryRoot.open(root)
    for day in ("9999-12-31", "0001-01-01"):
        with pytest.raises(MemoryEsError) as err:
            reader.journal({"fromDate": day, "throughDate": day, "timeZone": "Pacific/Kiritimati"})
        assert err.value.code == "journal_invalid_date"
    for day in ("9999-12-30", "0001-01-02"):
        for zone in ("Pacific/Kiritimati", "Etc/GMT+12"):
            reader.journal({"fromDate": day, "throughDate": day, "timeZone": zone})


# -- item 14: the contract ---------------------------------------------------------------------


def _all_parsers() -> list[argparse.ArgumentParser]:
    parser = build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [parser, *(p for s in subs for p in s.choices.values())]


def test_every_option_has_help_and_every_help_states_the_exit_codes() -> None:
    for parser in _all_parsers():
        for action in parser._actions:
            assert action.help and action.help.strip(), (parser.prog, action.dest)
        text = parser.format_help()
        for line in ("0  ok", "1  findings or a refused operation", "2  usage error",
                     "3  could not run"):
            assert line in text, parser.prog


def test_every_command_of_every_group_reaches_the_parser_once() -> None:
    """Each group module declares its commands beside their bodies; the parser lists every
    one of them, once, in the order --help shows."""
    from memory_es.cli.commands import GROUPS, HELP_ORDER

    declared = [command.name for group in GROUPS for command in group.COMMANDS]
    assert sorted(declared) == sorted(HELP_ORDER)
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == list(HELP_ORDER)
    for name, parser in sub.choices.items():
        assert parser.get_default("cmd").name == name


ONE_COMMAND = [
    ["search", "dentist", "--limit", "3", "--json"],
    ["--root", "r", "--json", "journal", "--from", "2026-01-01", "--tz", "UTC"],
    ["--root", "search", "list"],  # a command's name as an option's value
    ["--config", "admit", "admit", "--run-id", "x", "--answer", "y"],
    ["health", "--deep", "--root", "r"],
]


@pytest.mark.parametrize("argv", ONE_COMMAND, ids=[" ".join(a) for a in ONE_COMMAND])
def test_the_named_command_alone_parses_as_the_whole_parser(argv: list[str]) -> None:
    """A command is parsed by a parser holding only that command (building all of them is
    most of a cold start's parsing): the same namespace as the whole parser gives, and the
    whole parser when the first command-like word was an option's value."""
    from memory_es.cli.parser import parse

    parser, got = parse(argv)
    assert vars(got) == vars(build_parser().parse_args(argv))
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    one = argv[0] != "--root" or argv[1] != "search"
    assert list(sub.choices) == ([got.command] if one else list(build_parser_choices()))


def build_parser_choices() -> list[str]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


@pytest.mark.parametrize("argv", [["search", "--bogus", "q"], ["search"],
                                  ["searhc", "q"], ["--he"], ["--root", "search", "nope"]])
def test_usage_errors_and_help_read_the_same_through_the_one_command_parser(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """An error (or the top-level help, also asked for by an abbreviation) is worded by the
    whole parser: the same text as before the one-command parser existed."""
    from memory_es.cli.contract import UsageError
    from memory_es.cli.parser import parse

    try:
        build_parser().parse_args(argv)
        whole = ""
    except UsageError as e:
        whole = str(e)
    except SystemExit:
        whole = capsys.readouterr().out
    assert whole
    try:
        parse(argv)
        raise AssertionError("parsed")
    except UsageError as e:
        assert str(e) == whole
    except SystemExit:
        assert capsys.readouterr().out == whole


def test_version_and_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.startswith("memory-es ")
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "exit codes" in out
    code, out, _ = cli(capsys, "journal", "--help")
    assert code == 0 and "--tz" in out


def test_search_help_says_why_its_default_limit_is_smaller(
        capsys: pytest.CaptureFixture[str]) -> None:
    """search shows 5 hits by default, recall() and memory_recall 10: --help says why (C9)."""
    from memory_es.recall.engine import recall
    from memory_es.serve.tools import MemoryTools

    code, out, _ = cli(capsys, "search", "--help")
    flat = " ".join(out.split())
    assert code == 0 and "(default 5: one screen for a person" in flat
    assert "default to 10" in flat
    for api in (recall, MemoryTools.recall):
        assert inspect.signature(api).parameters["limit"].default == 10


@pytest.mark.parametrize("order", ["before", "after", "mixed"])
def test_global_options_before_or_after_the_command(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, order: str) -> None:
    config = write(tmp_path / "c.json", '{"memory": {"mode": "lite"}}')
    argv = {"before": ["--root", str(root), "--config", config, "--json", "inspect"],
            "after": ["inspect", "--root", str(root), "--config", config, "--json"],
            "mixed": ["--json", "--config", config, "inspect", "--root", str(root)]}[order]
    code, out, err = cli(capsys, *argv)
    assert (code, err) == (0, "")
    assert json.loads(out)["counts"]["total"] == 1


def test_replay_takes_root_after_the_command(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path) -> None:
    export = tmp_path / "j.jsonl"
    assert main(["--root", str(root), "export", "--journal", str(export)]) == 0
    code, out, _ = cli(capsys, "replay", str(export), "--root", str(tmp_path / "copy"))
    assert code == 0 and out.startswith("replayed ")
    code, out, _ = cli(capsys, "replay", str(export), "--root", str(root), "--json")
    assert code == 1  # a refused operation: the root is not new
    assert json.loads(out)["error"]["code"] == "root_not_empty"


def test_json_success_objects(capsys: pytest.CaptureFixture[str], root: Path,
                              tmp_path: Path) -> None:
    """Every command but demo answers --json with one JSON object."""
    for argv in (["validate"], ["drain"], ["retry"], ["rebuild"], ["health"],
                 ["export", "--journal", str(tmp_path / "e.jsonl")], ["search", "dentist"]):
        code, out, err = cli(capsys, "--root", str(root), *argv, "--json")
        assert code == 0, (argv, out, err)
        assert isinstance(json.loads(out), dict), argv


def test_lock_held_exits_3_with_json_error(
        capsys: pytest.CaptureFixture[str], root: Path) -> None:
    with MemoryStore.open(root, background=False):
        before = digest(root)
        code, out, err = cli(capsys, "--root", str(root), "retry", "--json")
        assert (code, err) == (3, "")
        error = json.loads(out)["error"]
        assert error["code"] == "lock_held" and "writer lock held" in error["message"]
        assert digest(root) == before


def test_corrupt_journal_exits_3(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    (root / "journal.db").write_bytes(b"garbage" * 1000)
    for argv in (["inspect"], ["drain"], ["export", "--journal", "-"]):
        code, out, err = cli(capsys, "--root", str(root), *argv)
        assert code == 3, (argv, out, err)
        assert len(err.splitlines()) == 1 and "Traceback" not in err


def run(*argv: str | bytes, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([CLI, *argv], capture_output=True, timeout=HANG_S, **kw)


def test_non_utf8_argv_subprocess(root: Path) -> None:
    before = digest(root)
    for argv in ([b"admit", b"--run-id", b"\xff", b"--answer", b"x"], [b"search", b"\xff\xfe"]):
        done = run("--root", str(root), *argv)
        assert done.returncode == 2, done.stderr
        assert done.stdout == b""
        (line,) = done.stderr.splitlines()
        assert b"not valid UTF-8 text (byte 0xff at character 0)" in line
    assert digest(root) == before


def test_broken_pipe_is_quiet(root: Path) -> None:
    """`memory-es inspect | head -1`: the reader is gone before the first write (head -c 0
    exits at once), so every write meets a closed pipe; no error text, exit 0."""
    for argv in ("inspect", "export --journal -", "--help", "search dentist --json"):
        done = subprocess.run(f"'{CLI}' --root '{root}' {argv} | head -c 0; "
                              "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                              capture_output=True, timeout=HANG_S)
        assert done.stderr == b"", (argv, done.stderr)
        assert done.returncode == 0, argv


@pytest.mark.parametrize("command", ["drain", "remember", "inspect"])
def test_a_root_path_that_is_not_utf8_is_a_usage_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        command: str) -> None:
    """A root named by undecodable bytes (surrogate-escaped in argv) cannot hold an SQLite
    journal: exit 2 with one line naming it, nothing created (found by the CLI fuzzer)."""
    monkeypatch.chdir(tmp_path)
    argv = [command, "--root", "root-\udcff"] + (["A fact."] if command == "remember" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "UTF-8 path" in err
    assert list(tmp_path.iterdir()) == []
