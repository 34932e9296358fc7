"""Scoring labelled questions' candidate pools under any calibration, fast: the pools are
computed once (they do not depend on the calibration) and each (calibration, question) is
scored once (:class:`PoolScorer`, what :mod:`~memory_es.calibration.fit` fits with).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from memory_es.calibration.fit import RANK_DEPTH, RETURN_LIMIT, UNCUT, Run, Turns
from memory_es.recall.rank.score import (
    EPSILON,
    NOMIC_V15,
    Calibration,
    Candidate,
    Scored,
    Scoring,
    score_all,
)
from memory_es.recall.rank.select import auto_best, auto_select, kept_lines, select
from memory_es.recall.rank.turns import TurnModel

Shape = tuple[float, float, float, float, float, float, TurnModel | None]


def _shape(cal: Calibration) -> Shape:
    """What a score depends on besides the pool: the no-evidence cosine and the weights."""
    return (cal.no_evidence_cosine, cal.lexical_weight, cal.dialogue_weight, cal.dialogue_boost,
            cal.dialogue_support, cal.echo_removal, cal.turn_model)


class PooledQuestion(Protocol):
    """What scoring a pool reads of its question (a labelled file's, or a bench set's)."""

    @property
    def text(self) -> str: ...


class PoolScorer:
    """Rankings and runs from each question's candidate pool (computed once: the pool does not
    depend on the calibration), exactly as :func:`~memory_es.recall.explicit.recall` would score
    them. ``full`` ranks with this scorer's lexical weight and conversation-turn numbers
    (``dialogue``: weight and boost; None: a turn is weighed like any line); ``run`` and
    ``auto`` with the calibration they are given."""

    def __init__(self, questions: Sequence[PooledQuestion], pools: Sequence[list[Candidate]],
                 now: datetime, *, scoring: Scoring = "hybrid",
                 lexical_weight: float = NOMIC_V15.lexical_weight,
                 dialogue: Turns | None = None, echo: float = 0.0,
                 turn_model: TurnModel | None = None) -> None:
        self.questions = questions
        self.pools = pools
        self.now = now
        self.scoring: Scoring = scoring
        self.lexical_weight = lexical_weight
        self.dialogue = dialogue
        self.echo = echo
        self.turn_model = turn_model
        self._full: dict[tuple[Shape, int],
                         tuple[list[str], float]] = {}
        self._runs: dict[tuple[Calibration, int], Run] = {}
        self._score_cache: dict[tuple[Shape, int],
                                list[Scored]] = {}
        self._auto_cache: dict[tuple[Shape, float, int],
                               tuple[float | None, list[str]]] = {}

    def _with(self, **changes: Any) -> PoolScorer:
        kept: dict[str, Any] = {"scoring": self.scoring, "lexical_weight": self.lexical_weight,
                                "dialogue": self.dialogue, "echo": self.echo,
                                "turn_model": self.turn_model}
        return PoolScorer(self.questions, self.pools, self.now, **{**kept, **changes})

    def with_weight(self, lexical_weight: float) -> PoolScorer:
        """The same pools ranked with another lexical weight."""
        return self._with(lexical_weight=lexical_weight)

    def with_dialogue(self, weight: float, boost: float, support: float = 0.0) -> PoolScorer:
        """The same pools with a conversation turn's evidence weighed ``weight``, boosted, and
        ``support`` of its best neighbour's score added."""
        return self._with(dialogue=(weight, boost, support))

    def with_echo(self, share: float) -> PoolScorer:
        """The same pools with ``share`` of the model's question axis taken out."""
        return self._with(echo=share)

    def with_turn_model(self, model: TurnModel | None) -> PoolScorer:
        """The same pools with a conversation turn scored by ``model`` (None: the formula)."""
        return self._with(turn_model=model)

    def scored(self, nec: float, i: int) -> list[Scored]:
        """Question i's pool scored with this scorer's numbers (uncut)."""
        return self._scored(self.calibration(nec), i)

    def calibration(self, nec: float, lexical_weight: float | None = None) -> Calibration:
        """An uncut calibration with this scorer's weights (``lexical_weight`` overrides)."""
        weight = self.lexical_weight if lexical_weight is None else lexical_weight
        dialogue_weight, boost, support = self.dialogue or (weight, 1.0, 0.0)
        return Calibration(nec, -UNCUT, UNCUT, lexical_weight=weight,
                           dialogue_weight=dialogue_weight, dialogue_boost=boost,
                           dialogue_support=support, echo_removal=self.echo,
                           turn_model=self.turn_model)

    def full(self, nec: float, i: int, lexical_weight: float | None = None
             ) -> tuple[list[str], float]:
        return self._ranking(self.calibration(nec, lexical_weight), i)

    def _ranking(self, cal: Calibration, i: int) -> tuple[list[str], float]:
        key = (_shape(cal), i)
        if key not in self._full:
            uncut = replace(cal, recall_floor=-UNCUT, recall_tail=UNCUT)
            _, kept = kept_lines(self._scored(uncut, i), uncut, scoring=self.scoring)
            top = kept[:RANK_DEPTH]
            self._full[key] = ([s.candidate.id for s in top], top[0].score if top else 0.0)
        return self._full[key]

    def run(self, cal: Calibration, i: int) -> Run:
        key = (cal, i)
        if key not in self._runs:
            ranking, best = self._ranking(cal, i)
            result = select(self._scored(cal, i), cal, now=self.now, scoring=self.scoring)
            self._runs[key] = Run(ranking=ranking, best=best,
                                  returned=[h.id for h in result.hits[:RETURN_LIMIT]],
                                  insufficient=result.evidence == "insufficient",
                                  auto=self.auto(cal, i))
        return self._runs[key]

    def auto(self, cal: Calibration, i: int) -> list[str]:
        """The ids the automatic block would show for question i (H2-H11). The floor only
        decides whether the block fires (H3), so the lines are computed once per window."""
        key = (_shape(cal), cal.auto_window, i)
        if key not in self._auto_cache:
            scored = self._scored(cal, i)
            lines = auto_select(scored, replace(cal, auto_floor=0.0), now=self.now)
            self._auto_cache[key] = (auto_best(scored), [h.id for h in lines])
        best, ids = self._auto_cache[key]
        return ids if best is not None and best >= cal.auto_floor - EPSILON else []

    def _scored(self, cal: Calibration, i: int) -> list[Scored]:
        # Scores depend on the no-evidence cosine and the weights only.
        key = (_shape(cal), i)
        if key not in self._score_cache:
            self._score_cache[key] = score_all(self.questions[i].text, self.pools[i], cal,
                                               self.scoring)
        return self._score_cache[key]
