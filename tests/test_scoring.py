"""memory_es.recall scoring (anchors, score, select, render): recall scoring, explicit selection
and the automatic block.

SPEC G3-G33, H1-H15; DESIGN 9.4-9.8. Every expected score is computed by hand in a comment.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from memory_es.recall.rank.anchors import Anchors, extract_anchors
from memory_es.recall.rank.render import (
    AUTO_HEADING,
    BACKGROUND_HEADING,
    Hit,
    format_auto_line,
    format_line,
    format_recall,
    render_auto_block,
    render_background,
)
from memory_es.recall.rank.score import (
    MAX_CANDIDATES,
    NOMIC_V15,
    Calibration,
    Candidate,
    Fact,
    Scored,
    anchor_bonus,
    lexical_score,
    rrf,
    score,
    score_all,
)
from memory_es.recall.rank.select import (
    AUTO_BLOCK_BUDGET_BYTES,
    AUTO_LINE_TEXT_CAP_BYTES,
    AUTO_MAX_LINES,
    auto_select,
    background_select,
    currentness,
    kept_lines,
    owner_text_gate,
    select,
)

NOW = datetime(2026, 7, 10, 12, 0, tzinfo=UTC)
T0 = datetime(2026, 7, 6, 12, 0, tzinfo=UTC)


def cand(id: str = "a", text: str = "text", **kw: Any) -> Candidate:
    return Candidate(id=id, text=text, **kw)


def plain(id: str, cosine: float, text: str | None = None, **kw: Any) -> Scored:
    """A candidate whose score is exactly its cosine (no anchors, ranks or salience)."""
    return score(cand(id, text if text is not None else f"text {id}", cosine=cosine, **kw),
                 Anchors())


def ids(hits: tuple[Hit, ...]) -> list[str]:
    return [h.id for h in hits]


# ------------------------------------------------------------------------------------------
# Calibration (DESIGN 9.4)


def test_nomic_v15_calibration_numbers() -> None:
    assert Calibration(0.5, 0.65, 0.15, 0.62, 0.04) == NOMIC_V15
    assert (NOMIC_V15.no_evidence_cosine, NOMIC_V15.recall_floor, NOMIC_V15.recall_tail,
            NOMIC_V15.auto_floor, NOMIC_V15.auto_window) == (0.5, 0.65, 0.15, 0.62, 0.04)
    with pytest.raises(dataclasses.FrozenInstanceError):
        NOMIC_V15.recall_floor = 0.7  # type: ignore[misc]


# ------------------------------------------------------------------------------------------
# Semantic evidence (G3, G4, G10)


def test_G3_cosine_below_half_counts_as_no_evidence() -> None:
    # 0.49 < 0.5 -> semantic 0; nothing else -> 0.0
    assert score(cand(cosine=0.49), Anchors()).score == 0.0
    # 0.5 is evidence: 0.5 exactly
    assert score(cand(cosine=0.5), Anchors()).score == pytest.approx(0.5)
    # 0.49 + rank-1 vector hint: 0 + 0.01/61 = 0.000163934...
    s = score(cand(cosine=0.49, vector_rank=1), Anchors())
    assert s.semantic == 0.0
    assert s.score == pytest.approx(0.01 / 61)


def test_G4_shared_word_in_text_is_not_a_name_anchor() -> None:
    """G4/G6: 'Morgan' in a record's text earns nothing unless Morgan is an associated entity."""
    pool = [cand("m", "Morgan likes tea", entity_names=("Morgan",), cosine=0.7),
            cand("t", "Morgan once said hi", cosine=0.7)]
    scored = {s.candidate.id: s for s in score_all("Morgan", pool)}
    # m: 0.7 + 0.08 (the only name anchor) = 0.78
    assert scored["m"].score == pytest.approx(0.78)
    # t: 0.7 + 0 = 0.7
    assert scored["t"].score == pytest.approx(0.7)


def test_G10_waiting_record_uses_lexical_overlap() -> None:
    anchors = extract_anchors("green tea Morgan")
    # cosine None: share of the 3 query terms in the text: 3/3 = 1.0
    assert score(cand(text="Morgan likes GREEN tea", cosine=None), anchors).score == 1.0
    # 1/3 ("green") + salience 0.4*0.005 = 0.3333... + 0.002 = 0.335333...
    s = score(cand(text="green", cosine=None, salience=0.4), anchors)
    assert s.lexical
    assert s.score == pytest.approx(1 / 3 + 0.002)


