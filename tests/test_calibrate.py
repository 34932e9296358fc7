"""``memory_es.calibration.fit`` and ``memory-es calibrate``: fitting a recall calibration on
a user's labelled questions, and the ``memory.embeddings.calibration`` override (DESIGN 9.4).

A deterministic bag-of-words ``FakeEmbedder`` (word-hash vectors, as in tests/test_recall.py,
64-d so that unrelated words rarely share a bucket) embeds a small root of personal facts;
answerable questions reuse words of their answer, no-answer questions use words nothing stored
holds, so their best hybrid scores are well apart and the fitted floor must separate them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memory_es.calibration.report
import memory_es.root
from helpers_index import index_rows
from memory_es import cli
from memory_es.calibration.fit import (
    AUTO_FLOORS,
    AUTO_WINDOWS,
    LEXICAL_WEIGHTS,
    TAIL_GRID,
    Run,
    auto_youden,
    balanced_floor,
    evaluate,
    fit_auto,
    fit_calibration,
    plateau_middle,
)
from memory_es.calibration.labelled import LabelledQuestion, load_labelled
from memory_es.calibration.pools import PoolScorer
from memory_es.calibration.report import CalibrationReport, calibrate_root, config_snippet
from memory_es.config import MemoryConfig, parse_config
from memory_es.embeddings import EmbeddingIdentity
from memory_es.errors import MemoryEsError
from memory_es.intake import CompletedTurn
from memory_es.recall import Recaller
from memory_es.recall.asking import check_ask
from memory_es.recall.rank.calibrations import LOCAL_MINILM, calibration_for, configured_calibration
from memory_es.recall.rank.score import NOMIC_V15, Calibration
from memory_es.recall.retrieve.candidates import candidate_pool
from memory_es.recall.setup import ReadSetup
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.vectors.pending import embeddings_block

DIM = 64
JOURNAL: dict[str, Any] = {"mode": "journal", "embeddings": {"dim": DIM}}
OVERRIDE = {"noEvidenceCosine": 0.3, "recallFloor": 0.99, "recallTail": 0.1,
            "autoFloor": 0.62, "autoWindow": 0.04}
WORD = re.compile(r"\w+")
# Concept words share a bucket, so a paraphrase with no shared word is close in vector space
# while lexical search cannot see it (zeroing its cosine would lose it: that caps the grid).
CONCEPTS = {"tea": 0, "drink": 0, "grandma": 1, "grandmother": 1, "prefers": 2, "like": 2,
            "dentist": 3, "teeth": 3, "appointment": 4, "checkup": 4}

FACTS = [
    "Dentist appointment with doctor Hale at the Elm Street clinic",
    "The cat Biscuit needs her vaccinations at the vet",
    "Leo has swimming lessons at the Nordbad pool",
    "Martin Kessler is the tax advisor for the annual return",
    "Priya Natarajan leads the quarterly planning review",
    "The Golf needs new brake pads at Brightway Motors",
    "Book club reads a mystery novel this month",
    "Grandma prefers chamomile tea without sugar",
    "The office wifi password rotates every quarter",
    "Piano recital for Mia in the school auditorium",
    "Passport renewal happens at the Buergeramt office",
    "Gym membership at Fitbox renews automatically in spring",
]
ANSWERABLE = [  # (question, index of the fact that answers it)
    ("when is my teeth checkup", 0),  # paraphrases: no shared word, found by vectors only
    ("Biscuit cat vaccinations vet", 1),
    ("Leo swimming lessons pool", 2),
    ("who is the tax advisor Martin Kessler", 3),
    ("Priya Natarajan quarterly planning review", 4),
    ("Golf brake pads Brightway", 5),
    ("book club mystery novel", 6),
    ("what drink does my grandmother like", 7),
    ("office wifi password rotates", 8),
    ("Mia piano recital auditorium", 9),
    ("passport renewal Buergeramt", 10),
    ("Fitbox gym membership renews", 11),
]
NO_ANSWER = [  # (question, kind)
    ("capital of Mongolia", "unrelated"),
    ("quantum chromodynamics lattice", "unrelated"),
    ("volcanic eruption forecast Iceland", "unrelated"),
    ("stock exchange closing bell Tokyo", "near-miss"),
    ("marathon route through Copenhagen", "near-miss"),
    ("orchestra violin tuning Vienna", None),
]


class FakeEmbedder:
    """Deterministic hash-based bag of words (no concepts: lexical overlap is everything)."""

    def __init__(self, dim: int = DIM) -> None:
        self.identity = EmbeddingIdentity("fake", "bag-of-words", dim)
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.identity.dim, dtype=np.float64)
        for word in WORD.findall(text.casefold()):
            if word in CONCEPTS:
                v[CONCEPTS[word]] += 1.0
                continue
            digest = hashlib.sha256(f"bag:{word}".encode()).digest()
            v[5 + digest[0] % (self.identity.dim - 6)] += 1.0 if digest[1] & 1 else -1.0
        if not v.any():
            v[-1] = 1.0
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])


def clock() -> Any:
    state = {"now": datetime(2026, 3, 1, 9, 0, tzinfo=UTC)}

    def tick() -> datetime:
        state["now"] += timedelta(seconds=1)
        return state["now"]
    return tick


def admit_all(store: MemoryStore, texts: Sequence[str]) -> None:
    for n, text in enumerate(texts):
        result = store.persist_completed_turn(
            CompletedTurn(run_id=f"fact-{n}", outcome="success", answer=text))
        assert result.status == "admitted", result
    store.drain()
    while store.background.embed_pending():
        pass


def ids_by_text(root: Path) -> dict[str, str]:
    return {text: mid for mid, text in index_rows(root, "SELECT id, text FROM memories")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A Journal root of FACTS, embedded by the fake; the fact text -> memory id map."""
    root = tmp_path_factory.mktemp("calibrate") / "root"
    with MemoryStore.open(root, parse_config(JOURNAL), clock=clock(), background=False,
                          embedder=FakeEmbedder()) as store:
        admit_all(store, FACTS)
    ids = ids_by_text(root)
    assert len(ids) == len(FACTS)
    return root, ids


