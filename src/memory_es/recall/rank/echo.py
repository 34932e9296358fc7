"""Answers, not echoes: a model's question axis, taken out of a question and the turns it meets.

Sentence models place a question near other questions: with USE, cosine alone puts a turn
that only asks something first for 58 % of conversational questions (2 % of the turns that
answer do). The difference between the mean embedding of asking and stating turns is one
direction per model, fitted on the dev conversations (``bench/question_axis.py``) and shipped
as numbers in ``memory_es/data``. Hybrid scoring takes a share ``s`` of it out of both sides
of a conversation turn's cosine (curated notes are statements: a question near them is no
echo) (``Calibration.echo_removal``, fitted on dev like the rest; ``score.without_echo``): with
``q`` and ``v`` unit vectors, ``a`` the axis and ``b = s * (2 - s)``,

    cos' = (q.v - b (q.a)(v.a)) / sqrt((1 - b (q.a)^2) (1 - b (v.a)^2))

which is the cosine of ``q - s (q.a) a`` and ``v - s (v.a) a``. A candidate carries its
``(q.a, v.a)`` (``Candidate.axis``), so the score needs no vector and a fit can try any share.
No word list: the axis is learnt from where the model puts questions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from memory_es.vectors.matrix import VectorMatrix

AXIS_DIR: Final = Path(__file__).resolve().parents[2] / "data"
# embedding identity key -> the axis file shipped for it
AXIS_FILES: Final = {
    '["local","use-multilingual-v3",512]': "question-axis-use.npy",
    '["local","all-MiniLM-L6-v2-onnx-int8",384]': "question-axis-minilm.npy",
    '["local","multilingual-e5-small-q4",384]': "question-axis-e5.npy",
}


def axis_file(identity_key: str) -> str | None:
    return AXIS_FILES.get(identity_key)


@functools.lru_cache(maxsize=8)
def question_axis(identity_key: str) -> np.ndarray | None:
    """The shipped unit axis of this embedding identity; None when none is shipped."""
    name = axis_file(identity_key)
    if name is None or not (AXIS_DIR / name).is_file():
        return None
    axis: np.ndarray = np.load(AXIS_DIR / name).astype(np.float32)
    axis.setflags(write=False)
    return axis


def axis_dots(matrix: VectorMatrix | None, query_vector: np.ndarray | None,
              rowids: Sequence[int]) -> dict[int, tuple[float, float]]:
    """rowid -> (query . axis, row . axis) for the rows the matrix holds; empty when the
    model ships no axis or there is no vector to measure."""
    if matrix is None or query_vector is None or not rowids:
        return {}
    axis = question_axis(matrix.identity)
    if axis is None or axis.shape[0] != query_vector.shape[0]:
        return {}
    asked = float(np.dot(query_vector.astype(np.float32), axis))
    return {rowid: (asked, dot) for rowid, dot in matrix.cosines(axis, rowids).items()}