def test_G10_lite_lexical_score_term_overlap_only() -> None:
    # query terms {ship, the, release}: "the" and "release" present -> 2/3
    assert lexical_score("Ship the release", "The 0.9 release") == pytest.approx(2 / 3)
    # accents/case normalised: "Zoë" vs "zoe" -> 1/1
    assert lexical_score("Zoë", "zoe said") == 1.0
    # whole words only: "tea" is not in "team" -> 0
    assert lexical_score("tea", "team") == 0.0
    assert lexical_score("", "anything") == 0.0


# ------------------------------------------------------------------------------------------
# Anchor bonus (G5, G6, G7, DESIGN 9.5)


def test_G5_number_anchor_budget_split_over_two_anchors() -> None:
    anchors = extract_anchors("invoice 4521 due 2026-07-06")
    assert anchors.numbers_dates_ids == ("4521", "2026-07-06")
    c = cand(text="Invoice 4521 paid", cosine=0.72, vector_rank=1, salience=0.3)
    # 0.72 cosine + 0.15/2 (one of two number anchors) + 0.01/61 + 0.3*0.005
    # = 0.72 + 0.075 + 0.000163934... + 0.0015 = 0.796663934...
    s = score(c, anchors)
    assert s.anchor == pytest.approx(0.075)
    assert s.score == pytest.approx(0.72 + 0.075 + 0.01 / 61 + 0.0015)
    assert s.score == pytest.approx(0.7966639344, abs=1e-9)
    # both anchors: 0.15/2 * 2 = 0.15
    assert anchor_bonus(anchors, cand(text="4521 due 06.07.2026")) == pytest.approx(0.15)


def test_G5_classes_stack_to_at_most_0_23() -> None:
    pool = [cand("b", "Morgan paid invoice 4521", entity_names=("Morgan Lee",), cosine=0.7),
            cand("n", "invoice 4521 paid", cosine=0.7),
            cand("p", "Morgan paid", entity_names=("Morgan Lee",), cosine=0.7)]
    got = {s.candidate.id: s for s in score_all("Did Morgan pay 4521?", pool)}
    # b: 0.7 + 0.15 (1/1 number) + 0.08 (1/1 name) = 0.93
    assert got["b"].anchor == pytest.approx(0.23)
    assert got["b"].score == pytest.approx(0.93)
    # n: 0.7 + 0.15 = 0.85
    assert got["n"].score == pytest.approx(0.85)
    # p: 0.7 + 0.08 = 0.78
    assert got["p"].score == pytest.approx(0.78)


def test_G5_name_budget_split_over_the_querys_name_anchors() -> None:
    pool = [cand("m", "x", entity_names=("Morgan",), cosine=0.6),
            cand("z", "y", entity_names=("Zoë Park",), cosine=0.6)]
    anchors = extract_anchors("Morgan and Zoe", [n for c in pool for n in c.entity_names])
    assert anchors.names == ("morgan", "zoe")
    # m holds one of two name anchors: 0.08/2 = 0.04
    assert anchor_bonus(anchors, pool[0]) == pytest.approx(0.04)
    # a candidate associated with both: 0.08/2 * 2 = 0.08
    both = cand(entity_names=("Morgan", "Zoe"))
    assert anchor_bonus(anchors, both) == pytest.approx(0.08)


def test_G6_date_never_matches_another_date() -> None:
    anchors = extract_anchors("born 1988-11-02")
    assert anchors.numbers_dates_ids == ("1988-11-02",)
    assert anchor_bonus(anchors, cand(text="born 1988-12-02")) == 0.0
    # same date in another supported form matches: 0.15/1
    assert anchor_bonus(anchors, cand(text="born 02.11.1988")) == pytest.approx(0.15)
    assert anchor_bonus(anchors, cand(text="born 1988/11/02")) == pytest.approx(0.15)
    # an instant on that date carries the date: 0.15
    assert anchor_bonus(anchors, cand(text="at 1988-11-02T10:00Z")) == pytest.approx(0.15)