def labelled(ids: dict[str, str], answerable: int = len(ANSWERABLE),
             no_answer: int = len(NO_ANSWER)) -> dict[str, Any]:
    questions: list[dict[str, Any]] = [{"q": q, "gold": [ids[FACTS[n]]]}
                                       for q, n in ANSWERABLE[:answerable]]
    for q, kind in NO_ANSWER[:no_answer]:
        item: dict[str, Any] = {"q": q, "gold": []}
        if kind is not None:
            item["kind"] = kind
        questions.append(item)
    return {"questions": questions}


def write(tmp_path: Path, doc: object, name: str = "labelled.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), "utf-8")
    return path


def coded(excinfo: pytest.ExceptionInfo[MemoryEsError]) -> tuple[str, str]:
    return excinfo.value.code, str(excinfo.value)


# --- the fit over a real root ------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(built: tuple[Path, dict[str, str]],
           tmp_path_factory: pytest.TempPathFactory) -> CalibrationReport:
    root, ids = built
    path = write(tmp_path_factory.mktemp("labels"), labelled(ids))
    return calibrate_root(root, path, parse_config(JOURNAL), embedder=FakeEmbedder())


def test_fitted_floor_separates_answerable_from_no_answer(
        report: CalibrationReport) -> None:
    assert report.counts == {"answerable": 12, "no_answer": 6, "unrelated": 3, "near-miss": 2}
    assert (report.memories, report.vectors) == (len(FACTS), len(FACTS))
    assert report.identity == EmbeddingIdentity("fake", "bag-of-words", DIM).key
    floor = report.fitted.recall_floor
    assert len(report.answerable_best) == 12 and len(report.no_answer_best) == 6
    assert min(report.answerable_best) >= floor > max(report.no_answer_best)
    assert report.fit["balanced_accuracy"] == 1.0
    # The other numbers follow the documented rules.
    # the tail: the narrowest whose cut keeps every answer the ranking has in its top 5
    assert report.fitted.recall_tail in TAIL_GRID
    assert report.metrics["fitted"]["returned_recall_at_5"] >= \
        report.metrics["fitted"]["recall_at_5"] - 0.005
    assert report.fitted.lexical_weight in LEXICAL_WEIGHTS
    # a conversation turn's numbers are fitted too; these facts belong to no conversation, so
    # every pair ties and the default (a turn weighed like any line) stays
    assert (report.fitted.dialogue_weight, report.fitted.dialogue_boost) == (
        report.fitted.lexical_weight, 1.0)
    # the automatic block: the pair with the best "answer shown" minus "no-answer shown a
    # block" on these questions, so never worse than the reference's pair
    assert report.fitted.auto_floor in AUTO_FLOORS
    assert report.fitted.auto_window in AUTO_WINDOWS

    def youden(name: str) -> float:
        m = report.metrics[name]
        return m["auto_answer_present"] - m["auto_block_on_unanswerable"]

    assert youden("fitted") >= youden("reference") - 0.005
    assert youden("fitted") > 0.5
    # The paraphrases (vector-only answers) cap the no-evidence cosine below their cosine.
    assert 0.0 < report.fitted.no_evidence_cosine < 0.5


