"""Rebuilding a root's projections, and building a root from an exported journal (the CI use:
replay a memory root from scratch).

``replay_export`` verifies the export's hash chain line by line before anything is written,
appends the events verbatim (same ids, versions, topics and state bytes) to a new root, then
builds its projections. Exporting that root reproduces the input byte for byte.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec
from eventsourcing.persistence import StoredEvent

from memory_es.bounds import check_seconds
from memory_es.config import MemoryConfig
from memory_es.embeddings import EmbeddingError, make_embedder
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.events import SEALED_FIELDS
from memory_es.history import iter_events, journal_guard
from memory_es.journal import GENESIS, OpenedJournal, chain_link, open_journal
from memory_es.keystore import KeyStore
from memory_es.progress import position, step, tracked
from memory_es.rootconfig import effective, journal_of
from memory_es.vectors.cache import VectorCache
from memory_es.vectors.pending import embeddings_block, fill_vectors, vector_backlog
from projections.replay import RebuildReport, rebuild
from projections.sqlite_index import IndexProjection

log = logging.getLogger("memory_es")

BATCH = 1000


class ExportLine(msgspec.Struct, forbid_unknown_fields=True):
    chain: str
    originator_id: str
    originator_version: int
    position: int
    state: msgspec.Raw
    topic: str


def read_export(path: str | Path) -> Iterator[StoredEvent]:
    """Stored events from a JSONL export, failing on the first line that breaks the chain."""
    decoder = msgspec.json.Decoder(ExportLine)
    chain = GENESIS
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = decoder.decode(raw)
            except msgspec.DecodeError as e:
                raise IntegrityError(f"{path}:{number}: not an export line: {e}",
                                     code="export_malformed") from None
            state = bytes(line.state)
            if line.position != number:
                raise IntegrityError(f"{path}:{number}: position {line.position}, expected "
                                     f"{number}", code="export_malformed")
            chain = chain_link(chain, number, line.originator_id, line.originator_version,
                               line.topic, state)
            if chain.hex() != line.chain:
                raise IntegrityError(f"{path}:{number}: hash chain does not verify",
                                     code="chain_broken")
            yield StoredEvent(line.originator_id, line.originator_version, line.topic, state)


def replay_export(path: str | Path, root: str | Path,
                  config: MemoryConfig | None = None, *,
                  key_store: str | Path | KeyStore | None = None) -> RebuildReport:
    """Create ``root`` (absent or empty) from the export at ``path``; with ``config`` naming
    an embedding provider, the new generation is embedded before it is activated (D10).

    The export's plain SHA-256 chain is verified line by line; the new root gets its own root
    id and chain key (in ``key_store``) and keys every row it appends."""
    root = Path(root)
    if os.path.lexists(root) and (not root.is_dir() or any(root.iterdir())):
        raise MemoryEsError(f"{root}: replay needs a new or empty directory", code="root_not_empty")
    events = list(read_export(path))  # verify the whole chain before creating anything
    with journal_guard(root):
        opened = open_journal(root, writable=True, key_store=key_store, seal=SEALED_FIELDS,
                              journal=journal_of(config))  # a replay onto PostgreSQL too
    try:
        seal = opened.recorder.sealer.seal_state  # the new root seals content under its keys
        for start in range(0, len(events), BATCH):
            opened.recorder.insert_events([
                StoredEvent(e.originator_id, e.originator_version, e.topic,
                            seal(e.topic, e.originator_id, e.originator_version, e.state))
                for e in events[start:start + BATCH]])
            step("replay", min(start + BATCH, len(events)), len(events))
        return _rebuild(root, opened, config)
    finally:
        opened.close()


def rebuild_root(root: str | Path, config: MemoryConfig | None = None, *,
                 lock_timeout: float = 0.0,
                 key_store: str | Path | KeyStore | None = None) -> RebuildReport:
    """``memory-es rebuild``: rebuild projections with the writer lock (C15, C16), embedding
    the new generation before it is activated when ``config`` names a provider (D10, B25:
    the vector cache first, so unchanged text is never sent again).

    Needs no working index: the journal alone decides. Refuses, naming the holder, while an
    agent holds the root.
    """
    check_seconds("lock_timeout", lock_timeout)
    with journal_guard(root):  # a damaged journal.db: journal_corrupt
        opened = open_journal(Path(root), writable=True, lock_timeout=lock_timeout,
                              create=False, key_store=key_store, journal=journal_of(config))
    try:
        return _rebuild(Path(root), opened, config)
    finally:
        opened.close()


def _rebuild(root: Path, opened: OpenedJournal, config: MemoryConfig | None) -> RebuildReport:
    block = embeddings_block(effective(opened, config))  # None: the root's own config
    head = opened.recorder.max_notification_id() or 0
    if block is None:
        return rebuild(root, tracked("rebuild", iter_events(opened, index_only=True), head,
                                     position))
    embedder = make_embedder(block)
    assert embedder is not None
    backlog: list[int] = []

    def fill(index: IndexProjection) -> None:
        cache = VectorCache(root)
        try:
            backlog.append(fill_vectors(index.conn, embedder, cache))
        except EmbeddingError as e:  # the new generation is still whole lexically (D9)
            log.warning("memory_degraded: rebuild without some vectors (code=%s)", e.code)
            backlog.append(vector_backlog(index.conn, embedder.identity.key))
        finally:
            cache.close()

    report = rebuild(root, tracked("rebuild", iter_events(opened, index_only=True), head,
                                   position), before_activate=fill)
    return msgspec.structs.replace(report, vectors_pending=backlog[0] if backlog else None)
