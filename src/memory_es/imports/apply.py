"""Planning and applying an import (C6, C16): a dry run by default, one journalled operation
with ``yes``.

Both read the source whole first (:func:`~memory_es.imports.formats.read_source`: a source
that is not the format fails before anything is opened) and decide every item the same way:
the admission rules of a live turn (:func:`~memory_es.intake.admission.prepare_turn`, under the
root's tier and write mode) and whether its run id is already in the journal. So the dry run's
counts are what applying writes. Applying holds the writer lock for its whole span (the
liveness fence: a running agent refuses it), admits each new item stamped with the source's
own time, then commits the content-free receipt (``Root.Imported``); nothing new, no receipt.
A kill part-way leaves each admitted item durable and no receipt: running it again admits the
rest and writes the receipt for them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from memory_es.config import MemoryConfig
from memory_es.events import Root
from memory_es.ids import intake_uuid
from memory_es.imports.formats import read_source
from memory_es.imports.items import ImportItem, Refusal, SourceRead
from memory_es.intake import CompletedTurn, PreparedIntake, prepare_turn, repeat_result, utc_now
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class ImportReport:
    """What an import would write (``applied`` False: the dry run) or wrote."""

    fmt: str
    source_sha256: str
    applied: bool
    new: list[str]  # intake ids, in source order
    already: int
    refused: list[Refusal]
    import_id: str | None = None  # the receipt's id (applied, something new)
    waiting_for_capture: int = 0  # admitted turns a capture model still has to curate
    samples: list[dict[str, str]] = field(default_factory=list)  # the first few new items

    def to_json(self) -> dict[str, Any]:
        return {"format": self.fmt, "source_sha256": self.source_sha256,
                "applied": self.applied, "new": len(self.new), "already": self.already,
                "refused": [r.to_json() for r in self.refused], "import_id": self.import_id,
                "waiting_for_capture": self.waiting_for_capture,
                "samples": self.samples}


def _turn(item: ImportItem, fmt: str) -> CompletedTurn:
    return CompletedTurn(run_id=item.run_id(fmt), outcome="success", answer=item.answer,
                         capture_text=item.capture_text, session=item.session,
                         speaker_kind=item.speaker_kind, trigger=item.trigger)


Decided = tuple[list[tuple[ImportItem, PreparedIntake]], int, list[Refusal]]


def _decide(read: SourceRead, config: MemoryConfig,
            stored_hash: Callable[[str], str | None]) -> Decided:
    """The new items with their admission records, how many are already stored, and every
    refusal (the reader's, then the admission rules'). An item that keeps its source's
    intake identity (another root's turn) keeps its digest too, so the same turn is already
    here and another turn under that run id is a conflict, never overwritten (B3)."""
    new, already, refused = [], 0, list(read.refused)
    for item in read.items:
        prepared = prepare_turn(_turn(item, read.fmt), tier=config.mode,
                                write_mode=config.write_mode, capture_cron=config.capture.cron,
                                capture_webhook=config.capture.webhook)
        if isinstance(prepared, PreparedIntake) and item.intake_id_kept is not None:
            prepared = msgspec.structs.replace(prepared, run_hash=item.intake_id_kept,
                                               content_sha256=item.digest_kept or
                                               prepared.content_sha256)
        if isinstance(prepared, PreparedIntake):
            known = stored_hash(prepared.run_hash)
            if known is None:
                new.append((item, prepared))
                continue
            prepared = repeat_result(prepared, known)
        if prepared.status == "duplicate":
            already += 1
        else:
            refused.append(Refusal(item.original_id, f"{prepared.status}: {prepared.code}"))
    return new, already, refused


def _samples(items: list[ImportItem]) -> list[dict[str, str]]:
    return [{"id": i.original_id, "at": i.at.isoformat(), "text": i.answer[:80]}
            for i in items[:3]]


def plan_import(root: str | Path, source: str | Path, fmt: str, *,
                config: MemoryConfig | None = None,
                key_store: str | Path | KeyStore | None = None) -> ImportReport:
    """The dry run: what :func:`apply_import` would write into ``root`` (read-only; a root
    that does not exist yet takes every item as new)."""
    from memory_es.root import MemoryRoot

    read = read_source(fmt, source)
    path = Path(root)
    if path.is_dir() and any(path.iterdir()):
        handle = MemoryRoot.open(path, config, key_store=key_store)
        with handle.reader() as opened:
            new, already, refused = _decide(
                read, handle.config,
                lambda rh: opened.recorder.admitted_content_hash(intake_uuid(rh)))
    else:
        new, already, refused = _decide(read, config or MemoryConfig(), lambda rh: None)
    return ImportReport(read.fmt, read.sha256, False, [p.run_hash for _, p in new], already,
                        refused, samples=_samples([i for i, _ in new]))


def apply_import(root: str | Path, source: str | Path, fmt: str, *,
                 config: MemoryConfig | None = None,
                 key_store: str | Path | KeyStore | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Clock = utc_now,
                 embedder: Any = None) -> ImportReport:
    """Admit every new item of ``source`` into ``root`` (created when absent), each stamped
    with its own time, then the receipt; model-free work (Lite, Journal) is drained so the
    memories exist when this returns, capture's is left to the worker like a live turn's."""
    from memory_es.store import MemoryStore

    read = read_source(fmt, source)
    with MemoryStore.open(root, config, clock=clock, lock_timeout=lock_timeout,
                          background=False, key_store=key_store, embedder=embedder) as store:
        new, already, refused = _decide(read, store.config, store.admitted_hash)
        admitted: list[list[str]] = []
        written: list[ImportItem] = []
        for item, prepared in new:
            result = store.admit_imported(prepared, item.at)
            if result.status == "admitted":
                admitted.append([prepared.run_hash, item.original_id, item.at.isoformat()])
                written.append(item)
            elif result.status == "duplicate":
                already += 1
            else:
                refused.append(Refusal(item.original_id, f"{result.status}: {result.code}"))
        import_id = None
        if admitted:
            import_id = _import_id(read, admitted)
            store.record_import(Root.imported(
                at=clock(), import_id=import_id, format=read.fmt, source_sha256=read.sha256,
                admitted=admitted, already=already, refused=[r.to_json() for r in refused]))
        waiting = len(admitted) if store.config.is_capture else 0
        if not waiting:
            store.drain(embed=False)
    return ImportReport(read.fmt, read.sha256, True, [a[0] for a in admitted], already,
                        refused, import_id, waiting, _samples(written))


def _import_id(read: SourceRead, admitted: list[list[str]]) -> str:
    digest = hashlib.sha256(f"{read.fmt}\0{read.sha256}".encode())
    for row in admitted:
        digest.update(os.fsencode(row[0]))
    return digest.hexdigest()
