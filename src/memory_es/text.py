"""Text normalisation (DESIGN 9.3, D3): the forms identities and comparisons are taken of."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

# What no stored line may carry as written: C0 and C1 controls but the tab, and the bidi
# overrides and isolates (they reorder what is shown around them). One class, used by the
# capture contracts (refused), Markdown (replaced) and MemoryJournal (withheld).
UNSAFE_CHARS = "\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
UNSAFE_CHAR = re.compile(f"[{UNSAFE_CHARS}]")


def collapse_ws(text: str) -> str:
    """Every run of Unicode whitespace becomes one space; ends trimmed. Case is preserved."""
    return " ".join(text.split())


def journal_text(text: str) -> str:
    """The Journal tier's normal form: NFKC, then whitespace collapsed (case preserved)."""
    return collapse_ws(unicodedata.normalize("NFKC", text))


def fold(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: how names and fact values compare."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 memory``, ``2 memories``, ``0 files``: a count with its noun in number, as every
    line of CLI output states counts."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def truncate(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters, cut on a character boundary (never
    between a base character and its combining marks, a ZWJ sequence or a variation
    selector), with ``…`` when cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = width - 1
    while cut > 0 and (_joins(flat[cut]) or flat[cut - 1] == "\u200d"):
        cut -= 1
    return flat[:cut].rstrip() + "…"


def _joins(char: str) -> bool:
    """Does ``char`` belong to the character before it?"""
    return (unicodedata.combining(char) != 0 or char == "\u200d"
            or "\ufe00" <= char <= "\ufe0f" or "\U0001f3fb" <= char <= "\U0001f3ff"
            or unicodedata.category(char) in ("Mn", "Me", "Mc"))


def utc_now() -> datetime:
    """The default clock: UTC, truncated to milliseconds (the precision events carry)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def iso_ms(ts: datetime) -> str:
    """An instant as every row, file and report writes it: UTC, milliseconds, ``Z``
    (``2026-05-04T09:00:00.000Z``). A naive datetime is read as UTC."""
    ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
