"""The owner profile (M1-M9, C11): what the owner said about themselves and their agent-scope
preferences, as whole entries, within 600 code points and ``memory.maxBytes``.

The profile is a pure read of the label projection the index already holds (``memory_meta``:
labels, scope, fact subject and key; ``memories``: status, kind, source, recording instant;
``memory_terms``: validity and due dates). No model call, no file, no new store or field (M7):
it is recomputed from the index on every call, so it can never drift from the journal.

Who is "the owner" is decided the way capture decides it (``capture.rules``): a user line of a
host-verified owner turn carries the coarse owner ``fact`` label and scope ``agent`` (E40), and
only user lines keep a ``preference`` label. So an entry is a line that is

- an owner fact (label ``fact``, source ``user``, scope ``agent``) or an agent-scope
  preference (label ``preference``, scope ``agent``);
- a current, open note: status ``open``, kind ``note`` (an ``event`` is an episode), never
  superseded, with no past validity end (judged in the host's zone: a date-only end holds
  through the host's local day, an instant until it passes, M5) and no validity start still
  ahead;
- not an intention: a dated one (any ``due_at``) or a task turned note (``from_task``: the
  host never gives those the owner fact label, A19, so a ``fact`` label there is the
  model's), and not one side of a conflict (two or more current
  distinct values for one fact subject and key, whoever stated them).

Entries are ordered by recording date (the host's local day), newest first, then by memory id
(M4), and kept whole: one that does not fit what is left of the budget is left out, never cut,
and a shorter older one may still fit (M6).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from typing import Any, Final, Literal

import apsw

from memory_es.indexread import optional_rows
from memory_es.recall.rank.select import has_ended, host_zone
from memory_es.text import fold
from memory_es.validity import parse_validity
from memory_es.vocabulary import HISTORY_STATUSES, sql_list

ProfileLabel = Literal["fact", "preference"]

# The reference's automatic headings say what the section is and that it is unverified (H1).
PROFILE_HEADING: Final = "## Owner profile (what you told me about yourself; verify before relying)"
PROFILE_MAX_CODE_POINTS: Final = 600  # M6: the whole payload, heading included


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One whole entry of the profile."""

    id: str
    label: ProfileLabel
    text: str
    recorded_on: date  # the recording instant's day in the host's zone

    def line(self) -> str:
        return f"- {self.label}: {self.text} (recorded {self.recorded_on.isoformat()})"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "text": self.text,
                "recorded": self.recorded_on.isoformat()}


@dataclass(frozen=True, slots=True)
class Profile:
    """The profile as the automatic context would carry it: ``text`` is "" when nothing
    qualifies (M7); ``left_out`` counts qualifying entries that did not fit (M6)."""

    entries: tuple[ProfileEntry, ...]
    left_out: int = 0
    enabled: bool = False  # memory.profile.enabled of the config it was read under (M1)

    @property
    def text(self) -> str:
        return render_profile(self.entries)

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "text": self.text, "left_out": self.left_out,
                "entries": [e.to_json() for e in self.entries]}


def render_profile(entries: tuple[ProfileEntry, ...] | list[ProfileEntry]) -> str:
    """Heading, blank line, one line per entry; "" without entries (a heading alone is not a
    profile)."""
    if not entries:
        return ""
    return "\n".join([PROFILE_HEADING, "", *(e.line() for e in entries)])


