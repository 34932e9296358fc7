"""``memory-es calibrate LABELLED.json`` (DESIGN 9.4): :func:`calibrate_root` fits a recall
calibration on a real root's memories and reports the recall / abstention trade-off of the
reference, the currently effective and the fitted calibration, with a config snippet.

The fit is in-sample: the report scores the fitted calibration on the questions it was fitted
on, so treat its figures as an upper bound and prefer a set of a few dozen questions or more.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import apsw
import numpy as np

from memory_es.calibration.fit import (
    NEC_STEP,
    RANKING_SLACK,
    Run,
    evaluate,
    fit_auto,
    fit_calibration,
    fit_hybrid,
    fit_tail,
)
from memory_es.calibration.labelled import LabelledQuestion, check_gold, load_labelled
from memory_es.calibration.pools import PoolScorer
from memory_es.config import MemoryConfig
from memory_es.embeddings import (
    BATCH_SIZE,
    Embedder,
    EmbeddingError,
    embed_queries,
    make_embedder,
)
from memory_es.errors import MemoryEsError
from memory_es.history import verified_index
from memory_es.intake import utc_now
from memory_es.keystore import KeyStore
from memory_es.recall.engine import Recaller
from memory_es.recall.rank.score import NOMIC_V15, Calibration
from memory_es.recall.retrieve.candidates import candidate_pool
from memory_es.recall.setup import ReadSetup
from memory_es.text import counted
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import embeddings_block
from memory_es.vocabulary import TERMINAL_STATUSES

NEEDS_EMBEDDINGS: Final = "calibrate_needs_embeddings"

_CAMEL: Final = {"no_evidence_cosine": "noEvidenceCosine", "recall_floor": "recallFloor",
                 "recall_tail": "recallTail", "auto_floor": "autoFloor",
                 "auto_window": "autoWindow", "lexical_weight": "lexicalWeight",
                 "dialogue_weight": "dialogueWeight", "dialogue_boost": "dialogueBoost",
                 "dialogue_support": "dialogueSupport", "echo_removal": "echoRemoval"}


# --------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class CalibrationReport:
    """A fitted calibration and the recall / abstention trade-off of three calibrations."""

    identity: str  # the embedding identity key the vectors were searched under
    memories: int  # live memories in the index
    vectors: int  # of them, with a vector of this identity
    counts: dict[str, int]  # answerable, no_answer, unrelated, near-miss
    fitted: Calibration
    current: Calibration  # what recall uses now (config override, shipped, or reference)
    fit: dict[str, float]  # balanced_accuracy, scale, top_recall_at_5, top_mrr
    metrics: dict[str, dict[str, float]]  # "reference" / "current" / "fitted" -> evaluate()
    answerable_best: tuple[float, ...] = field(repr=False)  # best hybrid score, fitted nec
    no_answer_best: tuple[float, ...] = field(repr=False)
    reference: Calibration = NOMIC_V15

    def snippet(self) -> dict[str, Any]:
        return config_snippet(self.fitted)

    def to_json(self) -> dict[str, Any]:
        def clean(d: Mapping[str, float]) -> dict[str, float | None]:
            return {k: None if math.isnan(v) else round(v, 4) for k, v in d.items()}

        return {
            "identity": self.identity, "memories": self.memories, "vectors": self.vectors,
            "questions": dict(self.counts),
            "calibration": {"fitted": asdict(self.fitted), "current": asdict(self.current),
                            "reference": asdict(self.reference)},
            "fit": clean(self.fit),
            "metrics": {name: clean(m) for name, m in self.metrics.items()},
            "config": self.snippet(),
        }


_TURN_CAMEL: Final = {"evidence": "evidence", "neighbour_cosine": "neighbourCosine",
                      "neighbour_evidence": "neighbourEvidence", "length": "length",
                      "asking": "asking", "offset": "offset"}


def config_snippet(cal: Calibration) -> dict[str, Any]:
    """``{"memory": {"embeddings": {"calibration": {...}}}}`` for a config file; with a turn
    model, the turn's weight and support it replaces are left out (the config refuses both)."""
    block: dict[str, Any] = {_CAMEL[k]: v for k, v in asdict(cal).items() if k in _CAMEL}
    if cal.turn_model is not None:
        del block["dialogueWeight"], block["dialogueSupport"]
        block["turnModel"] = {_TURN_CAMEL[k]: v for k, v in asdict(cal.turn_model).items()}
    return {"memory": {"embeddings": {"calibration": block}}}


