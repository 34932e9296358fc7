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
    """An eventsourcing ApplicationRecorder with the journal's chain, payloads and reads."""

    location: str  # where the journal is, for messages: a file, or a server without its DSN
    chain: Chain
    sealer: Sealer
    readonly: bool
    shared: bool  # other processes may append (PostgreSQL): positions can skip ours

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None: ...

    def select_events(self, originator_id: UUID | str, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False, limit: int | None = None
                      ) -> Sequence[StoredEvent]: ...

    def select_notifications(self, start: int | None, limit: int, stop: int | None = None,
                             topics: Sequence[str] = (), *, inclusive_of_start: bool = True
                             ) -> Sequence[Notification]: ...

    def max_notification_id(self) -> int | None: ...

    def aggregate_rows(self, originator_id: UUID) -> list[tuple[int, int, str, bytes]]: ...

    def has_events(self, originator_id: UUID) -> bool: ...

    def admitted_content_hash(self, intake_id: UUID) -> str | None: ...

    def append_rows(self, rows: Sequence[tuple[int, str, int, str, bytes, bytes]],
                    payloads: Sequence[tuple[str, str, bytes]] = ()) -> None: ...

    def payload_rows(self) -> list[tuple[str, str, bytes]]: ...

    def lease(self, intake_ids: Sequence[str]) -> list[str]: ...

    def release(self, intake_ids: Sequence[str]) -> None: ...

    def delete_payloads(self, intake_ids: Sequence[str]) -> None: ...

    def payload(self, intake_id: str) -> Payload | None: ...

    def payload_key(self, intake_id: str) -> int | None: ...

    def rows_of(self, topics: Sequence[str], needle: str | None = None
                ) -> list[tuple[int, str, int, str, bytes]]: ...

    def highest_key_id(self) -> int: ...

    def chain_at(self, position: int) -> bytes | None: ...

    def rows(self) -> Generator[tuple[int, str, int, str, bytes, bytes], None, None]: ...

    def verify(self) -> tuple[int, bytes]: ...

    def fsync_files(self) -> None: ...

    def close(self) -> None: ...
