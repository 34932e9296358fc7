"""Durable intake admission through MemoryStore (SPEC A2-A4, A6-A8, A10, A12-A13, B1-B4, B18, B28,
C1, C2).

Every check reads the journal back through a separate read-only reader (``MemoryRoot``), so a
turn counts as admitted only if it is durably in the journal when the call returns.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import StoredEvent

from ceilings import HANG_S
from journal_backends import BACKENDS, use_backend
from memory_es.config import MemoryConfig, parse_config
from memory_es.history import export_lines, open_reader
from memory_es.ids import intake_uuid
from memory_es.intake import (
    MAX_ACTIVE,
    SEALED_PAYLOAD,
    AdmissionResult,
    Attachment,
    CompletedTurn,
)
from memory_es.journal import Payload
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore

ADMITTED_TOPIC = "memory_es/Intake.Admitted"
LLM = {"provider": "ollama", "model": "m"}
EMB = {"dim": 384}
LITE: dict[str, Any] = {}
JOURNAL: dict[str, Any] = {"mode": "journal", "embeddings": EMB}
BUJO_APPEND: dict[str, Any] = {"mode": "bujo", "embeddings": EMB, "llm": LLM}
BUJO_CAPTURE: dict[str, Any] = {
    "mode": "bujo",
    "writeMode": "capture",
    "embeddings": EMB,
    "llm": LLM,
}
KIB_640 = 640 * 1024


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the root's own SQLite journal and on PostgreSQL (issue 18)."""
    return use_backend(request, monkeypatch)


def cfg(block: dict[str, Any], **extra: Any) -> MemoryConfig:
    return parse_config({**block, **extra})


def rh(run_id: str) -> str:
    """B2: the intake id is the SHA-256 hex of the run id."""
    return hashlib.sha256(run_id.encode("utf-8")).hexdigest()


def turn(
    run_id: str = "run-1", answer: str = "Booked the dentist for Tuesday.", **kw: Any
) -> CompletedTurn:
    kw.setdefault("outcome", "success")
    return CompletedTurn(run_id=run_id, answer=answer, **kw)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def open_store(root: Path) -> Iterator[Any]:
    """Factory: open a store on ``root`` with a config block; every store is closed at teardown."""
    stores: list[MemoryStore] = []

    def _open(block: dict[str, Any] | None = None, **extra: Any) -> MemoryStore:
        config = cfg(block if block is not None else LITE, **extra)
        store = MemoryStore.open(root, config, background=False)
        stores.append(store)
        return store

    yield _open
    for store in stores:
        store.close()


ROOT_TOPIC = "memory_es/Root."  # the root's recorded configuration, not a turn's events


def events(root: Path) -> list[Any]:
    """Every turn's journal event, decoded, through a fresh read-only reader (no writer
    lock); the root's own configuration events are left out."""
    with open_reader(root) as opened:
        mapper = opened.app.mapper
        return [
            mapper.to_domain_event(StoredEvent(oid, version, topic, state))
            for _pos, oid, version, topic, state, _chain in opened.recorder.rows()
            if not topic.startswith(ROOT_TOPIC)
        ]


def exported(root: Path) -> list[dict[str, Any]]:
    """The export's lines of the turns' events (the root's configuration left out)."""
    with open_reader(root) as opened:
        lines = [json.loads(line) for line in export_lines(opened)]
    return [line for line in lines if not line["topic"].startswith(ROOT_TOPIC)]


def payload(root: Path, intake_id: str) -> Payload | None:
    with open_reader(root) as opened:
        return opened.recorder.payload(intake_id)


def count(root: Path) -> int:
    return len(exported(root))


def assert_rejected(result: AdmissionResult, code: str) -> None:
    assert isinstance(result, AdmissionResult)
    assert result.status == "rejected", result
    assert result.code == code, result
    assert result.ok is False


# --------------------------------------------------------------------------------------------
# A3, B1, B2, A10: what an admission writes


