"""Lexical evidence from the index's own statistics (issue 12 item 4; G10, G32).

Function words weigh what the index says they weigh (nearly nothing: every record has them),
in any language and with no word list; a young index leans on Zipf's law of abbreviation;
Porter stemming meets ``appointments`` with ``appointment``; and the hybrid fusion lets a rare,
exact query word outrank a middling cosine, while ``scoring: "reference"`` keeps the reference's
embedding-first formula exactly.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.recall.rank.score import NOMIC_V15, Candidate, score_all
from memory_es.recall.retrieve import lexical
from memory_es.recall.retrieve.lexical import LexicalEvidence, index_tokenizer
from projections.index_schema import FTS_DDL


def index_of(texts: list[str]) -> apsw.Connection:
    """The two tables lexical evidence reads, as a generation declares them."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute(FTS_DDL)
    for n, text in enumerate(texts, start=1):
        conn.execute("INSERT INTO memories VALUES (?, ?)", (n, text))
        conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (n, text))
    return conn


def lite(tmp_path: Path, texts: list[str]) -> MemoryStore:
    store = MemoryStore.open(tmp_path / "root", parse_config({"mode": "lite"}),
                             background=False)
    for n, text in enumerate(texts):
        store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                   answer=text))
    store.drain()
    return store


def test_lite_dentist_example_ranks_the_dentist_first(tmp_path: Path) -> None:
    """The issue's own case: "is" and "the" must not carry the WiFi line past the dentist."""
    texts = ["Booked the dentist for 2026-12-09.", "Dana owns the quarterly summary.",
             "The office WiFi password is hunter2."]
    with lite(tmp_path, texts) as store:
        hits = store.recall("when is the dentist?").recall.hits
        assert hits[0].text == "Booked the dentist for 2026-12-09."


def test_function_words_weigh_what_the_index_says_in_any_language() -> None:
    """German, with no German word list anywhere: ``der``/``ist`` occur in every record and
    weigh almost nothing; ``Zahnarzt`` occurs once and carries the query."""
    texts = [f"Der Termin {n} ist im Büro der Firma." for n in range(30)]
    texts.append("Der Zahnarzt ist am Dienstag.")
    conn = index_of(texts)
    evidence = LexicalEvidence.for_query(conn, "Wann ist der Zahnarzt?")
    weights = dict(zip(evidence.terms, evidence.weights, strict=True))
    assert weights["zahnarzt"] > 10 * weights["der"]
    assert weights["zahnarzt"] > 10 * weights["ist"]
    assert evidence.coverage("Der Zahnarzt ist am Dienstag.") > 0.6
    assert evidence.coverage("Der Termin 3 ist im Büro der Firma.") < 0.15


def test_stemming_and_diacritics_follow_the_index_tokenizer() -> None:
    conn = index_of(["Two dentist appointments next week.", "Café Zoë opens at nine."])
    tokens = index_tokenizer(conn)
    assert tokens("appointments") == tokens("appointment") == ["appoint"]
    evidence = LexicalEvidence.for_query(conn, "appointment at the cafe")
    assert evidence.coverage("Two dentist appointments next week.") > 0
    assert evidence.coverage("Café Zoë opens at nine.") > 0


def test_a_term_no_record_holds_weighs_most() -> None:
    """A near-miss id (PR-1235 when PR-1234 is stored) lowers the evidence of every record."""
    conn = index_of([f"Reviewed PR-12{n:02d} for the login flow." for n in range(34, 60)])
    evidence = LexicalEvidence.for_query(conn, "PR-1299 login")
    weights = dict(zip(evidence.terms, evidence.weights, strict=True))
    assert weights["1299"] == max(weights.values())
    assert evidence.coverage("Reviewed PR-1234 for the login flow.") < 0.6


def test_hybrid_lets_a_strong_lexical_match_outrank_a_middling_cosine() -> None:
    exact = Candidate(id="exact", text="KV-5531 renewal", cosine=0.30, evidence=1.0)
    vague = Candidate(id="vague", text="contract things", cosine=0.55, evidence=0.0)
    hybrid = {s.candidate.id: s.score for s in score_all("KV-5531 renewal", [exact, vague],
                                                         NOMIC_V15, "hybrid")}
    assert hybrid["exact"] > hybrid["vague"]
    reference = {s.candidate.id: s.score for s in score_all(
        "KV-5531 renewal", [exact, vague], NOMIC_V15, "reference")}
    assert reference["vague"] > reference["exact"] - 0.15  # cosine-first: the anchor only
    assert all(s.evidence == 0.0 for s in score_all("x", [exact], NOMIC_V15, "reference"))


