"""The labelled questions ``memory-es calibrate`` fits a recall calibration on (DESIGN 9.4).

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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import apsw

from memory_es.errors import MemoryEsError
from memory_es.vocabulary import TERMINAL_STATUSES

NO_ANSWER_KINDS: Final = ("unrelated", "near-miss")
MIN_ANSWERABLE: Final = 10
MIN_NO_ANSWER: Final = 5

INVALID: Final = "calibrate_invalid_file"
TOO_FEW: Final = "calibrate_too_few"

_QUESTION_KEYS: Final = frozenset({"q", "gold", "kind", "note"})
_TOP_KEYS: Final = frozenset({"questions", "description"})


@dataclass(frozen=True)
class LabelledQuestion:
    text: str
    gold: frozenset[str]  # memory ids; empty for a no-answer question
    kind: str | None = None  # "unrelated" / "near-miss" for no-answer questions, when labelled
    gold_order: tuple[str, ...] = ()  # the gold ids as the file lists them (for error messages)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


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


def check_gold(conn: apsw.Connection, path: Path,
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