def test_a3_b1_b2_admitted_turn_is_durable_in_journal_when_call_returns(
    root: Path, open_store: Any
) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(
        turn("run-abc", "The build passed.", session="sess-1", speaker_kind="human-turn")
    )
    assert result.status == "admitted"
    assert result.code is None
    assert result.ok is True
    assert result.intake_id == rh("run-abc")
    assert len(result.intake_id) == 64

    # read back while the writer still holds the root: the event is committed already
    rows = exported(root)
    assert len(rows) == 1
    assert rows[0]["topic"] == ADMITTED_TOPIC
    assert rows[0]["position"] == 2  # after the root's recorded configuration (position 1)
    (event,) = events(root)
    assert event.run_hash == rh("run-abc")
    assert event.originator_id == intake_uuid(rh("run-abc"))
    assert event.summary == "The build passed."
    assert event.speaker_kind == "human-turn"
    assert event.trigger == "human"
    assert event.source_label == "User"
    assert event.session == "sess-1"
    assert event.tier == "lite"
    assert event.write_mode == "append-host-summary"
    assert event.payload_bytes == 0
    assert event.payload_sha256 is None


@pytest.mark.parametrize(
    ("block", "tier", "write_mode"),
    [
        (LITE, "lite", "append-host-summary"),
        (JOURNAL, "journal", "append-host-summary"),
        (BUJO_APPEND, "bujo", "append-host-summary"),
        (BUJO_CAPTURE, "bujo", "capture"),
    ],
    ids=["lite", "journal", "bujo-append", "bujo-capture"],
)
def test_a3_a4_tier_and_write_mode_come_from_config(
    root: Path, open_store: Any, block: dict[str, Any], tier: str, write_mode: str
) -> None:
    store = open_store(block)
    assert store.persist_completed_turn(turn()).status == "admitted"
    (event,) = events(root)
    assert (event.tier, event.write_mode) == (tier, write_mode)


@pytest.mark.parametrize(
    ("trigger", "speaker_kind", "label"),
    [
        ("human", "human-turn", "User"),
        ("cron", "trigger", "scheduled-task"),
        ("webhook", "trigger", "webhook"),
    ],
)
def test_a10_source_label_follows_trigger(
    root: Path, open_store: Any, trigger: str, speaker_kind: str, label: str
) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(
        turn(answer=f"{trigger} answer", trigger=trigger, speaker_kind=speaker_kind)
    )
    assert result.status == "admitted"
    # giving the matching label explicitly is the same turn (same bytes): a duplicate
    again = store.persist_completed_turn(
        turn(
            answer=f"{trigger} answer",
            trigger=trigger,
            speaker_kind=speaker_kind,
            source_label=label,
        )
    )
    assert again.status == "duplicate"
    (event,) = events(root)
    assert event.source_label == label
    assert event.trigger == trigger
    assert event.summary == f"{trigger} answer"


# --------------------------------------------------------------------------------------------
# B3: idempotence and conflicts


def test_b3_same_run_same_bytes_is_duplicate_also_after_reopen(root: Path, open_store: Any) -> None:
    t = turn("run-dup", "Same answer.", session="s", speaker_kind="human-turn")
    store = open_store(LITE)
    assert store.persist_completed_turn(t).status == "admitted"
    dup = store.persist_completed_turn(t)
    assert (dup.status, dup.intake_id, dup.code, dup.ok) == ("duplicate", rh("run-dup"), None, True)
    assert count(root) == 1
    store.close()

    reopened = open_store(LITE)
    dup = reopened.persist_completed_turn(t)
    assert (dup.status, dup.intake_id) == ("duplicate", rh("run-dup"))
    assert count(root) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"answer": "A different answer."},
        {"session": "other-session"},
        {"speaker_kind": "unknown"},
        {"trigger": "webhook", "speaker_kind": "trigger"},
    ],
    ids=["answer", "session", "speaker_kind", "trigger"],
)
@pytest.mark.parametrize("reopen", [False, True], ids=["same-store", "reopened"])
def test_b3_same_run_other_bytes_is_run_id_conflict(
    root: Path, open_store: Any, change: dict[str, Any], reopen: bool
) -> None:
    original = {"answer": "Original answer.", "session": "s", "speaker_kind": "human-turn"}
    store = open_store(LITE)
    assert store.persist_completed_turn(turn("run-c", **original)).status == "admitted"
    if reopen:
        store.close()
        store = open_store(LITE)
    result = store.persist_completed_turn(turn("run-c", **{**original, **change}))
    assert_rejected(result, "run_id_conflict")
    assert result.intake_id == rh("run-c")
    (event,) = events(root)
    assert event.summary == "Original answer."
    assert event.session == "s"
    assert event.speaker_kind == "human-turn"


