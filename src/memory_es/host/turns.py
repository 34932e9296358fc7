"""The turn-scoped lookup cache a host reuses (G34, G35, J13, G30): host state, in memory only,
beside the store like the receipt cache (:mod:`memory_es.host.receipts`). A turn id is checked
with the question (:func:`memory_es.recall.asking.check_turn`).

A logical turn is named by the host (``turn=`` on ``auto_context`` and ``recall``) and lives
until ``end_turn``. It keeps

- its original question's direct lookup (the automatic one), which original-query mode
  selects again, uncut, without retrieving or embedding again (G34);
- every lookup made in it, by normalized query (:func:`memory_es.text.fold`: NFKC, case
  folded, whitespace collapsed), so an identical automatic or tool query shares one (G35);
- the memory ids already counted as delivered, so access telemetry counts each once (G30).

A non-duplicate write while a turn is open (Remember, or an admitted turn) is an in-turn
write for every open turn (the engine cannot tell which conversation a write belongs to, so
it errs towards searching again): the cached lookups are dropped and original-query mode is
unavailable for the rest of the turn (G34, J13). Bounded: 64 open turns (least recently used
go first, as if ended) and 8 lookups per turn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from memory_es.recall.asking import has_content, unavailable
from memory_es.recall.explicit import Lookup
from memory_es.text import fold

MAX_OPEN_TURNS: Final = 64
MAX_LOOKUPS_PER_TURN: Final = 8


@dataclass
class _Turn:
    original: Lookup | None = None
    empty_question: bool = False
    written: bool = False
    lookups: OrderedDict[str, Lookup] = field(default_factory=OrderedDict)
    delivered: set[str] = field(default_factory=set)


class TurnLookups:
    """The open turns of one store handle (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, _Turn] = OrderedDict()

    def _open(self, turn: str) -> _Turn:
        state = self._turns.get(turn)
        if state is None:
            state = self._turns[turn] = _Turn()
            while len(self._turns) > MAX_OPEN_TURNS:
                self._turns.popitem(last=False)
        self._turns.move_to_end(turn)
        return state

    def begin(self, turn: str) -> None:
        """Open ``turn`` (a no-op when it is open)."""
        with self._lock:
            self._open(turn)

    def is_open(self, turn: str) -> bool:
        with self._lock:
            return turn in self._turns

    def end(self, turn: str) -> bool:
        """Turn cleanup: forget its lookups; True when it was open."""
        with self._lock:
            return self._turns.pop(turn, None) is not None

    def cached(self, turn: str, query: str) -> Lookup | None:
        """The turn's lookup of this normalized query, if one was made (G35)."""
        with self._lock:
            state = self._turns.get(turn)
            return None if state is None else state.lookups.get(fold(query))

    def keep(self, turn: str, lookup: Lookup, *, original: bool = False) -> None:
        """Remember ``lookup`` in ``turn`` (opening it); ``original``: the automatic lookup of
        the turn's question. Nothing is kept after an in-turn write (it would be stale)."""
        with self._lock:
            state = self._open(turn)
            if original:
                state.original = lookup
                state.empty_question = not has_content(lookup.query)
            if state.written:
                return
            state.lookups[fold(lookup.query)] = lookup
            state.lookups.move_to_end(fold(lookup.query))
            while len(state.lookups) > MAX_LOOKUPS_PER_TURN:
                state.lookups.popitem(last=False)

    def original(self, turn: str) -> Lookup:
        """The turn's automatic lookup, or ``recall_original_unavailable`` saying why."""
        with self._lock:
            state = self._turns.get(turn)
            if state is None:
                raise unavailable(f"turn {turn!r} is not open (never bound, or ended)")
            if state.written:
                raise unavailable("a memory was written during this turn")
            if state.empty_question:
                raise unavailable("the turn's question is empty")
            if state.original is None:
                raise unavailable("this turn made no automatic lookup (no auto_context with "
                                  "this turn, not an owner turn, or no vectors)")
            return state.original

    def written(self) -> None:
        """A non-duplicate memory write: every open turn's lookups are stale (J13)."""
        with self._lock:
            for state in self._turns.values():
                state.written = True
                state.lookups.clear()

    def first_delivery(self, turn: str | None, ids: Iterable[str]) -> list[str]:
        """The ids not yet counted in ``turn`` (all of them without a turn), now counted."""
        unique = list(dict.fromkeys(ids))
        if turn is None:
            return unique
        with self._lock:
            state = self._open(turn)
            fresh = [i for i in unique if i not in state.delivered]
            state.delivered.update(fresh)
            return fresh
