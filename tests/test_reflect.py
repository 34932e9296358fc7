"""``memory-es reflect`` (SPEC C13): the due-state report, read-only, no model, in the host's
zone (G15); a past day read from the journal as it stood at the end of that day.

One BuJo root built with a fixed clock holds a line for every section (and lines that must
stay out of each: a done line with a past due, a line recorded after the day asked about);
its report is pinned as text and JSON, through the API and the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from ceilings import HANG_S
from memory_es import MemoryRoot
from memory_es.config import parse_config
from memory_es.errors import InvalidArgumentError
from memory_es.store import MemoryStore

BUJO = {"mode": "bujo", "embeddings": {"dim": 8}, "llm": {"provider": "ollama", "model": "m"}}
CLI = [sys.executable, "-m", "memory_es.cli"]
ZONE = "Pacific/Auckland"  # UTC+13 in March: a late UTC instant is the next civil day there

EXPECTED = """\
reflect 2026-03-10 (Pacific/Auckland), as the journal stood at the end of that day
due today (2)
  {plumber}  [open] Call the plumber about the boiler  (due 2026-03-10)
  {gas}  [open] Read the gas meter  (due 2026-03-09T12:30:00Z)
overdue (1)
  {insurance}  [open] Renew the car insurance  (due 2026-03-01)
scheduled (1)
  {flights}  [scheduled] Book the flights to Porto  (due 2026-03-20)
migrated (1)
  {fence}  [migrated] Paint the garden fence
validity ends within 7 days (1)
  {office}  [open] The office is closed for works  (until 2026-03-14)
validity ended (1)
  {winter}  [open] The winter timetable applies  (until 2026-03-05)"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("reflect") / "root"
    clock = [datetime(2026, 3, 1, 9, tzinfo=UTC)]

    def at(day: int) -> None:
        clock[0] = datetime(2026, 3, day, 9, tzinfo=UTC)

    ids: dict[str, str] = {}
    with MemoryStore.open(path, parse_config(BUJO), clock=lambda: clock[0],
                          background=False) as store:
        def remember(key: str, text: str, day: int, **terms: str) -> str:
            at(day)
            ids[key] = store.remember(text, **terms).memory_id  # type: ignore[arg-type]
            return ids[key]

        remember("plumber", "Call the plumber about the boiler", 2, due_at="2026-03-10")
        remember("gas", "Read the gas meter", 2, due_at="2026-03-09T12:30:00Z")
        remember("insurance", "Renew the car insurance", 1, due_at="2026-03-01")
        store.set_status(remember("flights", "Book the flights to Porto", 3,
                                  due_at="2026-03-20"), "scheduled")
        store.set_status(remember("fence", "Paint the garden fence", 3), "migrated")
        remember("office", "The office is closed for works", 4, valid_to="2026-03-14")
        remember("winter", "The winter timetable applies", 1, valid_to="2026-03-05")
        store.set_status(remember("milk", "Buy milk", 2, due_at="2026-03-08"), "done")
        remember("later", "Pay the nursery fees", 12, due_at="2026-03-10")
    return path, ids


def expected(ids: dict[str, str]) -> str:
    return EXPECTED.format(**{k: v[:12] for k, v in ids.items()})


def test_c13_the_report_for_a_past_day_is_pinned(root: tuple[Path, dict[str, str]]) -> None:
    path, ids = root
    report = MemoryRoot.open(path, time_zone=ZONE).reflect("2026-03-10")
    assert report.render() == expected(ids)
    shape = report.to_json()
    assert set(shape) == {"day", "zone", "soonDays", "asOf", "due_today", "overdue",
                          "scheduled", "migrated", "ending_soon", "ended"}
    assert shape["due_today"][0] == {
        "id": ids["plumber"], "text": "Call the plumber about the boiler", "type": "note",
        "status": "open", "recordedAt": "2026-03-02T09:00:00.000Z", "when": "2026-03-10"}


def test_the_cli_prints_the_same_and_json(root: tuple[Path, dict[str, str]]) -> None:
    path, ids = root
    run = subprocess.run([*CLI, "--root", str(path), "reflect", "--as-of", "2026-03-10",
                          "--tz", ZONE], capture_output=True, text=True, timeout=HANG_S)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected(ids) + "\n"
    as_json = subprocess.run([*CLI, "--root", str(path), "--json", "reflect", "--as-of",
                              "2026-03-10", "--tz", ZONE, "--soon", "0"],
                             capture_output=True, text=True, timeout=HANG_S)
    shape = json.loads(as_json.stdout)
    assert shape["asOf"] is True and shape["soonDays"] == 0 and shape["ending_soon"] == []


def test_today_reads_the_live_index_and_sees_every_line(root: tuple[Path, dict[str, str]]
                                                        ) -> None:
    """Today is read from the live index (not a fold): the line recorded after the tenth is
    there, and both March dues are overdue by now."""
    path, ids = root
    report = MemoryRoot.open(path, time_zone=ZONE).reflect()
    assert not report.as_of and report.day == datetime.now(UTC).astimezone(
        MemoryRoot.open(path, time_zone=ZONE).time_zone).date()
    overdue = {line.id for line in report.sections["overdue"]}
    assert {ids["later"], ids["plumber"], ids["insurance"]} <= overdue
    assert ids["milk"] not in overdue  # done: nothing is due


@pytest.mark.parametrize(("argv", "message"), [
    (["--as-of", "10/03/2026"], "argument --as-of: reflect: the day must be an ISO date"),
    (["--soon", "400"], "argument --soon: reflect: soon must be whole days from 0 to 366"),
    (["--tz", "Mars/Olympus"], "argument --tz"),
])
def test_bad_arguments_are_one_line_usage_errors(argv: list[str], message: str,
                                                 root: tuple[Path, dict[str, str]]) -> None:
    run = subprocess.run([*CLI, "--root", str(root[0]), "reflect", *argv],
                         capture_output=True, text=True, timeout=HANG_S)
    assert run.returncode == 2 and message in run.stderr
    assert run.stderr.count("\n") == 1 and run.stdout == ""


def test_the_api_refuses_a_bad_day_and_soon(root: tuple[Path, dict[str, str]]) -> None:
    handle = MemoryRoot.open(root[0])
    with pytest.raises(InvalidArgumentError):
        handle.reflect("yesterday")
    with pytest.raises(InvalidArgumentError):
        handle.reflect(date(2026, 3, 10), soon=-1)
    assert handle.reflect(date.today() + timedelta(days=1)).as_of is False
