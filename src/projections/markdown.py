"""Daily and audit Markdown (K1-K2, K6-K7, K10-K11, D7): two-line bullets, safe by construction.

A bullet is the text on one line, then an indented ``<!--mem ...-->`` (or ``<!--audit ...-->``)
comment whose values are percent-encoded. Text is HTML-escaped (``&``, ``<``, ``>``) and
stripped of control and bidi-override characters, so no memory can open, close or forge a
comment or reorder what a reader sees. A file is a function of its day's rows only.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

from memory_es.text import UNSAFE_CHARS

# C0/C1 controls (tab and newline are whitespace and already collapsed), bidi embeddings,
# overrides and isolates (DESIGN 9.11).
_UNSAFE = re.compile(f"[\t{UNSAFE_CHARS}]")  # a line's tab goes too
_PCT_SAFE = "-._~:@"


def safe_text(text: str) -> str:
    """One display line: whitespace collapsed, unsafe characters replaced, HTML-escaped."""
    line = " ".join(text.split())
    line = _UNSAFE.sub("\ufffd", line)
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PCT_PLAIN = re.compile(r"[A-Za-z0-9._~:@-]*")


def pct(value: str) -> str:
    """Percent-encode a metadata value: the result holds no space, quote, '<', '>' or '='."""
    if _PCT_PLAIN.fullmatch(value):  # ids, instants and slugs: nothing to encode
        return value
    return urllib.parse.quote(value, safe=_PCT_SAFE)


def _bullet_text(text: str) -> str:
    line = safe_text(text)
    return f" {line}" if line else ""


def _comment(tag: str, pairs: Sequence[tuple[str, str | None]]) -> str:
    body = " ".join(f"{k}={pct(v)}" for k, v in pairs if v is not None)
    return f"<!--{tag} {body}-->"


def render_daily(day: str, rows: Sequence[tuple[Any, ...]]) -> bytes:
    """``daily/DAY.md`` from rows (id, kind, text, recorded_at, status, source_session, labels,
    scope, source, superseded_by, about, replaceable, valid_from, valid_to, due_at, insight);
    the curated fields, the terms and the marker are None for uncurated observations, whose
    bullets therefore keep their bytes. ``source_session`` stays last (K2); ``due=`` is the
    reference's key (K14)."""
    return "".join([f"# {day}\n", *map(_daily_bullet, map(tuple, rows))]).encode("utf-8")


@functools.lru_cache(maxsize=16_384)
def _daily_bullet(row: tuple[Any, ...]) -> str:
    """One bullet, a pure function of its row: a day rewritten after one more line (Remember,
    J1) renders only that line; every other bullet is the one it rendered before."""
    (memory_id, kind, text, recorded_at, status, source_session, labels, scope, source,
     superseded_by, about, replaceable, valid_from, valid_to, due_at, insight) = row
    return f"\n-{_bullet_text(text)}\n  " + _comment("mem", (
        ("id", memory_id), ("type", kind), ("status", status), ("recorded", recorded_at),
        ("labels", labels or None), ("scope", scope), ("source", source),
        ("about", about), ("replaceable", "true" if replaceable else None),
        ("valid_from", valid_from), ("valid_to", valid_to), ("due", due_at),
        ("insight", "true" if insight else None),
        ("superseded_by", superseded_by), ("source_session", source_session),
    )) + "\n"


def forget_rendered() -> None:
    """Drop every cached bullet (they hold memory text): a forget leaves none in memory."""
    _daily_bullet.cache_clear()


def render_audit(day: str, rows: Sequence[tuple[Any, ...]]) -> bytes:
    """``audit/DAY.md``: the compact host summary of each admitted BuJo turn (D7, A13)."""
    out = [f"# {day} (audit: outside recall)\n"]
    for run_hash, summary, recorded_at, trigger, speaker_kind, source_label, session in rows:
        out.append(f"\n-{_bullet_text(summary)}\n  " + _comment("audit", (
            ("intake", run_hash), ("recorded", recorded_at), ("trigger", trigger),
            ("speaker", speaker_kind), ("source", source_label), ("source_session", session),
        )) + "\n")
    return "".join(out).encode("utf-8")


_META = re.compile(r"^  <!--mem (?P<body>[^\n]*?)-->$", re.MULTILINE)


def read_provenance(data: bytes) -> dict[str, str | None]:
    """id -> source_session from a daily file's metadata (None when absent: K12).

    Health uses this to compare Markdown provenance with the index (N4). Malformed or
    duplicated metadata reads as unknown (K7).
    """
    found: dict[str, str | None] = {}
    for match in _META.finditer(data.decode("utf-8", "replace")):
        fields: dict[str, str] = {}
        malformed = False
        for item in match.group("body").split(" "):
            key, sep, value = item.partition("=")
            if not sep or key in fields:
                malformed = True
                continue
            fields[key] = urllib.parse.unquote(value)
        memory_id = fields.get("id")
        if memory_id is None:
            continue
        session = "unknown" if malformed else fields.get("source_session")
        found[memory_id] = "unknown" if memory_id in found else session
    return found
