"""Which calibration recall uses (DESIGN 9.4, G20): each embedding identity carries its own,
the configured ``memory.embeddings.calibration`` when present, else the identity's shipped one
(:data:`CALIBRATIONS`), else the reference's numbers (``NOMIC_V15``, nomic-embed-text v1.5).
Pure data and lookup, so ranking, the engine and ``memory-es calibrate`` share one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_es.embeddings import EmbeddingIdentity
from memory_es.recall.rank.score import NOMIC_V15, Calibration
from memory_es.recall.rank.turns import TurnModel

if TYPE_CHECKING:
    from memory_es.config import CalibrationConfig, MemoryConfig

# Fitted for the local provider's default model, USE multilingual v3 (512-d), by
# bench/recall_quality.py on the DEV splits of its three sets (659 questions: two curated sets
# and the conversations, each set weighing alike) only (fit_hybrid: lexical weight and a
# conversation turn's boost, the share of the question axis taken out of a turn's cosine, the
# turn model that scores a conversation turn (calibration.turns, listwise on the dev
# conversations; it replaces the turn's weight and neighbour support, which stay the formula's
# fitted ones for an override that names no turn model), no-evidence cosine (the
# middle of
# the values that cost no dev ranking, calibrate.plateau_middle), a balanced-accuracy floor
# that flags at most 3 % of answerable dev questions in every set, the narrowest tail that
# keeps the ranking's recall@5, and the automatic block's floor and window by fit_auto); the
# README reports the test splits.
LOCAL_USE = Calibration(no_evidence_cosine=0.06, recall_floor=0.219, recall_tail=0.40,
                        auto_floor=0.56, auto_window=0.06, lexical_weight=0.25,
                        dialogue_weight=0.75, dialogue_boost=3.0, dialogue_support=0.25,
                        echo_removal=1.0,
                        turn_model=TurnModel(evidence=-0.059, neighbour_cosine=0.31,
                                             neighbour_evidence=0.167, length=0.336,
                                             asking=-0.839, offset=-0.153))
# The same fit for all-MiniLM-L6-v2 int8, whose cosines sit higher
# (bench/recall_quality.py --model minilm).
LOCAL_MINILM = Calibration(no_evidence_cosine=0.12, recall_floor=0.358, recall_tail=0.40,
                           auto_floor=0.75, auto_window=0.05, lexical_weight=0.5,
                           dialogue_weight=0.75, dialogue_boost=2.0, dialogue_support=0.25,
                           echo_removal=0.5,
                           turn_model=TurnModel(evidence=0.275, neighbour_cosine=0.4,
                                                neighbour_evidence=0.43, length=0.627,
                                                asking=-0.469, offset=-0.637))
# The same fit for multilingual-e5-small 4-bit (bench/recall_quality.py --model e5): its
# cosines sit higher still, so the no-evidence cosine and floors do.
LOCAL_E5 = Calibration(no_evidence_cosine=0.35, recall_floor=0.805, recall_tail=0.13,
                       auto_floor=1.0, auto_window=0.05, lexical_weight=0.25,
                       dialogue_weight=0.75, dialogue_boost=2.0, echo_removal=0.5,
                       turn_model=TurnModel(evidence=0.121, neighbour_cosine=-0.016,
                                            neighbour_evidence=0.119, length=0.04,
                                            asking=-0.379, offset=-0.057))
CALIBRATIONS = {("local", "use-multilingual-v3"): LOCAL_USE,
                ("local", "all-MiniLM-L6-v2-onnx-int8"): LOCAL_MINILM,
                ("local", "multilingual-e5-small-q4"): LOCAL_E5}


def calibration_for(identity: EmbeddingIdentity | None,
                    override: CalibrationConfig | None = None) -> Calibration:
    """Each embedding identity carries its own calibration (DESIGN 9.4): the configured
    ``memory.embeddings.calibration`` (``override``) when present, else the identity's shipped
    one (:data:`CALIBRATIONS`), else the reference's numbers (nomic-embed-text v1.5). An
    override that leaves out the neighbour support or the echo removal gets none of either:
    its floors were fitted without them (a snippet from before they existed)."""
    shipped = NOMIC_V15 if identity is None else CALIBRATIONS.get(
        (identity.provider, identity.model), NOMIC_V15)
    if override is not None:
        return Calibration(no_evidence_cosine=override.no_evidence_cosine,
                           recall_floor=override.recall_floor,
                           recall_tail=override.recall_tail,
                           auto_floor=override.auto_floor,
                           auto_window=override.auto_window,
                           lexical_weight=_or(override.lexical_weight,
                                              shipped.lexical_weight),
                           dialogue_weight=_or(override.dialogue_weight,
                                               shipped.dialogue_weight),
                           dialogue_boost=_or(override.dialogue_boost,
                                              shipped.dialogue_boost),
                           dialogue_support=_or(override.dialogue_support, 0.0),
                           echo_removal=_or(override.echo_removal, 0.0),
                           turn_model=_turn_model(override))
    return shipped


def _turn_model(override: CalibrationConfig) -> TurnModel | None:
    """The override's turn model; none when it names none (its floors were fitted without)."""
    t = override.turn_model
    if t is None:
        return None
    return TurnModel(evidence=t.evidence, neighbour_cosine=t.neighbour_cosine,
                     neighbour_evidence=t.neighbour_evidence, length=t.length,
                     asking=t.asking, offset=t.offset)


def _or(value: float | None, shipped: float) -> float:
    return shipped if value is None else value


def configured_calibration(config: MemoryConfig) -> CalibrationConfig | None:
    """The ``memory.embeddings.calibration`` override of ``config``, or None."""
    return config.embeddings.calibration if config.embeddings is not None else None
