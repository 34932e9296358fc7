"""What a deliberate recall may be asked (G26, G27, G31, G34): its arguments checked once,
before anything is read, each bad one refused with a one-line typed error naming it. Both
doors (the writer and the read-only root) and the CLI check a question here, so a refusal
reads the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from memory_es.bounds import check_text
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.recall.rank.score import MAX_CANDIDATES
from memory_es.recall.sections.guidance import GuidanceKind, check_kind

TURN_ID_MAX: Final = 256
UNAVAILABLE: Final = "recall_original_unavailable"
_ABOUT: Final = re.compile(r"(?:person:)?([0-9a-f]{8,64})")


@dataclass(frozen=True, slots=True)
class Ask:
    """A checked request: ``query`` is "" in original-query mode (the turn supplies it)."""

    query: str
    kind: GuidanceKind | None
    about: str | None
    turn: str | None


def has_content(query: str) -> bool:
    """A query names something only if it holds a letter or digit (any script)."""
    return any(ch.isalnum() for ch in query)


def check_limit(limit: object) -> int:
    """Result limits are whole numbers from 1 to the fifty-hit pool (G31); anything else is a
    caller's mistake, refused with a one-line error rather than silently reinterpreted."""
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= MAX_CANDIDATES:
        raise MemoryEsError(f"recall_invalid_limit: limit must be a whole number from 1 to "
                            f"{MAX_CANDIDATES}, got {limit!r}", code="recall_invalid_limit")
    return limit


def check_query(query: object) -> str:
    """A query is text that encodes as UTF-8: an unpaired surrogate is refused (one line)
    rather than failing deep in SQLite or the embedder."""
    return check_text("query", query, code="recall_invalid_query")


def check_about(about: object) -> str | None:
    """``about`` is None or a person's entity id (64 hex) or a unique prefix of at least 8,
    optionally written ``person:<id>``; anything else is ``recall_invalid_about``."""
    if about is None:
        return None
    if not isinstance(about, str) or (found := _ABOUT.fullmatch(about)) is None:
        raise InvalidArgumentError(f"recall_invalid_about: about must be a person's entity id "
                                   f"or a unique prefix of at least 8 hex digits, got "
                                   f"{about!r}", code="recall_invalid_about")
    return found[1]


def check_turn(turn: object) -> str | None:
    """A turn id is None or non-empty text of at most 256 characters."""
    if turn is None:
        return None
    if not isinstance(turn, str) or not turn.strip() or len(turn) > TURN_ID_MAX:
        raise InvalidArgumentError(f"recall_invalid_turn: turn must be a non-empty string of "
                                   f"at most {TURN_ID_MAX} characters, got {turn!r}",
                                   code="recall_invalid_turn")
    return turn


def unavailable(why: str) -> MemoryEsError:
    return MemoryEsError(f"{UNAVAILABLE}: useOriginalQuery is unavailable: {why}",
                         code=UNAVAILABLE)


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