def test_metrics_are_consistent(report: CalibrationReport) -> None:
    fitted = report.metrics["fitted"]
    # Separated best scores: every no-answer question abstains, no answerable one does.
    assert fitted["abstain_all"] == 1.0
    assert fitted["abstain_unrelated"] == 1.0 and fitted["abstain_near-miss"] == 1.0
    assert fitted["false_abstention"] == 0.0
    for name in ("reference", "current", "fitted"):
        m = report.metrics[name]
        assert 0.0 <= m["recall_at_1"] <= m["recall_at_5"] <= 1.0
        assert m["recall_at_1"] <= m["mrr"] <= 1.0
        assert m["returned_recall_at_5"] <= m["recall_at_5"]
        assert 0.0 <= m["false_abstention"] <= 1.0
    # Every question repeats its answer's words: the fake ranks each answer first.
    assert fitted["recall_at_1"] == 1.0 and fitted["mrr"] == 1.0
    # The fake identity has no shipped calibration and no override: current is the reference.
    assert report.current == NOMIC_V15
    assert report.metrics["current"] == report.metrics["reference"]
    # The reference's floor 0.65 is too high for this embedder: it abstains on answerable
    # questions that the fitted floor keeps.
    assert report.metrics["reference"]["false_abstention"] > 0.0


def test_report_json_and_snippet(report: CalibrationReport) -> None:
    doc = report.to_json()
    json.dumps(doc, allow_nan=False)  # NaN-free: kinds nobody labelled are null
    assert doc["calibration"]["fitted"]["recall_floor"] == report.fitted.recall_floor
    snippet = doc["config"]
    cal = snippet["memory"]["embeddings"]["calibration"]
    assert set(cal) == {"noEvidenceCosine", "recallFloor", "recallTail", "autoFloor",
                        "autoWindow", "lexicalWeight", "dialogueWeight", "dialogueBoost",
                        "dialogueSupport", "echoRemoval"}
    # The snippet, merged into a config, is accepted and reproduces the fitted calibration.
    config = parse_config({**JOURNAL, "embeddings": {**JOURNAL["embeddings"], **snippet[
        "memory"]["embeddings"]}})
    assert calibration_for(None, configured_calibration(config)) == report.fitted