def test_G6_numbers_match_as_whole_tokens() -> None:
    anchors = extract_anchors("room 12")
    assert anchor_bonus(anchors, cand(text="room 123")) == 0.0
    assert anchor_bonus(anchors, cand(text="room 112")) == 0.0
    assert anchor_bonus(anchors, cand(text="PR-12 merged")) == 0.0
    # "12." at the end of a sentence is the whole number 12: 0.15
    assert anchor_bonus(anchors, cand(text="Booked room 12.")) == pytest.approx(0.15)


def test_G6_numeric_ids() -> None:
    anchors = extract_anchors("Is PR-1234 in v0.9? see #4521")
    assert anchors.numbers_dates_ids == ("pr-1234", "v0.9", "4521")
    # all three: 0.15/3 * 3 = 0.15
    assert anchor_bonus(anchors, cand(text="pr-1234 ships in V0.9 (issue 4521)")) == pytest.approx(
        0.15)
    # only the issue number: 0.15/3 = 0.05
    assert anchor_bonus(anchors, cand(text="issue #4521 and PR-1235")) == pytest.approx(0.05)


def test_G6_name_words_need_three_letters() -> None:
    anchors = extract_anchors("al gore", ["Al Gore"])
    assert anchors.names == ("gore",)
    # "al" has two letters: not an anchor; gore is the only one: 0.08/1
    assert anchor_bonus(anchors, cand(entity_names=("Al Gore",))) == pytest.approx(0.08)
    assert anchor_bonus(anchors, cand(entity_names=("Al Smith",))) == 0.0


def test_G7_names_match_ignoring_case_and_accents() -> None:
    entity = ("José",)
    anchors = extract_anchors("where does jose work", entity)
    assert anchors.names == ("jose",)
    assert anchor_bonus(anchors, cand(entity_names=entity)) == pytest.approx(0.08)
    # Zoe matches Zoë, and upper case matches too
    anchors2 = extract_anchors("ZOE", ["Zoë"])
    assert anchor_bonus(anchors2, cand(entity_names=("Zoë",))) == pytest.approx(0.08)
    # NFKC: a fullwidth digit is the digit
    assert extract_anchors("room １２").numbers_dates_ids == ("12",)


# ------------------------------------------------------------------------------------------
# RRF and salience (G8, DESIGN 9.5)


def test_G8_rrf_rank_hint() -> None:
    assert rrf(1) == pytest.approx(0.01 / 61)  # 0.000163934...
    assert rrf(10) == pytest.approx(0.01 / 70)
    with pytest.raises(ValueError):
        rrf(0)
    # both retrievers: 0.8 + 0.01/61 (FTS rank 1) + 0.01/63 (vector rank 3) = 0.800322664...
    s = score(cand(cosine=0.8, lexical_rank=1, vector_rank=3), Anchors())
    assert s.rrf == pytest.approx(0.01 / 61 + 0.01 / 63)
    assert s.score == pytest.approx(0.8003226646, abs=1e-9)


def test_G8_salience_is_a_tie_breaker_of_at_most_0_005() -> None:
    # 0.7 + 1.0 * 0.005 = 0.705
    assert score(cand(cosine=0.7, salience=1.0), Anchors()).score == pytest.approx(0.705)
    # clamped: 3.0 -> 1.0 -> 0.005
    assert score(cand(cosine=0.7, salience=3.0), Anchors()).salience == pytest.approx(0.005)
    hi = score(cand("b", cosine=0.7, salience=0.9), Anchors())
    lo = score(cand("a", cosine=0.7, salience=0.1), Anchors())
    assert ids(select([lo, hi], now=NOW).hits) == ["b", "a"]


def test_G31_pool_is_bounded_to_fifty() -> None:
    pool = [cand(str(i), cosine=0.6) for i in range(MAX_CANDIDATES)]
    assert len(score_all("q", pool)) == 50
    with pytest.raises(ValueError):
        score_all("q", [*pool, cand("x")])


# ------------------------------------------------------------------------------------------
# Explicit selection (G11, G16, G17, G19, G20, G22)


def test_G11_tail_keeps_within_0_15_and_drops_0_151_below() -> None:
    scored = [plain("best", 0.90), plain("at", 0.75), plain("below", 0.749)]
    # 0.90 - 0.75 = 0.15 (kept); 0.90 - 0.749 = 0.151 (dropped)
    r = select(scored, now=NOW)
    assert ids(r.hits) == ["best", "at"]
    assert r.evidence is None
    assert r.notes == ()


