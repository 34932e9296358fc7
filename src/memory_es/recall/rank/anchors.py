"""Query anchors (G5-G7, G10, G32): the numbers, dates, ids and names a query names, its terms
for lexical overlap, and the text folding both sides are compared in.

No stop-word or question-word list: every query word counts (G32).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True, slots=True)
class Anchors:
    """The query's analysis (G5-G7, G10).

    ``numbers_dates_ids``: distinct whole numbers, canonical ``YYYY-MM-DD`` dates and numeric ids.
    ``names``: distinct normalised query words of >= 3 letters that are a word of the name of an
    entity associated with some candidate in the pool. ``terms``: the distinct normalised query
    words, for lexical term overlap (G10).
    """

    numbers_dates_ids: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()


def normalize(text: str) -> str:
    """Anchor-matching form (G7): NFKC, casefold, accents stripped (NFKD minus marks), then NFC."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", folded)
                       if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped)


# Dates: YYYY-MM-DD, YYYY/MM/DD (an ISO instant's date part counts, e.g. 1988-11-02T10:00) and
# DD.MM.YYYY. Not inside a longer dotted/dashed token.
_YMD = re.compile(
    r"(?<![\w./-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})"
    r"(?:t\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"  # an instant's time part
    r"(?![./:-]\d)(?!\w)"
)
_DMY = re.compile(r"(?<![\w./-])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![./-]\d)(?!\w)")
# A token: word characters joined by single . - / : (so "pr-1234", "v0.9", "12:30" stay whole).
_TOKEN = re.compile(r"\w+(?:[.\-/:]\w+)*")
_WORD = re.compile(r"\w+")


def _canon_date(year: str, month: str, day: str) -> str | None:
    try:
        return date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return None


def _number_tokens(normalized: str) -> dict[str, int]:
    """Dates (canonical), whole numbers and numeric ids in already-normalised text (G6), each
    with the position of its first occurrence."""
    found: dict[str, int] = {}
    spans: list[tuple[int, int]] = []
    for m in _YMD.finditer(normalized):
        canon = _canon_date(m.group(1), m.group(3), m.group(4))
        if canon is not None:
            found[canon] = min(found.get(canon, m.start()), m.start())
            spans.append(m.span())
    for m in _DMY.finditer(normalized):
        canon = _canon_date(m.group(3), m.group(2), m.group(1))
        if canon is not None:
            found[canon] = min(found.get(canon, m.start()), m.start())
            spans.append(m.span())
    masked = list(normalized)
    for start, end in spans:
        masked[start:end] = " " * (end - start)
    rest = "".join(masked)
    for m in _TOKEN.finditer(rest):
        tok = m.group()
        if any(ch.isdigit() for ch in tok):
            # a whole number ("0.9", "4521") or a numeric id ("pr-1234", "v0.9")
            found.setdefault(tok, m.start())
    return found


@functools.lru_cache(maxsize=4096)
def candidate_anchor_tokens(text: str) -> frozenset[str]:
    """The numbers, canonical dates and numeric ids a candidate's text contains (G6). Kept
    for the last 4,096 texts: the same lines are scored again query after query (and a
    calibration fit scores each pool thousands of times)."""
    return frozenset(_number_tokens(normalize(text)))


def _letters(word: str) -> int:
    return sum(1 for ch in word if ch.isalpha())


def name_words(names: Iterable[str]) -> set[str]:
    """Words of >= 3 letters in entity names, normalised (G6, G7)."""
    return {w for name in names for w in _WORD.findall(normalize(name)) if _letters(w) >= 3}


def distinct_words(text: str) -> list[str]:
    """The distinct normalised words of ``text``, in first-occurrence order (G10)."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(normalize(text)):
        seen.setdefault(w, None)
    return list(seen)


def extract_anchors(query: str, entity_names: Iterable[str] = ()) -> Anchors:
    """Analyse a query (G5-G7, G10, G32: no stop-word or question-word list).

    ``entity_names`` are the names of the entities associated with the pool's candidates; a query
    word of >= 3 letters that is a word of one of them is a name anchor. The query's name anchors
    are therefore the same for every candidate, so the 0.08 budget has one denominator per query.
    Orders are first-occurrence; all tuples are distinct.
    """
    normalized = normalize(query)
    positions = _number_tokens(normalized)
    ordered = sorted(positions, key=lambda tok: (positions[tok], tok))
    pool_words = name_words(entity_names)
    terms = distinct_words(query)
    names = tuple(w for w in terms if _letters(w) >= 3 and w in pool_words)
    return Anchors(numbers_dates_ids=tuple(ordered), names=names, terms=tuple(terms))