def test_help_and_readme_say_what_calibrate_fits(report: CalibrationReport,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The text matches the code: every number, the automatic floor fitted, not kept."""
    from memory_es.recall.rank.score import NOMIC_V15

    assert report.fitted.auto_floor != NOMIC_V15.auto_floor  # fitted here, not the reference's
    assert cli.main(["calibrate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the recall calibration numbers" in text and "stay at the reference" not in text
    for name in ("echoRemoval", "lexicalWeight", "dialogueWeight", "dialogueBoost",
                 "dialogueSupport", "turnModel",
                 "noEvidenceCosine", "recallFloor", "recallTail", "autoFloor", "autoWindow"):
        assert name in text, name
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `calibrate "))
    assert "fits the recall numbers" in row and "stay the reference's" not in row
    assert "turn model" in row


# --- pure fitting ------------------------------------------------------------------------------


def test_balanced_floor_takes_the_middle_of_the_best_interval() -> None:
    floor, acc = balanced_floor([0.8, 0.9, 0.7], [0.2, 0.3, 0.4])
    assert acc == 1.0 and floor == pytest.approx(0.55)
    floor, acc = balanced_floor([0.5, 0.9], [0.6, 0.1])  # overlap: 3 of 4 right at best
    assert acc == 0.75


def test_fit_calibration_over_given_rankings() -> None:
    """``full(nec, i)`` answers per question; a gold found only up to nec 0.3 caps the
    plateau (0.00 .. 0.30), whose middle is taken, not its edge."""
    golds = [frozenset({"a"}), frozenset({"b"}), frozenset(), frozenset()]

    def full(nec: float, i: int) -> tuple[list[str], float]:
        rankings = [["a", "x"], ["b", "y"] if nec <= 0.3 else ["y", "b"], ["z"], ["w"]]
        best = [0.9, 0.8, 0.5, 0.3][i]
        return rankings[i], best

    cal, fit = fit_calibration(golds, full, range(4))
    assert cal.no_evidence_cosine == 0.15  # the middle of the values that cost no ranking
    assert cal.recall_floor == 0.65  # the middle of 0.5 .. 0.8
    assert cal.recall_tail == 0.15 and fit["scale"] == 1.0
    assert (cal.auto_floor, cal.auto_window) == (NOMIC_V15.auto_floor, NOMIC_V15.auto_window)


def test_plateau_middle_keeps_away_from_the_cliff() -> None:
    """USE's dev plateau at lexical weight 0.25 (ranking held at 0.00-0.11 and 0.20, fell from
    0.21): the middle, not the edge the previous rule took."""
    plateau = [round(0.01 * n, 2) for n in range(12)] + [0.2]
    assert plateau_middle(plateau) == 0.06
    assert plateau_middle(list(reversed(plateau))) == 0.06  # order does not matter
    assert plateau_middle([0.19, 0.2]) == 0.2  # even: the upper one, as balanced_floor's ties
    assert plateau_middle([0.3]) == 0.3
    with pytest.raises(ValueError):
        plateau_middle([])


def test_evaluate_counts_kinds_apart() -> None:
    questions = [LabelledQuestion("a", frozenset({"m1"})),
                 LabelledQuestion("b", frozenset(), "unrelated"),
                 LabelledQuestion("c", frozenset(), "near-miss")]
    runs = {0: Run(["m2", "m1"], 0.7, ["m2"], False, auto=("m2", "m1")),
            1: Run(["m1"], 0.2, ["m1"], True),
            2: Run(["m1"], 0.63, ["m1"], False, auto=("m1",))}
    m = evaluate(questions, lambda cal, i: runs[i], NOMIC_V15, [0, 1, 2])
    assert (m["recall_at_1"], m["recall_at_5"], m["mrr"]) == (0.0, 1.0, 0.5)
    assert m["returned_recall_at_5"] == 0.0
    assert (m["abstain_unrelated"], m["abstain_near-miss"], m["abstain_all"]) == (1.0, 0.0, 0.5)
    assert m["false_abstention"] == 0.0
    assert m["auto_block_on_unanswerable"] == 0.5  # the near-miss got a block
    assert m["auto_lines_unanswerable"] == 0.5
    assert m["auto_answer_present"] == 1.0  # m1 is among the answerable one's lines
    assert math.isnan(evaluate(questions[:2], lambda cal, i: runs[i], NOMIC_V15,
                               [0, 1])["abstain_near-miss"])


def test_pool_scorer_matches_recall(built: tuple[Path, dict[str, str]]) -> None:
    """The fit scores pools exactly as ``recall`` would: same hits, same evidence."""
    root, ids = built
    fake = FakeEmbedder()
    question = LabelledQuestion("Leo swimming lessons pool", frozenset({ids[FACTS[2]]}))
    with MemoryStore.open(root, parse_config(JOURNAL), background=False,
                          embedder=fake) as store:
        expected = store.recall(question.text)
        conn = store.projections.get().index.conn
        matrix = store.vectors.matrix(fake, conn)
        pool = candidate_pool(
            conn, question.text, query_vector=fake.embed([question.text])[0], matrix=matrix)
    scorer = PoolScorer([question], [pool], datetime.now(UTC))
    run = scorer.run(NOMIC_V15, 0)
    assert list(run.returned) == [h.id for h in expected.recall.hits]
    assert run.insufficient == (expected.recall.evidence == "insufficient")
    assert run.ranking[0] == ids[FACTS[2]]


# --- the labelled file -------------------------------------------------------------------------


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["questions"].__setitem__(3, {"gold": []}),
     "questions[3].q: required key is missing"),
    (lambda d: d["questions"][2].__setitem__("gold", "m1"),
     "questions[2].gold: expected an array of memory ids"),
    (lambda d: d["questions"][4].__setitem__("answer", "x"), "questions[4].answer: unknown key"),
    (lambda d: d["questions"][1].__setitem__("kind", "unrelated"),
     "questions[1].kind: only for no-answer questions (gold [])"),
    (lambda d: d["questions"][13].__setitem__("kind", "offtopic"),
     'questions[13].kind: expected "unrelated" or "near-miss"'),
    (lambda d: d["questions"][5]["gold"].append(d["questions"][5]["gold"][0]),
     "questions[5].gold[1]: duplicate id"),
    (lambda d: d["questions"][0].__setitem__("q", "  "),
     "questions[0].q: expected a non-empty string"),
    (lambda d: d["questions"].__setitem__(7, "why?"),
     'questions[7]: expected an object with "q" and "gold"'),
    (lambda d: d.__setitem__("extra", 1), "extra: unknown key"),
])
def test_invalid_file_names_the_question(built: tuple[Path, dict[str, str]], tmp_path: Path,
                                         mutate: Any, message: str) -> None:
    root, ids = built
    doc = labelled(ids)
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(MemoryEsError) as excinfo:
        calibrate_root(root, path, parse_config(JOURNAL), embedder=FakeEmbedder())
    code, text = coded(excinfo)
    assert code == "calibrate_invalid_file"
    assert text.startswith(f"calibrate_invalid_file: {path}: ")
    assert message in text


def test_unknown_and_dropped_gold_ids(built: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, ids = built
    doc = labelled(ids)
    doc["questions"][6]["gold"] = [ids[FACTS[6]], "0" * 64]
    with pytest.raises(MemoryEsError) as excinfo:
        calibrate_root(root, write(tmp_path, doc), parse_config(JOURNAL), embedder=FakeEmbedder())
    code, text = coded(excinfo)
    assert code == "calibrate_invalid_file"
    assert f'questions[6].gold[1]: no memory "{"0" * 64}" in the index' in text


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "invalid JSON: Expecting property name enclosed in double quotes at line 1"),
    ("[]", 'expected an object {"questions": [...]}'),
    ('{"questions": {}}', 'expected an object {"questions": [...]}'),
])
def test_unreadable_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(MemoryEsError) as excinfo:
        load_labelled(path)
    assert coded(excinfo) == ("calibrate_invalid_file",
                              f"calibrate_invalid_file: {path}: {message}"
                              + (" column 2" if "JSON" in message else ""))
    with pytest.raises(MemoryEsError) as excinfo:
        load_labelled(tmp_path / "missing.json")
    assert excinfo.value.code == "calibrate_invalid_file"


@pytest.mark.parametrize(("answerable", "no_answer"), [(9, 6), (12, 4)])
def test_too_few_questions(built: tuple[Path, dict[str, str]], tmp_path: Path,
                           answerable: int, no_answer: int) -> None:
    root, ids = built
    path = write(tmp_path, labelled(ids, answerable, no_answer))
    with pytest.raises(MemoryEsError) as excinfo:
        calibrate_root(root, path, parse_config(JOURNAL), embedder=FakeEmbedder())
    assert coded(excinfo) == (
        "calibrate_too_few",
        f"calibrate_too_few: {path}: {answerable} answerable and {no_answer} no-answer "
        "questions; a calibration needs at least 10 and 5")


# --- roots without embeddings ------------------------------------------------------------------


def test_lite_root_needs_embeddings(tmp_path: Path, built: tuple[Path, dict[str, str]]) -> None:
    _, ids = built
    root = tmp_path / "lite"
    with MemoryStore.open(root, MemoryConfig(), clock=clock(), background=False) as store:
        admit_all(store, FACTS)
    path = write(tmp_path, labelled(ids))
    with pytest.raises(MemoryEsError) as excinfo:
        calibrate_root(root, path, MemoryConfig())
    code, text = coded(excinfo)
    assert code == "calibrate_needs_embeddings"
    assert 'memory.mode is "lite"' in text
    # A Journal config over that Lite-built root: no vectors to calibrate on.
    path = write(tmp_path, labelled(ids_by_text(root)))
    with pytest.raises(MemoryEsError) as excinfo:
        calibrate_root(root, path, parse_config(JOURNAL), embedder=FakeEmbedder())
    code, text = coded(excinfo)
    assert code == "calibrate_needs_embeddings"
    assert "holds no vectors for" in text


# --- the config override -----------------------------------------------------------------------


def test_calibration_for_prefers_override_then_identity_then_reference() -> None:
    config = parse_config({**JOURNAL, "embeddings": {"dim": DIM, "calibration": OVERRIDE}})
    override = configured_calibration(config)
    local = EmbeddingIdentity("local", "all-MiniLM-L6-v2-onnx-int8", 384)
    # the numbers the override leaves out are the identity's shipped ones (lexical weight, a
    # turn's weight and boost), or none (the support, echo removal and turn model: an override
    # fitted before they existed has floors fitted without them)
    assert LOCAL_MINILM.dialogue_support > 0 and LOCAL_MINILM.echo_removal > 0
    assert LOCAL_MINILM.turn_model is not None
    assert calibration_for(local, override) == Calibration(
        0.3, 0.99, 0.1, 0.62, 0.04, lexical_weight=LOCAL_MINILM.lexical_weight,
        dialogue_weight=LOCAL_MINILM.dialogue_weight, dialogue_boost=LOCAL_MINILM.dialogue_boost,
        dialogue_support=0.0, echo_removal=0.0)
    assert calibration_for(local) == LOCAL_MINILM
    assert calibration_for(EmbeddingIdentity("fake", "x", 8)) == NOMIC_V15
    assert calibration_for(None) == NOMIC_V15
    assert configured_calibration(parse_config(JOURNAL)) is None
    assert configured_calibration(MemoryConfig()) is None


def test_recaller_binds_config_embedder_and_calibration(built: tuple[Path, dict[str, str]]
                                                         ) -> None:
    """One ``Recaller`` per (config, embedder): the calibration they imply, lexical without an
    embedder, and the same recall and automatic block as the store's."""
    root, _ = built
    strict = parse_config({**JOURNAL, "embeddings": {"dim": DIM, "calibration": OVERRIDE}})
    fake = FakeEmbedder()
    assert Recaller(ReadSetup.of(strict), fake).calibration == \
        Calibration(0.3, 0.99, 0.1, 0.62, 0.04)
    assert Recaller(ReadSetup.of(parse_config(JOURNAL)), fake).calibration == NOMIC_V15
    lite = Recaller(ReadSetup.of(MemoryConfig()), None)
    assert lite.lexical and lite.calibration == NOMIC_V15 and lite.embed_query("x") is None
    assert embeddings_block(MemoryConfig()) is None
    assert embeddings_block(strict) is strict.embeddings
    question = "Priya Natarajan quarterly planning review"
    with MemoryStore.open(root, strict, background=False, embedder=fake) as store:
        expected = store.recall(question)
        block = store.auto_recall(question)
        now = store._clock()
        conn = store.projections.get().index.conn
        recaller = Recaller(ReadSetup.of(strict), fake)
        assert not recaller.lexical
        vector = recaller.embed_query(question)
        assert vector is not None
        matrix = recaller.load_matrix(conn)
        got = recaller.recall(conn, question, now=now, query_vector=vector, matrix=matrix)
        assert got.to_json() == expected.to_json()
        fresh = recaller.answer(check_ask(question, 10), lambda: contextlib.nullcontext(conn),
                                now=lambda: now, limit=10)  # a read-only door's: no turns
        assert fresh.to_json() == expected.to_json()
        assert recaller.auto_block(conn, question, now=now, query_vector=vector, matrix=matrix,
                                   session=None).text == block
        degraded = recaller.recall(conn, question, now=now, query_vector=None, matrix=None)
        assert degraded.degraded and degraded.recall.evidence is None


