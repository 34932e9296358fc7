"""Event factories (issue 11): typed keyword parameters, byte-stable encoding.

The factories replaced ``**fields`` with explicit keyword parameters. These tests prove the
typing (mypy rejects a misspelt field), that every factory mirrors its event class's declared
fields, and that the stored bytes are exactly what the old ``**fields`` path wrote: the
expected ``state`` literals below were computed from the code before the change, so any drift
in encoding (a renamed, added, dropped or retyped field) fails here before it reaches a
journal.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from mypy import api as mypy_api

from memory_es.events import Entity, Intake, Memory
from memory_es.journal import MsgspecMapper

AT = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
RH = "a" * 64
INTAKE = "f0cf239c-2dd3-51ab-aa8a-1607e2b8671e"  # intake_uuid(RH), as stored before issue 11
MID, NID, EID = "e" * 64, "f" * 64, "1" * 64  # two memory ids and an entity id


def _admitted(**change: Any) -> Intake.Admitted:
    fields: dict[str, Any] = {
        "run_hash": RH, "content_sha256": "b" * 64, "content_bytes": 321,
        "payload_sha256": "c" * 64, "payload_bytes": 12, "summary": "Shipped the release.",
        "write_mode": "capture", "tier": "bujo", "speaker_kind": "assistant",
        "source_label": "host-turn", "session": "s-1", "trigger": "turn",
        "attachments": [{"name": "x.txt", "sha256": "d" * 64, "bytes": 3}],
    }
    return Intake.admitted(at=AT, **(fields | change))


# (factory call, originator id, originator version, topic, encoded state before issue 11)
CASES: list[tuple[Callable[[], Any], str, int, str, bytes]] = [
    (_admitted, INTAKE, 1, "memory_es/Intake.Admitted", (
         b'{"attachments":[{"bytes":3,"name":"x.txt","sha256":"dddddddddddddddddddddddddddd'
         b'dddddddddddddddddddddddddddddddddddd"}],"content_bytes":321,"content_sha256":"bb'
         b'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","originator_topi'
         b'c":"memory_es/Intake","payload_bytes":12,"payload_sha256":"ccccccccccccccccccccc'
         b'ccccccccccccccccccccccccccccccccccccccccccc","run_hash":"aaaaaaaaaaaaaaaaaaaaaaa'
         b'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","session":"s-1","source_label":"host-'
         b'turn","speaker_kind":"assistant","summary":"Shipped the release.","tier":"bujo",'
         b'"timestamp":"2024-05-06T07:08:09.123000Z","trigger":"turn","write_mode":"capture'
         b'"}'
    )),
    (lambda: _admitted(payload_sha256=None, session=None, attachments=[]), INTAKE, 1,
     "memory_es/Intake.Admitted", (
         b'{"attachments":[],"content_bytes":321,"content_sha256":"bbbbbbbbbbbbbbbbbbbbbbbb'
         b'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","originator_topic":"memory_es/Intake",'
         b'"payload_bytes":12,"payload_sha256":null,"run_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaa'
         b'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","session":null,"source_label":"host-turn"'
         b',"speaker_kind":"assistant","summary":"Shipped the release.","tier":"bujo","time'
         b'stamp":"2024-05-06T07:08:09.123000Z","trigger":"turn","write_mode":"capture"}'
    )),
    (lambda: Memory.recorded(
        at=AT, memory_id="e" * 64, kind="observation", text="Shipped the release.",
        day="2024-05-06", status="open", source="host-summary", session="s-1", run_hash=RH,
        tier="lite"),
     "0f803b19-d869-5f20-8dbe-eea8c2456d84", 1, "memory_es/Memory.Recorded", (
         b'{"day":"2024-05-06","kind":"observation","memory_id":"eeeeeeeeeeeeeeeeeeeeeeeeee'
         b'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee","originator_topic":"memory_es/Memory","r'
         b'un_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","ses'
         b'sion":"s-1","source":"host-summary","status":"open","text":"Shipped the release.'
         b'","tier":"lite","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.recorded(
        at=AT, memory_id="f" * 64, kind="observation", text="J", day="2024-05-06",
        status="open", source="host-summary", session=None, run_hash=RH, tier="journal"),
     "e0b85f37-a0aa-5bdd-9b4b-9fdb263f3a9e", 1, "memory_es/Memory.Recorded", (
         b'{"day":"2024-05-06","kind":"observation","memory_id":"ffffffffffffffffffffffffff'
         b'ffffffffffffffffffffffffffffffffffffff","originator_topic":"memory_es/Memory","r'
         b'un_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","ses'
         b'sion":null,"source":"host-summary","status":"open","text":"J","tier":"journal","'
         b'timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.captured(
        at=AT, memory_id="1" * 64, kind="note", text="Call Ana", day="2024-05-06",
        status="open", labels=["task"], entity_ids=["2" * 64], scope="personal",
        source="host-turn", salience=0.5, from_task=True, session="s", run_hash=RH,
        tier="bujo", fact={"subject": "2" * 64, "key": "k", "value": "v"}),
     "965929f3-0865-5170-8a78-c7fa67f8acd8", 1, "memory_es/Memory.Captured", (
         b'{"class_version":2,"day":"2024-05-06","entity_ids":["222222222222222222222222222'
         b'2222222222222222222222222222222222222"],"fact":{"key":"k","subject":"22222222222'
         b'22222222222222222222222222222222222222222222222222222","value":"v"},"from_task":'
         b'true,"kind":"note","labels":["task"],"memory_id":"111111111111111111111111111111'
         b'1111111111111111111111111111111111","originator_topic":"memory_es/Memory","run_h'
         b'ash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","salienc'
         b'e":0.5,"scope":"personal","session":"s","source":"host-turn","status":"open","te'
         b'xt":"Call Ana","tier":"bujo","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.captured(
        at=AT, memory_id="1" * 64, kind="note", text="x", day="2024-05-06", status="open",
        labels=[], entity_ids=[], scope="work", source="host-turn", salience=1.0,
        from_task=False, session=None, run_hash=None, tier="bujo", fact=None),
     "965929f3-0865-5170-8a78-c7fa67f8acd8", 1, "memory_es/Memory.Captured", (
         b'{"class_version":2,"day":"2024-05-06","entity_ids":[],"fact":null,"from_task":fa'
         b'lse,"kind":"note","labels":[],"memory_id":"1111111111111111111111111111111111111'
         b'111111111111111111111111111","originator_topic":"memory_es/Memory","run_hash":nu'
         b'll,"salience":1.0,"scope":"work","session":null,"source":"host-turn","status":"o'
         b'pen","text":"x","tier":"bujo","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Entity.named(at=AT, entity_id="2" * 64, name="Ana", type="person"),
     "4f0a08f0-b597-5a12-8c5e-80bfee5d48e8", 1, "memory_es/Entity.Named", (
         b'{"entity_id":"2222222222222222222222222222222222222222222222222222222222222222",'
         b'"name":"Ana","originator_topic":"memory_es/Entity","timestamp":"2024-05-06T07:08'
         b':09.123000Z","type":"person"}'
    )),
    (lambda: Intake.resolved(run_hash=RH, version=3, at=AT, outcome="projected"),
     INTAKE, 4, "memory_es/Intake.Resolved", (
         b'{"memory_id":null,"outcome":"projected","reason_slug":null,"timestamp":"2024-05-'
         b'06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.resolved(run_hash=RH, version=3, at=AT, outcome="projected",
                             memory_id="e" * 64),
     INTAKE, 4, "memory_es/Intake.Resolved", (
         b'{"memory_id":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",'
         b'"outcome":"projected","reason_slug":null,"timestamp":"2024-05-06T07:08:09.123000'
         b'Z"}'
    )),
    (lambda: Intake.resolved(run_hash=RH, version=1, at=AT, outcome="empty",
                             reason_slug="capture-only-empty"),
     INTAKE, 2, "memory_es/Intake.Resolved", (
         b'{"memory_id":null,"outcome":"empty","reason_slug":"capture-only-empty","timestam'
         b'p":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.dead_lettered(run_hash=RH, version=17, at=AT, attempt=16,
                                  category="io_error"),
     INTAKE, 18, "memory_es/Intake.DeadLettered", (
         b'{"attempt":16,"category":"io_error","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.attempt_failed(run_hash=RH, version=2, at=AT, attempt=2,
                                   category="model_timeout",
                                   next_due_at=AT + timedelta(seconds=30)),
     INTAKE, 3, "memory_es/Intake.AttemptFailed", (
         b'{"attempt":2,"category":"model_timeout","next_due_at":"2024-05-06T07:08:39.12300'
         b'0Z","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.retry_requested(run_hash=RH, version=5, at=AT),
     INTAKE, 6, "memory_es/Intake.RetryRequested", (
         b'{"timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.extraction_retained(run_hash=RH, version=1, at=AT, model="m-1",
                                        plan={"lines": [{"text": "a"}], "entities": []}),
     INTAKE, 2, "memory_es/Intake.ExtractionRetained", (
         b'{"model":"m-1","plan":{"entities":[],"lines":[{"text":"a"}]},"timestamp":"2024-0'
         b'5-06T07:08:09.123000Z"}'
    )),
    (lambda: Intake.review_retained(run_hash=RH, version=2, at=AT, decisions=["keep", None],
                                    model="m-1"),
     INTAKE, 3, "memory_es/Intake.ReviewRetained", (
         b'{"decisions":["keep",null],"model":"m-1","timestamp":"2024-05-06T07:08:09.123000'
         b'Z"}'
    )),
    (lambda: Intake.reconcile_retained(
        run_hash=RH, version=3, at=AT, model="m-2",
        decisions=[{"index": 0, "action": "ADD", "target": None, "text": None}]),
     INTAKE, 4, "memory_es/Intake.ReconcileRetained", (
         b'{"decisions":[{"action":"ADD","index":0,"target":null,"text":null}],"model":"m-2'
         b'","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.text_updated(version=1, at=AT, memory_id=MID, text="New text.",
                                 session="s-1", run_hash=RH,
                                 fact={"entity": "e1", "key": "city", "value": "Madrid"}),
     "0f803b19-d869-5f20-8dbe-eea8c2456d84", 2, "memory_es/Memory.TextUpdated", (
         b'{"class_version":2,"fact":{"entity":"e1","key":"city","value":"Madrid"},"memory_id'
         b'":"' + MID.encode() + b'","run_hash":"' + RH.encode() + b'","session":"s-1","text"'
         b':"New text.","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.superseded(version=2, at=AT, memory_id=MID, by=NID, status="superseded",
                               run_hash=RH),
     "0f803b19-d869-5f20-8dbe-eea8c2456d84", 3, "memory_es/Memory.Superseded", (
         b'{"by":"' + NID.encode() + b'","memory_id":"' + MID.encode() + b'","run_hash":"'
         + RH.encode() + b'","status":"superseded","timestamp":"2024-05-06T07:08:09.123000Z"}'
    )),
    (lambda: Memory.threaded(version=1, at=AT, memory_id=NID, to=MID, weight=0.5,
                             run_hash=RH),
     "e0b85f37-a0aa-5bdd-9b4b-9fdb263f3a9e", 2, "memory_es/Memory.Threaded", (
         b'{"memory_id":"' + NID.encode() + b'","run_hash":"' + RH.encode()
         + b'","timestamp":"2024-05-06T07:08:09.123000Z","to":"' + MID.encode()
         + b'","weight":0.5}'
    )),
    (lambda: Entity.related(version=1, at=AT, entity_id=EID, to=NID, relation="works with",
                            memory=MID),
     "fc7ed608-7a7b-58bb-b9c8-765bd2c6b843", 2, "memory_es/Entity.Related", (
         b'{"entity_id":"' + EID.encode() + b'","memory":"' + MID.encode()
         + b'","relation":"works with","timestamp":"2024-05-06T07:08:09.123000Z","to":"'
         + NID.encode() + b'"}'
    )),
]
IDS = [f"{topic.rsplit('.', 1)[1]}-{n}" for n, (_, _, _, topic, _) in enumerate(CASES)]


@pytest.mark.parametrize(("build", "originator", "version", "topic", "state"), CASES, ids=IDS)
def test_every_factory_encodes_the_bytes_the_old_fields_path_stored(
    build: Callable[[], Any], originator: str, version: int, topic: str, state: bytes,
) -> None:
    """Same stored event bytes, ids, versions and topics as before the typed factories; and
    the stored form still decodes (the mapper resolves the topic to the event class and never
    calls an aggregate ``__init__``) to an equal event of the same class."""
    mapper = MsgspecMapper()
    event = build()
    stored = mapper.to_stored_event(event)
    assert stored.state == state
    assert (stored.originator_id, stored.originator_version, stored.topic) == (
        UUID(originator), version, topic)
    back = mapper.to_domain_event(stored)
    assert type(back) is type(event)
    assert vars(back) == vars(event)


def test_every_factory_is_covered_by_a_byte_case() -> None:
    assert {topic for _, _, _, topic, _ in CASES} == {
        event_class.TOPIC for event_class, _ in FACTORIES.values()}


# factory -> (event class, parameters beyond the event's own fields)
_FOLLOWING = {"at", "run_hash", "version"}  # an Intake event after the Admitted one
FACTORIES: dict[Callable[..., Any], tuple[type[Any], set[str]]] = {
    Intake.admitted: (Intake.Admitted, {"at"}),
    Intake.resolved: (Intake.Resolved, _FOLLOWING),
    Intake.attempt_failed: (Intake.AttemptFailed, _FOLLOWING),
    Intake.dead_lettered: (Intake.DeadLettered, _FOLLOWING),
    Intake.retry_requested: (Intake.RetryRequested, _FOLLOWING),
    Intake.extraction_retained: (Intake.ExtractionRetained, _FOLLOWING),
    Intake.review_retained: (Intake.ReviewRetained, _FOLLOWING),
    Intake.reconcile_retained: (Intake.ReconcileRetained, _FOLLOWING),
    Memory.recorded: (Memory.Recorded, {"at"}),
    Memory.captured: (Memory.Captured, {"at"}),
    Entity.named: (Entity.Named, {"at"}),
    Memory.text_updated: (Memory.TextUpdated, {"at", "version"}),
    Memory.superseded: (Memory.Superseded, {"at", "version"}),
    Memory.threaded: (Memory.Threaded, {"at", "version"}),
    Entity.related: (Entity.Related, {"at", "version"}),
}
_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}
_DEFAULTS: dict[Callable[..., Any], dict[str, Any]] = {
    Intake.resolved: {"memory_id": None, "reason_slug": None},
}


@pytest.mark.parametrize("factory", list(FACTORIES), ids=lambda f: f.__qualname__)
def test_a_factory_mirrors_its_event_class_fields(factory: Callable[..., Any]) -> None:
    """Keyword-only parameters named and typed exactly as the event class declares its
    fields; only ``Intake.resolved``'s optional fields have defaults."""
    event_class, extra = FACTORIES[factory]
    fields = {f.name for f in dataclasses.fields(event_class)} - _ENVELOPE
    parameters = inspect.signature(factory).parameters
    assert set(parameters) == fields | extra
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    defaults = {n: p.default for n, p in parameters.items() if p.default is not p.empty}
    assert defaults == _DEFAULTS.get(factory, {})
    hints = typing.get_type_hints(factory)
    declared = typing.get_type_hints(event_class)
    assert {n: hints[n] for n in fields} == {n: declared[n] for n in fields}
    assert hints["return"] is event_class


