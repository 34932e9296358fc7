"""What an import asks of the root it goes into, the same questions for the dry run and the
apply, so the two decide every item alike.

:class:`Target` is answered by the writer store itself (``MemoryStore``: the apply), by a
verified read of the root (:func:`reading`: the dry run), or by nothing (:class:`NewRoot`:
the dry run of a root that does not exist yet).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import apsw

from memory_es.config import MemoryConfig
from memory_es.history import fold_intakes
from memory_es.ids import entity_uuid, intake_uuid
from memory_es.journal import OpenedJournal
from memory_es.keystore import KeyStore
from projections.search import status_of


class Target(Protocol):
    """The root an import decides against."""

    @property
    def config(self) -> MemoryConfig: ...

    def admitted_hash(self, intake_id: str) -> str | None:
        """The digest a turn was admitted with ("" once forgotten); None: not here."""

    def status_of(self, memory_id: str) -> str | None:
        """A line's status here; None: not here."""

    def entity_events(self, entity_id: str) -> int:
        """How many events an entity has here (0: not here)."""

    def active_turns(self) -> int:
        """Pending and dead turns (the bound B18 counts)."""


class NewRoot:
    """A root that does not exist yet: nothing is there."""

    def __init__(self, config: MemoryConfig) -> None:
        self._config = config

    @property
    def config(self) -> MemoryConfig:
        return self._config

    def admitted_hash(self, intake_id: str) -> str | None:
        return None

    def status_of(self, memory_id: str) -> str | None:
        return None

    def entity_events(self, entity_id: str) -> int:
        return 0

    def active_turns(self) -> int:
        return 0


class ReadRoot:
    """A verified read of an existing root: its journal and its active index."""

    def __init__(self, config: MemoryConfig, opened: OpenedJournal,
                 index: apsw.Connection | None) -> None:
        self._config, self._opened, self._index = config, opened, index
        self._active: int | None = None

    @property
    def config(self) -> MemoryConfig:
        return self._config

    def admitted_hash(self, intake_id: str) -> str | None:
        return self._opened.recorder.admitted_content_hash(intake_uuid(intake_id))

    def status_of(self, memory_id: str) -> str | None:
        return status_of(self._index, memory_id)

    def entity_events(self, entity_id: str) -> int:
        return len(self._opened.recorder.aggregate_rows(entity_uuid(entity_id)))

    def active_turns(self) -> int:
        if self._active is None:
            self._active = fold_intakes(self._opened, retain_resolved=False).active
        return self._active


@contextlib.contextmanager
def reading(root: Path, config: MemoryConfig | None,
            key_store: str | Path | KeyStore | None) -> Iterator[Target]:
    """The dry run's view of ``root``: verified, read-only; a root not there yet is empty."""
    from memory_es.root import MemoryRoot

    if not (root.is_dir() and any(root.iterdir())):
        yield NewRoot(config or MemoryConfig())
        return
    handle = MemoryRoot.open(root, config, key_store=key_store)
    with handle.index() as index, handle.reader() as opened:
        yield ReadRoot(handle.config, opened, index)