def test_b3_capture_text_is_part_of_the_bytes_in_capture_mode(root: Path, open_store: Any) -> None:
    store = open_store(BUJO_CAPTURE)
    assert store.persist_completed_turn(turn("r", capture_text="first")).status == "admitted"
    assert store.persist_completed_turn(turn("r", capture_text="first")).status == "duplicate"
    assert_rejected(
        store.persist_completed_turn(turn("r", capture_text="second")), "run_id_conflict"
    )
    assert count(root) == 1
    stored = payload(root, rh("r"))
    assert stored is not None
    assert stored.data == b"first"


@pytest.mark.parametrize("same_bytes", [True, False], ids=["same-bytes", "other-bytes"])
def test_b3_concurrent_admissions_of_one_run_write_one_event(
    root: Path, open_store: Any, same_bytes: bool
) -> None:
    """B3 under group commit: racing callers with one run id never write two events."""
    store = open_store(LITE)
    n = 12
    barrier = threading.Barrier(n)
    results: list[AdmissionResult] = []
    lock = threading.Lock()

    def admit(i: int) -> None:
        answer = "racing answer" if same_bytes else f"racing answer {i}"
        barrier.wait()
        r = store.persist_completed_turn(turn("race", answer))
        with lock:
            results.append(r)

    threads = [threading.Thread(target=admit, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=HANG_S)
    statuses = sorted(r.status for r in results)
    assert len(results) == n
    assert statuses.count("admitted") == 1
    if same_bytes:
        assert statuses.count("duplicate") == n - 1
    else:
        assert [r.code for r in results if r.status != "admitted"] == ["run_id_conflict"] * (n - 1)
    assert count(root) == 1
    assert all(r.intake_id == rh("race") for r in results)


# --------------------------------------------------------------------------------------------
# A6, A7: the sentinel is the only deterministic skip


@pytest.mark.parametrize(
    "answer",
    [
        "NOTHING_TO_REPORT",
        "  NOTHING_TO_REPORT \n",
        "\n\tNOTHING_TO_REPORT\n\n",
        "Checked.\nNOTHING_TO_REPORT",
        "All quiet NOTHING_TO_REPORT",
        "Line one.\nLine two, all quiet NOTHING_TO_REPORT\n",
    ],
)
def test_a6_sentinel_skips_and_writes_nothing(root: Path, open_store: Any, answer: str) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(turn("sentinel-run", answer))
    assert (result.status, result.code) == ("skipped", "nothing_to_report")
    assert result.ok is True
    assert result.intake_id == rh("sentinel-run")
    assert count(root) == 0
    assert store.inspect().counts.total == 0


@pytest.mark.parametrize(
    "block",
    [LITE, JOURNAL, BUJO_APPEND, BUJO_CAPTURE],
    ids=["lite", "journal", "bujo-append", "bujo-capture"],
)
@pytest.mark.parametrize("trigger", ["human", "cron", "webhook"])
def test_a6_sentinel_skips_in_every_write_mode_and_trigger(
    root: Path, open_store: Any, block: dict[str, Any], trigger: str
) -> None:
    store = open_store(block)
    kind = "human-turn" if trigger == "human" else "trigger"
    result = store.persist_completed_turn(
        turn(
            "r",
            "Checked the feeds.\nNOTHING_TO_REPORT",
            trigger=trigger,
            speaker_kind=kind,
            capture_text="full capture text",
        )
    )
    assert (result.status, result.code) == ("skipped", "nothing_to_report")
    assert count(root) == 0
    assert payload(root, rh("r")) is None


@pytest.mark.parametrize(
    "answer",
    [
        "NOTHING_TO_REPORT\nmore text",
        "XNOTHING_TO_REPORT",
        "NOTHING_TO_REPORTED",
        "The NOTHING_TO_REPORT sentinel was not needed today.",
        "test",
        "ping",
        "ok",
    ],
)
def test_a6_a7_other_answers_are_admitted(root: Path, open_store: Any, answer: str) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(turn("r", answer))
    assert result.status == "admitted"
    (event,) = events(root)
    assert event.summary == answer


# --------------------------------------------------------------------------------------------
# A8: only successful turns


@pytest.mark.parametrize(
    "outcome", ["cancelled", "failed", "interrupted", "isolated", "never_started"]
)
def test_a8_unsuccessful_outcomes_are_rejected(root: Path, open_store: Any, outcome: str) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(turn("r", "partial answer", outcome=outcome))
    assert_rejected(result, "turn_not_successful")
    assert result.intake_id == rh("r")
    assert count(root) == 0


@pytest.mark.parametrize("outcome", ["succeeded", "SUCCESS", "", "ok"])
def test_a8_unknown_outcome_is_invalid_turn(root: Path, open_store: Any, outcome: str) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(turn("r", outcome=outcome))
    assert_rejected(result, "invalid_turn")
    assert result.detail is not None
    assert result.detail.startswith("outcome")
    assert count(root) == 0


# --------------------------------------------------------------------------------------------
# A2: disabled


@pytest.mark.parametrize("block", [LITE, JOURNAL, BUJO_APPEND], ids=["lite", "journal", "bujo"])
def test_a2_write_mode_disabled_skips(root: Path, open_store: Any, block: dict[str, Any]) -> None:
    store = open_store(block, writeMode="disabled")
    for trigger, kind in (("human", "human-turn"), ("cron", "trigger"), ("webhook", "trigger")):
        result = store.persist_completed_turn(
            turn(f"r-{trigger}", "Real content.", trigger=trigger, speaker_kind=kind)
        )
        assert (result.status, result.code) == ("skipped", "write_mode_disabled")
        assert result.intake_id == rh(f"r-{trigger}")
    assert count(root) == 0
    assert store.inspect().counts.total == 0


# --------------------------------------------------------------------------------------------
# A4, A3, A10: capture text lives in the payloads table


def test_a4_capture_mode_stores_capture_text_as_payload(root: Path, open_store: Any) -> None:
    capture = "User: book the dentist ☕\nAssistant: Booked for Tuesday.\n"
    store = open_store(BUJO_CAPTURE)
    result = store.persist_completed_turn(turn("cap", "Booked for Tuesday.", capture_text=capture))
    assert result.status == "admitted"
    data = capture.encode("utf-8")
    stored = payload(root, rh("cap"))
    assert stored is not None
    assert stored.data == data  # UTF-8 bytes, not characters
    # sealed: no digest or length of the text in the clear, in the row or the event; its
    # AES-GCM tag is its integrity check
    assert stored.sha256 == SEALED_PAYLOAD
    (event,) = events(root)
    assert (event.payload_sha256, event.payload_bytes) == (SEALED_PAYLOAD, 0)
    assert event.content_sha256 != "" and event.content_bytes > 0  # opened with its key
    # A10: the host summary is the assistant answer only
    assert event.summary == "Booked for Tuesday."
    (row,) = exported(root)
    assert "book the dentist" not in json.dumps(row["state"], ensure_ascii=False)


@pytest.mark.parametrize(
    "block", [LITE, JOURNAL, BUJO_APPEND], ids=["lite", "journal", "bujo-append"]
)
def test_a3_append_host_summary_ignores_capture_text(
    root: Path, open_store: Any, block: dict[str, Any]
) -> None:
    store = open_store(block)
    result = store.persist_completed_turn(
        turn("app", "The answer.", capture_text="CAPTURE-TEXT-MUST-NOT-BE-STORED")
    )
    assert result.status == "admitted"
    assert payload(root, rh("app")) is None
    (event,) = events(root)
    assert event.payload_bytes == 0
    assert event.payload_sha256 is None
    assert event.summary == "The answer."
    raw = b"".join(
        (root / name).read_bytes()
        for name in ("journal.db", "journal.db-wal")
        if (root / name).exists()
    )
    assert b"CAPTURE-TEXT-MUST-NOT-BE-STORED" not in raw


# --------------------------------------------------------------------------------------------
# A12, A13: cron / webhook switches


@pytest.mark.parametrize(
    ("switches", "cron_admitted", "webhook_admitted"),
    [
        ({}, True, True),
        ({"cron": True, "webhook": True}, True, True),
        ({"cron": False}, False, True),
        ({"webhook": False}, True, False),
        ({"cron": False, "webhook": False}, False, False),
    ],
    ids=["unset", "true", "cron-off", "webhook-off", "both-off"],
)
def test_a12_a13_cron_and_webhook_switches(
    root: Path,
    open_store: Any,
    switches: dict[str, bool],
    cron_admitted: bool,
    webhook_admitted: bool,
) -> None:
    block = dict(BUJO_CAPTURE)
    if switches:
        block["capture"] = switches
    store = open_store(block)
    expected_ids = []

    cron = store.persist_completed_turn(
        turn(
            "cron-run",
            "Feeds checked: 3 new items.",
            trigger="cron",
            speaker_kind="trigger",
            capture_text="cron capture",
        )
    )
    if cron_admitted:
        assert cron.status == "admitted"
        expected_ids.append(rh("cron-run"))
    else:
        assert (cron.status, cron.code) == ("skipped", "cron_capture_disabled")
        assert payload(root, rh("cron-run")) is None

    hook = store.persist_completed_turn(
        turn(
            "hook-run",
            "Build 0.9 passed.",
            trigger="webhook",
            speaker_kind="trigger",
            capture_text="hook capture",
        )
    )
    if webhook_admitted:
        assert hook.status == "admitted"
        expected_ids.append(rh("hook-run"))
    else:
        assert (hook.status, hook.code) == ("skipped", "webhook_capture_disabled")
        assert payload(root, rh("hook-run")) is None

    # A12: only host metadata counts, never a conversation-id prefix; human turns unaffected
    human = store.persist_completed_turn(
        turn(
            "human-run",
            "Noted.",
            session="cron:daily-digest",
            speaker_kind="human-turn",
            capture_text="human capture",
        )
    )
    assert human.status == "admitted"
    expected_ids.append(rh("human-run"))

    assert [e.run_hash for e in events(root)] == expected_ids
    assert [r.id for r in store.inspect().records] == expected_ids


# --------------------------------------------------------------------------------------------
# B18: capacity limits


def test_b18_record_size_limit(root: Path, open_store: Any) -> None:
    store = open_store(LITE)
    under = store.persist_completed_turn(turn("small", "a" * (KIB_640 - 1024)))
    assert under.status == "admitted"
    over = store.persist_completed_turn(turn("big", "a" * (KIB_640 + 1)))
    assert_rejected(over, "record_too_large")
    assert over.intake_id == rh("big")
    assert over.detail is not None
    assert str(KIB_640) in over.detail or "640 KiB" in over.detail
    # the limit counts UTF-8 bytes: 400k two-byte characters are 800,000 bytes
    wide = store.persist_completed_turn(turn("wide", "é" * 400_000))
    assert_rejected(wide, "record_too_large")
    assert [e.run_hash for e in events(root)] == [rh("small")]


def test_b18_record_of_exactly_640_kib_is_admitted(root: Path, open_store: Any) -> None:
    """B18 says "at most 640 KiB": a record of exactly 655,360 bytes is within the limit."""
    store = open_store(LITE)
    assert store.persist_completed_turn(turn("probe", "x")).status == "admitted"
    (probe,) = events(root)
    overhead = probe.content_bytes - 1
    exact = store.persist_completed_turn(turn("probe2", "y" * (KIB_640 - overhead)))
    assert exact.status == "admitted", exact
    one_more = store.persist_completed_turn(turn("probe3", "z" * (KIB_640 - overhead + 1)))
    assert_rejected(one_more, "record_too_large")
    assert [e.content_bytes for e in events(root)] == [probe.content_bytes, KIB_640]


def test_b18_capture_text_counts_towards_record_size(root: Path, open_store: Any) -> None:
    store = open_store(BUJO_CAPTURE)
    result = store.persist_completed_turn(turn("cap-big", "short", capture_text="c" * KIB_640))
    assert_rejected(result, "record_too_large")
    assert count(root) == 0
    assert payload(root, rh("cap-big")) is None


@pytest.mark.slow
def test_b18_at_most_4096_active_records(root: Path, open_store: Any) -> None:
    assert MAX_ACTIVE == 4096
    store = open_store(LITE)
    ids = []
    for i in range(4096):
        r = store.persist_completed_turn(turn(f"run-{i}", f"answer {i}"))
        assert r.status == "admitted", (i, r)
        ids.append(r.intake_id)
    full = store.persist_completed_turn(turn("run-4096", "one too many"))
    assert_rejected(full, "too_many_active_records")
    assert full.intake_id == rh("run-4096")
    # duplicates of existing records still succeed, conflicts still fail closed
    dup = store.persist_completed_turn(turn("run-7", "answer 7"))
    assert dup.status == "duplicate"
    assert_rejected(store.persist_completed_turn(turn("run-7", "changed")), "run_id_conflict")
    counts = store.inspect().counts
    assert (counts.active, counts.pending, counts.total) == (4096, 4096, 4096)
    store.close()

    reopened = open_store(LITE)
    assert_rejected(
        reopened.persist_completed_turn(turn("run-4097", "still full")), "too_many_active_records"
    )
    assert reopened.persist_completed_turn(turn("run-4095", "answer 4095")).status == "duplicate"
    report = MemoryRoot.open(root).inspect()
    assert report.counts.active == 4096
    assert [r.id for r in report.records] == ids
    assert count(root) == 4096


# --------------------------------------------------------------------------------------------
# B28: speaker kind provenance; invalid turns


@pytest.mark.parametrize(
    ("kw", "expected_kind"),
    [
        ({}, "unknown"),
        ({"speaker_kind": "unknown"}, "unknown"),
        ({"speaker_kind": "trigger"}, "trigger"),
        ({"speaker_kind": "human-turn"}, "human-turn"),
        ({"speaker_kind": "unknown", "trigger": "cron"}, "unknown"),
        ({"speaker_kind": "trigger", "trigger": "cron"}, "trigger"),
        ({"speaker_kind": "unknown", "trigger": "webhook"}, "unknown"),
        ({"speaker_kind": "trigger", "trigger": "webhook"}, "trigger"),
    ],
)
def test_b28_speaker_kind_stored_exactly_never_upgraded(
    root: Path, open_store: Any, kw: dict[str, Any], expected_kind: str
) -> None:
    store = open_store(LITE)
    assert store.persist_completed_turn(turn("r", "answer", **kw)).status == "admitted"
    (event,) = events(root)
    assert event.speaker_kind == expected_kind
    assert event.trigger == kw.get("trigger", "human")


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"speaker_kind": "human-turn", "trigger": "cron"}, "speaker_kind"),
        ({"speaker_kind": "human-turn", "trigger": "webhook"}, "speaker_kind"),
        ({"source_label": "User", "trigger": "webhook", "speaker_kind": "trigger"}, "source_label"),
        ({"source_label": "User", "trigger": "cron", "speaker_kind": "trigger"}, "source_label"),
        ({"source_label": "webhook", "trigger": "human"}, "source_label"),
        ({"speaker_kind": "owner"}, "speaker_kind"),
        ({"speaker_kind": "Human-Turn"}, "speaker_kind"),
        ({"trigger": "manual"}, "trigger"),
        ({"answer": None}, "answer"),
        ({"answer": 42}, "answer"),
        ({"answer": "lone surrogate \ud800"}, "answer"),
        ({"run_id": ""}, "run_id"),
        ({"run_id": "   "}, "run_id"),
        ({"run_id": None}, "run_id"),
        ({"session": 5}, "session"),
        ({"capture_text": b"bytes"}, "capture_text"),
        (
            {"attachments": (Attachment(media_type="image/png", size_bytes=-1),)},
            "attachments[0].size_bytes",
        ),
        ({"attachments": ({"media_type": "image/png", "size_bytes": 3},)}, "attachments[0]"),
        ({"attachments": "file.png"}, "attachments"),
    ],
)
def test_b28_invalid_turns_are_rejected_naming_the_field(
    root: Path, open_store: Any, kw: dict[str, Any], field: str
) -> None:
    store = open_store(BUJO_CAPTURE)
    fields: dict[str, Any] = {"run_id": "r", "outcome": "success", "answer": "fine"}
    fields.update(kw)
    result = store.persist_completed_turn(CompletedTurn(**fields))
    assert_rejected(result, "invalid_turn")
    assert result.detail is not None
    assert result.detail.startswith(field), result.detail
    assert count(root) == 0


