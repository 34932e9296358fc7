"""The README is the front door, and it runs (issue 13 item 17).

Every fenced block of README.md is one of:

- ``python``: run with this interpreter in a fresh temp folder (nothing prepared); when the
  next block is a ``text`` block marked ``<!-- readme-test: output -->``, its stdout must
  equal that block;
- ``console``: a terminal session. ``$ CMD`` lines run with bash, exactly as written, in one
  fresh temp folder shared by every console block in README order (the walkthrough builds on
  itself); lines starting ``> `` continue the command (the shell's PS2). The lines up to the
  next ``$`` are the expected output (stdout and stderr as a terminal shows them, interleaved),
  and a last line ``[exit N]`` is the expected exit status (absent: 0);
- ``json``: a ``memory.json``; each must pass ``memory-es validate --config`` (exit 0);
- ``text``: not code (a diagram, or the output of the block before it);
- any block preceded by ``<!-- readme-test: not run: REASON -->``, where REASON must be one
  of :data:`NOT_RUN`, whose check runs instead.

Output is compared line by line after :func:`normalise`, applied to both sides; its rules are
narrow and listed there. ``memory-es`` is this checkout's CLI (``python -m memory_es.cli``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ceilings import HANG_S

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SRC = REPO / "src"
EXAMPLE_DAY = "2026-12-02"  # in the README's shown output: the day the walkthrough runs
EXAMPLE_HOME = "/home/me"  # the README's home folder in paths a command prints

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_MARKER = re.compile(r"<!-- readme-test: (.*?) -->\s*\Z", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int
    marker: str | None

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.lang or 'plain'})"


def blocks() -> list[Block]:
    text = README.read_text("utf-8")
    found = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1,
                           marker.group(1).strip() if marker else None))
    return found


BLOCKS = blocks()


# -- normalisation: the only differences allowed between shown and real output -------------

_INSTANT = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\b")
_CLOCK = re.compile(r"(<day>) \d{2}:\d{2}\b")
# A MemoryJournal cursor: base64url JSON (always starting '{"d":', i.e. eyJkIj) . HMAC-SHA-256.
_BACKUP_ID = re.compile(r"\b(backup )[0-9a-f]{16}\b")
_ROOT_ID = re.compile(r"\b(root )[0-9a-f]{32}\b")
_CURSOR = re.compile(r"\beyJkIj[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")


def normalise(text: str, *, today: str | None = None, tmp: Path | None = None) -> list[str]:
    """The explicit rules, each as narrow as the thing that must vary:

    1. an ISO instant with milliseconds (``2026-12-02T14:23:08.360Z``: admission, record and
       due times) becomes ``<instant>``;
    2. the day the walkthrough runs (real output: today's UTC date, ``today``) and the README's
       ``2026-12-02`` that stands for it become ``<day>``;
    3. a wall-clock ``HH:MM`` right after that day (a journal line's local time) becomes
       ``<hh:mm>``;
    4. the temp folder's absolute path (``tmp``, also the walkthrough's ``$HOME``) and the
       README's ``/home/me`` that stands for it become ``<tmp>``;
    5. a MemoryJournal cursor (signed with the root's random key) becomes ``<cursor>``;
    6. a backup's random id (16 hex digits after ``backup ``) and a root's random id (32 hex
       digits after ``root ``) become ``<backup id>`` and ``<root id>``;
    7. trailing whitespace and trailing blank lines are dropped.
    """
    if tmp is not None:
        text = text.replace(str(tmp), "<tmp>").replace(EXAMPLE_HOME, "<tmp>")
    text = _CURSOR.sub("<cursor>", text)
    text = _BACKUP_ID.sub(r"\1<backup id>", text)
    text = _ROOT_ID.sub(r"\1<root id>", text)
    text = _INSTANT.sub("<instant>", text)
    for day in {EXAMPLE_DAY, today} - {None}:
        assert day is not None
        text = text.replace(day, "<day>")
    text = _CLOCK.sub(r"\1 <hh:mm>", text)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def compare(expected: str, actual: str, *, what: str, today: str, tmp: Path) -> None:
    want = normalise(expected, today=today, tmp=tmp)
    got = normalise(actual, today=today, tmp=tmp)
    if want != got:
        diff = "\n".join(difflib.unified_diff(want, got, "README", "real", lineterm=""))
        pytest.fail(f"{what}: the README shows other output\n{diff}")


# -- running --------------------------------------------------------------------------------


def environment(tmp: Path) -> dict[str, str]:
    """``memory-es`` on PATH is this checkout's CLI under this interpreter; a UTF-8 locale,
    unbuffered output (so stdout and stderr interleave as on a terminal)."""
    bin_dir = tmp / ".readme-bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "memory-es"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memory_es.cli "$@"\n')
    shim.chmod(0o700)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "PYTHONPATH": str(SRC), "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "HOME": str(tmp), "TZ": "UTC"}


@dataclass(frozen=True)
class Step:
    command: str
    output: str
    exit_code: int
    line: int


def steps(block: Block) -> list[Step]:
    """The ``$`` commands of a console block with their shown output and exit status."""
    found: list[Step] = []
    command: list[str] = []
    output: list[str] = []
    start = 0

    def close() -> None:
        if command:
            code = 0
            if output and re.fullmatch(r"\[exit \d+\]", output[-1]):
                code = int(output.pop()[6:-1])
            found.append(Step("\n".join(command), "\n".join(output), code, start))

    for i, line in enumerate(block.body.rstrip("\n").split("\n")):
        if line.startswith("$ "):
            close()
            command, output, start = [line[2:]], [], block.line + 1 + i
        elif line.startswith("> ") and command and not output:
            command.append(line[2:])
        else:
            assert command, f"{block.name}: output before the first $ command"
            output.append(line)
    close()
    return found


def run_console(block: Block, cwd: Path) -> None:
    env = environment(cwd)
    for step in steps(block):
        for tool in ("jq", "cmp", "sed"):  # what the walkthrough uses beside memory-es
            if re.search(rf"\b{tool} ", step.command):
                assert shutil.which(tool, path=env["PATH"]), \
                    f"README.md:{step.line} needs {tool} on PATH (install it)"
        today = datetime.now(UTC).date().isoformat()
        done = subprocess.run(["bash", "-c", step.command], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300)
        where = f"README.md:{step.line} $ {step.command}"
        compare(step.output, done.stdout, what=where, today=today, tmp=cwd)
        assert done.returncode == step.exit_code, \
            f"{where}: exit {done.returncode}, the README shows {step.exit_code}"


# -- blocks the test does not run, and why ---------------------------------------------------


def _make_targets_run_the_tested_commands() -> None:
    """``make demo`` builds a venv with pip (network) and runs ``memory-es demo``; ``make test``
    is this suite. What they run is checked here; ``memory-es demo`` itself runs in
    tests/test_cli.py."""
    makefile = (REPO / "Makefile").read_text("utf-8")
    assert "\t$(BIN)/memory-es demo\n" in makefile
    assert "\t$(BIN)/python -m pytest -q -n auto --durations=15\n" in makefile
    # the suite's processes import compiled modules, even where no import may write a .pyc
    assert makefile.index("\t$(BIN)/python -m compileall -q src tests") \
        < makefile.index("\t$(BIN)/python -m pytest -q -n auto")
    assert "def test_demo" in (REPO / "tests" / "test_cli.py").read_text("utf-8")


def _mcp_client_config_starts_the_server() -> None:
    """The client config's command and arguments are the CLI's: ``serve-mcp`` parses them
    (the server itself is driven over stdio and HTTP by tests/test_mcp_server.py)."""
    from memory_es.cli.parser import build_parser

    (block,) = [b for b in BLOCKS if "mcpServers" in b.body]
    entry = json.loads(block.body)["mcpServers"]["memory"]
    assert entry["command"] == "memory-es"
    args = build_parser().parse_args(entry["args"])
    assert args.command == "serve-mcp" and args.transport == "stdio"


def _postgres_search_parses() -> None:
    """The PostgreSQL example is a plain CLI call (the server side is tests/test_pg_store.py,
    which drives the same commands against a real server)."""
    import shlex

    from memory_es.cli.parser import build_parser

    (block,) = [b for b in BLOCKS if "MEMORY_ES_PG_DSN=" in b.body]
    env, program, *argv = shlex.split(block.body)
    assert env.startswith("MEMORY_ES_PG_DSN=postgresql://") and program == "memory-es"
    assert build_parser().parse_args(argv).command == "search"


def _web_start_is_what_serve_web_says() -> None:
    """The inspector runs until stopped (tests/test_web.py drives a real one): the command
    parses, and the line shown is the one it prints, but for the code and the paths."""
    import inspect
    import shlex

    from memory_es.cli.parser import build_parser
    from memory_es.web import app

    (block,) = [b for b in BLOCKS if "serve-web" in b.body and b.body.startswith("$ ")]
    command, said = block.body.strip().splitlines()
    program, *argv = shlex.split(command.removeprefix("$ "))
    assert program == "memory-es" and build_parser().parse_args(argv).command == "serve-web"
    source = inspect.getsource(app.serve_web)
    for words in ("memory-es: web inspector on http://", "once to sign in; bearer token in "):
        assert words in said and words in source.replace('f"', "").replace('"\n', "")


def _install_from_a_checkout() -> None:
    """The install block installs this checkout (not a PyPI name that does not exist yet),
    with extras pyproject.toml defines, and its wheel name is the one setuptools builds."""
    import tomllib

    (block,) = [b for b in BLOCKS if "pip wheel" in b.body]
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    installs = [[a for a in line.split("#")[0].split()[2:] if a != "-e"]
                for line in block.body.splitlines() if line.startswith("pip install")]
    assert len(installs) == 2 and all(len(args) == 1 for args in installs), installs
    assert project["dynamic"] == ["version"]  # read from the package's one constant
    from memory_es.version import __version__

    wheel = f"{project['name'].replace('-', '_')}-{__version__}-py3-none-any.whl"
    for (target,) in installs:
        spec = target.strip("'")
        assert spec.startswith((".[", "./dist/" + wheel + "[")), spec  # never 'memory-es[...]'
        assert set(spec.split("[", 1)[1].rstrip("]").split(",")) <= extras, spec
    readme = README.read_text("utf-8")
    assert "pip install 'memory-es[" not in readme and 'pip install "memory-es[' not in readme


NOT_RUN: dict[str, Callable[[], None]] = {
    "installs with pip from a checkout (network)": _install_from_a_checkout,
    "make builds a venv with pip (network)": _make_targets_run_the_tested_commands,
    "an MCP client's config (see test_mcp_server.py)": _mcp_client_config_starts_the_server,
    "needs a PostgreSQL server (see test_pg_store.py)": _postgres_search_parses,
    "a server that runs until stopped (see test_web.py)": _web_start_is_what_serve_web_says,
}


# -- the tests ------------------------------------------------------------------------------


def test_every_block_is_run_or_says_why() -> None:
    assert len(BLOCKS) >= 8
    for block in BLOCKS:
        if block.marker is not None and block.marker.startswith("not run: "):
            reason = block.marker.removeprefix("not run: ")
            assert reason in NOT_RUN, f"{block.name}: unknown reason {reason!r}"
            NOT_RUN[reason]()
            continue
        assert block.lang in ("python", "console", "json", "text"), \
            f"{block.name}: a fenced block needs a language (python, console, json, text)"
        if block.lang == "text":  # a diagram or output: never a command
            assert not re.search(r"^\$ ", block.body, re.M), block.name


def test_readme_has_the_api_examples() -> None:
    python = [b.body for b in BLOCKS if b.lang == "python"]
    assert len(python) >= 2  # the MemoryStore/MemoryRoot block and the BuJo capture block
    assert any("MemoryRoot.open" in b for b in python)


def test_a_minimal_config_for_each_tier() -> None:
    configs = [b.body for b in BLOCKS if b.lang == "json"]
    shown = {(m.group(1), m.group(2)) for body in configs for m in [re.search(
        r'"mode": "(\w+)"(?:, "writeMode": "([\w-]+)")?', body)] if m}
    for tier in (("lite", ""), ("journal", ""), ("bujo", "append-host-summary"),
                 ("bujo", "capture")):
        assert tier in {(mode, write or "") for mode, write in shown}, tier


def test_normalise_rules_are_narrow() -> None:
    lines = normalise("1.000 [recorded 2026-12-02T14:23:08.360Z] Booked the dentist for "
                      "2026-12-09.\n2026-12-02 15:23 x\nids 4e65d3fb stay\n\n",
                      today="2031-01-05")
    assert lines == ["1.000 [recorded <instant>] Booked the dentist for 2026-12-09.",
                     "<day> <hh:mm> x", "ids 4e65d3fb stay"]
    assert normalise("2031-01-05 and 12:30", today="2031-01-05") == ["<day> and 12:30"]
    cursor = "eyJkIjoiNzBm" + "A" * 40 + "." + "b" * 43
    assert normalise(f"more: --cursor {cursor} (or --page 2)") == \
        ["more: --cursor <cursor> (or --page 2)"]
    assert normalise(f"{cursor}x.y") == [f"{cursor}x.y"]  # only a whole cursor
    ids = "backup 0123456789abcdef: root " + "a" * 32 + "; memory " + "b" * 32
    assert normalise(ids) == ["backup <backup id>: root <root id>; memory " + "b" * 32]
    assert normalise("backup 0123456789abcdef0") == ["backup 0123456789abcdef0"]  # 16 only
    assert normalise("in /home/me/x and /tmp/t/y", tmp=Path("/tmp/t")) == \
        ["in <tmp>/x and <tmp>/y"]


@pytest.mark.slow
@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if b.lang == "python"
                                   and b.marker is None])
def test_python_block_runs(index: int, tmp_path: Path) -> None:
    block = BLOCKS[index]
    done = subprocess.run([sys.executable, "-c", block.body], cwd=tmp_path,
                          env=environment(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert (tmp_path / ".memory" / "journal.db").exists()  # the block really wrote a root
    follower = BLOCKS[index + 1] if index + 1 < len(BLOCKS) else None
    if follower is not None and follower.marker == "output":
        compare(follower.body, done.stdout, what=block.name,
                today=datetime.now(UTC).date().isoformat(), tmp=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if b.lang == "json"
                                   and b.marker is None])
def test_json_block_is_a_valid_config(index: int, tmp_path: Path) -> None:
    (tmp_path / "memory.json").write_text(BLOCKS[index].body, "utf-8")
    done = subprocess.run(["memory-es", "validate", "--config", "memory.json"], cwd=tmp_path,
                          env=environment(tmp_path), capture_output=True, text=True,
                          timeout=HANG_S)
    first, *notes = done.stdout.splitlines()  # "OK", then what to do before running it
    assert (done.returncode, first) == (0, "OK"), (BLOCKS[index].name, done)
    assert all(note.startswith("note: ") for note in notes), (BLOCKS[index].name, done)


@pytest.mark.slow
def test_console_walkthrough_runs_as_shown(tmp_path: Path) -> None:
    """Every console block, in README order, in one fresh folder."""
    console = [b for b in BLOCKS if b.lang == "console" and b.marker is None]
    assert console
    for block in console:
        run_console(block, tmp_path)