def test_override_changes_recall_evidence(built: tuple[Path, dict[str, str]],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """recallFloor 0.99 makes a well-answered question ``insufficient``, in the store's recall
    and in the read-only search; without the override the same question has evidence."""
    root, ids = built
    question = "Priya Natarajan quarterly planning review"
    plain = parse_config(JOURNAL)
    strict = parse_config({**JOURNAL, "embeddings": {"dim": DIM, "calibration": OVERRIDE}})
    results = {}
    for name, config in (("plain", plain), ("override", strict)):
        with MemoryStore.open(root, config, background=False, embedder=FakeEmbedder()) as store:
            results[name] = store.recall(question)
    assert results["plain"].recall.hits[0].id == ids[FACTS[4]]
    assert results["plain"].recall.evidence is None
    assert results["override"].recall.hits[0].id == ids[FACTS[4]]
    assert results["override"].recall.evidence == "insufficient"

    monkeypatch.setattr(memory_es.root, "make_embedder", lambda block: FakeEmbedder())
    assert MemoryRoot.open(root, plain).recall(question).recall.evidence is None
    searched = MemoryRoot.open(root, strict).recall(question)
    assert not searched.degraded and searched.recall.evidence == "insufficient"


def test_override_changes_the_report_current(built: tuple[Path, dict[str, str]],
                                             tmp_path: Path) -> None:
    root, ids = built
    config = parse_config({**JOURNAL, "embeddings": {"dim": DIM, "calibration": OVERRIDE}})
    report = calibrate_root(root, write(tmp_path, labelled(ids)), config,
                            embedder=FakeEmbedder())
    assert report.current == Calibration(0.3, 0.99, 0.1, 0.62, 0.04)
    assert report.metrics["current"]["false_abstention"] == 1.0  # nothing clears 0.99


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_prints_numbers_table_and_snippet(built: tuple[Path, dict[str, str]], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = built
    monkeypatch.setattr(memory_es.calibration.report, "make_embedder",
                        lambda block: FakeEmbedder())
    config_path = write(tmp_path, {"memory": JOURNAL}, "config.json")
    labels = write(tmp_path, labelled(ids))
    argv = ["--root", str(root), "--config", str(config_path), "calibrate", str(labels)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    for line in ("noEvidenceCosine", "recallFloor", "recallTail", "autoFloor", "reference",
                 "current", "fitted", "false abst"):
        assert line in out
    snippet = json.loads(out[out.index('{\n  "memory"'):])
    cal = snippet["memory"]["embeddings"]["calibration"]
    # The printed snippet is the library's fit, and a valid config once merged.
    fitted = calibrate_root(root, labels, parse_config(JOURNAL), embedder=FakeEmbedder()).fitted
    assert snippet == config_snippet(fitted)
    merged = {"memory": {**JOURNAL, "embeddings": {**JOURNAL["embeddings"], "calibration": cal}}}
    assert configured_calibration(parse_config(merged)) is not None

    assert cli.main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"] == snippet
    assert doc["metrics"]["fitted"]["false_abstention"] == 0.0
    assert doc["metrics"]["fitted"]["abstain_near-miss"] == 1.0


def test_cli_errors_are_one_line_exit_2(built: tuple[Path, dict[str, str]], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = built
    labels = write(tmp_path, labelled(ids, 3, 1))
    lite = write(tmp_path, {"memory": {"mode": "lite"}}, "lite.json")
    assert cli.main(["--root", str(root), "--config", str(lite), "calibrate",
                     str(labels)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memory-es: error: calibrate_needs_embeddings: ")
    config_path = write(tmp_path, {"memory": JOURNAL}, "config.json")
    assert cli.main(["--root", str(root), "--config", str(config_path), "calibrate",
                     str(labels)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memory-es: error: calibrate_too_few: {labels}: 3 answerable and 1 "
                   "no-answer questions; a calibration needs at least 10 and 5"]


def test_pool_fixture_sanity() -> None:
    """Guard for the fixtures themselves: distinct questions, every fact asked about once."""
    assert sorted(n for _, n in ANSWERABLE) == list(range(len(FACTS)))
    assert len({q for q, _ in ANSWERABLE + [(q, 0) for q, _ in NO_ANSWER]}) == 18



def test_override_changes_the_automatic_block(built: tuple[Path, dict[str, str]]) -> None:
    """``auto_recall`` uses the override too: autoFloor 0.99 silences a block that the
    reference's 0.62 shows."""
    root, _ = built
    text = "Priya Natarajan quarterly planning review"
    blocks = {}
    for name, floor in (("reference", 0.62), ("override", 0.99)):
        calibration = {**OVERRIDE, "recallFloor": 0.5, "autoFloor": floor}
        config = parse_config({**JOURNAL, "embeddings": {"dim": DIM, "calibration": calibration}})
        with MemoryStore.open(root, config, background=False, embedder=FakeEmbedder()) as store:
            blocks[name] = store.auto_recall(text)
    assert "Priya Natarajan" in blocks["reference"]
    assert blocks["override"] == ""


def test_held_out_figures_score_each_half_with_the_other_halfs_numbers(
        report: CalibrationReport) -> None:
    """Issue 12 item 5: beside the in-sample figures, a 2-fold held-out row, in the JSON and
    the text, never scored with numbers fitted on the same questions."""
    from memory_es.calibration.report import HELD_OUT, _held_out, render_text

    held = report.metrics[HELD_OUT]
    assert set(held) == set(report.metrics["fitted"])
    assert report.to_json()["metrics"][HELD_OUT]["recall_at_5"] is not None
    assert "held out" in render_text(report)

    questions = [LabelledQuestion(f"q{i}", frozenset({f"m{i}"}) if i < 6 else frozenset(),
                                  None if i < 6 else "unrelated") for i in range(10)]
    fitted_on: list[tuple[int, ...]] = []
    scored: list[tuple[float, int]] = []

    def fit_on(idx: Sequence[int]) -> tuple[Calibration, dict[str, Any]]:
        fitted_on.append(tuple(idx))
        return Calibration(recall_floor=len(fitted_on) / 10), {}

    def run(cal: Calibration, i: int) -> Run:
        scored.append((cal.recall_floor, i))
        return Run([f"m{i}"], 0.5, [f"m{i}"], False)

    assert _held_out(questions, fit_on, run, NOMIC_V15) is not None
    first, second = (set(f) for f in fitted_on)
    assert not first & second and first | second == set(range(10))
    for floor, i in scored:  # question i was scored by the calibration not fitted on it
        assert (i in first) == (floor == 0.2)


def test_fit_auto_takes_the_pair_that_shows_answers_and_stays_quiet_otherwise() -> None:
    """fit_auto: the (floor, window) with the best share of answers shown minus no-answer
    questions shown a block; narrowest window, then highest floor, among near-ties (H3, H4,
    H17)."""
    golds = [frozenset({"a"}), frozenset({"b"}), frozenset(), frozenset()]
    best = [0.8, 0.55, 0.5, 0.3]  # question i's best score
    second = {0: ("a", 0.79), 1: ("b", 0.50)}  # the answer, second at this score

    def auto(cal: Calibration, i: int) -> list[str]:
        if best[i] < cal.auto_floor - 1e-9:
            return []
        lines = [f"top{i}"]
        if i in second and second[i][1] >= best[i] - cal.auto_window - 1e-9:
            lines.append(second[i][0])
        return lines

    cal = fit_auto(golds, auto, NOMIC_V15, range(4))
    # Showing b needs window 0.05 and a floor <= 0.55, which also lets the 0.5 near-miss in
    # unless the floor is above 0.5: J = 1.0 at floor 0.51-0.55, window 0.05.
    assert (cal.auto_floor, cal.auto_window) == (0.55, 0.05)
    assert auto_youden(golds, auto, cal, range(4)) == 1.0
    with pytest.raises(ValueError):
        fit_auto([frozenset({"a"})], auto, NOMIC_V15, [0])
