"""What a deliberate recall may be asked (G26, G27, G34): its arguments checked once, before
anything is read, each bad one refused with a one-line typed error naming it."""

from __future__ import annotations

from dataclasses import dataclass

from memory_es.errors import InvalidArgumentError
from memory_es.recall.candidates import check_limit, check_query
from memory_es.recall.explicit import check_about
from memory_es.recall.guidance import GuidanceKind, check_kind
from memory_es.recall.turns import check_turn, unavailable


@dataclass(frozen=True, slots=True)
class Ask:
    """A checked request: ``query`` is "" in original-query mode (the turn supplies it)."""

    query: str
    kind: GuidanceKind | None
    about: str | None
    turn: str | None


def check_ask(query: object, limit: object, *, kind: object = None, about: object = None,
              turn: object = None, original: object = False) -> Ask:
    """``query`` and ``use_original_query`` are mutually exclusive (G34,
    ``recall_query_conflict``); original-query mode needs the ``turn`` whose automatic lookup
    it reuses (``recall_original_unavailable``); one of them is required."""
    if not isinstance(original, bool):
        raise InvalidArgumentError(f"recall_invalid_argument: use_original_query must be true "
                                   f"or false, got {original!r}", code="recall_invalid_argument")
    check_limit(limit)
    checked_kind = check_kind(kind)
    checked_about = check_about(about)
    checked_turn = check_turn(turn)
    if original:
        if query is not None:
            raise InvalidArgumentError("recall_query_conflict: query and use_original_query "
                                       "are mutually exclusive; give one",
                                       code="recall_query_conflict")
        if checked_turn is None:
            raise unavailable("no turn given (use_original_query needs turn=)")
        return Ask("", checked_kind, checked_about, checked_turn)
    if query is None:
        raise InvalidArgumentError("recall_invalid_query: query is required unless "
                                   "use_original_query is true", code="recall_invalid_query")
    return Ask(check_query(query), checked_kind, checked_about, checked_turn)