def test_aggregates_are_namespaces_without_init() -> None:
    """Nothing constructs or folds an aggregate: no ``__init__`` of their own to drift."""
    for aggregate in (Intake, Memory, Entity):
        assert "__init__" not in vars(aggregate)


_SNIPPET = '''
from datetime import UTC, datetime

from memory_es.events import Entity, Intake, Memory

AT = datetime.now(UTC)
Memory.recorded(at=AT, memory_id="m", kind="note", text="t", day="d", status="open",
                source="s", session=None, run_hash=None, tier="lite")
Memory.recorded(at=AT, memory_id="m", kynd="note", text="t", day="d", status="open",
                source="s", session=None, run_hash=None, tier="lite")
Entity.named(at=AT, entity_id="e", name="n", tipe="person")
Intake.attempt_failed(run_hash="r", version=1, at=AT, attempt=1, category="c",
                      next_due_at="soon")
'''


def test_a_misspelt_field_fails_type_checking(tmp_path: Path) -> None:
    """``Memory.recorded(..., kynd=...)`` passed ``mypy --strict`` under ``**fields``; now it
    is an error naming ``kynd``, as are a misspelt Named field and a mistyped AttemptFailed
    field, while the correctly spelt call type-checks."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(_SNIPPET)
    lines = _SNIPPET.splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(lines, start=1) if text in line)

    stdout, stderr, status = mypy_api.run([
        "--strict", "--no-error-summary", "--show-error-codes", "--no-color-output",
        "--config-file", "", "--cache-dir", str(tmp_path / ".mypy_cache"), str(snippet),
    ])
    assert status == 1, (stdout, stderr)
    by_line: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        if ": error: " in line:
            where, message = line.split(": error: ", 1)
            by_line.setdefault(int(where.rsplit(":", 1)[1]), []).append(message)
    expected = {line_of("kynd="): '"kynd"', line_of("tipe="): '"tipe"',
                line_of('next_due_at="soon"'): '"next_due_at"'}
    assert set(by_line) == set(expected), stdout  # the correct Memory.recorded call is clean
    for number, name in expected.items():
        assert any(name in message for message in by_line[number]), stdout