def _aware(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _not_started(start: date | datetime, now: datetime, tz: tzinfo) -> bool:
    if isinstance(start, datetime):
        return start > now
    return start > now.astimezone(tz).date()


def _current_values(conn: apsw.Connection, now: datetime, tz: tzinfo
                    ) -> dict[tuple[str, str], set[str]]:
    """(subject, key) -> the distinct folded values of every current structured fact."""
    values: dict[tuple[str, str], set[str]] = {}
    for subject, key, value, valid_to in optional_rows(
            conn, "SELECT COALESCE(mm.fact_subject, ''), mm.fact_key, mm.fact_value, "
                  "mt.valid_to FROM memory_meta mm JOIN memories m ON m.id = mm.id "
                  "LEFT JOIN memory_terms mt ON mt.id = mm.id WHERE mm.fact_key IS NOT NULL "
                  f"AND m.status NOT IN {sql_list(HISTORY_STATUSES)} "
                  "AND mm.superseded_by IS NULL", ()):
        end = parse_validity(valid_to)
        if end is not None and has_ended(end, now, tz):
            continue
        values.setdefault((subject, fold(key)), set()).add(fold(value or ""))
    return values


def profile_candidates(conn: apsw.Connection, *, now: datetime,
                       tz: tzinfo | None = None) -> list[ProfileEntry]:
    """Every qualifying entry (module docstring), newest recording day first, then id."""
    zone = host_zone(now, tz)
    conflicts = {k for k, v in _current_values(conn, now, zone).items() if len(v) > 1}
    entries: list[ProfileEntry] = []
    for (memory_id, text, recorded_at, source, labels, subject, key, valid_from, valid_to,
         due_at) in optional_rows(
            conn, "SELECT m.id, m.text, m.recorded_at, m.source, mm.labels, "
                  "COALESCE(mm.fact_subject, ''), mm.fact_key, mt.valid_from, mt.valid_to, "
                  "mt.due_at FROM memories m JOIN memory_meta mm ON mm.id = m.id "
                  "LEFT JOIN memory_terms mt ON mt.id = m.id WHERE m.status = 'open' "
                  "AND m.kind = 'note' AND mm.scope = 'agent' AND mm.superseded_by IS NULL "
                  "AND mm.from_task = 0",
            ()):
        kinds = set(labels.split(","))
        label: ProfileLabel | None = None
        if "preference" in kinds:
            label = "preference"
        elif "fact" in kinds and source == "user":
            label = "fact"
        if label is None or due_at is not None:  # not the owner's, or a dated intention
            continue
        end, start = parse_validity(valid_to), parse_validity(valid_from)
        if end is not None and has_ended(end, now, zone):
            continue
        if start is not None and _not_started(start, now, zone):
            continue
        if key is not None and (subject, fold(key)) in conflicts:
            continue
        day = _aware(recorded_at).astimezone(zone).date()
        entries.append(ProfileEntry(id=memory_id, label=label, text=text, recorded_on=day))
    entries.sort(key=lambda e: e.id)
    entries.sort(key=lambda e: e.recorded_on, reverse=True)  # stable: id within a day
    return entries


def fit_profile(entries: list[ProfileEntry], *, max_bytes: int | None = None
                ) -> tuple[tuple[ProfileEntry, ...], int]:
    """The entries that fit, whole and in order, within 600 code points and ``max_bytes``
    UTF-8 bytes for the whole rendered payload (M6), and how many were left out."""
    chosen: list[ProfileEntry] = []
    points = len(PROFILE_HEADING) + 1  # the heading and the blank line's newline
    size = len(PROFILE_HEADING.encode("utf-8")) + 1
    for entry in entries:
        line = entry.line()
        more_points, more_bytes = len(line) + 1, len(line.encode("utf-8")) + 1
        if points + more_points > PROFILE_MAX_CODE_POINTS:
            continue
        if max_bytes is not None and size + more_bytes > max_bytes:
            continue
        chosen.append(entry)
        points += more_points
        size += more_bytes
    return tuple(chosen), len(entries) - len(chosen)


def owner_profile(conn: apsw.Connection | None, *, now: datetime, tz: tzinfo | None = None,
                  max_bytes: int | None = None, enabled: bool = False) -> Profile:
    """The profile of the index behind ``conn`` (None: no index, no profile)."""
    if conn is None:
        return Profile(entries=(), enabled=enabled)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    chosen, left_out = fit_profile(profile_candidates(conn, now=now, tz=tz),
                                   max_bytes=max_bytes)
    return Profile(entries=chosen, left_out=left_out, enabled=enabled)