def test_G11_floor_drops_hits_below_0_65_when_best_clears_it() -> None:
    # best 0.70 >= 0.65: 0.66 kept, 0.64 (within the tail, below the floor) dropped
    r = select([plain("c", 0.64), plain("a", 0.70), plain("b", 0.66)], now=NOW)
    assert ids(r.hits) == ["a", "b"]
    assert r.evidence is None


def test_G17_best_below_floor_is_kept_and_flagged_insufficient() -> None:
    # best 0.60 < 0.65: kept; the floor does not apply, 0.50 is 0.10 below (kept);
    # a lexical 0.4 is 0.20 below (dropped by the tail)
    lex = score(cand("lex", "alpha beta", cosine=None), extract_anchors("alpha beta gamma delta e"))
    assert lex.score == pytest.approx(2 / 5)
    r = select([plain("b", 0.50), plain("a", 0.60), lex], now=NOW)
    assert ids(r.hits) == ["a", "b"]
    assert r.evidence == "insufficient"
    assert r.notes == ("Insufficient evidence:",)
    assert format_recall(r).splitlines()[0] == "Insufficient evidence:"
    assert r.hits[0].structured(r.evidence)["evidence"] == "insufficient"


def test_G11_single_weak_hit_is_always_kept() -> None:
    r = select([plain("only", 0.0)], now=NOW)
    assert ids(r.hits) == ["only"]
    assert r.evidence == "insufficient"
    assert select([], now=NOW).hits == ()


def test_G22_terminal_statuses_excluded_live_statuses_kept() -> None:
    scored = [plain("dropped", 0.99, status="dropped"),
              plain("invalidated", 0.98, status="invalidated"),
              plain("open", 0.80, status="open"), plain("done", 0.80, status="done"),
              plain("scheduled", 0.79, status="scheduled"),
              plain("migrated", 0.78, status="migrated")]
    r = select(scored, now=NOW)
    assert ids(r.hits) == ["done", "open", "scheduled", "migrated"]
    assert auto_select(scored, now=NOW) and all(
        h.status not in ("dropped", "invalidated") for h in auto_select(scored, now=NOW))


def test_G19_G20_modes() -> None:
    scored = [plain("a", 0.60), plain("b", 0.30, text="far")]
    # original-query: uncut (b is 0.30 below) but the notes stay
    r = select(scored, now=NOW, mode="original-query")
    assert ids(r.hits) == ["a", "b"]
    assert r.evidence == "insufficient"
    # degraded lexical-only: uncut, no notes
    d = select(scored, now=NOW, mode="degraded")
    assert ids(d.hits) == ["a", "b"]
    assert (d.evidence, d.notes) == (None, ())


def _fact(id: str, cosine: float, value: str, **kw: Any) -> Scored:
    return plain(id, cosine, fact=Fact("person:morgan", "employer", "user", value), **kw)


def test_G16_conflicting_current_values_survive_the_tail_cut() -> None:
    # Acme at 0.80 and Globex at 0.60 (0.20 below: cut) still give the note
    r = select([_fact("a", 0.80, "Acme"), _fact("b", 0.60, "Globex")], now=NOW)
    assert ids(r.hits) == ["a"]
    assert r.evidence == "conflicting"
    assert format_recall(r).startswith("Conflicting values:\n0.800 ")
    # the same value (case/space-insensitive) is no conflict
    assert select([_fact("a", 0.8, "Acme"), _fact("b", 0.7, " acme ")], now=NOW).evidence is None
    # a superseded value is history, not a conflict (G33)
    r2 = select([_fact("a", 0.8, "Acme"), _fact("b", 0.7, "Globex", superseded=True)], now=NOW)
    assert r2.evidence is None
    # another scope is another fact
    other = plain("b", 0.7, fact=Fact("person:morgan", "employer", "agent", "Globex"))
    assert select([_fact("a", 0.8, "Acme"), other], now=NOW).evidence is None
    # the host's fact sheet may report the conflict
    assert select([plain("a", 0.8)], now=NOW, fact_sheet_conflict=True).evidence == "conflicting"


def test_G16_conflict_window_is_the_top_eight() -> None:
    filler = [plain(f"f{i}", 0.90 - i * 0.01) for i in range(6)]  # 0.90 .. 0.85
    # ranks: a (1), f0..f5 (2-7), b (8): inside the top 8
    eighth = [*filler, _fact("a", 0.95, "Acme"), _fact("b", 0.835, "Globex")]
    assert select(eighth, now=NOW).evidence == "conflicting"
    # one more candidate ahead of b makes it 9th: outside the window
    ninth = [*eighth, plain("g", 0.836)]
    assert select(ninth, now=NOW).evidence is None


