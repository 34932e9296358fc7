"""Fitting a recall calibration on labelled questions (DESIGN 9.4): metrics and fitting rules,
pure functions over per-question rankings and scores (shared with ``bench/recall_quality.py``).

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

The labelled file is :mod:`memory_es.recall.labelled`; fitting a root and its report is
:mod:`memory_es.recall.calibrate_report`.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

from memory_es.recall.labelled import NO_ANSWER_KINDS, LabelledQuestion
from memory_es.recall.score import NOMIC_V15, Calibration, Candidate, score_all
from memory_es.recall.select import select

NEC_STEP: Final = 0.01  # no_evidence_cosine candidates: 0.00, 0.01, ... 0.70
NEC_MAX: Final = 0.70
RANKING_SLACK: Final = 0.005  # "costs no ranking": recall@5 and MRR within this of the best
RANK_DEPTH: Final = 50  # the recall pool's size: a gold id outside it counts as not found
RETURN_LIMIT: Final = 10  # what recall hands an agent by default
UNCUT: Final = 1e9  # a floor and tail no score reaches: ``select`` keeps the whole ranked pool


class Labelled(Protocol):
    """What the metrics need of a question: its gold ids (empty: no answer) and its kind."""

    @property
    def gold(self) -> frozenset[str]: ...

    @property
    def kind(self) -> str | None: ...


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
    depend on the calibration), exactly as :func:`~memory_es.recall.candidates.recall` would
    score them."""

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
