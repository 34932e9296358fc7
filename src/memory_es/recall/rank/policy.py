"""The two BuJo-only read policies behind ``memory.recall.intentExpiry`` and
``memory.recall.recency`` (M24-M33). Both default off; each works without the other (M33) and
without ``memory.capture.intentLifecycle`` (M27). Pure reads: no marker, no field, no
migration, nothing written (M26).

intentExpiry (M24, M25) is conservative because nothing stored says which dated line is an
intention: a pending plan's ``due=`` cannot be told apart from a legacy one. So the automatic
context (similarity lines, labelled background, person card) leaves out **every** dated line
(any ``due_at``, even before it ends) and every done/dropped line. In deliberate MemoryRecall
(M25) a note's ``due_at`` then counts as an inclusive validity end, as an event's always does
(``select.structured_ends``: a date-only one current through the host's local day, an instant
through itself); a task's stays a deadline, closed statuses keep their prefix and supersession
is untouched.

recency (M28-M32) is a secondary ordering term for deliberate hybrid recall only: at most
0.02, halving every 30 days of the recording instant's age, for events without a fact or
preference label and for unlabelled notes. It only reorders the returned hits (after the
limit, so the delivered set and the access telemetry counted on it stay as they were) that
already qualify on their unchanged base score (floor and tail): it never rescues a hit, never
changes a returned score or the candidate pool, and leaves an original-query tail where it
was. The automatic context, the profile, guidance and MemoryJournal never call it (M32).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

import apsw

from memory_es.indexread import optional_rows
from memory_es.recall.rank.render import Hit
from memory_es.recall.rank.score import EPSILON, Calibration, Candidate
from memory_es.recall.rank.select import SelectMode

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig

CLOSED_STATUSES: Final = frozenset({"done", "dropped"})  # M24: closed, out of automatic reads
RECENCY_MAX: Final = 0.02  # M28: the term never exceeds this
RECENCY_HALF_LIFE_DAYS: Final = 30.0  # M28
RECENCY_BLOCKING_EVENT_LABELS: Final = frozenset({"fact", "preference"})  # M29
_SECONDS_PER_DAY: Final = 86_400.0


@dataclass(frozen=True, slots=True)
class ReadPolicy:
    """Which read policies are on. Built from a config by :meth:`of`, which turns both off
    outside BuJo (M33: Lite and Journal ignore them, whatever the validation allowed)."""

    intent_expiry: bool = False
    recency: bool = False

    @classmethod
    def of(cls, config: MemoryConfig) -> ReadPolicy:
        bujo = config.mode == "bujo"
        return cls(intent_expiry=bujo and config.recall.intent_expiry,
                   recency=bujo and config.recall.recency)


OFF: Final = ReadPolicy()


# --------------------------------------------------------------------------------------------
# intentExpiry (M24)


def automatic_excluded(status: str | None, dated: bool) -> bool:
    """M24: a dated line (any ``due_at``, even before it ends) or a done/dropped one never
    reaches the automatic context."""
    return dated or status in CLOSED_STATUSES


def automatic_pool(candidates: Iterable[Candidate], policy: ReadPolicy) -> list[Candidate]:
    """The automatic pool under ``policy``: unchanged when intentExpiry is off, else without
    dated or closed lines, before scoring and selection (like H21's exclusion)."""
    pool = list(candidates)
    if not policy.intent_expiry:
        return pool
    return [c for c in pool if not automatic_excluded(c.status, c.due_at is not None)]


def excluded_ids(conn: apsw.Connection, statuses: Mapping[str, str]) -> frozenset[str]:
    """Of ``statuses`` (id -> status), the ids intentExpiry keeps out of an automatic read
    (M24): closed, or with a stored ``due_at``. For reads that never built candidates (the
    person card)."""
    ids = list(statuses)
    if not ids:
        return frozenset()
    dated = {r[0] for r in optional_rows(
        conn, f"SELECT id FROM memory_terms WHERE due_at IS NOT NULL "
              f"AND id IN ({','.join('?' * len(ids))})", ids)}
    return frozenset(i for i, status in statuses.items()
                     if automatic_excluded(status, i in dated))


# --------------------------------------------------------------------------------------------
# recency (M28-M32)


def recency_eligible(kind: str | None, labels: Iterable[str], from_task: bool) -> bool:
    """M29: events without a fact or preference label, and notes without any label. Never a
    task (a ``from_task`` note, or a ``task`` kind), a fact, a preference or a labelled
    note."""
    if from_task or kind == "task":
        return False
    present = {label for label in labels if label}
    if kind == "event":
        return not present & RECENCY_BLOCKING_EVENT_LABELS
    if kind == "note":
        return not present
    return False  # an unknown kind earns nothing: conservative


def recency_term(recorded_at: datetime | None, now: datetime) -> float:
    """M28, M30: ``0.02 * 0.5 ** (age_days / 30)``; 0.0 for a missing, naive (invalid) or
    future recording instant."""
    if recorded_at is None or recorded_at.tzinfo is None or now.tzinfo is None:
        return 0.0
    age_days = (now - recorded_at).total_seconds() / _SECONDS_PER_DAY
    if age_days < 0:
        return 0.0
    return RECENCY_MAX * math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


def qualifies(score: float, best: float, calibration: Calibration) -> bool:
    """M31: the unchanged base score clears the floor and lies within the tail of the best;
    when the best itself is below the floor nothing qualifies (no hit is rescued)."""
    floor = calibration.recall_floor - EPSILON
    return best >= floor and score >= floor \
        and score >= best - calibration.recall_tail - EPSILON


def reorder(hits: Sequence[Hit], terms: Mapping[str, float],
            calibration: Calibration) -> tuple[Hit, ...]:
    """M28, M31: the qualified leading hits ordered by base score plus recency term (then
    their previous order); the rest, an original-query tail below the floor, stays in place.
    Scores and membership are unchanged."""
    if not hits:
        return tuple(hits)
    best = max(h.score for h in hits)
    head = 0
    while head < len(hits) and qualifies(hits[head].score, best, calibration):
        head += 1
    order = sorted(range(head), key=lambda i: (-(hits[i].score + terms.get(hits[i].id, 0.0)), i))
    return tuple([hits[i] for i in order] + list(hits[head:]))


def recency_terms(conn: apsw.Connection, hits: Sequence[Hit], *,
                  now: datetime) -> dict[str, float]:
    """id -> recency term for each eligible hit (M29, M30), from the index's labels and task
    origin (``memory_meta``; a line without a row there is an unlabelled note)."""
    ids = [h.id for h in hits]
    if not ids:
        return {}
    meta = {r[0]: (r[1], bool(r[2])) for r in optional_rows(
        conn, f"SELECT id, labels, from_task FROM memory_meta "
              f"WHERE id IN ({','.join('?' * len(ids))})", ids)}
    out: dict[str, float] = {}
    for h in hits:
        labels, from_task = meta.get(h.id, ("", False))
        if recency_eligible(h.type, labels.split(","), from_task):
            term = recency_term(h.created_at, now)
            if term > 0.0:
                out[h.id] = term
    return out


def apply_recency(conn: apsw.Connection, hits: Sequence[Hit], *, now: datetime,
                  calibration: Calibration, mode: SelectMode,
                  policy: ReadPolicy) -> tuple[Hit, ...]:
    """The returned deliberate hits (already cut to the limit) in recency order when the
    switch is on and the result is hybrid (``explicit`` or ``original-query``; never
    ``degraded`` lexical-only, M28); else as they were."""
    if not policy.recency or mode == "degraded" or len(hits) < 2:
        return tuple(hits)
    return reorder(hits, recency_terms(conn, hits, now=now), calibration)