def test_G16_conflict_with_insufficient_prefers_conflicting_and_lists_both_notes() -> None:
    r = select([_fact("a", 0.6, "Acme"), _fact("b", 0.55, "Globex")], now=NOW)
    assert r.evidence == "conflicting"
    assert r.notes == ("Conflicting values:", "Insufficient evidence:")


# ------------------------------------------------------------------------------------------
# Currentness (G14, G15)


def test_G14_currentness() -> None:
    assert currentness(cand(), NOW) == "current"
    assert currentness(cand(superseded=True), NOW) == "superseded"
    assert currentness(cand(status="superseded"), NOW) == "superseded"
    assert currentness(cand(valid_to=date(2026, 7, 9)), NOW, UTC) == "ended"
    # an event's dueAt ends it; a note's is a deadline unless intentExpiry says so (M25)
    assert currentness(cand(type="event", due_at=NOW - timedelta(milliseconds=1)),
                       NOW) == "ended"
    assert currentness(cand(type="event", due_at=NOW + timedelta(milliseconds=1)),
                       NOW) == "current"
    assert currentness(cand(type="note", due_at=NOW - timedelta(milliseconds=1)),
                       NOW) == "current"
    # superseded wins over ended
    assert currentness(cand(superseded=True, valid_to=date(2020, 1, 1)), NOW) == "superseded"


def test_G15_date_only_end_closes_after_the_local_day() -> None:
    today = cand(valid_to=date(2026, 7, 10))
    assert currentness(today, NOW, UTC) == "current"  # still 2026-07-10 in UTC
    # 02:00Z on 07-10 is 21:00 on 07-09 at UTC-5: a 07-09 end is still current there
    early = datetime(2026, 7, 10, 2, 0, tzinfo=UTC)
    yday = cand(valid_to=date(2026, 7, 9))
    assert currentness(yday, early, UTC) == "ended"
    assert currentness(yday, early, timezone(timedelta(hours=-5))) == "current"
    # an instant with an offset closes when it passes: 12:30+02:00 = 10:30Z < 12:00Z
    offset = datetime(2026, 7, 10, 12, 30, tzinfo=timezone(timedelta(hours=2)))
    assert currentness(cand(valid_to=offset), NOW) == "ended"


# ------------------------------------------------------------------------------------------
# Text form (G13, G14, G23, G25)


def test_G23_format_line_exact() -> None:
    c = cand("x", "Ship the 0.9 release.", status="done", created_at=T0, cosine=0.8, type="task")
    hit = select([score(c, Anchors())], now=NOW).hits[0]
    expected = "0.800 [recorded 2026-07-06T12:00:00.000Z] [done] Ship the 0.9 release."
    assert format_line(hit) == expected
    opened = select([plain("o", 0.8123, text="Ship it.", status="open", created_at=T0)],
                    now=NOW).hits[0]
    assert format_line(opened) == "0.812 [recorded 2026-07-06T12:00:00.000Z] Ship it."
    assert format_line(select([plain("n", 0.5, text="Bare.")], now=NOW).hits[0]) == "0.500 Bare."


def test_G13_G14_format_line_validity_and_currentness() -> None:
    ended = plain("e", 0.7, text="Lived in Oslo.", created_at=T0,
                  valid_from=date(2025, 1, 1), valid_to=date(2026, 7, 1))
    assert format_line(select([ended], now=NOW).hits[0]) == (
        "0.700 [recorded 2026-07-06T12:00:00.000Z] [valid 2025-01-01..2026-07-01] "
        "[ended 2026-07-01] Lived in Oslo.")
    sup = plain("s", 0.7, text="Old.", superseded=True, status="done")
    assert format_line(select([sup], now=NOW).hits[0]) == "0.700 [done] [superseded] Old."
    sup2 = plain("s", 0.7, text="Old.", status="superseded")
    assert format_line(select([sup2], now=NOW).hits[0]) == "0.700 [superseded] Old."
    tz2 = timezone(timedelta(hours=2))
    rec = plain("r", 0.7, text="t", created_at=datetime(2026, 7, 6, 14, 0, 0, 5000, tzinfo=tz2))
    assert format_line(select([rec], now=NOW).hits[0]) == (
        "0.700 [recorded 2026-07-06T14:00:00.005+02:00] t")


