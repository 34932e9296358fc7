"""Fit a recall calibration on a user's own labelled questions (DESIGN 9.4).

Each embedding identity carries a :class:`~memory_es.scoring.Calibration`: the reference's
numbers (``NOMIC_V15``) are the default for nomic-embed-text, the local provider ships one
measured by ``bench/recall_quality.py`` (``memory_es.recall.LOCAL_MINILM``), and the config
key ``memory.embeddings.calibration`` overrides both. ``memory-es calibrate LABELLED.json``
(:func:`calibrate_root`) derives one from questions about the memories of a real root.

Labelled file (UTF-8 JSON)::

    {"questions": [
      {"q": "When is my dentist appointment?", "gold": ["<memory id>", "..."]},
      {"q": "What is the capital of Mongolia?", "gold": [], "kind": "unrelated"},
      {"q": "What did Priya say about PR-1235?", "gold": [], "kind": "near-miss"}
    ]}

- ``q``: the question, as an agent would ask it.
- ``gold``: ids of memories that answer it (any one counts as a hit): the ``id=`` in the
  ``<!--mem id=... -->`` metadata line under each bullet of ``daily/*.md``. ``[]`` marks a
  question nothing stored answers.
- ``kind`` (no-answer questions only, optional): ``unrelated`` (nothing close is stored) or
  ``near-miss`` (close to a stored fact but not answered by it: a wrong date or id, an unknown
  person); abstention is reported for each kind apart when labelled.
- ``note`` (optional string) is ignored; a top-level ``description`` string is allowed.
  Any other key is an error. At least 10 answerable and 5 no-answer questions are required.

Fitting rules (the same as the bench's; pure functions over per-question rankings and scores):

- ``no_evidence_cosine``: the highest value on a 0.01 grid (0.00-0.70) whose hybrid recall@5
  and MRR stay within 0.005 of the grid's best: zeroing cosines below it must cost no ranking.
- ``recall_floor``: with that no-evidence cosine, the threshold on each question's best hybrid
  score that maximises balanced accuracy between answerable and no-answer questions (the
  middle of the best interval), rounded to 0.001 (to 0.000001 when the best interval is
  narrower than that, so rounding never costs accuracy).
- ``recall_tail``: the reference's 0.15 scaled by ``recall_floor / 0.65``.
- ``auto_floor`` / ``auto_window`` stay at the reference's 0.62 / 0.04: they govern the
  automatic "possibly relevant" block, and the labelled format carries no automatic-block
  labels to fit them on (neither does the bench's set).

The fit is in-sample: the report scores the fitted calibration on the questions it was fitted
on, beside the reference and the currently effective calibration, so treat its figures as an
upper bound and prefer a set of a few dozen questions or more.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Protocol

import apsw
import numpy as np

from memory_es.config import MemoryConfig
from memory_es.embeddings import BATCH_SIZE, Embedder, EmbeddingError, make_embedder
from memory_es.errors import MemoryEsError
from memory_es.history import verified_index
from memory_es.intake import utc_now
from memory_es.recall import (
    VectorMatrix,
    calibration_for,
    candidate_pool,
    configured_calibration,
)
from memory_es.scoring import (
    NOMIC_V15,
    Calibration,
    Candidate,
    score_all,
    select,
)
from memory_es.vocabulary import TERMINAL_STATUSES

__all__ = [
    "MIN_ANSWERABLE",
    "MIN_NO_ANSWER",
    "NO_ANSWER_KINDS",
    "CalibrationReport",
    "LabelledQuestion",
    "PoolScorer",
    "Run",
    "balanced_floor",
    "calibrate_root",
    "config_snippet",
    "evaluate",
    "fit_calibration",
    "load_labelled",
    "nec_grid",
    "rank_of",
    "ranking_metrics",
    "render_text",
    "share",
]

NO_ANSWER_KINDS: Final = ("unrelated", "near-miss")
MIN_ANSWERABLE: Final = 10
MIN_NO_ANSWER: Final = 5
NEC_STEP: Final = 0.01  # no_evidence_cosine candidates: 0.00, 0.01, ... 0.70
NEC_MAX: Final = 0.70
RANKING_SLACK: Final = 0.005  # "costs no ranking": recall@5 and MRR within this of the best
RANK_DEPTH: Final = 50  # the recall pool's size: a gold id outside it counts as not found
RETURN_LIMIT: Final = 10  # what recall hands an agent by default
UNCUT: Final = 1e9  # a floor and tail no score reaches: ``select`` keeps the whole ranked pool

INVALID: Final = "calibrate_invalid_file"
TOO_FEW: Final = "calibrate_too_few"
NEEDS_EMBEDDINGS: Final = "calibrate_needs_embeddings"

_QUESTION_KEYS: Final = frozenset({"q", "gold", "kind", "note"})
_TOP_KEYS: Final = frozenset({"questions", "description"})
_CAMEL: Final = {"no_evidence_cosine": "noEvidenceCosine", "recall_floor": "recallFloor",
                 "recall_tail": "recallTail", "auto_floor": "autoFloor",
                 "auto_window": "autoWindow"}


class Labelled(Protocol):
    """What the metrics need of a question: its gold ids (empty: no answer) and its kind."""

    @property
    def gold(self) -> frozenset[str]: ...

    @property
    def kind(self) -> str | None: ...


@dataclass(frozen=True)
class LabelledQuestion:
    text: str
    gold: frozenset[str]  # memory ids; empty for a no-answer question
    kind: str | None = None  # "unrelated" / "near-miss" for no-answer questions, when labelled
    gold_order: tuple[str, ...] = ()  # the gold ids as the file lists them (for error messages)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


@dataclass(frozen=True)
class Run:
    """What one calibration does to one question."""

    ranking: Sequence[str]  # hybrid, uncut (at the calibration's no-evidence cosine)
    best: float  # the best hybrid score (0.0 for an empty pool)
    returned: Sequence[str]  # what recall hands back (limit 10, tail cut, floor)
    insufficient: bool  # evidence == "insufficient"


# A question's whole hybrid ranking and best score at a no-evidence cosine: (nec, index) -> ...
FullFn = Callable[[float, int], tuple[Sequence[str], float]]
RunFn = Callable[[Calibration, int], Run]


# --------------------------------------------------------------------------------------------
# Metrics


def rank_of(ranking: Sequence[str], gold: frozenset[str]) -> int | None:
    return next((n for n, mid in enumerate(ranking, 1) if mid in gold), None)


def ranking_metrics(rankings: Sequence[Sequence[str]], golds: Sequence[frozenset[str]]
                    ) -> dict[str, float]:
    """recall@1, recall@5 and MRR; a question is a hit when any gold id is in the top k."""
    ranks = [rank_of(r, g) for r, g in zip(rankings, golds, strict=True)]
    n = len(ranks)
    if not n:
        return {"recall_at_1": math.nan, "recall_at_5": math.nan, "mrr": math.nan}
    return {
        "recall_at_1": sum(1 for r in ranks if r == 1) / n,
        "recall_at_5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr": sum(1.0 / r for r in ranks if r is not None) / n,
    }


def share(flags: Sequence[bool]) -> float:
    """The share of true flags; NaN when there are none to count."""
    return sum(flags) / len(flags) if flags else math.nan


def evaluate(questions: Sequence[Labelled], run: RunFn, cal: Calibration,
             idx: Sequence[int]) -> dict[str, float]:
    """Figures of one calibration over the questions ``idx``: ranking (answerable questions),
    returned recall@5, abstention on no-answer questions (all, and per labelled kind), false
    abstention on answerable ones, and how often the automatic block would fire on no-answer
    questions (best score at or above ``auto_floor``)."""
    ans = [i for i in idx if questions[i].gold]
    neg = [i for i in idx if not questions[i].gold]
    runs = {i: run(cal, i) for i in idx}
    golds = [questions[i].gold for i in ans]
    out = ranking_metrics([runs[i].ranking for i in ans], golds)
    out["returned_recall_at_5"] = ranking_metrics([runs[i].returned for i in ans],
                                                  golds)["recall_at_5"]
    out["returned_hits_mean"] = (statistics.fmean(len(runs[i].returned) for i in ans)
                                 if ans else math.nan)
    for kind in NO_ANSWER_KINDS:
        out[f"abstain_{kind}"] = share([runs[i].insufficient for i in neg
                                        if questions[i].kind == kind])
    out["abstain_all"] = share([runs[i].insufficient for i in neg])
    out["false_abstention"] = share([runs[i].insufficient for i in ans])
    out["auto_block_on_unanswerable"] = share([runs[i].best >= cal.auto_floor - 1e-9
                                               for i in neg])
    return out


# --------------------------------------------------------------------------------------------
# Fitting


def _accuracy(t: float, pos: Sequence[float], neg: Sequence[float]) -> float:
    """Balanced accuracy of "score >= t is answerable"."""
    return (share([p >= t for p in pos]) + share([n < t for n in neg])) / 2


def balanced_floor(pos: Sequence[float], neg: Sequence[float]) -> tuple[float, float]:
    """The threshold (score >= t is "answerable") maximising balanced accuracy, taken in the
    middle of the best interval between observed scores; returns (threshold, accuracy)."""
    values = sorted(set(pos) | set(neg))
    cuts = [values[0] - 0.01] + [(a + b) / 2 for a, b in itertools.pairwise(values)] \
        + [values[-1] + 0.01]
    scored = [(_accuracy(t, pos, neg), t) for t in cuts]
    best = max(a for a, _ in scored)
    ties = [t for a, t in scored if a >= best - 1e-12]
    # The best interval(s): take the median tied cut, a stable middle.
    return ties[len(ties) // 2], best


def nec_grid() -> list[float]:
    return [round(x * NEC_STEP, 3) for x in range(int(NEC_MAX / NEC_STEP) + 1)]


def fit_calibration(golds: Sequence[frozenset[str]], full: FullFn, idx: Sequence[int]
                    ) -> tuple[Calibration, dict[str, Any]]:
    """The five numbers fitted on the questions ``idx`` (see the module docstring).

    ``golds[i]`` is question i's gold ids (empty: no answer); ``full(nec, i)`` its whole hybrid
    ranking and best score when cosines below ``nec`` count as no evidence. Returns the
    calibration and the fit's figures: ``balanced_accuracy``, ``scale`` (floor / 0.65),
    ``top_recall_at_5`` / ``top_mrr`` (the grid's best) and ``grid`` (nec -> (R@5, MRR)).
    """
    neg = [i for i in idx if not golds[i]]
    pos = [i for i in idx if golds[i]]
    if not pos or not neg:
        raise ValueError("fitting needs answerable and no-answer questions")
    pos_golds = [golds[i] for i in pos]

    def quality(nec: float) -> tuple[float, float]:
        m = ranking_metrics([full(nec, i)[0] for i in pos], pos_golds)
        return m["recall_at_5"], m["mrr"]

    grid = {nec: quality(nec) for nec in nec_grid()}
    top5 = max(r5 for r5, _ in grid.values())
    top_mrr = max(mrr for _, mrr in grid.values())
    nec = max(n for n, (r5, mrr) in grid.items()
              if r5 >= top5 - RANKING_SLACK and mrr >= top_mrr - RANKING_SLACK)
    pos_best = [full(nec, i)[1] for i in pos]
    neg_best = [full(nec, i)[1] for i in neg]
    exact, acc = balanced_floor(pos_best, neg_best)
    floor = round(exact, 3)
    if _accuracy(floor, pos_best, neg_best) < acc - 1e-12:
        floor = round(exact, 6)  # a best interval narrower than 0.001: keep it inside
    scale = floor / NOMIC_V15.recall_floor
    cal = Calibration(
        no_evidence_cosine=nec,
        recall_floor=floor,
        recall_tail=round(NOMIC_V15.recall_tail * scale, 3),
        # No automatic-block labels to fit on: the reference's numbers (module docstring).
        auto_floor=NOMIC_V15.auto_floor,
        auto_window=NOMIC_V15.auto_window,
    )
    return cal, {"balanced_accuracy": round(acc, 4), "scale": round(scale, 4),
                 "top_recall_at_5": top5, "top_mrr": top_mrr, "grid": grid}


class PoolScorer:
    """Rankings and runs from each question's candidate pool (computed once: the pool does not
    depend on the calibration), exactly as :func:`memory_es.recall.recall` would score them."""

    def __init__(self, questions: Sequence[LabelledQuestion], pools: Sequence[list[Candidate]],
                 now: datetime) -> None:
        self.questions = questions
        self.pools = pools
        self.now = now
        self._full: dict[tuple[float, int], tuple[list[str], float]] = {}
        self._runs: dict[tuple[Calibration, int], Run] = {}

    def full(self, nec: float, i: int) -> tuple[list[str], float]:
        key = (nec, i)
        if key not in self._full:
            cal = Calibration(nec, UNCUT, UNCUT)
            hits = select(score_all(self.questions[i].text, self.pools[i], cal), cal,
                          now=self.now).hits[:RANK_DEPTH]
            self._full[key] = ([h.id for h in hits], hits[0].score if hits else 0.0)
        return self._full[key]

    def run(self, cal: Calibration, i: int) -> Run:
        key = (cal, i)
        if key not in self._runs:
            ranking, best = self.full(cal.no_evidence_cosine, i)
            result = select(score_all(self.questions[i].text, self.pools[i], cal), cal,
                            now=self.now)
            self._runs[key] = Run(ranking=ranking, best=best,
                                  returned=[h.id for h in result.hits[:RETURN_LIMIT]],
                                  insufficient=result.evidence == "insufficient")
        return self._runs[key]


# --------------------------------------------------------------------------------------------
# The labelled file


def _invalid(path: Path, problems: Sequence[str]) -> MemoryEsError:
    return MemoryEsError(f"{INVALID}: {path}: " + "; ".join(problems), code=INVALID)


def _question(n: int, item: object) -> tuple[LabelledQuestion | None, list[str]]:
    where = f"questions[{n}]"
    if not isinstance(item, Mapping):
        return None, [f"{where}: expected an object with \"q\" and \"gold\""]
    problems = [f"{where}.{k}: unknown key" for k in item if k not in _QUESTION_KEYS]
    text = item.get("q")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}.q: " + ("required key is missing" if "q" not in item
                                          else "expected a non-empty string"))
    gold = item.get("gold")
    if not isinstance(gold, list):
        problems.append(f"{where}.gold: " + ("required key is missing" if "gold" not in item
                                             else "expected an array of memory ids"))
        gold = []
    for g, mid in enumerate(gold):
        if not isinstance(mid, str) or not mid.strip():
            problems.append(f"{where}.gold[{g}]: expected a memory id (non-empty string)")
        elif mid in gold[:g]:
            problems.append(f"{where}.gold[{g}]: duplicate id {json.dumps(mid)}")
    kind = item.get("kind")
    if "kind" in item:
        if gold:
            problems.append(f"{where}.kind: only for no-answer questions (gold [])")
        elif kind not in NO_ANSWER_KINDS:
            problems.append(f"{where}.kind: expected \"unrelated\" or \"near-miss\"")
    if "note" in item and not isinstance(item["note"], str):
        problems.append(f"{where}.note: expected a string")
    if problems:
        return None, problems
    assert isinstance(text, str)
    return LabelledQuestion(text=text, gold=frozenset(gold),
                            kind=kind if isinstance(kind, str) else None,
                            gold_order=tuple(gold)), []


def load_labelled(path: str | Path) -> list[LabelledQuestion]:
    """Read and validate a labelled file (module docstring). Raises ``MemoryEsError`` coded
    ``calibrate_invalid_file`` naming every bad question by index, or ``calibrate_too_few``."""
    path = Path(path)
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as e:
        raise _invalid(path, [f"cannot read: {e.strerror or e}"]) from None
    except UnicodeDecodeError as e:
        raise _invalid(path, [f"not valid UTF-8 (byte {e.start})"]) from None
    except json.JSONDecodeError as e:
        raise _invalid(path, [f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}"]
                       ) from None
    if not isinstance(document, Mapping) or not isinstance(document.get("questions"), list):
        raise _invalid(path, ['expected an object {"questions": [...]}'])
    problems = [f"{k}: unknown key" for k in document if k not in _TOP_KEYS]
    questions: list[LabelledQuestion] = []
    for n, item in enumerate(document["questions"]):
        question, errors = _question(n, item)
        problems.extend(errors)
        if question is not None:
            questions.append(question)
    if problems:
        raise _invalid(path, problems)
    answerable = sum(1 for q in questions if q.answerable)
    no_answer = len(questions) - answerable
    if answerable < MIN_ANSWERABLE or no_answer < MIN_NO_ANSWER:
        raise MemoryEsError(
            f"{TOO_FEW}: {path}: {answerable} answerable and {no_answer} no-answer questions; "
            f"a calibration needs at least {MIN_ANSWERABLE} and {MIN_NO_ANSWER}", code=TOO_FEW)
    return questions


def _check_gold(conn: apsw.Connection, path: Path,
                questions: Sequence[LabelledQuestion]) -> None:
    """Every gold id names a live memory of the index (terminal ones can never be recalled)."""
    problems: list[str] = []
    for n, question in enumerate(questions):
        for g, mid in enumerate(question.gold_order):
            row = conn.execute("SELECT status FROM memories WHERE id = ?", (mid,)).fetchone()
            where = f"questions[{n}].gold[{g}]"
            if row is None:
                problems.append(f"{where}: no memory {json.dumps(mid)} in the index (use the "
                                "id= of daily/*.md metadata)")
            elif row[0] in TERMINAL_STATUSES:
                problems.append(f"{where}: memory {json.dumps(mid)} is {row[0]} and can never "
                                "be recalled")
    if problems:
        raise _invalid(path, problems)


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


def config_snippet(cal: Calibration) -> dict[str, Any]:
    """``{"memory": {"embeddings": {"calibration": {...}}}}`` for a config file."""
    return {"memory": {"embeddings": {"calibration": {
        _CAMEL[k]: v for k, v in asdict(cal).items()}}}}


def _pct(x: float) -> str:
    return "    -" if math.isnan(x) else f"{100 * x:5.1f}%"


def _num(x: float) -> str:
    return "    -" if math.isnan(x) else f"{x:5.3f}"


def render_text(report: CalibrationReport) -> str:
    """The operator's view: the five numbers, the trade-off table and the config snippet."""
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
        f"  recallTail       {f.recall_tail:.3f}  reference {NOMIC_V15.recall_tail} x "
        f"recallFloor / {NOMIC_V15.recall_floor}",
        f"  autoFloor        {f.auto_floor:.3f}  autoWindow {f.auto_window:.3f}  the reference's "
        "(no automatic-block labels to fit on)",
    ]
    if report.vectors < report.memories:
        lines.append(f"  warning: {report.memories - report.vectors} memories have no vector "
                     "yet; they were scored lexically")
    lines += ["", "trade-off (fitted on these same questions: in-sample)",
              f"  {'calibration':<12}{'floor':>6}{'R@1':>7}{'R@5':>7}{'MRR':>7}{'R@5 ret':>8}"
              f"{'abst unrel':>11}{'abst near':>10}{'abst all':>9}{'false abst':>11}"]
    cals = {"reference": report.reference, "current": report.current, "fitted": report.fitted}
    for name, m in report.metrics.items():
        lines.append(
            f"  {name:<12}{cals[name].recall_floor:6.3f}{_num(m['recall_at_1']):>7}"
            f"{_num(m['recall_at_5']):>7}{_num(m['mrr']):>7}{_num(m['returned_recall_at_5']):>8}"
            f"{_pct(m['abstain_unrelated']):>11}{_pct(m['abstain_near-miss']):>10}"
            f"{_pct(m['abstain_all']):>9}{_pct(m['false_abstention']):>11}")
    lines += ["", "config (merge into the memory block to use it):",
              json.dumps(report.snippet(), indent=2)]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# A root


