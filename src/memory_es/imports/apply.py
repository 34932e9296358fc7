"""Planning and applying an import (C6, C16): a dry run by default, one journalled operation
with ``yes``.

Both read the source whole first (:func:`~memory_es.imports.formats.read_source`: a source
that is not the format fails before anything is opened) and decide every item the same way:
the admission rules of a live turn (:func:`~memory_es.intake.admission.prepare_turn`, under the
root's tier and write mode) and whether its run id is already in the journal. So the dry run's
counts are what applying writes. Applying holds the writer lock for its whole span (the
liveness fence: a running agent refuses it), admits each new item stamped with the source's
own time, then commits the content-free receipt (``Root.Imported``); nothing new, no receipt.
Items go in parts of :data:`PART`, each one transaction holding its items and their receipt
(all or none); a kill between parts leaves whole parts, and running it again admits the rest.
"""

from __future__ import annotations

import functools
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
from memory_es.fsutil import crash_point
from memory_es.ids import entity_uuid, intake_uuid, memory_uuid
from memory_es.imports.formats import read_source
from memory_es.imports.items import ImportItem, Refusal, SourceRead
from memory_es.imports.reference import Folder, Known, as_turns, line_events, read_folder, screened
from memory_es.intake import (
    AdmissionResult,
    CompletedTurn,
    PreparedIntake,
    prepare_turn,
    repeat_result,
    utc_now,
)
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore

Clock = Callable[[], datetime]
PART = 1000  # items per transaction: each part commits with its own receipt


@dataclass(frozen=True)
class ImportReport:
    """What an import would write (``applied`` False: the dry run) or wrote."""

    fmt: str
    source_sha256: str
    applied: bool
    new: list[str]  # intake ids, in source order
    already: int
    refused: list[Refusal]
    receipts: list[str] = field(default_factory=list)  # ids of the receipts it wrote
    waiting_for_capture: int = 0  # admitted turns a capture model still has to curate
    samples: list[dict[str, str]] = field(default_factory=list)  # the first few new items

    def to_json(self) -> dict[str, Any]:
        return {"format": self.fmt, "source_sha256": self.source_sha256,
                "applied": self.applied, "new": len(self.new), "already": self.already,
                "refused": [r.to_json() for r in self.refused], "receipts": self.receipts,
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

    path = Path(root)
    if fmt == "reference":
        folder = read_folder(Path(source))
        if path.is_dir() and any(path.iterdir()):
            handle = MemoryRoot.open(path, config, key_store=key_store)
            if handle.config.mode == "bujo":
                with handle.reader() as opened:
                    has = opened.recorder.has_events
                    return _lines(folder, lambda m: has(memory_uuid(m)),
                                  lambda e: has(entity_uuid(e)), None)
        elif (config or MemoryConfig()).mode == "bujo":
            return _lines(folder, lambda m: False, lambda e: False, None)
    read = as_turns(*folder) if fmt == "reference" else read_source(fmt, source)
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

    folder = read_folder(Path(source)) if fmt == "reference" else None
    read = read_source(fmt, source) if folder is None else as_turns(*folder)
    with MemoryStore.open(root, config, clock=clock, lock_timeout=lock_timeout,
                          background=False, key_store=key_store, embedder=embedder) as store:
        if folder is not None and store.config.mode == "bujo":
            return _lines(folder, store.holds, lambda e: store.holds(entity_id=e),
                          (store, clock))
        new, already, refused = _decide(read, store.config, store.admitted_hash)
        capture = store.config.is_capture
        receipts = _Receipts(read, clock, already, [r.to_json() for r in refused])
        written: list[ImportItem] = []
        for start in range(0, len(new), PART):
            part = new[start:start + PART]
            results = store.admit_imported([(p, i.at) for i, p in part],
                                            functools.partial(receipts.of, part))
            crash_point("import.after_part")
            for (item, _), result in zip(part, results, strict=True):
                if result.status == "admitted":
                    written.append(item)
                elif result.status == "duplicate":
                    already += 1
                else:
                    refused.append(Refusal(item.original_id, f"{result.status}: {result.code}"))
            if not capture:  # model-free work now: the active bound (B18) spans parts
                store.drain(embed=False)
    admitted = [row[0] for row in receipts.rows]
    return ImportReport(read.fmt, read.sha256, True, admitted, already, refused, receipts.ids,
                        len(admitted) if capture else 0, _samples(written))


def _lines(folder: tuple[Folder, str], known: Known, known_entity: Known,
           store: tuple[Any, Clock] | None) -> ImportReport:
    """A reference folder into a BuJo root, as the same curated lines (``store`` None: the
    dry run), in one transaction with its receipt."""
    lines, refused = screened(folder[0])
    events, written = line_events(folder[0], lines, known, known_entity, "bujo")
    already = len(lines) - len(written)
    ids: list[str] = []
    if store is not None and written:
        rows = [[line.memory_id, line.memory_id, line.at.isoformat()] for line in written]
        ids.append(_import_id("reference", folder[1], rows))
        events.append(Root.imported(
            at=store[1](), import_id=ids[0], format="reference", source_sha256=folder[1],
            admitted=rows, already=already, refused=[r.to_json() for r in refused]))
        store[0].commit_imported(events)
    return ImportReport("reference", folder[1], store is not None,
                        [line.memory_id for line in written], already, refused, ids,
                        samples=[{"id": line.memory_id, "at": line.at.isoformat(),
                                  "text": line.text[:80]} for line in written[:3]])


class _Receipts:
    """Each part's receipt, made inside its transaction from the part's results: the items
    admitted (intake id, the source's id and time) and what the whole source decided."""

    def __init__(self, read: SourceRead, clock: Clock, already: int,
                 refused: list[dict[str, str]]) -> None:
        self.read, self.clock, self.already, self.refused = read, clock, already, refused
        self.rows: list[list[str]] = []
        self.ids: list[str] = []

    def of(self, part: list[tuple[ImportItem, PreparedIntake]],
           results: list[AdmissionResult]) -> list[Root.Imported]:
        rows = [[p.run_hash, i.original_id, i.at.isoformat()]
                for (i, p), r in zip(part, results, strict=True) if r.status == "admitted"]
        if not rows:
            return []
        self.rows.extend(rows)
        self.ids.append(_import_id(self.read.fmt, self.read.sha256, rows))
        return [Root.imported(at=self.clock(), import_id=self.ids[-1], format=self.read.fmt,
                              source_sha256=self.read.sha256, admitted=rows,
                              already=self.already, refused=self.refused)]


def _import_id(fmt: str, source_sha256: str, admitted: list[list[str]]) -> str:
    digest = hashlib.sha256(f"{fmt}\0{source_sha256}".encode())
    for row in admitted:
        digest.update(os.fsencode(row[0]))
    return digest.hexdigest()