def _turn_line(cal: Calibration) -> str:
    t = cal.turn_model
    if t is None:
        return (f"  dialogueWeight   {cal.dialogue_weight:.3f}  dialogueBoost "
                f"{cal.dialogue_boost:.3f}  dialogueSupport {cal.dialogue_support:.3f}  a "
                "conversation turn's share of lexical evidence, its boost, and its best "
                "neighbour's share")
    return (f"  turnModel        evidence {t.evidence:.3f}  neighbourCosine "
            f"{t.neighbour_cosine:.3f}  neighbourEvidence {t.neighbour_evidence:.3f}  length "
            f"{t.length:.3f}  asking {t.asking:.3f}  offset {t.offset:.3f}  dialogueBoost "
            f"{cal.dialogue_boost:.3f}  a conversation turn's score, in units of its cosine")


def _pct(x: float) -> str:
    return "    -" if math.isnan(x) else f"{100 * x:5.1f}%"


def _num(x: float) -> str:
    return "    -" if math.isnan(x) else f"{x:5.3f}"


def render_text(report: CalibrationReport) -> str:
    """The operator's view: the six fitted numbers, the trade-off table and the config
    snippet."""
    c, f = report.counts, report.fitted
    lines = [
        f"calibration for {report.identity}: {c['answerable']} answerable and "
        f"{c['no_answer']} no-answer questions ({c['unrelated']} unrelated, "
        f"{c['near-miss']} near-miss); {report.vectors} of {report.memories} memories have "
        "vectors",
        f"  noEvidenceCosine {f.no_evidence_cosine:.3f}  highest on a {NEC_STEP} grid keeping "
        f"recall@5 / MRR within {RANKING_SLACK} of the best "
        f"({report.fit['top_recall_at_5']:.3f} / {report.fit['top_mrr']:.3f})",
        f"  recallFloor      {f.recall_floor:.3f}  best balanced accuracy "
        f"{report.fit['balanced_accuracy']:.3f} between answerable and no-answer best scores",
        f"  recallTail       {f.recall_tail:.3f}  the narrowest whose cut keeps the ranking's "
        "recall@5",
        f"  lexicalWeight    {f.lexical_weight:.3f}  hybrid scoring's share of lexical evidence",
        _turn_line(f),
        f"  echoRemoval      {f.echo_removal:.3f}  the share of the model's question axis taken "
        "out of a question and its lines",
        f"  autoFloor        {f.auto_floor:.3f}  autoWindow {f.auto_window:.3f}  the automatic "
        "block's pair with the best share of answers shown minus no-answer questions shown "
        "a block",
    ]
    if report.vectors < report.memories:
        missing = report.memories - report.vectors
        lines.append(f"  warning: {counted(missing, 'memory', 'memories')} "
                     f"{'has' if missing == 1 else 'have'} no vector yet; "
                     f"{'it was' if missing == 1 else 'they were'} scored lexically")
    lines += ["", "trade-off (reference, current, fitted: on these same questions, in-sample;"
              " held out: each half scored with numbers fitted on the other half)",
              f"  {'calibration':<12}{'floor':>6}{'R@1':>7}{'R@5':>7}{'MRR':>7}{'R@5 ret':>8}"
              f"{'abst unrel':>11}{'abst near':>10}{'abst all':>9}{'false abst':>11}"
              f"{'auto ans':>9}{'auto none':>10}"]
    cals = {"reference": report.reference, "current": report.current, "fitted": report.fitted,
            HELD_OUT: report.fitted}
    for name, m in report.metrics.items():
        label = "held out" if name == HELD_OUT else name
        floor = f"{cals[name].recall_floor:6.3f}" if name != HELD_OUT else f"{'':6}"
        lines.append(
            f"  {label:<12}{floor}{_num(m['recall_at_1']):>7}"
            f"{_num(m['recall_at_5']):>7}{_num(m['mrr']):>7}{_num(m['returned_recall_at_5']):>8}"
            f"{_pct(m['abstain_unrelated']):>11}{_pct(m['abstain_near-miss']):>10}"
            f"{_pct(m['abstain_all']):>9}{_pct(m['false_abstention']):>11}"
            f"{_pct(m['auto_answer_present']):>9}{_pct(m['auto_block_on_unanswerable']):>10}")
    lines += ["  (auto ans: answerable questions whose answer the automatic block shows; auto none:"
              " no-answer questions that get a block)",
              "", "config (merge into the memory block to use it):",
              json.dumps(report.snippet(), indent=2)]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# A root


