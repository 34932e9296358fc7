"""Fitting the conversation turn model (:mod:`memory_es.recall.rank.turns`) on labelled pools.

A listwise logistic fit: for each answerable question whose pool holds conversation turns,
the softmax of the turns' linear scores should put its mass on the evidence turns; the loss
is the mean negative log of that mass, with a small L2 penalty on the standardised weights.
Plain gradient steps with Adam's moment estimates, a fixed count of them, no randomness: the
same pools give the same numbers. The weights are then stated in units of the cosine's weight
and the offset chosen so the turns' mean fused score over the fitted pools stays what the
formula the model replaces gave, which keeps the floors' scale (they are fitted again after).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_es.recall.rank.score import Scored, turn_features_of
from memory_es.recall.rank.turns import MAX_WEIGHT, TurnModel

STEPS = 600
STEP_SIZE = 0.05
L2 = 0.01
PLACES = 3  # shipped weights are rounded to three places


def _rows(scored: Sequence[Scored], boost: float) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The pool's turns as rows of (semantic, features...), their ids and old fused scores."""
    rows, ids, fused = [], [], []
    for s, f in turn_features_of(scored, boost):
        rows.append((f.semantic, *f.values()))
        ids.append(s.candidate.id)
        fused.append(s.fused)
    return np.array(rows, dtype=np.float64).reshape(-1, 6), ids, np.array(fused)


def fit_turns(pools: Sequence[Sequence[Scored]], golds: Sequence[frozenset[str]],
              boost: float) -> TurnModel | None:
    """The turn model fitted on ``pools`` (each scored under the formula it replaces, with
    ``golds[i]`` the evidence of pool i); None when no pool has an evidence turn to learn
    from, or the fit gives the cosine no clear positive weight (its unit: a weight or offset
    would then pass the bounds a config accepts)."""
    lists: list[tuple[np.ndarray, np.ndarray]] = []
    everything, old = [], []
    for scored, gold in zip(pools, golds, strict=True):
        rows, ids, fused = _rows(scored, boost)
        if not len(ids):
            continue
        everything.append(rows)
        old.append(fused)
        target = np.array([1.0 if i in gold else 0.0 for i in ids])
        if target.any():
            lists.append((rows, target))
    if not lists:
        return None
    every = np.concatenate(everything)
    mu, sd = every.mean(axis=0), every.std(axis=0)
    sd[sd < 1e-9] = 1.0
    standard = [((rows - mu) / sd, target) for rows, target in lists]
    w = np.zeros(6)
    m, v = np.zeros(6), np.zeros(6)
    for step in range(1, STEPS + 1):
        grad = 2 * L2 * w
        for z, target in standard:
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            on_gold = p * target
            grad -= z.T @ (on_gold / on_gold.sum() - p) / len(standard)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= STEP_SIZE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    raw = w / sd
    if raw[0] <= 1e-6:
        return None
    unit = raw / raw[0]
    e, nc, ne, length, asking = (round(float(x), PLACES) for x in unit[1:])
    mean_new = float(np.mean(every @ np.array([1.0, e, nc, ne, length, asking])))
    offset = round(float(np.mean(np.concatenate(old))) - mean_new, PLACES)
    if max(abs(x) for x in (e, nc, ne, length, asking, offset)) > MAX_WEIGHT:
        return None  # the cosine hardly counts here: no model a config could hold
    return TurnModel(evidence=e, neighbour_cosine=nc, neighbour_evidence=ne, length=length,
                     asking=asking, offset=offset)
