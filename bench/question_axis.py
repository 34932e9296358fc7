"""Fit a model's question axis on the DEV conversations only, and write it into the package.

The axis is the unit vector from the mean embedding of the turns that state something to the
mean embedding of the turns that ask (their text ends in a question mark), over the dev
split of ``bench/data/conversations/conversations.json`` (split by conversation, as
``recall_quality.py`` splits it). Hybrid recall takes it out of a question and of each line
(``Calibration.echo_removal``), so a line does not win for being shaped like the question.

    python bench/question_axis.py --model use     # writes src/memory_es/data/question-axis-use.npy
    python bench/question_axis.py --check   # recomputes it; fails unless it is the shipped one
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from memory_es.recall.rank.echo import AXIS_DIR, axis_file, question_axis
from recall_quality import DATA, MODELS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="use")
    parser.add_argument("--check", action="store_true",
                        help="write nothing: fail unless the shipped axis is what the dev "
                             "conversations give")
    args = parser.parse_args()
    embedder = MODELS[args.model]()
    data = json.loads((DATA / "conversations" / "conversations.json").read_text("utf-8"))
    asks: list[np.ndarray] = []
    states: list[np.ndarray] = []
    used = 0
    for conversation in data["conversations"]:
        if conversation["split"] != "dev":
            continue
        used += 1
        texts = [f"{t['speaker']}: {t['text']}" for s in conversation["sessions"]
                 for t in s["turns"]]
        vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
        question = np.array([t.rstrip().endswith("?") for t in texts])
        asks.append(vectors[question])
        states.append(vectors[~question])
    ask, state = np.concatenate(asks), np.concatenate(states)
    axis = ask.mean(0) - state.mean(0)
    axis /= np.linalg.norm(axis)
    name = axis_file(embedder.identity.key)
    if name is None:
        raise SystemExit(f"no axis file is named for {embedder.identity.key} in echo.AXIS_FILES")
    shipped = question_axis(embedder.identity.key)
    agreement = None if shipped is None else float(np.dot(shipped, axis))
    if args.check:
        if agreement is None or agreement < 0.9999:
            raise SystemExit(f"the shipped axis for {embedder.identity.model} is not what the "
                             f"dev conversations give (cosine {agreement})")
    else:
        np.save(AXIS_DIR / name, axis.astype(np.float32))
    print(f"{embedder.identity.model}: axis from {used} dev conversations ({len(ask)} asking, "
          f"{len(state)} stating turns)" + (f"; the shipped one agrees: cosine {agreement:.6f}"
                                            if args.check else f" -> {AXIS_DIR / name}"))
    print(json.dumps({"bench": "question_axis", "model": embedder.identity.model,
                      "conversations": used, "asking": len(ask), "stating": len(state),
                      "shipped_agreement": agreement}))


if __name__ == "__main__":
    main()