def _embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    try:
        parts = [embed_queries(embedder, texts[s:s + BATCH_SIZE])
                 for s in range(0, len(texts), BATCH_SIZE)]
    except EmbeddingError as e:
        raise MemoryEsError(f"{e.code}: cannot embed the questions: {e}", code=e.code) from e
    return np.concatenate(parts).astype(np.float32)


HELD_OUT = "fitted, held out"


def _held_out(questions: Sequence[LabelledQuestion],
              fit_on: Callable[[Sequence[int]], tuple[Calibration, dict[str, Any]]],
              run: Callable[[Calibration, int], Run], fitted: Calibration
              ) -> dict[str, float] | None:
    """Two-fold held-out figures: questions alternate into two folds within each of
    answerable / unrelated / near-miss; each fold is scored with the calibration fitted on the
    other, so no question is scored by numbers fitted on it. None when a fold cannot be fitted
    (too few of a kind)."""
    folds: tuple[list[int], list[int]] = ([], [])
    for group in ("answerable", "unrelated", "near-miss", None):
        members = [i for i, q in enumerate(questions)
                   if (q.answerable and group == "answerable")
                   or (not q.answerable and q.kind == group)]
        for n, i in enumerate(members):
            folds[n % 2].append(i)
    try:
        cals = [fit_on(folds[0])[0], fit_on(folds[1])[0]]
    except ValueError:
        return None
    other = {i: cals[1 - k] for k in (0, 1) for i in folds[k]}
    return evaluate(questions, lambda _cal, i: run(other[i], i), fitted,
                    sorted(other))


