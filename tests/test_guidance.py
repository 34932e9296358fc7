"""Issue 15 item 5: explicit recall's "Preferences & lessons" guidance section (G26, G27), its
``kind`` and ``about`` options on both doors and the CLI, and their one-line errors.

The selection rule is checked on scored candidates built by hand (exact scores, ranks and
scopes); the wiring through a real BuJo capture store, the read-only door and the CLI after.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import memory_es.root
from helpers_capture import entity, extraction, memory, open_capture, review, script, turn
from memory_es import MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.recall.rank.score import NOMIC_V15, Candidate, Scored
from memory_es.recall.sections.guidance import (
    GUIDANCE_HEADING,
    GUIDANCE_MAX_LINES,
    GuidanceLine,
    check_kind,
    guidance_select,
    render_guidance,
    scope_rank,
)
from memory_es.testing import WordBagEmbedder

NOW = datetime(2026, 5, 10, 12, 0, tzinfo=UTC)
FLOOR = NOMIC_V15.auto_floor  # the automatic background floor (0.62)


def scored(mid: str, score: float, *, status: str = "open") -> Scored:
    return Scored(candidate=Candidate(id=mid, text=f"line {mid}", status=status,
                                      created_at=datetime(2026, 5, 1, 9, tzinfo=UTC)),
                  score=score, semantic=score, anchor=0.0, rrf=0.0, salience=0.0,
                  lexical=False)


def ids(lines: tuple[GuidanceLine, ...]) -> list[str]:
    return [g.id for g in lines]


# --------------------------------------------------------------------------------------------
# G26: top 8 and the floor; scope precedence, then score; six lines at most


def test_g26_guidance_lines_need_top8_and_floor() -> None:
    pool = [scored(f"u{i}", 0.95 - i * 0.01) for i in range(8)]  # ranks 1-8: 0.95 .. 0.88
    pool += [scored("ninth", 0.87), scored("low", FLOOR - 0.01), scored("gone", 0.99,
                                                                        status="dropped")]
    labelled = {"u2": ("preference", "agent"), "ninth": ("preference", "agent"),
                "gone": ("lesson", "agent"), "u7": ("lesson", "agent")}
    lines = guidance_select(pool, labelled, NOMIC_V15, kind=None, now=NOW, tz=UTC)
    # rank 3 and rank 8 qualify; rank 9 is outside the window, a dropped line is never live
    assert ids(lines) == ["u2", "u7"]
    # the floor: a labelled line in the top 8 but below the automatic floor is left out
    small = [scored("a", FLOOR + 0.05), scored("b", FLOOR - 0.001)]
    assert ids(guidance_select(small, {"a": ("lesson", "agent"), "b": ("preference", "agent")},
                               NOMIC_V15, kind=None, now=NOW, tz=UTC)) == ["a"]
    # exactly at the floor counts (inclusive, like the background's floor)
    assert ids(guidance_select([scored("c", FLOOR)], {"c": ("lesson", "agent")}, NOMIC_V15,
                               kind=None, now=NOW, tz=UTC)) == ["c"]


def test_g26_scope_precedence_user_conversation_agent_then_score_six_at_most() -> None:
    pool = [scored("agent-hi", 0.99), scored("peer-lo", 0.80), scored("conv", 0.85),
            scored("peer-hi", 0.90), scored("agent-lo", 0.70), scored("user-x", 0.75),
            scored("agent-mid", 0.88), scored("other", 0.95)]
    labelled = {"agent-hi": ("preference", "agent"), "peer-lo": ("lesson", "peer"),
                "conv": ("preference", "conversation:web:1"), "peer-hi": ("preference", "peer"),
                "agent-lo": ("lesson", "agent"), "user-x": ("preference", "user:sam"),
                "agent-mid": ("preference", "agent"), "other": ("preference", "project:x")}
    lines = guidance_select(pool, labelled, NOMIC_V15, kind=None, now=NOW, tz=UTC)
    assert len(lines) == GUIDANCE_MAX_LINES == 6
    # user scopes (peer = this engine's user:<sender>) by score, then conversation, then agent
    assert ids(lines) == ["peer-hi", "peer-lo", "user-x", "conv", "agent-hi", "agent-mid"]
    assert [scope_rank(s) for s in ("peer", "user:sam", "conversation", "agent", "x")] == [
        0, 0, 1, 2, 3]


# --------------------------------------------------------------------------------------------
# G27: an explicit kind lifts the floor, never the window; no eligible line: no section


def test_g27_explicit_kind_shows_below_floor_keeps_window_and_precedence() -> None:
    pool = [scored(f"x{i}", 0.9 - i * 0.01) for i in range(6)]
    pool += [scored("weak-agent", 0.30), scored("weak-peer", 0.20), scored("tenth", 0.10)]
    pool += [scored("ninth", 0.15)]
    labelled = {"weak-agent": ("lesson", "agent"), "weak-peer": ("lesson", "peer"),
                "x1": ("preference", "agent"), "ninth": ("lesson", "agent"),
                "tenth": ("lesson", "agent")}
    no_kind = guidance_select(pool, labelled, NOMIC_V15, kind=None, now=NOW, tz=UTC)
    assert ids(no_kind) == ["x1"]  # the weak lessons are below the floor
    lessons = guidance_select(pool, labelled, NOMIC_V15, kind="lesson", now=NOW, tz=UTC)
    # below the floor now, still the top 8 only (ninth and tenth rank 9 and 10), peer first,
    # and only lessons
    assert ids(lessons) == ["weak-peer", "weak-agent"]
    assert ids(guidance_select(pool, labelled, NOMIC_V15, kind="preference", now=NOW,
                               tz=UTC)) == ["x1"]
    empty = guidance_select(pool, {}, NOMIC_V15, kind="lesson", now=NOW, tz=UTC)
    assert empty == () and render_guidance(empty, UTC) == ""


def test_g27_bad_kind_and_about_are_one_line_typed_errors() -> None:
    assert check_kind(None) is None and check_kind("lesson") == "lesson"
    for bad in ("fact", "Preference", "", 3):
        with pytest.raises(InvalidArgumentError) as e:
            check_kind(bad)
        assert e.value.code == "recall_invalid_kind" and "\n" not in str(e.value)
        assert "kind" in str(e.value)


# --------------------------------------------------------------------------------------------
# The wiring: a real BuJo capture store, the read-only door and the CLI


def seeded(root: Path) -> MemoryStore:
    plan = extraction([
        memory("I prefer window seats on long flights", labels=["preference"]),
        memory("Book window seats early for long flights", labels=["lesson"]),
        memory("Window seats on long flights are cold", source="assistant", labels=["lesson"],
               salience=0.9),
        memory("Morgan lives in Berlin", entities=["m"], fact=("m", "home_town", "Berlin")),
        memory("The dentist is on Elm Street")], [entity("m", "Morgan")])
    peer = extraction([memory("Sam prefers window seats on long flights",
                              labels=["preference"])])
    other = extraction([memory(text, source="tool") for text in (
        "Build 4411 passed", "The cat eats at six", "Rent is due monthly")])
    store, _ = open_capture(root, script(
        ("extract", "r1", plan), ("review", "r1", review("keep", "keep", "keep", "keep")),
        ("extract", "p1", peer), ("extract", "t1", other)))
    store.persist_completed_turn(turn("r1", "x"))
    store.persist_completed_turn(turn("p1", "x", speaker_kind="unknown"))
    store.persist_completed_turn(turn("t1", "x"))
    store.drain()
    return store


def test_g26_store_recall_carries_the_section_in_text_and_json(tmp_path: Path) -> None:
    with seeded(tmp_path / "r") as store:
        result = store.recall("window seats on long flights")
        morgan = store.recall("Where does Morgan live?")
    section = result.text.split("\n\n")[-1].splitlines()
    assert section == [
        GUIDANCE_HEADING,
        "- preference: Sam prefers window seats on long flights (recorded 2026-05-04; current)",
        "- preference: I prefer window seats on long flights (recorded 2026-05-04; current)",
        "- lesson: Book window seats early for long flights (recorded 2026-05-04; current)"]
    body = result.to_json()
    assert [(g["kind"], g["scope"]) for g in body["guidance"]] == [
        ("preference", "peer"), ("preference", "agent"), ("lesson", "agent")]
    # G18: the existing fields keep their meaning: the hits are still all four lines
    assert len(body["results"]) == 4 and body["evidence"] is None
    assert "are cold" not in result.text.split("\n\n")[-1]  # an assistant's lesson
    # no labelled line retrieved: the section is omitted, and the JSON keeps its previous
    # shape (G18: no empty field added)
    assert GUIDANCE_HEADING not in morgan.text and "guidance" not in morgan.to_json()


def test_g27_store_kind_and_about(tmp_path: Path) -> None:
    with seeded(tmp_path / "r") as store:
        plain = store.recall("window seats")
        lessons = store.recall("window seats", kind="lesson")
        morgan_id = store.recall("Morgan").fact_sheets[0].entity_id
        about = store.recall("window seats", about=morgan_id[:10])
        with pytest.raises(InvalidArgumentError) as bad_kind:
            store.recall("window seats", kind="fact")
        with pytest.raises(InvalidArgumentError) as bad_about:
            store.recall("window seats", about="Morgan")
        with pytest.raises(MemoryEsError) as unknown:
            store.recall("window seats", about="0123456789abcdef")
    assert [g.text for g in lessons.guidance] == ["Book window seats early for long flights"]
    assert [h.id for h in lessons.recall.hits] == [h.id for h in plain.recall.hits]
    # about: no guidance section, that person's fact sheet, the ordinary hits unchanged
    assert about.guidance == () and GUIDANCE_HEADING not in about.text
    assert [s.name for s in about.fact_sheets] == ["Morgan"]
    assert [h.id for h in about.recall.hits] == [h.id for h in plain.recall.hits]
    assert bad_kind.value.code == "recall_invalid_kind"
    assert bad_about.value.code == "recall_invalid_about" and "about" in str(bad_about.value)
    assert unknown.value.code == "recall_about_unknown"


def test_g27_read_only_door_and_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "r"
    seeded(root).close()
    monkeypatch.setattr(memory_es.root, "make_embedder", lambda block: WordBagEmbedder())
    with MemoryRoot.open(root) as reader:
        lessons = reader.recall("window seats", kind="lesson")
        with pytest.raises(InvalidArgumentError):
            reader.recall("window seats", kind="tip")
    assert [g.label for g in lessons.guidance] == ["lesson"]
    assert main(["--root", str(root), "search", "window seats", "--kind", "lesson"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"{GUIDANCE_HEADING}\n- lesson: Book window seats early for "
                                 "long flights (recorded 2026-05-04; current)")
    assert main(["--root", str(root), "--json", "search", "window seats", "--about",
                 lessons.recall.hits[0].id[:12]]) == 1  # a memory id names no person
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "recall_about_unknown"
    assert main(["--root", str(root), "search", "window seats", "--kind", "tip"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "recall_invalid_kind" in err
    assert main(["--root", str(root), "search", "window seats", "--about", "x"]) == 2
    assert "recall_invalid_about" in capsys.readouterr().err