def test_hybrid_keeps_a_strong_cosine_on_the_floor_scale() -> None:
    """A paraphrase (no shared word) keeps its cosine: the reference's floors still mean
    what they meant; the joined part never exceeds 1."""
    para = Candidate(id="p", text="teeth", cosine=0.80, evidence=0.0)
    both = Candidate(id="b", text="teeth", cosine=0.99, evidence=1.0)
    scored = {s.candidate.id: s for s in score_all("dentist", [para, both], NOMIC_V15,
                                                   "hybrid")}
    assert scored["p"].score == pytest.approx(0.80)
    assert scored["b"].score - scored["b"].rrf - scored["b"].anchor <= 1.0


def test_reference_scoring_is_selectable_and_exact(tmp_path: Path) -> None:
    texts = ["Booked the dentist for 2026-12-09.", "The office WiFi password is hunter2."]
    config = parse_config({"mode": "lite", "recall": {"scoring": "reference"}})
    with MemoryStore.open(tmp_path / "root", config, background=False) as store:
        for n, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                       answer=text))
        store.drain()
        hits = store.recall("dentist").recall.hits
        # reference G10: the share of query words present, unweighted: exactly 1.0 + RRF
        assert hits[0].score == pytest.approx(1.0 + 0.01 / 61, abs=1e-9)
    with pytest.raises(Exception, match="scoring"):
        parse_config({"mode": "lite", "recall": {"scoring": "bm25"}})


def test_words_most_records_hold_are_not_looked_up_in_a_large_index() -> None:
    """A word more than half the records hold ranks nothing and costs the bm25 query its
    largest doclist: past 1,000 records it is left out of the lookup (the rarest word always
    stays), and evidence still counts it at its (small) weight."""
    texts = [f"The note {n} is about the garden." for n in range(1200)]
    texts.append("The dentist is on Tuesday.")
    conn = index_of(texts)
    evidence = LexicalEvidence.for_query(conn, "when is the dentist?")
    # "when" is in no record: it matches nothing and is not looked up either
    assert evidence.retrieval_words("when is the dentist?") == ["dentist?"]
    assert evidence.retrieval_words("the is") == ["the"]  # all common: the first rarest
    small = LexicalEvidence.for_query(index_of(texts[:20]), "when is the dentist?")
    assert small.retrieval_words("when is the dentist?") == ["when", "is", "the", "dentist?"]


def test_the_bm25_lookup_takes_rarest_words_within_a_posting_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16: the lookup's cost is bounded by the postings it reads, whatever the index
    size. Words go in rarest first until the budget would be passed; the rarest always goes
    in, even alone over budget; the query's word order is kept; a word no record holds
    ("on") matches nothing and is left out."""
    texts = [f"Garden note {n} about roses." for n in range(1100)]
    texts += [f"Tuesday dentist visit {n}." for n in range(30)]
    texts += [f"Tuesday shopping {n}." for n in range(300)]
    conn = index_of(texts)
    evidence = LexicalEvidence.for_query(conn, "garden roses on tuesday dentist")
    # roses/garden: 1100 of 1430 (over half); tuesday 330; dentist 30
    monkeypatch.setattr(lexical, "POSTING_BUDGET", 400)
    assert evidence.retrieval_words("garden roses on tuesday dentist") == ["tuesday", "dentist"]
    monkeypatch.setattr(lexical, "POSTING_BUDGET", 100)
    assert evidence.retrieval_words("garden roses on tuesday dentist") == ["dentist"]
    monkeypatch.setattr(lexical, "POSTING_BUDGET", 10)
    assert evidence.retrieval_words("garden roses on tuesday dentist") == ["dentist"]


def test_kept_document_frequencies_are_always_the_index_s_own(tmp_path: Path) -> None:
    """Counts are kept per connection (fts5vocab reads a whole doclist to count one term), but
    a write by the same connection or by another one is seen at once: a kept count is never
    stale."""
    path = tmp_path / "index.db"
    writer = apsw.Connection(str(path))
    writer.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    writer.execute(FTS_DDL)
    reader = apsw.Connection(str(path))

    def add(conn: apsw.Connection, rowid: int, text: str) -> None:
        conn.execute("INSERT INTO memories VALUES (?, ?)", (rowid, text))
        conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (rowid, text))

    add(writer, 1, "the dentist on Tuesday")
    add(writer, 2, "the plumber on Friday")
    for conn in (writer, reader):
        assert lexical.document_frequencies(conn, ["the", "dentist", "zebra"]) == {
            "the": 2, "dentist": 1}
    add(writer, 3, "the dentist again")  # the same connection's own write
    assert lexical.document_frequencies(writer, ["the", "dentist"]) == {"the": 3, "dentist": 2}
    assert lexical.document_frequencies(reader, ["the", "dentist"]) == {"the": 3, "dentist": 2}
    add(reader, 4, "a zebra")  # another connection's write
    assert lexical.document_frequencies(writer, ["zebra", "the"]) == {"zebra": 1, "the": 3}
