"""Read-only operations on a memory root: they take no lock and change nothing (C1, C2, C5).

Safe while an agent holds the root: every read runs in one SQLite read transaction, so a
report or an export is a consistent snapshot of a journal whose chain has been verified.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import apsw
import msgspec
from eventsourcing.persistence import StoredEvent

from memory_es.config import MemoryConfig
from memory_es.embeddings import make_embedder
from memory_es.intake import IntakeView, utc_now
from memory_es.journal import JOURNAL_FILE, OpenedJournal, open_journal
from memory_es.recall import Recall, Recaller, RecallResult, embeddings_block
from projections.health import Finding, HealthReport, audit
from projections.replay import generation_path, read_current

INTAKE_TOPIC_PREFIX = "memory_es/Intake."


def fold_intakes(opened: OpenedJournal, *, retain_resolved: bool = True) -> IntakeView:
    """Replay every Intake event of a journal into a fresh IntakeView (Intake topics only)."""
    view = IntakeView(retain_resolved=retain_resolved)
    mapper = opened.app.mapper
    for position, oid, version, topic, state, _chain in opened.recorder.rows():
        if topic.startswith(INTAKE_TOPIC_PREFIX):
            view.apply(position, mapper.to_domain_event(StoredEvent(oid, version, topic, state)))
    return view


@contextlib.contextmanager
def open_reader(root: str | Path) -> Iterator[OpenedJournal]:
    """A verified, read-only view of ``root``'s journal."""
    opened = open_journal(Path(root), writable=False)
    try:
        yield opened
    finally:
        opened.close()


def inspect_root(root: str | Path, intake_id: str | None = None) -> dict[str, Any]:
    """Content-free intake report: ``counts`` and ``records`` (C1, C2)."""
    with open_reader(root) as opened:
        return fold_intakes(opened).report(utc_now(), intake_id)


def export_lines(opened: OpenedJournal) -> Iterator[bytes]:
    """Canonical JSONL of every event in journal order: the stored state bytes verbatim."""
    for position, oid, version, topic, state, chain in opened.recorder.rows():
        yield msgspec.json.encode(
            {
                "chain": chain.hex(),
                "originator_id": oid,
                "originator_version": version,
                "position": position,
                "state": msgspec.Raw(state),
                "topic": topic,
            },
            order="sorted",
        ) + b"\n"


def export_journal(root: str | Path, out: IO[bytes]) -> int:
    """Write the canonical export of ``root`` to ``out``; returns the number of events."""
    count = 0
    with open_reader(root) as opened:
        for line in export_lines(opened):
            out.write(line)
            count += 1
    return count


def export_journal_to_file(root: str | Path, path: str | Path) -> int:
    """Export to ``path`` atomically (owner-only: an export holds every memory)."""
    from memory_es.fsutil import FILE_MODE, fsync_dir

    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as out:
            count = export_journal(root, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent.resolve())
    return count


def iter_events(
    opened: OpenedJournal, after: int = 0, upto: int | None = None, batch: int = 1000
) -> Iterator[tuple[int, Any]]:
    """Decoded events after position ``after`` (up to ``upto``), in journal order."""
    mapper = opened.app.mapper
    recorder = opened.recorder
    while True:
        notifications = recorder.select_notifications(
            after, batch, stop=upto, inclusive_of_start=False)
        if not notifications:
            return
        for n in notifications:
            yield n.id, mapper.to_domain_event(n)
        after = notifications[-1].id


def payload_findings(opened: OpenedJournal) -> Iterator[Finding]:
    """Every unresolved intake with capture text still has its exact payload (B5, B9)."""
    for record in fold_intakes(opened).unresolved():
        if record.payload_sha256 is None:
            continue
        payload = opened.recorder.payload(record.id)
        if payload is None:
            yield Finding("payload_missing", JOURNAL_FILE, f"intake {record.id}")
        elif hashlib.sha256(payload.data).hexdigest() != record.payload_sha256:
            yield Finding("payload_mismatch", JOURNAL_FILE, f"intake {record.id}")


def health(root: str | Path) -> HealthReport:
    """Replay the journal into scratch and compare with the live root (N*)."""
    return audit(
        Path(root),
        open_journal=lambda r: open_journal(r, writable=False),
        events_upto=lambda opened, position: iter_events(opened, upto=position),
        journal_checks=payload_findings,
    )


def search_root(
    root: str | Path, query: str, config: MemoryConfig | None = None, limit: int = 5
) -> RecallResult:
    """``memory-es search`` (C9): the same config-aware hybrid scoring as recall, read-only.

    Takes no lock and writes nothing: the index is opened read-only and the query is embedded
    with the configured provider (Lite: lexical only). A provider outage degrades, flagged.
    """
    config = config if config is not None else MemoryConfig()
    with open_reader(root):  # verifies the journal first: never serve a tampered root
        generation = read_current(Path(root))
        if generation is None:
            return RecallResult(recall=Recall(hits=()), degraded=True)
        conn = apsw.Connection(str(generation_path(Path(root), generation)),
                               flags=apsw.SQLITE_OPEN_READONLY)
        try:
            block = embeddings_block(config)
            embedder = make_embedder(block) if block is not None else None
            return Recaller(config, embedder).search(conn, query, now=utc_now(), limit=limit)
        finally:
            conn.close()