def test_G25_structured_fields() -> None:
    c = cand("x", "t", type="event", status="open", created_at=T0, due_at=date(2026, 7, 1),
             cosine=0.8)
    hit = select([score(c, Anchors())], now=NOW).hits[0]
    assert hit.structured() == {
        "id": "x", "score": pytest.approx(0.8), "text": "t", "type": "event", "status": "open",
        "createdAt": "2026-07-06T12:00:00.000Z", "dueAt": "2026-07-01", "currentness": "ended"}


# ------------------------------------------------------------------------------------------
# Automatic block (H1-H15)


def test_H3_best_must_reach_0_62() -> None:
    assert auto_select([plain("a", 0.619)], now=NOW) == ()
    assert ids(auto_select([plain("a", 0.62)], now=NOW)) == ["a"]


def test_H4_further_lines_within_0_04() -> None:
    # best 0.66: 0.62 is 0.04 below (kept), 0.619 is 0.041 below (left out)
    got = auto_select([plain("a", 0.66, created_at=T0), plain("b", 0.62, created_at=T0),
                       plain("c", 0.619, created_at=T0)], now=NOW)
    assert sorted(ids(got)) == ["a", "b"]
    # only the best needs the floor: best 0.63, 0.60 is within 0.03
    assert sorted(ids(auto_select([plain("a", 0.63), plain("b", 0.60)], now=NOW))) == ["a", "b"]


def test_H5_at_most_three_lines_and_identical_text_once() -> None:
    many = [plain(f"h{i}", 0.70 - i * 0.001, created_at=T0) for i in range(5)]
    got = auto_select(many, now=NOW)
    assert len(got) == AUTO_MAX_LINES == 3
    assert sorted(ids(got)) == ["h0", "h1", "h2"]
    dup = [plain("a", 0.70, text="Morgan  prefers tea."),
           plain("b", 0.69, text="Morgan prefers tea."),
           plain("c", 0.68, text="morgan prefers tea.")]
    # a and b are identical after whitespace collapse (keep the better, a); c differs in case
    assert sorted(ids(auto_select(dup, now=NOW))) == ["a", "c"]


def test_H11_line_text_over_360_bytes_is_left_out_not_cut() -> None:
    assert AUTO_LINE_TEXT_CAP_BYTES == 360
    fits = "é" * 180  # 180 code points, 360 UTF-8 bytes
    over = "é" * 180 + "a"  # 181 code points, 361 bytes
    got = auto_select([plain("over", 0.70, text=over), plain("fits", 0.69, text=fits)], now=NOW)
    assert ids(got) == ["fits"]
    assert got[0].text == fits


def test_H11_budget_leaves_out_a_line_that_does_not_fit() -> None:
    assert AUTO_BLOCK_BUDGET_BYTES == 1_500
    hits = [plain("a", 0.70, text="x" * 300), plain("b", 0.69, text="y" * 300),
            plain("c", 0.68, text="z" * 10)]
    # rendered line = "- – " (6 bytes: the en dash is 3) + text + " (current)" (10) + "\n" (1)
    # a = 6+300+10+1 = 317, b = 317, c = 6+10+10+1 = 27
    # budget 650: a (317) + b (634) fit, then c would make 661 > 650 -> [a, b]
    assert sorted(ids(auto_select(hits, now=NOW, budget_bytes=650))) == ["a", "b"]
    # budget 600: a (317) fits, b (634) is left out, c (344) still fits: skipped, not stopped
    assert sorted(ids(auto_select(hits, now=NOW, budget_bytes=600))) == ["a", "c"]


def test_H7_H8_current_lines_chosen_first_displayed_oldest_first() -> None:
    d = [datetime(2026, m, 1, tzinfo=UTC) for m in range(1, 6)]
    scored = [plain("sup", 0.70, text="Morgan joined the Maple book club.", superseded=True,
                    created_at=d[0]),
              plain("end", 0.69, text="Trip.", valid_to=date(2026, 6, 1), created_at=d[1]),
              plain("c3", 0.68, text="C3.", created_at=d[4]),
              plain("c1", 0.67, text="C1.", created_at=d[2]),
              plain("c2", 0.66, text="C2.", created_at=d[3])]
    # three current lines outrank in selection the two higher-scored closed ones
    assert ids(auto_select(scored, now=NOW)) == ["c1", "c2", "c3"]  # oldest first
    mixed = [scored[0], scored[2]]
    assert ids(auto_select(mixed, now=NOW)) == ["sup", "c3"]  # Jan before May


