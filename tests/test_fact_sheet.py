"""Issue 15 item 5: the explicit fact sheet (G28, M23, G16 on the sheet).

The rules are checked on an in-memory index whose rows are written by hand (validity ends and
``other:`` keys cannot come from capture: its fact keys are lowercase words); the wiring
through a real BuJo capture store (a superseded value stays on the sheet as history) after.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np

from helpers_capture import (
    entity,
    extraction,
    memory,
    open_capture,
    reconcile,
    review,
    script,
    turn,
)
from memory_es.recall.explicit import Lookup, deliberate
from memory_es.recall.rank.render import CONFLICTING_NOTE
from memory_es.recall.rank.score import Candidate, Scored
from memory_es.recall.sections.card import person_card
from memory_es.recall.sections.factsheet import fact_sheet, key_text, value_text
from memory_es.recall.sections.result import RecallResult
from memory_es.vectors.matrix import VectorMatrix
from projections.derived import IN_MEMORY
from projections.sqlite_index import IndexProjection

NOW = datetime(2026, 5, 10, 12, 0, tzinfo=UTC)
MORGAN = "4d" * 32  # a person node's id (any 64 hex digits)


class Index:
    """An in-memory index with the projection's schema; Morgan is a person in it."""

    def __init__(self) -> None:
        self.conn: apsw.Connection = IndexProjection(IN_MEMORY, create=True).conn
        self.conn.execute("INSERT INTO entities VALUES (1, ?, 'Morgan', 'person')", (MORGAN,))
        self.n = 0

    def fact(self, key: str, value: str, *, source: str = "user", status: str = "open",
             superseded_by: str | None = None, valid_from: str | None = None,
             valid_to: str | None = None, due_at: str | None = None,
             kind: str = "note") -> str:
        self.n += 1
        mid = f"{self.n:064x}"
        self.conn.execute("INSERT INTO memories VALUES (?, ?, ?, ?, '2026-05-01', "
                          "'2026-05-01T09:00:00.000Z', ?, ?, NULL, NULL, 'bujo')",
                          (self.n, mid, kind, f"Morgan {key} {value}", status, source))
        self.conn.execute("INSERT INTO memory_meta VALUES (?, ?, 'fact', 'agent', 0.8, 0, ?, "
                          "?, ?, ?, ?)", (self.n, mid, mid, superseded_by, MORGAN, key, value))
        if valid_from or valid_to or due_at:
            self.conn.execute("INSERT INTO memory_terms VALUES (?, ?, NULL, 0, ?, ?, ?, 0)",
                              (self.n, mid, valid_from, valid_to, due_at))
        return mid

    def line(self, text: str) -> str:
        """A plain line without a fact."""
        self.n += 1
        mid = f"{self.n:064x}"
        self.conn.execute("INSERT INTO memories VALUES (?, ?, 'note', ?, '2026-05-01', "
                          "'2026-05-01T09:00:00.000Z', 'open', 'user', NULL, NULL, 'bujo')",
                          (self.n, mid, text))
        return mid


# --------------------------------------------------------------------------------------------
# G28: keys without the other: namespace, values as text, on the sheet and the card alike


def test_g28_keys_drop_other_namespace_and_values_render_as_text() -> None:
    assert key_text("other:home_town") == "home town" == key_text("home_town")
    assert value_text('"Maple Harbor"') == "Maple Harbor"
    assert value_text('["tea", "coffee"]') == "tea, coffee"
    assert value_text('{"city": "Lyon", "other:zip_code": 69001}') == "city: Lyon; zip code: 69001"
    assert value_text("1.50") == "1.50" and value_text("[not json") == "[not json"
    index = Index()
    index.fact("other:home_town", '"Maple Harbor"')
    index.fact("pets", '["Rex", "Tom"]')
    index.fact("other:birth_date", '"1990-09-10"')
    sheet = fact_sheet(index.conn, MORGAN, "Morgan", now=NOW, tz=UTC)
    assert sheet.text(UTC).splitlines() == [
        "Fact sheet: Morgan",
        "- birth date: 1990-09-10 (age 35; you said, recorded 2026-05-01)",
        "- home town: Maple Harbor (you said, recorded 2026-05-01)",
        "- pets: Rex, Tom (you said, recorded 2026-05-01)"]
    assert sheet.to_json()["rows"][0] == {
        "id": f"{3:064x}", "key": "birth date", "value": "1990-09-10", "age": 35,
        "attribution": "you said", "createdAt": "2026-05-01T09:00:00.000Z",
        "currentness": "current", "history": False}
    card = person_card(index.conn, "Tell me about Morgan", now=NOW, tz=UTC, budget_bytes=2500)
    assert "- home town: Maple Harbor (you said, recorded 2026-05-01)" in card
    assert "- pets: Rex, Tom (you said" in card
    assert "- birth date: 1990-09-10 (age 35; you said, recorded 2026-05-01)" in card
    assert "other:" not in card and '"' not in card and "[" not in card


# --------------------------------------------------------------------------------------------
# M23: currentness combines the label's validity with the source note's; history stays


