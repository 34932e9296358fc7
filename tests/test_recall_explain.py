"""``explain=True`` and hit sources (issue 12 items 4 and 7).

A user sees why a line ranks where it does: each hit's cosine, lexical evidence, anchor bonus,
RRF hint, graph hop and the cut it passed, and the query's term weights; the parts add up to
the score. Hits carry their source (conversation, intake id) for the host, never in the text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.cli import main
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.testing import WordBagEmbedder

TEXTS = ["Booked the dentist for 2026-12-09.", "The dentist moved to Elm Street.",
         "Dana owns the quarterly summary."]
JOURNAL = {"mode": "journal", "embeddings": {"provider": "local"}}


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore.open(tmp_path / "root", parse_config(JOURNAL), background=False,
                         embedder=WordBagEmbedder())
    for n, text in enumerate(TEXTS):
        s.persist_completed_turn(CompletedTurn(run_id=f"run-{n}", outcome="success",
                                               answer=text, session=f"conv-{n}"))
    s.drain()
    return s


def test_explain_parts_add_up_to_the_score(store: MemoryStore) -> None:
    with store:
        result = store.recall("dentist 2026-12-09", explain=True)
        assert result.explanation is not None
        assert result.explanation["scoring"] == "hybrid"
        weights = result.explanation["termWeights"]
        assert set(weights) >= {"dentist", "2026", "12", "09"}
        w = result.explanation["calibration"]["lexical_weight"]
        for n, hit in enumerate(result.recall.hits):
            parts = hit.explanation
            assert parts is not None
            joined = 1 - (1 - min(1.0, parts["semantic"])) * (1 - w * parts["lexicalEvidence"])
            total = joined + parts["anchorBonus"] + parts["rrfHint"] + parts["salience"]
            assert hit.score == pytest.approx(total, abs=1e-9)
            assert parts["graphHop"] is False
            assert parts["cut"].startswith("best hit" if n == 0 else "within the tail")
        top = result.recall.hits[0]
        assert top.text == TEXTS[0]
        assert top.explanation is not None and top.explanation["anchorBonus"] > 0  # the date
        plain = store.recall("dentist 2026-12-09")
        assert plain.explanation is None
        assert all(h.explanation is None for h in plain.recall.hits)
        assert [h.id for h in plain.recall.hits] == [h.id for h in result.recall.hits]


def test_hits_carry_sources_for_the_host_never_in_the_text(store: MemoryStore) -> None:
    with store:
        result = store.recall("dentist")
    top = result.recall.hits[0]
    assert top.source is not None
    assert top.source.intake_id in {run_hash("run-0"), run_hash("run-1")}
    assert top.source.session in {"conv-0", "conv-1"}
    body = result.to_json()
    assert body["results"][0]["source"] == top.source.to_json()
    assert "source" not in json.dumps(result.to_json(sources=False))
    assert "conv-" not in result.text and "run-" not in result.text


def test_cli_search_explain(store: MemoryStore, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    store.close()
    import memory_es.root
    monkeypatch.setattr(memory_es.root, "make_embedder", lambda block: WordBagEmbedder())
    config = tmp_path / "memory.json"
    config.write_text(json.dumps({"memory": JOURNAL}), "utf-8")
    root = str(tmp_path / "root")
    assert main(["--root", root, "--config", str(config), "search", "dentist",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert "scoring hybrid:" in out and "term weights: dentist=" in out
    assert "lexicalEvidence=" in out and "best hit: always kept" in out
    assert main(["--root", root, "--config", str(config), "search", "dentist", "--json",
                 "--explain"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["explain"]["scoring"] == "hybrid"
    assert all("explain" in item for item in body["results"])
    reader = MemoryRoot.open(root, parse_config(JOURNAL))
    assert reader.recall("dentist", explain=True).recall.hits[0].explanation is not None


def test_explain_lines_mark_a_cut_text_with_an_ellipsis(store: MemoryStore) -> None:
    """A hit's text above its score parts is cut at 60 characters with '…', so a reader
    knows there is more; a short text is shown whole."""
    from memory_es.recall.sections.result import explanation_lines

    long = ("The dentist said the crown needs a second appointment after the x-ray, "
            "probably in January.")
    store.remember(long)
    lines = explanation_lines(store.recall("dentist crown appointment", explain=True))
    shown = [line.split(" ", 1)[1] for line in lines if line[:1].isdigit()]
    assert any(s.endswith("…") and len(s) == 60 and long.startswith(s[:-1].rstrip())
               for s in shown), shown
    lines = explanation_lines(store.recall("Elm Street", explain=True))
    assert TEXTS[1] in [line.split(" ", 1)[1] for line in lines if line[:1].isdigit()]
    store.close()  # a short text is shown whole, without '…'



def test_recall_result_and_hit_describe_their_public_fields() -> None:
    """A host reading help(RecallResult) learns where a hit's id is; every public field of
    both dataclasses is described in the class docstring."""
    import dataclasses

    from memory_es.recall.rank.render import Hit
    from memory_es.recall.sections.result import RecallResult

    assert RecallResult.__doc__ is not None and "recall.hits[0].id" in RecallResult.__doc__
    for cls, fields in ((RecallResult, None), (Hit, ("id", "score", "text", "status",
                                                     "currentness", "source"))):
        doc = cls.__doc__ or ""
        names = fields or tuple(f.name for f in dataclasses.fields(cls))
        missing = [n for n in names if f"    {n}:" not in doc and f" {n}," not in doc]
        assert missing == [], (cls.__name__, missing)