def calibrate_root(root: str | Path, labelled_path: str | Path, config: MemoryConfig,
                   *, embedder: Embedder | None = None,
                   key_store: KeyStore | None = None) -> CalibrationReport:
    """Fit a calibration on ``labelled_path``'s questions over ``root``, read-only.

    The root's journal is verified and the active index generation opened read-only (like
    ``memory-es search``); questions are embedded with the configured provider (``embedder``
    overrides it, as in ``MemoryStore.open``) and searched against the stored vectors of that
    identity. Raises ``MemoryEsError``: ``calibrate_needs_embeddings`` (Lite, no embeddings
    block, or no vectors of this identity in the index), ``calibrate_invalid_file``,
    ``calibrate_too_few``, or the provider's code when embedding fails.
    """
    block = embeddings_block(config)
    if block is None:
        raise MemoryEsError(
            f"{NEEDS_EMBEDDINGS}: calibration needs embeddings: memory.mode is "
            f'"{config.mode}"; use a Journal or BuJo config with a memory.embeddings block',
            code=NEEDS_EMBEDDINGS)
    labelled = Path(labelled_path)
    questions = load_labelled(labelled)
    root = Path(root)
    with verified_index(root, key_store) as conn:  # never calibrate on a tampered root
        if conn is None:
            raise MemoryEsError(f"{NEEDS_EMBEDDINGS}: {root} has no index generation yet "
                                "(run drain)", code=NEEDS_EMBEDDINGS)
        check_gold(conn, labelled, questions)
        if embedder is None:
            embedder = make_embedder(block)
        assert embedder is not None  # an embeddings block always names a provider
        recaller = Recaller(ReadSetup.of(config), embedder)
        identity = embedder.identity
        matrix = VectorMatrix(identity.dim, identity.key)  # the key names its question axis
        with contextlib.suppress(apsw.SQLError):  # an index built by Lite: no vectors
            matrix.refresh(conn, identity.key)
        memories = sum(1 for (status,) in conn.execute("SELECT status FROM memories")
                       if status not in TERMINAL_STATUSES)
        if not len(matrix.rowids):
            raise MemoryEsError(
                f"{NEEDS_EMBEDDINGS}: the index holds no vectors for {identity.key}: open "
                "the root with this config and let it embed its memories first",
                code=NEEDS_EMBEDDINGS)
        vectors = _embed(embedder, [q.text for q in questions])
        pools = [candidate_pool(conn, q.text, query_vector=vectors[i], matrix=matrix)
                 for i, q in enumerate(questions)]

    current = recaller.calibration  # what recall uses now
    scoring = config.recall.scoring
    scorer = PoolScorer(questions, pools, utc_now(), scoring=scoring,
                        lexical_weight=current.lexical_weight,
                        dialogue=(current.dialogue_weight, current.dialogue_boost,
                                  current.dialogue_support), echo=current.echo_removal,
                        turn_model=current.turn_model)
    every = list(range(len(questions)))
    golds = [q.gold for q in questions]

    def fit_on(idx: Sequence[int]) -> tuple[Calibration, dict[str, Any]]:
        if scoring == "hybrid":
            plain = PoolScorer(questions, pools, scorer.now, scoring=scoring)
            cal, figures = fit_hybrid(golds, plain.with_weight, idx)
            figures.pop("by_lexical_weight", None)
            figures.pop("by_dialogue", None)
            figures.pop("by_echo", None)
            figures.pop("by_turn_model", None)
            return cal, figures
        cal, figures = fit_calibration(golds, scorer.full, idx, current.lexical_weight)
        cal = replace(cal, recall_tail=fit_tail(golds, scorer.run, cal, idx))
        return fit_auto(golds, scorer.auto, cal, idx), figures

    fitted, fit = fit_on(every)
    metrics = {name: evaluate(questions, scorer.run, cal, every)
               for name, cal in (("reference", NOMIC_V15), ("current", current),
                                 ("fitted", fitted))}
    held = _held_out(questions, fit_on, scorer.run, fitted)
    if held is not None:
        metrics[HELD_OUT] = held
    nec = fitted.no_evidence_cosine
    fitted_scorer = scorer.with_dialogue(fitted.dialogue_weight, fitted.dialogue_boost,
                                         fitted.dialogue_support).with_echo(
        fitted.echo_removal).with_turn_model(fitted.turn_model)
    return CalibrationReport(
        identity=identity.key, memories=int(memories), vectors=len(matrix.rowids),
        counts={"answerable": sum(1 for q in questions if q.answerable),
                "no_answer": sum(1 for q in questions if not q.answerable),
                "unrelated": sum(1 for q in questions if q.kind == "unrelated"),
                "near-miss": sum(1 for q in questions if q.kind == "near-miss")},
        fitted=fitted, current=current,
        fit={k: v for k, v in fit.items() if k != "grid"},
        metrics=metrics,
        answerable_best=tuple(fitted_scorer.full(nec, i, fitted.lexical_weight)[1]
                              for i in every
                              if questions[i].answerable),
        no_answer_best=tuple(fitted_scorer.full(nec, i, fitted.lexical_weight)[1]
                             for i in every
                             if not questions[i].answerable),
    )