def test_m23_row_currentness_combines_label_validity_and_source_note() -> None:
    index = Index()
    live = index.fact("employer", "Acme")
    index.fact("home_town", "Oslo", status="superseded", superseded_by=live)
    index.fact("team", "Blue", superseded_by=live)  # the flag alone makes it history
    expired = index.fact("role", "Lead", valid_to="2026-05-09")  # ended yesterday
    index.fact("desk", "B4", due_at="2026-05-01T10:00:00+02:00", kind="event")  # passed
    index.fact("visa", "B1", due_at="2026-05-02")  # a note's due date is a deadline (G14)
    index.fact("office", "Lyon", valid_from="2026-06-01")  # not started yet
    index.fact("city", "Rome", valid_to="2026-05-10")  # ends today: still current (G15)
    index.fact("nick", "Mo", status="dropped")  # terminal: never on the sheet (G22)
    index.fact("age_guess", "40", source="assistant")  # not user-stated: not card data
    sheet = fact_sheet(index.conn, MORGAN, "Morgan", now=NOW, tz=UTC)
    rows = {(r.key, r.currentness) for r in sheet.rows}
    assert rows == {("employer", "current"), ("city", "current"), ("visa", "current"),
                    ("home town", "superseded"), ("team", "superseded"), ("role", "ended"),
                    ("desk", "ended"), ("office", "ended")}
    assert [r.currentness for r in sheet.rows][:3] == ["current"] * 3  # current first
    # under memory.recall.intentExpiry a note's due date ends it too (M25)
    expiring = fact_sheet(index.conn, MORGAN, "Morgan", now=NOW, tz=UTC, note_due_ends=True)
    assert ("visa", "ended") in {(r.key, r.currentness) for r in expiring.rows}
    lines = sheet.text(UTC).splitlines()
    assert "- role: Lead (history: ended 2026-05-09; you said, recorded 2026-05-01)" in lines
    assert "- home town: Oslo (history: superseded; you said, recorded 2026-05-01)" in lines
    assert not sheet.conflicting  # history values never conflict with current ones
    # a passed end is judged, never written: the stored status stays open
    assert index.conn.execute("SELECT status FROM memories WHERE id = ?",
                              (expired,)).fetchone()[0] == "open"
    # the automatic card shows the current rows only
    card = person_card(index.conn, "Morgan?", now=NOW, tz=UTC, budget_bytes=2500)
    assert "Acme" in card and "Oslo" not in card


# --------------------------------------------------------------------------------------------
# G16 on the sheet: conflicting current values set evidence "conflicting"


def deliberate_result(index: Index, query: str) -> RecallResult:
    """The sheet's effect alone: the lookup holds one unrelated, strong, fact-free hit."""
    text = "The dentist is on Elm Street"
    found = index.conn.execute("SELECT id FROM memories WHERE text = ?", (text,)).fetchone()
    unrelated = Scored(candidate=Candidate(id=found[0] if found else index.line(text),
                                           text=text, status="open", created_at=NOW),
                       score=0.9, semantic=0.9, anchor=0.0, rrf=0.0, salience=0.0,
                       lexical=False)
    return deliberate(index.conn, Lookup(query, np.ones(4), (unrelated,)), now=NOW,
                      matrix=VectorMatrix(4), tz=UTC)


def test_g16_fact_sheet_conflict_sets_evidence_conflicting() -> None:
    index = Index()
    index.fact("employer", "Acme")
    index.fact("home_town", "Oslo")
    calm = deliberate_result(index, "Where does Morgan work?")
    assert calm.recall.evidence is None and calm.recall.notes == ()
    index.fact("employer", "Globex", source="document")
    torn = deliberate_result(index, "Where does Morgan work?")
    assert torn.recall.evidence == "conflicting" and torn.to_json()["evidence"] == "conflicting"
    assert torn.text.startswith(CONFLICTING_NOTE)
    sheet = torn.fact_sheets[0]
    assert sheet.conflicting and [r.value for r in sheet.rows if r.conflicting] == [
        "Acme", "Globex"]
    assert torn.to_json()["factSheets"][0]["conflicting"] is True
    # no hit at all: a conflicting sheet is still the result's evidence
    bare = deliberate(index.conn, Lookup("Morgan", np.ones(4), ()), now=NOW,
                      matrix=VectorMatrix(4), tz=UTC)
    assert bare.recall.hits == () and bare.recall.notes == (CONFLICTING_NOTE,)
    # a query that names nobody has no sheet, so no sheet conflict
    nobody = deliberate_result(index, "Where does the dentist work?")
    assert nobody.fact_sheets == () and nobody.recall.evidence is None


# --------------------------------------------------------------------------------------------
# The wiring: a superseded value stays on the explicit sheet as history, leaves the card


def test_m23_store_sheet_keeps_superseded_value_as_history(tmp_path: Path) -> None:
    root = tmp_path / "r"
    people = [entity("m", "Morgan")]
    store, _ = open_capture(root, script(
        ("extract", "r1", extraction([memory("Morgan grew up in Maple Harbor", entities=["m"],
                                             fact=("m", "home_town", "Maple Harbor"))],
                                     people)),
        ("review", "r1", review("keep")),
        ("extract", "r2", extraction([memory("Morgan moved her home town to Lyon",
                                             entities=["m"], fact=("m", "home_town", "Lyon"))],
                                     people)),
        ("review", "r2", review("keep")),
        ("reconcile", "r2", reconcile({"action": "SUPERSEDE", "target": "m1",
                                       "text": "Morgan's home town is Lyon"}))))
    with store:
        store.persist_completed_turn(turn("r1", "x"))
        store.drain()
        store.persist_completed_turn(turn("r2", "y"))
        store.drain()
        result = store.recall("What is new with Morgan lately?")
        card = store.auto_recall("What is new with Morgan lately?")
    (sheet,) = result.fact_sheets
    assert [(r.value, r.currentness) for r in sheet.rows] == [
        ("Lyon", "current"), ("Maple Harbor", "superseded")]
    assert "Fact sheet: Morgan\n- home town: Lyon (you said, recorded 2026-05-04)\n" \
           "- home town: Maple Harbor (history: superseded; you said, recorded 2026-05-04)" \
           in result.text
    assert "Lyon" in card and "Maple Harbor" not in card
    assert result.recall.evidence != "conflicting"
