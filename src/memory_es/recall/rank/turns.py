"""A conversation turn's score as a small linear model (hybrid scoring; pure, no I/O).

A turn is short and leans on the turns around it, so no single signal ranks turns well: the
cosine favours turns shaped like the question, word overlap favours turns that repeat its
names, and the turn that answers is often the longer one beside a turn that matches. The turn
model weighs a handful of features that each carry part of that, in units of the cosine:

   ``semantic + evidence * e + neighbourCosine * nc + neighbourEvidence * ne
   + (length * log(1 + words) + asking * a) * r + offset``

* ``semantic``: the turn's cosine (the question axis taken out, :mod:`echo`), as in the
  hybrid formula; its weight is 1, the unit every other weight is stated in.
* ``e``: the turn's lexical evidence boosted as ``1 - (1 - evidence) ** dialogueBoost``.
* ``nc`` / ``ne``: the best semantic and evidence among the turns just before and after it in
  the pool (an answer often spans two turns).
* ``words``: the turn's words (an answer says something; "ok!" does not).
* ``a``: the turn's projection on the model's question axis (``Candidate.axis[1]``): a turn
  that only asks scores less, by measurement rather than by a word list.
* ``r``: the turn's own relevance, ``max(semantic, e)``. Length and asking tell which of the
  turns that match is the answer; they say nothing about whether a turn matches at all, so
  they count only as far as it does (an unrelated long turn gains nothing, and an unrelated
  question still falls below the floor).

The weights are fitted on the dev splits by :func:`memory_es.calibration.turns.fit_turns`
(a listwise logistic fit: the softmax of each pool's scores puts its mass on the evidence
turns) and shipped as numbers with the model's calibration; ``offset`` puts the turn's score
on the scale the floors are fitted on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FEATURES = ("evidence", "neighbourCosine", "neighbourEvidence", "length", "asking")
MAX_WEIGHT = 10.0  # a configured weight or offset is a number from -10 to 10


@dataclass(frozen=True, slots=True)
class TurnModel:
    """The fitted weights of a conversation turn's features, in units of the cosine."""

    evidence: float
    neighbour_cosine: float
    neighbour_evidence: float
    length: float
    asking: float
    offset: float = 0.0

    def weights(self) -> tuple[float, ...]:
        """The weights in :data:`FEATURES` order."""
        return (self.evidence, self.neighbour_cosine, self.neighbour_evidence, self.length,
                self.asking)


@dataclass(frozen=True, slots=True)
class TurnFeatures:
    """One turn's features in :data:`FEATURES` order (``semantic`` is the unit)."""

    semantic: float
    evidence: float
    neighbour_cosine: float
    neighbour_evidence: float
    length: float
    asking: float

    def values(self) -> tuple[float, ...]:
        return (self.evidence, self.neighbour_cosine, self.neighbour_evidence, self.length,
                self.asking)


def turn_features(semantic: float, boosted_evidence: float, neighbours: list[tuple[float, float]],
                  text: str, asking: float | None) -> TurnFeatures:
    """A turn's features (length and asking already times its relevance); ``neighbours``
    holds each neighbour's (semantic, evidence)."""
    relevance = max(semantic, boosted_evidence)
    return TurnFeatures(
        semantic=semantic, evidence=boosted_evidence,
        neighbour_cosine=max((s for s, _ in neighbours), default=0.0),
        neighbour_evidence=max((e for _, e in neighbours), default=0.0),
        length=math.log1p(len(text.split())) * relevance,
        asking=(0.0 if asking is None else asking) * relevance)


def turn_parts(model: TurnModel, features: TurnFeatures) -> dict[str, float]:
    """Each feature's contribution to the score (``explain``), ``semantic`` and ``offset``
    included; they add up to :func:`turn_value`."""
    parts = {"semantic": features.semantic}
    for name, weight, value in zip(FEATURES, model.weights(), features.values(), strict=True):
        parts[name] = weight * value
    parts["offset"] = model.offset
    return parts


def turn_value(model: TurnModel, features: TurnFeatures) -> float:
    """The turn's fused score (what the hybrid formula's fused part is for other lines)."""
    return math.fsum(turn_parts(model, features).values())
