"""Validator for ``bench/data/recall_heldout.json``, the independently written recall set.

Fails when the file breaks its own contract: shape, ids, clock, distinct texts, gold ids, kinds
and their minimum counts, the dev/test split, long chat turns, the multilingual questions, and
the rule that a paraphrase question shares no content word with its gold memories. The
function-word list, stemmer and language guesser below are this test's own, kept deliberately
crude; when a check fails, fix the data, not the check.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"
PATH = DATA / "recall_heldout.json"
GENERATOR = DATA / "make_heldout.py"

MIN_KIND = {
    "paraphrase": 80,
    "anchor": 60,
    "multilingual": 60,
    "temporal": 50,
    "entity": 50,
    "unrelated": 80,
    "near-miss": 80,
}
ANSWERABLE = {"paraphrase", "anchor", "multilingual", "temporal", "entity"}
UNANSWERED = {"unrelated", "near-miss"}
LANGS = {"pl", "es", "de", "fr", "en"}


def _vocab(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _vocab(
    "a an the and or but if then than so as of to in on at by for with from into onto about "
    "over under after before between through during up down out off again there here this "
    "that these those it its i me my mine myself we us our ours you your yours he him his she "
    "her they them their theirs what which who whom whose when where why how whether is am are "
    "was were be been being do does did done doing have has had having will would shall should "
    "can could may might must not no nor any some all each every both either neither other "
    "another such own same just also too very only yet still ever much many more most anything "
    "something nothing anyone someone until since while per via s t d ll m re ve don doesn "
    "didn isn aren wasn weren won"
)

LANG_WORDS = {
    "en": _vocab(
        "the and is are my to of for with what when where who did does how which have has our "
        "we you from"
    ),
    "pl": _vocab(
        "się nie jest czy jak gdzie kiedy co na w z że mój moja moje mojej mojego mojemu ile "
        "mam był była było jaki jaka jakie który która od po dla przez ja mi u o za jestem "
        "mamy nam nas"
    ),
    "es": _vocab(
        "el los las del que qué y es un una por para con cuándo dónde cuánto cuánta cuántos "
        "cómo quién mi mis se su al lo hay fue está tengo tiene nuestro nuestra"
    ),
    "de": _vocab(
        "der die das und ist ich wir mein meine meinen meiner meinem wann wo wie wer welche "
        "welcher welches zum zur sich vom seit mit für von zu im auf den dem nicht ein eine "
        "einen hat habe sind bei uns unser unsere unseren noch"
    ),
    "fr": _vocab(
        "le les des du et est une que qui quel quelle quels quelles quand où combien mon ma "
        "mes notre nos pour avec dans sur au aux ce cette je nous vous pas à été il elle "
        "qu"
    ),
}


def words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def stems(text: str) -> set[str]:
    """Content-word stems: letters/digits tokens, function words dropped, first five letters."""
    return {w[:5] for w in words(text) if w not in FUNCTION_WORDS}


def guess_lang(text: str) -> str:
    scores = {lang: sum(w in vocab for w in words(text)) for lang, vocab in LANG_WORDS.items()}
    best = max(scores.values())
    winners = [lang for lang, score in scores.items() if score == best]
    return winners[0] if best > 0 and len(winners) == 1 else "?"


def instant(value: str) -> datetime:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    loaded = json.loads(PATH.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def memories(data: dict[str, Any]) -> dict[str, str]:
    return {m["id"]: m["text"] for m in data["memories"]}


def test_top_level(data: dict[str, Any]) -> None:
    assert data["version"] == 1
    assert isinstance(data["description"], str) and data["description"]
    instant(data["now"])
    assert set(data) == {"version", "description", "now", "memories", "questions"}


def test_memories_ids_clock_and_texts(data: dict[str, Any]) -> None:
    mems = data["memories"]
    assert len(mems) >= 650
    now = instant(data["now"])
    previous = None
    seen: set[str] = set()
    for n, m in enumerate(mems, 1):
        assert set(m) == {"id", "at", "text"}, m
        assert m["id"] == f"h{n:03d}", m["id"]
        at = instant(m["at"])
        assert at < now, m["id"]
        if previous is not None:
            assert at > previous, f"{m['id']}: at not strictly increasing"
        previous = at
        text = " ".join(m["text"].split())
        assert text, m["id"]
        assert text not in seen, f"{m['id']}: duplicate text"
        seen.add(text)
    first = instant(mems[0]["at"])
    assert (now - first).days >= 240, "memories should spread over about nine months"


def test_long_chat_turns(data: dict[str, Any]) -> None:
    long_turns = [m for m in data["memories"] if 250 <= len(m["text"]) <= 900]
    assert len(long_turns) >= 150
    assert max(len(m["text"]) for m in data["memories"]) <= 900


def test_some_memories_are_not_english(data: dict[str, Any]) -> None:
    langs = Counter(guess_lang(m["text"]) for m in data["memories"])
    share = 1 - langs["en"] / len(data["memories"])
    assert 0.05 <= share <= 0.2, langs
    for lang in ("pl", "es", "de", "fr"):
        assert langs[lang] >= 8, langs


def test_questions_ids_kinds_and_gold(data: dict[str, Any], memories: dict[str, str]) -> None:
    assert set(MIN_KIND) == ANSWERABLE | UNANSWERED
    qs = data["questions"]
    assert len(qs) >= 450
    texts = Counter(q["question"] for q in qs)
    assert max(texts.values()) == 1, [t for t, c in texts.items() if c > 1]
    kinds: Counter[str] = Counter()
    for n, q in enumerate(qs, 1):
        assert q["id"] == f"hq{n:03d}", q["id"]
        assert set(q) <= {"id", "kind", "split", "question", "gold", "note", "lang"}, q
        kind = q["kind"]
        assert kind in MIN_KIND, q
        kinds[kind] += 1
        gold = q["gold"]
        assert len(gold) == len(set(gold)), q["id"]
        for g in gold:
            assert g in memories, f"{q['id']}: unknown gold {g}"
        if kind in ANSWERABLE:
            assert gold, f"{q['id']}: answerable question without gold"
        else:
            assert gold == [], f"{q['id']}: {kind} question with gold"
            assert isinstance(q.get("note"), str) and q["note"], f"{q['id']}: no note"
        if kind == "entity":
            assert 1 <= len(gold) <= 4, q["id"]
    for kind, minimum in MIN_KIND.items():
        assert kinds[kind] >= minimum, (kind, kinds[kind])


def test_split_is_stratified(data: dict[str, Any]) -> None:
    by_kind: dict[str, Counter[str]] = {}
    for q in data["questions"]:
        assert q["split"] in {"dev", "test"}, q["id"]
        by_kind.setdefault(q["kind"], Counter())[q["split"]] += 1
    for kind, counts in by_kind.items():
        assert counts["dev"] and counts["test"], kind
        share = counts["dev"] / (counts["dev"] + counts["test"])
        assert 0.3 <= share <= 0.5, (kind, share)


def test_multilingual_questions(data: dict[str, Any], memories: dict[str, str]) -> None:
    langs: Counter[str] = Counter()
    for q in data["questions"]:
        if q["kind"] != "multilingual":
            assert "lang" not in q, q["id"]
            continue
        lang = q["lang"]
        assert lang in LANGS, q["id"]
        langs[lang] += 1
        assert guess_lang(q["question"]) == lang, f"{q['id']}: question not in {lang}"
        # at least one gold memory is written in the other language: English memories for a
        # question in pl/es/de/fr, a pl/es/de/fr memory for an English question
        crossing = [g for g in q["gold"] if (guess_lang(memories[g]) == "en") != (lang == "en")]
        assert crossing, f"{q['id']}: no gold memory across languages"
    for lang in LANGS:
        assert langs[lang] >= 12, langs


def test_paraphrases_share_no_content_word(data: dict[str, Any], memories: dict[str, str]) -> None:
    problems = []
    for q in data["questions"]:
        if q["kind"] != "paraphrase":
            continue
        question = stems(q["question"])
        assert question, q["id"]
        for g in q["gold"]:
            shared = question & stems(memories[g])
            if shared:
                problems.append(f"{q['id']} vs {g}: {sorted(shared)}")
    assert not problems, problems


def test_generator_reproduces_the_file() -> None:
    spec = importlib.util.spec_from_file_location("make_heldout", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built, problems = module.build()
    assert problems == []
    assert module.dump(built) == PATH.read_text(encoding="utf-8")
