"""Fitting a recall calibration on labelled questions (DESIGN 9.4): metrics and fitting rules,
pure functions over per-question rankings and scores (shared with ``bench/recall_quality.py``).

- ``no_evidence_cosine``: among the values on a 0.01 grid (0.00-0.70) whose hybrid recall@5
  stays within 0.005 of the grid's best, and whose MRR stays within 0.005 of the best MRR among
  those (zeroing cosines below them costs no ranking), the middle one (:func:`plateau_middle`),
  as the floor takes the middle of its best interval. The highest such value sits on the edge
  of a cliff: with USE (lexical weight 0.25) the dev splits' ranking held from 0.00 to 0.11
  and at 0.20 and fell from 0.21 on, and questions a little apart from dev lost answers whose
  cosine sat just below 0.20 (README, "recall quality").
- ``recall_floor``: with that no-evidence cosine, the threshold on each question's best hybrid
  score that maximises balanced accuracy between answerable and no-answer questions (the
  middle of the best interval), rounded to 0.001 (to 0.000001 when the best interval is
  narrower than that, so rounding never costs accuracy); then lowered, if need be, until it
  flags at most 3 % of the answerable questions (``FALSE_ABSTENTION_BUDGET``: a margin under
  the 5 % goal), in every set when the questions come from several.
- ``recall_tail``: the narrowest tail on a 0.01 grid (0.02-0.40) whose returned recall@5 (the
  cut list, limit 10) stays within 0.005 of the uncut ranking's: the cut must not throw
  answers away (:func:`fit_tail`).
- ``lexical_weight`` (hybrid scoring): on a 0.25 grid, among the weights whose fitted recall@5
  (with their best conversation-turn numbers) is within 0.02 of the best, the one with the
  best MRR (:func:`fit_hybrid`); ``dialogue_weight`` / ``dialogue_boost`` (and, at the chosen
  weight, ``dialogue_support``): the grid triple with the best recall@5, then MRR, or the
  default (a turn weighed like any line, no support) on a tie (:func:`fit_dialogue`). Several
  sets weigh alike (the mean of their figures).
- ``echo_removal`` (hybrid scoring, first: it moves every cosine): the share of the model's
  question axis taken out, on a grid, the best recall@5 (then MRR) at the default weights, or
  none on a tie (:func:`fit_echo`).
- ``auto_floor`` / ``auto_window`` (the automatic "possibly relevant" block, H3, H4): H17's
  goal, "keep the answer present while negative and near-miss probes stay quiet", as one
  number: the pair (floor on a 0.01 grid, window from ``AUTO_WINDOWS``) with the largest
  Youden's J, the share of answerable questions whose gold is in the block minus the share of
  no-answer questions that get a block at all; within ``RANKING_SLACK`` of the best J, the
  narrowest window, then the highest floor (:func:`fit_auto`). A question's gold is what the
  block should carry, so answerable and no-answer questions are its labels. Several sets
  weigh alike (the mean of their J).

The labelled file is :mod:`memory_es.calibration.labelled`; fitting a root and its report is
:mod:`memory_es.calibration.report`.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

from memory_es.calibration.labelled import NO_ANSWER_KINDS
from memory_es.calibration.turns import fit_turns
from memory_es.recall.rank.score import (
    NOMIC_V15,
    Calibration,
    Scored,
)
from memory_es.recall.rank.turns import TurnModel

NEC_STEP: Final = 0.01  # no_evidence_cosine candidates: 0.00, 0.01, ... 0.70
NEC_MAX: Final = 0.70
RANKING_SLACK: Final = 0.005  # "costs no ranking": recall@5 and MRR within this of the best
# The floor flags at most this share of the answerable questions it is fitted on: under the
# 0.05 a user is promised, so questions the fit never saw keep it (at 0.05 on dev, the
# labelled test split came out at 0.051)
FALSE_ABSTENTION_BUDGET: Final = 0.03
WEIGHT_SLACK: Final = 0.02  # lexical weights this close in recall@5 are told apart by MRR
RANK_DEPTH: Final = 50  # the recall pool's size: a gold id outside it counts as not found
RETURN_LIMIT: Final = 10  # what recall hands an agent by default
# A floor every score clears and a tail no gap reaches: ``select`` keeps the whole ranked pool
UNCUT: Final = 1e9


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
    auto: Sequence[str] = ()  # the automatic block's ids (H2-H11)


# A question's whole hybrid ranking and best score at a no-evidence cosine: (nec, index) -> ...
FullFn = Callable[[float, int], tuple[Sequence[str], float]]
RunFn = Callable[[Calibration, int], Run]
# The automatic block's ids for one question under one calibration.
AutoFn = Callable[[Calibration, int], Sequence[str]]


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
    out["auto_block_on_unanswerable"] = share([bool(runs[i].auto) for i in neg])
    out["auto_lines_unanswerable"] = (statistics.fmean(len(runs[i].auto) for i in neg)
                                      if neg else math.nan)
    out["auto_answer_present"] = share([bool(set(runs[i].auto) & questions[i].gold)
                                        for i in ans])
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


def plateau_middle(values: Sequence[float]) -> float:
    """The middle of the grid values that cost no ranking (the upper one of an even count, as
    :func:`balanced_floor` takes its ties): away from both edges of the plateau, where a
    question set unlike the one fitted on starts to lose answers (module docstring)."""
    if not values:
        raise ValueError("no grid value to choose from")
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def fit_calibration(golds: Sequence[frozenset[str]], full: FullFn, idx: Sequence[int],
                    lexical_weight: float = NOMIC_V15.lexical_weight,
                    groups: Sequence[str] | None = None
                    ) -> tuple[Calibration, dict[str, Any]]:
    """The recall numbers fitted on the questions ``idx`` (see the module docstring): the
    no-evidence cosine, floor and tail at ``lexical_weight``; the automatic pair stays the
    reference's until :func:`fit_auto` fits it (as :func:`fit_hybrid` and the report do).

    ``golds[i]`` is question i's gold ids (empty: no answer); ``full(nec, i)`` its whole hybrid
    ranking and best score when cosines below ``nec`` count as no evidence. Returns the
    calibration and the fit's figures: ``balanced_accuracy``, ``scale`` (floor / 0.65),
    ``top_recall_at_5`` / ``top_mrr`` (the grid's best) and ``grid`` (nec -> (R@5, MRR)).
    With ``groups`` (question -> its set) the sets weigh alike in the plateau and the
    false-abstention budget holds in every set.
    """
    neg = [i for i in idx if not golds[i]]
    pos = [i for i in idx if golds[i]]
    if not pos or not neg:
        raise ValueError("fitting needs answerable and no-answer questions")
    quality = mean_quality(golds, idx, groups)

    def at(nec: float) -> Callable[[int], Sequence[str]]:
        return lambda i: full(nec, i)[0]

    grid = {nec: quality(at(nec)) for nec in nec_grid()}
    top5 = max(r5 for r5, _ in grid.values())
    near = {n: mrr for n, (r5, mrr) in grid.items() if r5 >= top5 - RANKING_SLACK}
    top_mrr = max(near.values())  # the best MRR among the values that keep recall@5
    nec = plateau_middle([n for n, mrr in near.items() if mrr >= top_mrr - RANKING_SLACK])
    pos_best = [full(nec, i)[1] for i in pos]
    neg_best = [full(nec, i)[1] for i in neg]
    exact, acc = balanced_floor(pos_best, neg_best)
    floor = round(exact, 3)
    if _accuracy(floor, pos_best, neg_best) < acc - 1e-12:
        floor = round(exact, 6)  # a best interval narrower than 0.001: keep it inside
    # The floor must not call answerable questions unanswered more than the budget allows:
    # an agent told "insufficient" stops looking. Lower it to the budget's quantile if needed.
    ceiling = floor
    for members in _parts(pos, groups).values():
        best_scores = sorted(full(nec, i)[1] for i in members)
        ceiling = min(ceiling, best_scores[int(FALSE_ABSTENTION_BUDGET * len(best_scores))])
    if floor > ceiling:
        floor = math.floor(ceiling * 1000) / 1000
        acc = _accuracy(floor, pos_best, neg_best)
    scale = floor / NOMIC_V15.recall_floor
    cal = Calibration(
        no_evidence_cosine=nec,
        recall_floor=floor,
        recall_tail=round(NOMIC_V15.recall_tail * scale, 3),
        # The reference's until fit_auto fits them (after the lexical weight and tail).
        auto_floor=NOMIC_V15.auto_floor,
        auto_window=NOMIC_V15.auto_window,
        lexical_weight=lexical_weight,
    )
    return cal, {"balanced_accuracy": round(acc, 4), "scale": round(scale, 4),
                 "top_recall_at_5": top5, "top_mrr": top_mrr, "grid": grid}


LEXICAL_WEIGHTS: Final = (0.0, 0.25, 0.5, 0.75, 1.0)
TAIL_GRID: Final = tuple(round(0.02 + 0.01 * n, 2) for n in range(39))  # 0.02 .. 0.40


def fit_tail(golds: Sequence[frozenset[str]], run: RunFn, cal: Calibration,
             idx: Sequence[int]) -> float:
    """The narrowest tail whose returned recall@5 stays within ``RANKING_SLACK`` of the uncut
    ranking's on the questions ``idx`` (the widest on the grid when none does)."""
    pos = [i for i in idx if golds[i]]
    pos_golds = [golds[i] for i in pos]
    ranked = ranking_metrics([run(cal, i).ranking for i in pos], pos_golds)["recall_at_5"]
    for tail in TAIL_GRID:
        trial = replace(cal, recall_tail=tail)
        returned = ranking_metrics([run(trial, i).returned for i in pos],
                                   pos_golds)["recall_at_5"]
        if returned >= ranked - RANKING_SLACK:
            return tail
    return TAIL_GRID[-1]


def fit_hybrid(golds: Sequence[frozenset[str]], plain_scorers: Callable[[float], PoolLike],
               idx: Sequence[int], weights: Sequence[float] = LEXICAL_WEIGHTS,
               groups: Sequence[str] | None = None) -> tuple[Calibration, dict[str, Any]]:
    """The share of the question axis first (:func:`fit_echo`), then with it
    :func:`fit_calibration` for each lexical weight (``plain_scorers(w)`` ranks with it) and, at
    that weight, a conversation turn's weight and boost (:func:`fit_dialogue`); the weight
    whose ranking with its turn numbers is best (recall@5, then MRR); at that weight the turn
    numbers again with the neighbour support; the no-evidence cosine and floor fitted again
    when the turn numbers change the ranking; then :func:`fit_tail` and :func:`fit_auto`.

    ``groups`` (question -> its set) weighs every set alike in those choices: the mean of the
    sets' recall@5 and MRR, so the set with the most questions does not choose alone."""
    quality = mean_quality(golds, idx, groups)
    echo, by_echo = fit_echo(plain_scorers(NOMIC_V15.lexical_weight), quality)

    def scorers(weight: float) -> PoolLike:
        return plain_scorers(weight).with_echo(echo)

    fits: dict[float, tuple[Calibration, dict[str, Any]]] = {}
    by_weight: dict[float, tuple[float, float]] = {}
    for weight in weights:
        scorer = scorers(weight)
        fits[weight] = fit_calibration(golds, scorer.full, idx, lexical_weight=weight,
                                       groups=groups)
        best, grid = fit_dialogue(scorer, fits[weight][0].no_evidence_cosine, quality,
                                  default=(weight, 1.0, 0.0))
        by_weight[weight] = grid[best]
    top5 = max(r5 for r5, _ in by_weight.values())
    chosen = max((w for w, (r5, _) in by_weight.items() if r5 >= top5 - WEIGHT_SLACK),
                 key=lambda w: (by_weight[w][1], by_weight[w][0]))
    cal, fit = fits[chosen]
    # A turn's neighbour support only at the chosen weight: the weight ranks curated lines,
    # the turn numbers conversation turns, so the two choices hardly meet (and the whole grid
    # at every weight would cost four times the fit).
    turns, by_dialogue = fit_dialogue(scorers(chosen), cal.no_evidence_cosine, quality,
                                      default=(chosen, 1.0, 0.0), supports=DIALOGUE_SUPPORTS)
    final = scorers(chosen).with_dialogue(*turns)
    model, by_turn_model = _turn_model(golds, final, cal.no_evidence_cosine, idx, quality,
                                       turns[1])
    if model is not None:  # it replaces the turn's weight and support, kept as the formula
        final = final.with_turn_model(model)  # an override without a model falls back on
    if turns != (chosen, 1.0, 0.0) or model is not None:
        cal, fit = fit_calibration(golds, final.full, idx, lexical_weight=chosen,
                                   groups=groups)
    cal = replace(cal, dialogue_weight=turns[0], dialogue_boost=turns[1],
                  dialogue_support=turns[2], echo_removal=echo, turn_model=model)
    cal = replace(cal, recall_tail=fit_tail(golds, final.run, cal, idx))
    cal = fit_auto(golds, final.auto, cal, idx, groups)
    fit["by_lexical_weight"] = by_weight
    fit["by_dialogue"] = by_dialogue
    fit["by_echo"] = by_echo
    fit["by_turn_model"] = by_turn_model
    return cal, fit


def _turn_model(golds: Sequence[frozenset[str]], scorer: PoolLike, nec: float,
                idx: Sequence[int], quality: Quality, boost: float
                ) -> tuple[TurnModel | None, dict[str, tuple[float, float]]]:
    """The turn model fitted on the questions ``idx`` (:func:`~memory_es.calibration.turns.
    fit_turns`) when its ranking is strictly better than the turn formula's (recall@5, then
    MRR), else None; with both figures."""
    formula = quality(rankings_of(scorer, nec))
    model = fit_turns([scorer.scored(nec, i) for i in idx], [golds[i] for i in idx], boost)
    if model is None:
        return None, {"formula": formula}
    modelled = quality(rankings_of(scorer.with_turn_model(model), nec))
    return (model if modelled > formula else None), {"formula": formula, "model": modelled}


Quality = Callable[[Callable[[int], Sequence[str]]], tuple[float, float]]


def _parts(idx: Sequence[int], groups: Sequence[str] | None) -> dict[str, list[int]]:
    """The questions ``idx`` by their set (one part when there are no groups)."""
    parts: dict[str, list[int]] = {}
    for i in idx:
        parts.setdefault("" if groups is None else groups[i], []).append(i)
    return parts


def rankings_of(scorer: PoolLike, nec: float) -> Callable[[int], Sequence[str]]:
    """Question i -> its whole ranking by ``scorer`` at the no-evidence cosine ``nec``."""
    return lambda i: scorer.full(nec, i)[0]


def mean_quality(golds: Sequence[frozenset[str]], idx: Sequence[int],
             groups: Sequence[str] | None) -> Quality:
    """A ranking function's (recall@5, MRR) on the answerable questions of ``idx``: the mean
    over ``groups`` when given."""
    by_group = _parts([i for i in idx if golds[i]], groups)

    def quality(ranking: Callable[[int], Sequence[str]]) -> tuple[float, float]:
        metrics = [ranking_metrics([ranking(i) for i in members], [golds[i] for i in members])
                   for members in by_group.values()]
        return (statistics.fmean(m["recall_at_5"] for m in metrics),
                statistics.fmean(m["mrr"] for m in metrics))

    return quality


DIALOGUE_WEIGHTS: Final = (0.5, 0.75, 1.0)
DIALOGUE_BOOSTS: Final = (1.0, 2.0, 3.0, 4.0)
DIALOGUE_SUPPORTS: Final = (0.0, 0.25, 0.5, 0.75)
# A conversation turn's numbers: (dialogue_weight, dialogue_boost, dialogue_support)
Turns = tuple[float, float, float]


def fit_dialogue(scorer: PoolLike, nec: float, quality: Quality, *, default: Turns,
                 supports: Sequence[float] = (0.0,)
                 ) -> tuple[Turns, dict[Turns, tuple[float, float]]]:
    """A conversation turn's lexical weight, boost and neighbour support on the grid (support
    on ``supports``): the triple with the best recall@5, then MRR; ``default`` (a turn weighed
    like any line) unless another is strictly better, so questions without conversation turns
    keep it."""
    grid = {default: quality(rankings_of(scorer.with_dialogue(*default), nec))}
    for turns in itertools.product(DIALOGUE_WEIGHTS, DIALOGUE_BOOSTS, supports):
        if turns not in grid:
            grid[turns] = quality(rankings_of(scorer.with_dialogue(*turns), nec))
    best = default
    for turns, figures in grid.items():
        if figures > grid[best]:
            best = turns
    return best, grid


ECHO_SHARES: Final = (0.0, 0.5, 1.0)


def fit_echo(scorer: PoolLike, quality: Quality
             ) -> tuple[float, dict[float, tuple[float, float]]]:
    """The share of the model's question axis to take out (``echo_removal``): on the grid,
    the one whose ranking at the default weights (no-evidence cosine 0) is best (recall@5,
    then MRR); none unless one is strictly better. Fitted first: it moves every cosine."""
    grid = {share: quality(rankings_of(scorer.with_echo(share), 0.0))
            for share in ECHO_SHARES}
    best = 0.0
    for share, figures in grid.items():
        if figures > grid[best]:
            best = share
    return best, grid


AUTO_FLOORS: Final = tuple(round(0.01 * n, 2) for n in range(101))  # 0.00 .. 1.00
AUTO_WINDOWS: Final = (0.02, 0.03, 0.04, 0.05, 0.06)


def auto_youden(golds: Sequence[frozenset[str]], auto: AutoFn, cal: Calibration,
                idx: Sequence[int]) -> float:
    """The share of answerable questions whose gold the block carries minus the share of
    no-answer questions that get a block."""
    pos = [i for i in idx if golds[i]]
    neg = [i for i in idx if not golds[i]]
    present = share([bool(set(auto(cal, i)) & golds[i]) for i in pos])
    fires = share([bool(auto(cal, i)) for i in neg])
    return present - fires


def fit_auto(golds: Sequence[frozenset[str]], auto: AutoFn, cal: Calibration,
             idx: Sequence[int], groups: Sequence[str] | None = None) -> Calibration:
    """``cal`` with the automatic block's floor and window fitted on the questions ``idx``
    (module docstring: Youden's J, then the narrowest window, then the highest floor).
    ``groups`` (question -> its set): J is the mean of the sets' J, each set weighing alike
    (a set whose J is below 0 at every floor cannot switch the block off for the others)."""
    if not any(golds[i] for i in idx) or all(golds[i] for i in idx):
        raise ValueError("fitting needs answerable and no-answer questions")
    # a set without both kinds of question has no J of its own
    usable = [m for m in _parts(idx, groups).values()
              if any(golds[i] for i in m) and not all(golds[i] for i in m)] or [list(idx)]

    def youden(c: Calibration) -> float:
        return statistics.fmean(auto_youden(golds, auto, c, m) for m in usable)

    scores = {(w, f): youden(replace(cal, auto_floor=f, auto_window=w))
              for w in AUTO_WINDOWS for f in AUTO_FLOORS}
    best = max(scores.values())
    window, floor = min((k for k, j in scores.items() if j >= best - RANKING_SLACK),
                        key=lambda k: (k[0], -k[1]))
    return replace(cal, auto_floor=floor, auto_window=window)


class PoolLike(Protocol):
    def full(self, nec: float, i: int) -> tuple[Sequence[str], float]: ...

    def run(self, cal: Calibration, i: int) -> Run: ...

    def auto(self, cal: Calibration, i: int) -> Sequence[str]: ...

    def with_dialogue(self, weight: float, boost: float, support: float = 0.0) -> PoolLike:
        ...

    def with_echo(self, share: float) -> PoolLike: ...

    def with_turn_model(self, model: TurnModel | None) -> PoolLike: ...

    def scored(self, nec: float, i: int) -> list[Scored]: ...
