"""Planning and applying an import (C6, C16): a dry run by default, journalled with ``yes``.

Both read the source whole first (a source that is not the format fails before anything is
opened) and decide every item against the same questions (:class:`~memory_es.imports.target.
Target`): the admission rules of a live turn (:func:`~memory_es.intake.admission.prepare_turn`
under the root's tier and write mode), whether its run id is already in the journal, and, on a
capture root (whose turns wait for the model), the bound on waiting turns (B18). So the dry
run's counts are what applying writes. Applying holds the writer lock for its whole span (the
liveness fence: a running agent refuses it) and admits each new item stamped with the source's
own time, in parts of :data:`PART`: each part one transaction holding its items and their
content-free receipt (``Root.Imported``), so a kill between parts leaves whole parts and
running it again admits the rest. A reference folder into a BuJo root goes as the same
curated lines instead (:mod:`~memory_es.imports.reference`), in one transaction.
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
from memory_es.imports.formats import read_source
from memory_es.imports.items import ImportItem, Refusal, SourceRead
from memory_es.imports.reference import (
    Folder,
    Line,
    as_turns,
    changed,
    line_events,
    read_folder,
    screened,
)
from memory_es.imports.target import Target, reading
from memory_es.intake import (
    MAX_ACTIVE,
    AdmissionResult,
    CompletedTurn,
    PreparedIntake,
    prepare_turn,
    repeat_result,
    utc_now,
)
from memory_es.journal import DEFAULT_LOCK_TIMEOUT
from memory_es.keystore import KeyStore
from memory_es.progress import step

Clock = Callable[[], datetime]
PART = 1000  # items per transaction: each part commits with its own receipt
PRIVATE_IDS = frozenset({"notes"})  # formats whose ids are names a person chose (paths)


@dataclass(frozen=True)
class ImportReport:
    """What an import would write (``applied`` False: the dry run) or wrote."""

    fmt: str
    source_sha256: str
    applied: bool
    new: list[str]  # intake ids (turns) or memory ids (a reference folder's lines)
    already: int
    refused: list[Refusal]
    receipts: list[str] = field(default_factory=list)  # ids of the receipts it wrote
    waiting_for_capture: int = 0  # admitted turns a capture model still has to curate
    samples: list[dict[str, str]] = field(default_factory=list)  # the first few new items

    def to_json(self) -> dict[str, Any]:
        return {"format": self.fmt, "source_sha256": self.source_sha256,
                "applied": self.applied, "new": len(self.new), "already": self.already,
                "refused": [r.to_json() for r in self.refused], "receipts": self.receipts,
                "waiting_for_capture": self.waiting_for_capture, "samples": self.samples}


@dataclass
class Decision:
    """Every item decided: the new ones (turns with their records, or curated lines), how
    many are already here, and each refusal with its reason."""

    turns: list[tuple[ImportItem, PreparedIntake]] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    already: int = 0
    refused: list[Refusal] = field(default_factory=list)

    def samples(self) -> list[dict[str, str]]:
        shown = [(i.original_id, i.at, i.answer) for i, _ in self.turns[:3]] or \
            [(x.memory_id, x.at, x.text) for x in self.lines[:3]]
        return [{"id": ident, "at": at.isoformat(), "text": text[:80]}
                for ident, at, text in shown]


def _turn(item: ImportItem, fmt: str) -> CompletedTurn:
    return CompletedTurn(run_id=item.run_id(fmt), outcome="success", answer=item.answer,
                         capture_text=item.capture_text, session=item.session,
                         speaker_kind=item.speaker_kind, trigger=item.trigger)


def decide_turns(read: SourceRead, target: Target) -> Decision:
    """Each item as a live turn would be decided (B3, B18); an item that keeps its source's
    intake identity (another root's turn) keeps its digest too, so the same turn is already
    here and another turn under that run id is a conflict, never overwritten."""
    config, decision = target.config, Decision(refused=list(read.refused))
    room = MAX_ACTIVE - target.active_turns() if config.is_capture else None
    for item in read.items:
        prepared = prepare_turn(_turn(item, read.fmt), tier=config.mode,
                                write_mode=config.write_mode, capture_cron=config.capture.cron,
                                capture_webhook=config.capture.webhook)
        if isinstance(prepared, PreparedIntake) and item.intake_id_kept is not None:
            prepared = msgspec.structs.replace(prepared, run_hash=item.intake_id_kept,
                                               content_sha256=item.digest_kept or
                                               prepared.content_sha256)
        if isinstance(prepared, PreparedIntake):
            known = target.admitted_hash(prepared.run_hash)
            if known is None and room is not None and len(decision.turns) >= room:
                prepared = AdmissionResult(status="rejected", code="too_many_active_records")
            elif known is None:
                decision.turns.append((item, prepared))
                continue
            else:
                prepared = repeat_result(prepared, known)
        if prepared.status == "duplicate":
            decision.already += 1
        else:
            decision.refused.append(Refusal(item.original_id,
                                            f"{prepared.status}: {prepared.code}"))
    return decision


def decide_lines(folder: Folder, target: Target) -> Decision:
    """A reference folder's lines for a BuJo root: screened, then new, here as stated, or
    changed since an earlier import (refused)."""
    lines, refused = screened(folder)
    fresh, changes, already = changed(lines, target.status_of)
    return Decision(lines=fresh, already=already, refused=refused + changes)


Source = SourceRead | tuple[Folder, str]  # items to admit, or a reference folder and digest


def _read(fmt: str, source: str | Path) -> Source:
    return read_folder(Path(source).resolve()) if fmt == "reference" else \
        read_source(fmt, source)


def _digest(source: Source) -> str:
    return source.sha256 if isinstance(source, SourceRead) else source[1]


def _decide(source: Source, target: Target) -> tuple[SourceRead | None, Decision]:
    """The decision, and the turns' source (None: the folder goes as curated lines)."""
    if isinstance(source, SourceRead):
        return source, decide_turns(source, target)
    if target.config.mode == "bujo":
        return None, decide_lines(source[0], target)
    turns = as_turns(*source)
    return turns, decide_turns(turns, target)


def plan_import(root: str | Path, source: str | Path, fmt: str, *,
                config: MemoryConfig | None = None,
                key_store: str | Path | KeyStore | None = None) -> ImportReport:
    """The dry run: what :func:`apply_import` would write into ``root`` (read-only; a root
    that does not exist yet takes every item as new)."""
    read = _read(fmt, source)
    with reading(Path(root), config, key_store) as target:
        turns, decision = _decide(read, target)
        capture = target.config.is_capture and turns is not None
    new = [p.run_hash for _, p in decision.turns] or [x.memory_id for x in decision.lines]
    return ImportReport(fmt, _digest(read), False, new, decision.already, decision.refused,
                        waiting_for_capture=len(new) if capture else 0,
                        samples=decision.samples())


def apply_import(root: str | Path, source: str | Path, fmt: str, *,
                 config: MemoryConfig | None = None,
                 key_store: str | Path | KeyStore | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Clock = utc_now,
                 embedder: Any = None) -> ImportReport:
    """Write every new item of ``source`` into ``root`` (created when absent), each at its
    own time, with the receipts; model-free work (Lite, Journal) is drained so the memories
    exist when this returns, capture's is left to the worker like a live turn's."""
    from memory_es.store import MemoryStore

    read = _read(fmt, source)
    with MemoryStore.open(root, config, clock=clock, lock_timeout=lock_timeout,
                          background=False, key_store=key_store, embedder=embedder) as store:
        turns, decision = _decide(read, store)
        if turns is None:
            assert not isinstance(read, SourceRead)
            return _write_lines(store, read, decision, clock)
        return _write_turns(store, turns, decision, clock)


def _write_turns(store: Any, read: SourceRead, decision: Decision, clock: Clock
                 ) -> ImportReport:
    capture = store.config.is_capture
    receipts = _Receipts(read, clock, decision)
    already, refused = decision.already, list(decision.refused)
    for start in range(0, len(decision.turns), PART):
        part = decision.turns[start:start + PART]
        results = store.admit_imported([(p, i.at) for i, p in part],
                                       functools.partial(receipts.of, part))
        crash_point("import.after_part")
        step("import", min(start + PART, len(decision.turns)), len(decision.turns))
        for (item, _), result in zip(part, results, strict=True):
            if result.status == "duplicate":
                already += 1
            elif result.status != "admitted":
                refused.append(Refusal(item.original_id, f"{result.status}: {result.code}"))
        if not capture:  # model-free work now: the active bound (B18) spans parts
            store.drain(embed=False)
    written = [row[0] for row in receipts.rows]
    shown = {row[0] for row in receipts.rows}
    samples = Decision(turns=[t for t in decision.turns if t[1].run_hash in shown]).samples()
    return ImportReport(read.fmt, read.sha256, True, written, already, refused, receipts.ids,
                        len(written) if capture else 0, samples)


def _write_lines(store: Any, folder: tuple[Folder, str], decision: Decision, clock: Clock
                 ) -> ImportReport:
    """The folder's new lines, their graph and history, and the receipt: one transaction."""
    ids: list[str] = []
    if decision.lines:
        events = line_events(folder[0], decision.lines, store.status_of, store.entity_events,
                             store.config.mode)
        rows = [[x.memory_id, x.memory_id, x.at.isoformat()] for x in decision.lines]
        ids.append(_import_id("reference", folder[1], rows))
        events.append(Root.imported(
            at=clock(), import_id=ids[0], format="reference", source_sha256=folder[1],
            admitted=rows, already=decision.already,
            refused=[r.to_json() for r in decision.refused]))
        store.commit_imported(events)
    return ImportReport("reference", folder[1], True, [x.memory_id for x in decision.lines],
                        decision.already, decision.refused, ids, samples=decision.samples())


class _Receipts:
    """Each part's receipt, made inside its transaction from the part's results: the items
    it admitted (intake id, the source's id and time), the repeats and refusals it met, and
    (the first receipt) what the whole source decided before any was written."""

    def __init__(self, read: SourceRead, clock: Clock, decision: Decision) -> None:
        self.read, self.clock = read, clock
        self.already, self.refused = decision.already, list(decision.refused)
        self.rows: list[list[str]] = []
        self.ids: list[str] = []

    def _id(self, original: str) -> str:
        """The source's id as the receipt keeps it: a digest where it is a chosen name."""
        if self.read.fmt in PRIVATE_IDS:
            return hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return original

    def of(self, part: list[tuple[ImportItem, PreparedIntake]],
           results: list[AdmissionResult]) -> list[Root.Imported]:
        rows = [[p.run_hash, self._id(i.original_id), i.at.isoformat()]
                for (i, p), r in zip(part, results, strict=True) if r.status == "admitted"]
        if not rows:
            return []
        already = self.already + sum(r.status == "duplicate" for r in results)
        refused = [*self.refused, *(Refusal(i.original_id, f"{r.status}: {r.code}")
                                    for (i, _), r in zip(part, results, strict=True)
                                    if r.status not in ("admitted", "duplicate"))]
        self.already, self.refused = 0, []  # the source's decisions go in the first receipt
        self.rows.extend(rows)
        self.ids.append(_import_id(self.read.fmt, self.read.sha256, rows))
        return [Root.imported(
            at=self.clock(), import_id=self.ids[-1], format=self.read.fmt,
            source_sha256=self.read.sha256, admitted=rows, already=already,
            refused=[{"id": self._id(r.original_id), "reason": r.reason} for r in refused])]


def _import_id(fmt: str, source_sha256: str, admitted: list[list[str]]) -> str:
    digest = hashlib.sha256(f"{fmt}\0{source_sha256}".encode())
    for row in admitted:
        digest.update(os.fsencode(row[0]))
    return digest.hexdigest()
