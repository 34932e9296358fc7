"""What the rest of the engine may ask of a journal's recorder, on either backend.

:class:`~memory_es.journal.recorder.JournalRecorder` (SQLite, the default) and
:class:`~memory_es.journal.pgrecorder.PostgresJournalRecorder` both satisfy it, so
the store, the worker, replay and health never ask which one they hold. The PostgreSQL one is
imported only when a root's journal is there: psycopg is an optional extra.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent

from memory_es.journal.chain import Chain
from memory_es.journal.recorder import Payload
from memory_es.journal.sealing import Sealer


class Recorder(Protocol):
    """An eventsourcing ApplicationRecorder with the journal's chain, payloads and reads.

    The contract both backends keep (``tests/recorder_contract.py`` runs it on each):
    positions (eventsourcing's notification ids) start at 1 and are gapless, in commit order,
    whichever thread or process appends; each row carries ``chain.link`` of the previous
    row's chain (GENESIS before the first) and its own fields, and a durable head (the SQLite
    catalog, the PostgreSQL head row) records the last ``(position, chain)`` of every commit
    (B12). A write is all or nothing, payloads included (B5); a run id's version taken twice
    is eventsourcing's ``IntegrityError`` and consumes no position. A read-only recorder
    refuses every write with ``journal_read_only``. Sealed payloads open under their record
    key; one whose key was destroyed reads as absent."""

    location: str  # where the journal is, for messages: a file, or a server without its DSN
    chain: Chain  # the root's link function: plain SHA-256, or HMAC under its chain key
    sealer: Sealer  # seals payloads on write, opens them (and sealed states) on read
    readonly: bool
    shared: bool  # other processes may append (PostgreSQL): positions can skip ours

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None:
        """Append the events after the head, and ``payloads=[Payload...]`` sealed, in one
        transaction; return their positions (an empty batch writes nothing)."""

    def select_events(self, originator_id: UUID | str, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False, limit: int | None = None
                      ) -> Sequence[StoredEvent]:
        """One aggregate's events by version: above ``gt``, up to ``lte``, ``limit`` of them."""

    def select_notifications(self, start: int | None, limit: int, stop: int | None = None,
                             topics: Sequence[str] = (), *, inclusive_of_start: bool = True
                             ) -> Sequence[Notification]:
        """Up to ``limit`` events in position order from ``start`` (after it, without
        ``inclusive_of_start``) up to ``stop``, of ``topics`` when given."""

    def max_notification_id(self) -> int | None:
        """The last position, None on an empty journal."""

    def aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]:
        """``(position, version, topic, state)`` of one aggregate's events, by version."""

    def has_events(self, originator_id: UUID) -> bool:
        """Does any event of this aggregate exist?"""

    def admitted_content_hash(self, intake_id: UUID) -> str | None:
        """The ``content_sha256`` of an intake's first event, opened; None without one."""

    def append_rows(self, rows: Sequence[tuple[int, str, int, str, bytes, bytes]],
                    payloads: Sequence[tuple[str, str, bytes]] = ()) -> None:
        """Append rows exactly as another journal of the root holds them (chain included)
        and payloads as stored, moving the durable head; rows that do not follow the head
        are refused (``chain_broken``), a payload already held is kept."""

    def payload_rows(self) -> list[tuple[str, str, bytes]]:
        """Every payload as stored: ``(intake id, sha256, bytes)``, sealed bytes sealed."""

    def lease(self, intake_ids: Sequence[str]) -> list[str]:
        """The intakes this process may attempt now (all of them when it is alone)."""

    def release(self, intake_ids: Sequence[str]) -> None:
        """Give back what :meth:`lease` took."""

    def delete_payloads(self, intake_ids: Sequence[str]) -> None:
        """Drop these intakes' payloads (B9); the others stay."""

    def payload(self, intake_id: str) -> Payload | None:
        """An intake's payload, opened (``sealed``: it was stored sealed); None when there
        is none or its key was destroyed."""

    def payload_key(self, intake_id: str) -> int | None:
        """The record key of an intake's sealed payload; None for an open one or none."""

    def rows_of(self, topics: Sequence[str], needle: str | None = None
                ) -> list[tuple[int, str, int, str, bytes]]:
        """``(position, originator id, version, topic, state)`` of the events of ``topics``
        (whose stored state holds ``needle``, when given), in position order."""

    def highest_key_id(self) -> int:
        """The highest record key any row or payload references (0: none)."""

    def chain_at(self, position: int) -> bytes | None:
        """The chain stored at ``position``; None past the end."""

    def rows(self) -> Generator[tuple[int, str, int, str, bytes, bytes], None, None]:
        """Every row with its chain in position order, from one read snapshot (what is
        committed while it is iterated is not in it)."""

    def verify(self) -> tuple[int, bytes]:
        """Recompute the chain from GENESIS; return the tail ``(position, chain)`` or fail
        closed (``chain_broken``, naming the position) on a row edited, deleted, relinked or
        linked under another key."""

    def fsync_files(self) -> None:
        """Make what is committed durable again (a journal-ahead recovery)."""

    def close(self) -> None:
        """Close the journal and the sealer's record keys."""
