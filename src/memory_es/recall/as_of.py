"""Recall as of an instant: the same recall over the journal's state then.

A door gives the journal's decoded events; :class:`AsOfStates` cuts them at the instant
(``projections.asof``: a prefix by position, one commit never split), folds the prefix into a
throwaway in-memory index with the replay driver's projection, fills its vectors from the
vector cache (keyed by text, so text embedded once is never embedded again) and keeps it for
the handle's life, keyed by (journal head, cut): the head is in the key because a later event
can change how an earlier one decodes (a forgotten line's text). Recall then runs unchanged
over it (:meth:`memory_es.recall.engine.Recaller.answer_as_of`), with ``now`` set to the
instant, so currentness (``ended``) is judged then, not now (the instant: ``check_as_of``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory_es.bounds import describe
from memory_es.errors import InvalidArgumentError
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import vector_backlog

if TYPE_CHECKING:  # the fold's modules load on the first recall as of an instant
    from projections.sqlite_index import IndexProjection

Events = Callable[[int], Iterable[tuple[int, object]]]  # upto -> (position, event), in order
KEEP = 4  # as-of folds a handle keeps (each is a whole index in memory)
KEEP_CUTS = 1024  # remembered (head, instant) -> cut answers, forgotten all at once past this
# An ISO 8601 instant with a time and an explicit offset (Z or +HH:MM): nothing is guessed.
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?"
                      r"(Z|[+-]\d{2}:?\d{2})", re.IGNORECASE)


def check_as_of(value: object) -> datetime:
    """An aware ``datetime``, or an ISO 8601 instant with its offset (``2026-05-04T09:00Z``,
    ``2026-05-04T11:00:00+02:00``). An instant without an offset is refused, not read in some
    zone: the same words name different instants on different hosts, and the journal's answer
    is exact only for an exact question."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidArgumentError("as_of must carry a UTC offset (a naive datetime names "
                                       "no instant)", code="recall_invalid_as_of")
        return value
    if isinstance(value, str) and len(value) <= 64 and _INSTANT.fullmatch(value.strip()):
        try:
            return datetime.fromisoformat(value.strip().upper().replace(" ", "T"))
        except ValueError:
            pass
    raise InvalidArgumentError(
        f"as_of must be an ISO 8601 instant with an offset, e.g. 2026-05-04T09:00:00Z or "
        f"2026-05-04T11:00+02:00, got {describe(value)}", code="recall_invalid_as_of")


@dataclass
class AsOfState:
    """One folded prefix: the throwaway index, the position it holds, its vector matrix."""

    index: IndexProjection
    position: int
    matrices: dict[str, VectorMatrix] = field(default_factory=dict)
    _filled: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fill(self, fill: Callable[[IndexProjection], None], identity: str) -> None:
        """Give the fold its vectors of ``identity`` (``fill``: cache first, then the provider;
        the door calls this with no lock of its own held); after an outage left some out, the
        next call tries again."""
        with self._lock:
            if not self._filled:
                fill(self.index)
                self._filled = vector_backlog(self.index.conn, identity) == 0

    def close(self) -> None:
        self.index.close()


class AsOfStates:
    """The as-of folds of one handle, newest-used last, at most :data:`KEEP`."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._states: OrderedDict[tuple[int, int], AsOfState] = OrderedDict()
        self._cuts: dict[tuple[int, datetime], int] = {}  # (head, instant) -> cut
        self._lock = threading.Lock()  # a store's host threads may ask at once

    def cached(self, head: int, instant: datetime) -> AsOfState | None:
        """The fold already made for this question, without reading the journal again."""
        with self._lock:
            cut = self._cuts.get((head, instant))
            if cut is None or (head, cut) not in self._states:
                return None
            self._states.move_to_end((head, cut))
            return self._states[(head, cut)]

    def state(self, events: Events, head: int, instant: datetime) -> AsOfState:
        """The fold of the prefix recorded at ``instant`` of a journal whose last position is
        ``head`` (its vectors come from :meth:`AsOfState.fill`)."""
        with self._lock:
            return self._state(events, head, instant)

    def _state(self, events: Events, head: int, instant: datetime) -> AsOfState:
        from projections.asof import as_of_cut, fold_in_memory

        cut = as_of_cut(events(head), instant)
        if len(self._cuts) >= KEEP_CUTS:
            self._cuts.clear()
        self._cuts[(head, instant)] = cut
        key = (head, cut)
        found = self._states.get(key)
        if found is not None:
            self._states.move_to_end(key)
            return found
        state = AsOfState(fold_in_memory(events(cut) if cut else ()), cut)
        self._states[key] = state
        while len(self._states) > self._keep:
            self._states.popitem(last=False)[1].close()
        return state

    def close(self) -> None:
        with self._lock:
            for state in self._states.values():
                state.close()
            self._states.clear()
            self._cuts.clear()
