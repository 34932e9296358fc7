"""Who stated a line, on every read (SPEC H9, K7, J9; issue 15 item 5): the owner's own words
are "you said", an assistant's line and an enhanced Remember "assistant noted", a
document's "from a document"; a line without a storable conversation id is also labelled
"source conversation unknown", independent of who stated it."""

from __future__ import annotations

from pathlib import Path

from helpers_capture import extraction, memory, open_capture, review, script, turn
from memory_es.intake import CompletedTurn

LINES = {
    "The owner's bike is a blue Brompton.": ("user", "you said"),
    "The weather service reported heavy rain at noon.": ("assistant", "assistant noted"),
    "The lease document names March 31 as the move out date.": ("document",
                                                                 "from a document"),
}


def test_h9_the_automatic_block_and_list_say_who_stated_each_line(tmp_path: Path) -> None:
    records = script(
        ("extract", "r1", extraction([memory(text, source=source, salience=0.9)
                                      for text, (source, _) in LINES.items()])),
        ("review", "r1", review("keep", "keep")))
    store, _ = open_capture(tmp_path / "root", records)
    with store:
        store.persist_completed_turn(turn("r1", "bike, rain and the lease"))
        store.drain()
        items = {m.text: m for m in store.list_memories().memories}
        for text, (_, said) in LINES.items():
            assert items[text].attribution == said
            assert not items[text].provenance_unknown
            block = store.auto_context(text).text
            line = next(x for x in block.splitlines() if text in x)
            assert line.endswith(f"; {said})"), line
            assert "source conversation unknown" not in line


def test_k7_a_line_without_a_conversation_id_says_so_beside_its_attribution(
        tmp_path: Path) -> None:
    text = "The owner's bike is a blue Brompton."
    records = script(("extract", "r1", extraction([memory(text, salience=0.9)])),
                     ("review", "r1", review("keep")))
    store, _ = open_capture(tmp_path / "root", records)
    with store:
        store.persist_completed_turn(CompletedTurn(
            run_id="r1", outcome="success", answer="Noted.", capture_text="my bike",
            session=None, speaker_kind="human-turn", trigger="human"))
        store.drain()
        (item,) = store.list_memories().memories
        assert (item.attribution, item.provenance_unknown) == ("you said", True)
        assert item.to_json()["provenanceUnknown"] is True
        line = next(x for x in store.auto_context(text).text.splitlines() if text in x)
        assert line.endswith("; you said; source conversation unknown)"), line