@pytest.mark.parametrize("thing", [None, "a turn", {"run_id": "r", "answer": "a"}])
def test_b4_non_turn_is_invalid_not_an_exception(root: Path, open_store: Any, thing: Any) -> None:
    store = open_store(LITE)
    result = store.persist_completed_turn(thing)
    assert_rejected(result, "invalid_turn")
    assert count(root) == 0


def test_b28_valid_attachment_metadata_is_kept(root: Path, open_store: Any) -> None:
    store = open_store(LITE)
    att = Attachment(media_type="image/png", size_bytes=1234, sha256="e" * 64)
    assert store.persist_completed_turn(turn("r", attachments=(att,))).status == "admitted"
    (event,) = events(root)
    assert event.attachments == [
        {"media_type": "image/png", "size_bytes": 1234, "sha256": "e" * 64}
    ]


# --------------------------------------------------------------------------------------------
# B4: rejections are explicit, logged, content-free


SECRET = "SECRET-ANSWER-9f3a"


def _degraded(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "memory_es"
        and r.levelno == logging.WARNING
        and "memory_degraded" in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("setup", "bad", "code"),
    [
        (turn("r", SECRET), turn("r", SECRET + " changed"), "run_id_conflict"),
        (None, turn("r", SECRET, outcome="failed"), "turn_not_successful"),
        (None, turn("r", SECRET, outcome="weird"), "invalid_turn"),
        (None, turn("r", SECRET, speaker_kind="human-turn", trigger="cron"), "invalid_turn"),
        (None, turn("r", SECRET + "x" * KIB_640), "record_too_large"),
    ],
    ids=["conflict", "failed", "bad-outcome", "bad-speaker", "too-large"],
)
def test_b4_rejection_logs_memory_degraded_without_content(
    root: Path,
    open_store: Any,
    caplog: pytest.LogCaptureFixture,
    setup: CompletedTurn | None,
    bad: CompletedTurn,
    code: str,
) -> None:
    store = open_store(LITE)
    if setup is not None:
        assert store.persist_completed_turn(setup).status == "admitted"
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="memory_es"):
        result = store.persist_completed_turn(bad)
    assert_rejected(result, code)
    degraded = _degraded(caplog)
    assert len(degraded) == 1
    assert code in degraded[0].getMessage()
    assert SECRET not in caplog.text
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)
    assert SECRET not in (result.detail or "")


