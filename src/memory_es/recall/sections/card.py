"""The person card of the automatic context (H20).

When the owner's message names a known person exactly (any language, any case: "¿Dónde trabaja
Morgan?") or writes ``person:<id>``, the card lists that person's current structured facts that
the user stated or a document gave, each with its recording date and attribution. Keys are
never filtered by the question's wording; two or more current distinct values for one key show
as ``conflicting values — ask``; a birth date adds the age. First-person wording ("my", "I") never
selects a card. Read-only and deterministic: ``now`` is the caller's instant.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, tzinfo
from typing import Any

import apsw

from memory_es.ids import name_key
from memory_es.recall.rank.policy import excluded_ids
from memory_es.recall.sections.factsheet import bare_key, key_text, value_text
from memory_es.text import fold
from memory_es.vocabulary import HISTORY_STATUSES, sql_list
from projections.search import entities_by_name

CARD_MAX_PEOPLE = 2
CARD_MAX_LINES = 8  # per person (our bound)
NAME_MAX_WORDS = 4  # the longest person name matched, in words
BIRTH_KEYS = frozenset({"birth_date", "birthday", "date_of_birth", "born"})
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WORDS = re.compile(r"\w+")
_PERSON_REF = re.compile(r"\bperson:([0-9a-f]{8,64})\b")
ATTRIBUTION = {"user": "you said", "document": "from a document"}


def _name_grams(text: str) -> set[str]:
    """Every run of 1-4 words, split two ways (word characters; whitespace without the
    surrounding punctuation), so "Morgan?" and "O'Neil," both match their names."""
    folded = fold(text)
    grams: set[str] = set()
    for words in (_WORDS.findall(folded),
                  [w.strip(".,;:!?¿¡\"()[]{}«»“”'’") for w in folded.split()]):
        words = [w for w in words if w]
        for n in range(1, NAME_MAX_WORDS + 1):
            grams.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return grams


def _people(conn: apsw.Connection) -> dict[tuple[str, str], str]:
    """The stored people by folded name, read once per state of the entities table (a person
    card is looked for on every automatic recall). Rows are journal positions, so any insert
    raises the highest and any delete alone lowers the count: together with the generation's
    file they name one state."""
    state: Any = conn.execute("SELECT max(rowid), count(*) FROM entities").fetchone()
    key = (id(conn), conn.filename, state[0], state[1])
    cached = _PEOPLE_CACHE.get(key)
    if cached is None:
        if len(_PEOPLE_CACHE) >= 8:
            _PEOPLE_CACHE.clear()
        cached = _PEOPLE_CACHE[key] = entities_by_name(conn, "person")
    return cached


_PEOPLE_CACHE: dict[tuple[int, str, Any, Any], dict[tuple[str, str], str]] = {}


def mentioned_people(conn: apsw.Connection, text: str) -> list[tuple[str, str]]:
    """(entity id, name) of the people the text names exactly, in graph order."""
    found: list[tuple[int, str, str]] = []
    try:
        people = _people(conn)
        ids = sorted({people[k] for g in _name_grams(text)
                      if (k := name_key(g, "person")) in people})
        if ids:
            found += [(r[0], r[1], r[2]) for r in conn.execute(
                f"SELECT rowid, id, name FROM entities WHERE id IN ({','.join('?' * len(ids))})",
                ids)]
        for prefix in _PERSON_REF.findall(text):
            rows = list(conn.execute("SELECT rowid, id, name FROM entities WHERE type = "
                                     "'person' AND id >= ? AND id < ? LIMIT 2",
                                     (prefix, prefix + "g")))
            if len(rows) == 1:  # an ambiguous prefix selects nobody
                found.append((rows[0][0], rows[0][1], rows[0][2]))
    except apsw.SQLError:  # a generation from before the graph
        return []
    seen: set[str] = set()
    out = []
    for _, entity_id, name in sorted(found):
        if entity_id not in seen:
            seen.add(entity_id)
            out.append((entity_id, name))
    return out[:CARD_MAX_PEOPLE]


def _age(born: date, today: date) -> int:
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))


def _local_day(recorded_at: str, tz: tzinfo) -> str:
    return datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).astimezone(tz).date() \
        .isoformat()


def card_lines(conn: apsw.Connection, entity_id: str, *, now: datetime,
               tz: tzinfo = UTC, intent_expiry: bool = False) -> list[str]:
    """One line per fact key: the current value with attribution and date, the age for a
    birth date, or ``conflicting values — ask``. ``intent_expiry``: dated or closed source
    lines are left out (M24)."""
    rows: Sequence[Any] = list(conn.execute(
        "SELECT mm.fact_key, mm.fact_value, m.source, m.recorded_at, m.id, m.status "
        "FROM memory_meta mm "
        "JOIN memories m ON m.id = mm.id WHERE mm.fact_subject = ? AND mm.fact_key IS NOT NULL "
        f"AND m.status NOT IN {sql_list(HISTORY_STATUSES)} AND m.source IN ('user', 'document') "
        "ORDER BY m.rowid", (entity_id,)))
    if intent_expiry:
        out = excluded_ids(conn, {r[4]: r[5] for r in rows})
        rows = [r for r in rows if r[4] not in out]
    by_key: dict[str, list[tuple[str, str, str]]] = {}
    for key, value, source, recorded_at, _, _ in rows:
        by_key.setdefault(key, []).append((value, source, recorded_at))
    lines: list[str] = []
    for key, facts in by_key.items():
        shown = key_text(key)  # G28: no ``other:`` namespace, words not snake case
        values = {fold(value_text(v)) for v, _, _ in facts}
        if len(values) > 1:
            lines.append(f"- {shown}: conflicting values — ask")
            continue
        raw, source, recorded_at = facts[-1]
        value = value_text(raw)  # G28: text, not JSON
        notes = [f"{ATTRIBUTION[source]}, recorded {_local_day(recorded_at, tz)}"]
        born = _ISO_DATE.fullmatch(value.strip())
        if bare_key(key) in BIRTH_KEYS and born:
            try:
                birth = date(int(born[1]), int(born[2]), int(born[3]))
            except ValueError:
                birth = None
            if birth is not None:
                notes.insert(0, f"age {_age(birth, now.astimezone(tz).date())}")
        lines.append(f"- {shown}: {value} ({'; '.join(notes)})")
    return lines[:CARD_MAX_LINES]


def person_card(conn: apsw.Connection, text: str, *, now: datetime, tz: tzinfo = UTC,
                budget_bytes: int, intent_expiry: bool = False) -> str:
    """The card(s) for the people ``text`` names, within ``budget_bytes`` (lines that do not
    fit are left out, never cut); "" when nobody is named or nothing is known."""
    parts: list[str] = []
    used = 0
    for entity_id, name in mentioned_people(conn, text):
        heading = f"## Person: {name} (from memory; verify before relying)"
        lines = card_lines(conn, entity_id, now=now, tz=tz, intent_expiry=intent_expiry)
        if not lines:
            continue
        cost = len(heading.encode("utf-8")) + 2
        chosen: list[str] = []
        for line in lines:
            size = len(line.encode("utf-8")) + 1
            if used + cost + size <= budget_bytes:
                chosen.append(line)
                cost += size
        if chosen:
            used += cost
            parts.append("\n".join([heading, "", *chosen]))
    return "\n\n".join(parts)