def _embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    try:
        parts = [embedder.embed(texts[s:s + BATCH_SIZE]) for s in range(0, len(texts), BATCH_SIZE)]
    except EmbeddingError as e:
        raise MemoryEsError(f"{e.code}: cannot embed the questions: {e}", code=e.code) from e
    return np.concatenate(parts).astype(np.float32)


def calibrate_root(root: str | Path, labelled_path: str | Path, config: MemoryConfig,
                   *, embedder: Embedder | None = None) -> CalibrationReport:
    """Fit a calibration on ``labelled_path``'s questions over ``root``, read-only.

    The root's journal is verified and the active index generation opened read-only (like
    ``memory-es search``); questions are embedded with the configured provider (``embedder``
    overrides it, as in ``MemoryStore.open``) and searched against the stored vectors of that
    identity. Raises ``MemoryEsError``: ``calibrate_needs_embeddings`` (Lite, no embeddings
    block, or no vectors of this identity in the index), ``calibrate_invalid_file``,
    ``calibrate_too_few``, or the provider's code when embedding fails.
    """
    if config.mode == "lite" or config.embeddings is None:
        raise MemoryEsError(
            f"{NEEDS_EMBEDDINGS}: calibration needs embeddings: memory.mode is "
            f'"{config.mode}"; use a Journal or BuJo config with a memory.embeddings block',
            code=NEEDS_EMBEDDINGS)
    labelled = Path(labelled_path)
    questions = load_labelled(labelled)
    root = Path(root)
    with verified_index(root) as conn:  # never calibrate on a tampered root
        if conn is None:
            raise MemoryEsError(f"{NEEDS_EMBEDDINGS}: {root} has no index generation yet "
                                "(run drain)", code=NEEDS_EMBEDDINGS)
        _check_gold(conn, labelled, questions)
        if embedder is None:
            embedder = make_embedder(config.embeddings)
        assert embedder is not None  # an embeddings block always names a provider
        identity = embedder.identity
        matrix = VectorMatrix(identity.dim)
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

    scorer = PoolScorer(questions, pools, utc_now())
    every = list(range(len(questions)))
    fitted, fit = fit_calibration([q.gold for q in questions], scorer.full, every)
    current = calibration_for(identity, configured_calibration(config))
    metrics = {name: evaluate(questions, scorer.run, cal, every)
               for name, cal in (("reference", NOMIC_V15), ("current", current),
                                 ("fitted", fitted))}
    nec = fitted.no_evidence_cosine
    return CalibrationReport(
        identity=identity.key, memories=int(memories), vectors=len(matrix.rowids),
        counts={"answerable": sum(1 for q in questions if q.answerable),
                "no_answer": sum(1 for q in questions if not q.answerable),
                "unrelated": sum(1 for q in questions if q.kind == "unrelated"),
                "near-miss": sum(1 for q in questions if q.kind == "near-miss")},
        fitted=fitted, current=current,
        fit={k: v for k, v in fit.items() if k != "grid"},
        metrics=metrics,
        answerable_best=tuple(scorer.full(nec, i)[1] for i in every if questions[i].answerable),
        no_answer_best=tuple(scorer.full(nec, i)[1] for i in every
                             if not questions[i].answerable),
    )