def test_b4_successes_log_no_degradation(open_store: Any, caplog: pytest.LogCaptureFixture) -> None:
    store = open_store(LITE)
    with caplog.at_level(logging.DEBUG, logger="memory_es"):
        assert store.persist_completed_turn(turn("r", SECRET)).status == "admitted"
        assert store.persist_completed_turn(turn("r", SECRET)).status == "duplicate"
    assert _degraded(caplog) == []
    assert SECRET not in caplog.text


def test_b4_closed_store_rejects_without_exception(
    root: Path, open_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(LITE)
    assert store.persist_completed_turn(turn("before", "kept")).status == "admitted"
    store.close()
    with caplog.at_level(logging.WARNING, logger="memory_es"):
        result = store.persist_completed_turn(turn("after", SECRET))
    assert_rejected(result, "store_closed")
    assert result.intake_id == rh("after")
    degraded = _degraded(caplog)
    assert len(degraded) == 1
    assert "store_closed" in degraded[0].getMessage()
    assert SECRET not in caplog.text
    store.close()  # closing twice is harmless
    assert [e.run_hash for e in events(root)] == [rh("before")]
    reopened = open_store(LITE)
    assert reopened.persist_completed_turn(turn("after", SECRET)).status == "admitted"


# --------------------------------------------------------------------------------------------
# C1, C2: content-free inspect


def test_c1_c2_inspect_counts_and_records_without_content(root: Path, open_store: Any) -> None:
    store = open_store(BUJO_CAPTURE)
    secrets = {
        "answer": "ANSWER-TEXT-4c1d",
        "session": "SESSION-ID-77ab",
        "capture": "CAPTURE-TEXT-e09f",
    }
    run_ids = ["run-a", "run-b", "run-c"]
    for i, run_id in enumerate(run_ids):
        r = store.persist_completed_turn(
            turn(
                run_id,
                f"{secrets['answer']} {i}",
                session=f"{secrets['session']}-{i}",
                capture_text=f"{secrets['capture']} {i}",
                speaker_kind="human-turn",
            )
        )
        assert r.status == "admitted"
    # a skip and a rejection leave no record
    store.persist_completed_turn(turn("run-skip", "NOTHING_TO_REPORT"))
    store.persist_completed_turn(turn("run-fail", "x", outcome="failed"))

    live = store.inspect()
    offline = MemoryRoot.open(root).inspect()
    # the intakes agree; the worker and vector fields are each view's own (a reader with the
    # default config has no provider, and sees a held root whose handle runs no worker)
    assert (live.counts, live.records) == (offline.counts, offline.records)
    assert (live.worker, offline.worker) == ("not_running", "stalled")
    counts = live.counts
    assert counts.pending == 3
    assert counts.due == 3
    assert counts.active == 3
    assert counts.total == 3
    assert counts.dead == 0
    assert counts.resolved == 0
    assert [r.id for r in live.records] == [rh(x) for x in run_ids]
    assert all(r.state == "pending" for r in live.records)

    one = store.inspect(rh("run-b"))
    assert [r.id for r in one.records] == [rh("run-b")]
    assert MemoryRoot.open(root).inspect(rh("run-b")).records == one.records
    assert store.inspect("0" * 64).records == ()

    for report in (live, offline, one):
        text = json.dumps(report.to_json(), ensure_ascii=False)
        for secret in secrets.values():
            assert secret not in text
        for record in report.to_json()["records"]:
            assert "summary" not in record
            assert "session" not in record
    store.close()
    closed = MemoryRoot.open(root).inspect()
    assert (closed.counts, closed.records, closed.worker) == (
        live.counts, live.records, "not_running")


def test_b4_a_read_failing_after_a_refused_write_answers_every_waiting_admission(
        root: Path, open_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """B4 (review of issue 18): the journal refused a batch's write (``RecordConflict``, as
    when another host recorded the root's configuration first) and the read that checks that
    then failed (the server went down). That read's error escaped: the leader's caller got
    ``internal_error`` and the callers riding on its batch waited forever. Every caller now
    gets ``io_error``, and the store admits again once the journal answers."""
    from eventsourcing.persistence import IntegrityError as RecordConflict
    from eventsourcing.persistence import OperationalError

    store = open_store()
    assert store.journal_writer.preface, "the root's configuration is still to be recorded"
    recorder = store.journal_writer._opened.recorder
    gate = threading.Event()
    real_insert, real_select = recorder.insert_events, recorder.select_events

    def refused(*args: Any, **kwargs: Any) -> Any:
        gate.wait(30)
        raise RecordConflict("duplicate key value violates unique constraint")

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(recorder, "insert_events", refused)
    monkeypatch.setattr(recorder, "select_events", down)
    results: dict[int, AdmissionResult] = {}

    def admit(n: int) -> None:
        results[n] = store.persist_completed_turn(turn(f"run-{n}"))

    threads = [threading.Thread(target=admit, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    while not store.journal_writer.queue:  # the others queue behind the blocked leader
        threading.Event().wait(0.01)
    gate.set()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "an admission never returned"
    assert {(r.status, r.code) for r in results.values()} == {("rejected", "io_error")}
    monkeypatch.setattr(recorder, "insert_events", real_insert)
    monkeypatch.setattr(recorder, "select_events", real_select)
    assert store.persist_completed_turn(turn("run-after")).status == "admitted"