def test_H10_line_format_and_block() -> None:
    tea = plain("t", 0.70, text="Morgan prefers green tea.", created_at=datetime(
        2026, 5, 1, 9, tzinfo=UTC), attribution="you said")
    club = plain("c", 0.69, text="Morgan joined the Maple book club.", superseded=True,
                 created_at=datetime(2026, 3, 1, 9, tzinfo=UTC))
    got = auto_select([tea, club], now=NOW)
    assert render_auto_block(got, UTC) == (
        "## Memory (possibly relevant — may be unrelated; verify before relying)\n\n"
        "- – Morgan joined the Maple book club. (recorded 2026-03-01; superseded)\n"
        "- – Morgan prefers green tea. (recorded 2026-05-01; current; you said)")
    assert AUTO_HEADING.startswith("## Memory (possibly relevant")
    assert render_auto_block((), UTC) == ""


def test_H6_H9_task_and_ended_labels() -> None:
    task = select([plain("k", 0.7, text="Call Ana.", type="task", status="open",
                         created_at=T0)], now=NOW).hits[0]
    assert format_auto_line(task) == "- – Call Ana. (task/plan recorded 2026-07-06; current)"
    ended = select([plain("e", 0.7, text="Trip.", type="event", created_at=T0,
                          due_at=date(2026, 7, 8))], now=NOW).hits[0]
    assert format_auto_line(ended) == "- – Trip. (recorded 2026-07-06; ended 2026-07-08)"
    # the recorded date is the host-local date: 2026-07-06T23:30Z is 07-07 at UTC+2
    late = select([plain("l", 0.7, text="Late.", created_at=datetime(
        2026, 7, 6, 23, 30, tzinfo=UTC))], now=NOW).hits[0]
    assert format_auto_line(late, timezone(timedelta(hours=2))) == (
        "- – Late. (recorded 2026-07-07; current)")


def test_H15_degraded_gives_no_block() -> None:
    assert auto_select([plain("a", 0.9)], now=NOW, degraded=True) == ()


def test_H14_owner_text_gate_needs_more_than_16_code_points() -> None:
    assert not owner_text_gate("a" * 16)
    assert owner_text_gate("a" * 17)
    assert not owner_text_gate("  " + "a" * 16 + "\n")  # trimmed
    # NFC: e + combining acute is one code point: 15 + 1 + ... = 16 -> suppressed
    assert not owner_text_gate("a" * 15 + "e\u0301")
    assert owner_text_gate("a" * 16 + "e\u0301")


# ------------------------------------------------------------------------------------------
# Calibration override (DESIGN 9.4)


def test_calibration_override_changes_outcomes() -> None:
    c = cand(cosine=0.49)
    loose = Calibration(no_evidence_cosine=0.45)
    assert score(c, Anchors(), NOMIC_V15).score == 0.0
    assert score(c, Anchors(), loose).score == pytest.approx(0.49)
    scored = [plain("a", 0.72), plain("b", 0.68)]
    assert ids(select(scored, NOMIC_V15, now=NOW).hits) == ["a", "b"]
    strict = Calibration(recall_floor=0.70)
    assert ids(select(scored, strict, now=NOW).hits) == ["a"]  # 0.68 < 0.70
    narrow = Calibration(recall_tail=0.03)
    assert ids(select(scored, narrow, now=NOW).hits) == ["a"]  # 0.04 below > 0.03
    assert select([plain("a", 0.68)], strict, now=NOW).evidence == "insufficient"
    assert auto_select([plain("a", 0.61)], Calibration(auto_floor=0.60), now=NOW)
    assert len(auto_select(scored, Calibration(auto_window=0.03), now=NOW)) == 1


# --------------------------------------------------------------------------------------------
# H19: labelled background


def _pool(*scores: float) -> list[Scored]:
    return [plain(f"m{i}", s, text=f"line {i}") for i, s in enumerate(scores)]


def test_H19_labelled_memory_joins_when_it_leads_the_median_and_clears_the_floor() -> None:
    pool = _pool(0.9, 0.8, 0.7, 0.66, 0.6, 0.1, 0.1)  # median 0.66
    got = background_select(pool, {"m1": "preference", "m3": "lesson", "m5": "lesson"},
                            now=NOW)
    # m1 leads the median by 0.14; m3 only by 0.0 (< 0.05); m5 is below the floor
    assert [(label, h.id) for label, h in got] == [("preference", "m1")]


def test_H19_only_the_top_five_hits_can_join() -> None:
    pool = _pool(0.95, 0.94, 0.93, 0.92, 0.91, 0.90, *[0.1] * 6)  # median 0.45
    got = background_select(pool, {"m5": "preference", "m4": "preference"}, now=NOW)
    assert [h.id for _, h in got] == ["m4"]


def test_H19_opposite_advice_is_shown_together_and_block_lines_are_not_repeated() -> None:
    pool = [plain("a", 0.9, text="Prefer tea in the morning"),
            plain("b", 0.88, text="Prefer coffee in the morning"),
            plain("c", 0.87, text="Dentist on Elm Street"), *_pool(0.1, 0.1, 0.1)]
    labelled = {"a": "preference", "b": "preference"}
    assert [h.id for _, h in background_select(pool, labelled, now=NOW)] == ["a", "b"]
    assert [h.id for _, h in background_select(pool, labelled, now=NOW, exclude=["a"])] == ["b"]


def test_H19_background_lines_render_with_label_date_and_currentness() -> None:
    created = datetime(2026, 5, 1, 12, tzinfo=UTC)
    pool = [plain("a", 0.9, text="Prefer tea", created_at=created), *_pool(0.1, 0.1)]
    text = render_background(background_select(pool, {"a": "preference"}, now=NOW))
    assert text == (f"{BACKGROUND_HEADING}\n\n"
                    "- preference: Prefer tea (recorded 2026-05-01; current)")
    assert render_background(()) == ""


def test_G24_a_tie_goes_to_the_line_recorded_first_to_the_microsecond_in_any_zone() -> None:
    """Equal scores rank by the instant recorded (compared across zones, to the microsecond;
    a line without one first), then by id: the order a replay reproduces."""
    plus2 = timezone(timedelta(hours=2))
    tied = [
        plain("z-later", 0.7, created_at=T0 + timedelta(microseconds=1)),
        plain("y-same-instant", 0.7, created_at=(T0 + timedelta(hours=2)).replace(tzinfo=plus2)),
        plain("b-same-instant", 0.7, created_at=T0),
        plain("c-earlier", 0.7, created_at=datetime(2026, 7, 6, 13, 59, 59, 999999,
                                                     tzinfo=plus2)),
        plain("x-no-instant", 0.7),
        plain("a-lower", 0.69, created_at=T0 - timedelta(days=1)),
    ]
    got = select(tied, NOMIC_V15, now=NOW, mode="original-query")
    assert ids(got.hits) == ["x-no-instant", "c-earlier", "b-same-instant", "y-same-instant",
                             "z-later", "a-lower"]


@pytest.mark.parametrize("mode", ["explicit", "original-query", "degraded"])
@pytest.mark.parametrize("scoring", ["reference", "hybrid"])
def test_kept_lines_are_the_lines_select_returns_in_its_order(mode: str, scoring: str) -> None:
    """A calibration fit reads the order from ``kept_lines`` without building hits: it must be
    select's, through the tail cut, the floor, a dropped line and a superseded line."""
    cal = dataclasses.replace(NOMIC_V15, recall_floor=0.6, recall_tail=0.15)
    pools = [
        [plain("a", 0.80, created_at=T0), plain("b", 0.70), plain("c", 0.61),
         plain("d", 0.50), plain("gone", 0.9, status="dropped")],
        [plain("old", 0.75, superseded=True, superseded_by="new"), plain("new", 0.74),
         plain("x", 0.3)],
        [plain("low", 0.40, text="apples"), plain("lower", 0.30, text="pears")],
        [],
    ]
    for pool in pools:
        got = select(pool, cal, now=NOW, mode=mode, scoring=scoring)  # type: ignore[arg-type]
        _, kept = kept_lines(pool, cal, mode=mode, scoring=scoring)  # type: ignore[arg-type]
        assert [s.candidate.id for s in kept] == ids(got.hits)
        assert [s.score for s in kept] == [h.score for h in got.hits]
