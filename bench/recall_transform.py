"""Experiment: a fixed read-time post-processing of the embedding vectors, measured like
``bench/recall_quality.py`` (calibration refitted on the dev splits, figures on the test splits).

Variants (applied identically to stored rows and to queries, then re-normalised):

- ``raw``: the model's vectors as stored;
- ``center``: minus the mean vector;
- ``abttN``: minus the mean, then minus the projection on the top N principal directions
  ("all-but-the-top", Mu & Viswanath 2018).

The mean and directions are computed from MEMORY texts only: every memory of both sets that is
not a gold answer of any test-split question ("dev memories"); no question text is used.
``--cross`` also fits them on one set's dev memories and applies them to both (does the
transform belong to the model, or to the corpus it was fitted on?).

Each set is admitted once; the candidate pools are recomputed per variant from the same index
with a transformed copy of the matrix. Prints ``recall_quality``'s per-set report per variant,
then one summary table.

Result for USE multilingual v3 (run before the no-evidence cosine rule became the
plateau's middle, so every variant's calibration took the plateau's highest value): no variant
wins. Centring and all-but-the-top (1-3 directions) lift the hybrid test recall@5 a little
(labelled 0.867 -> 0.888-0.898, held-out 0.789 -> 0.794-0.807) but lower cosine alone (0.878 ->
0.857-0.867, 0.752 -> 0.739-0.748), leave paraphrase below cosine and the returned recall@5
lower on the held-out set (0.784 -> 0.752-0.771), and move abstention both ways (unrelated
flagged 44 % / 41 % -> 33-78 % / 20-35 %, false abstention up to 8.2 %); a centre fitted on one
set's memories alone gave 100 % / 29 % unrelated flagged at 17.3 % / 2.3 % false abstention. Not
shipped.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

import recall_quality as rq  # bench/ is the script's own directory, so on sys.path
from memory_es import CompletedTurn, MemoryStore
from memory_es.calibration.fit import RANK_DEPTH, fit_calibration, fit_hybrid, fit_tail
from memory_es.calibration.pools import PoolScorer
from memory_es.config import parse_config
from memory_es.embeddings import Embedder, embed_queries
from memory_es.ids import run_hash, run_memory_id
from memory_es.keystore import throwaway_key_store
from memory_es.recall import recall
from memory_es.recall.rank.calibrations import calibration_for
from memory_es.recall.rank.score import Calibration
from memory_es.recall.retrieve.candidates import candidate_pool
from memory_es.vectors.matrix import VectorMatrix


@dataclass
class Raw:
    """One admitted set: its questions, lexical rankings, raw vectors and the open store."""

    name: str
    questions: list[rq.Question]
    lexical: list[list[str]]
    rowids: np.ndarray
    row_ids: list[str]
    vectors: np.ndarray  # raw stored rows
    identity: str  # the embedding identity's key
    qvec: np.ndarray  # raw question vectors
    store: Any
    conn: Any
    memories: int


def admit(path: Path, embedder: Embedder, workdir: Path) -> Raw:
    data = json.loads(path.read_text("utf-8"))
    now = datetime.fromisoformat(data["now"].replace("Z", "+00:00"))
    memories = data["memories"]
    store_id = {m["id"]: run_memory_id(run_hash(f"recall-{m['id']}"), 0) for m in memories}
    questions = [rq.Question(q["id"], q["kind"], q["question"],
                             frozenset(store_id[g] for g in q["gold"]), rq.split_of(q), path.stem)
                 for q in data["questions"]]
    ats = [datetime.fromisoformat(m["at"].replace("Z", "+00:00")) if "at" in m
           else now - timedelta(days=60) + n * timedelta(minutes=10)
           for n, m in enumerate(memories)]
    clock = [ats[0]]
    store = MemoryStore.open(workdir / path.stem, parse_config(rq.CONFIG), clock=lambda: clock[0],
                             background=False, embedder=embedder)
    for m, at in zip(memories, ats, strict=True):
        clock[0] = at
        result = store.persist_completed_turn(
            CompletedTurn(run_id=f"recall-{m['id']}", outcome="success", answer=m["text"]))
        if result.status != "admitted":
            raise SystemExit(f"{path.name}: memory {m['id']} not admitted: {result}")
    store.drain()
    conn = store.projections.get().index.conn
    matrix = store.vectors.matrix(embedder, conn)
    ids = dict(conn.execute("SELECT rowid, id FROM memories"))
    row_ids = [ids[int(r)] for r in matrix.rowids]
    qvec = embed_queries(embedder, [q.text for q in questions])
    lexical = [[h.id for h in recall(conn, q.text, now=now, query_vector=None, matrix=None,
                                     limit=RANK_DEPTH).recall.hits] for q in questions]
    return Raw(path.stem, questions, lexical, matrix.rowids.copy(), row_ids,
               matrix.matrix.copy(), embedder.identity.key, qvec, store, conn, len(memories))


@dataclass(frozen=True)
class Transform:
    mean: np.ndarray | None
    directions: np.ndarray  # (k, dim), orthonormal

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = x.astype(np.float64)
        if self.mean is not None:
            y = y - self.mean
        if len(self.directions):
            y = y - (y @ self.directions.T) @ self.directions
        norms = np.linalg.norm(y, axis=-1, keepdims=True)
        return (y / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def fit_transform(rows: np.ndarray, k: int, center: bool = True) -> Transform:
    mean = rows.mean(axis=0) if center else None
    centred = rows - mean if mean is not None else rows
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return Transform(mean, vt[:k])


def dev_rows(raw: Raw) -> np.ndarray:
    test_gold = set().union(*(q.gold for q in raw.questions if q.split == "test"))
    keep = [j for j, mid in enumerate(raw.row_ids) if mid not in test_gold]
    return raw.vectors[keep]


def pools_for(raw: Raw, t: Transform | None) -> rq.BuiltSet:
    rows = raw.vectors if t is None else t(raw.vectors)
    qvec = raw.qvec if t is None else t(raw.qvec)
    # the raw space keeps the model's question axis; a transformed one has none shipped
    matrix = VectorMatrix(rows.shape[1], raw.identity if t is None else "")
    matrix._append([(int(r), rows[j].astype(np.float32).tobytes())
                    for j, r in enumerate(raw.rowids)])
    sims = qvec @ rows.T
    cosine = [[raw.row_ids[j] for j in np.argsort(-sims[i], kind="stable")[:RANK_DEPTH]]
              for i in range(len(raw.questions))]
    pools = [candidate_pool(raw.conn, q.text, query_vector=qvec[i], matrix=matrix)
             for i, q in enumerate(raw.questions)]
    return rq.BuiltSet(raw.name, raw.questions, pools, cosine, raw.lexical, raw.memories, 0.0)


def measure(sets: list[rq.BuiltSet], shipped: Calibration) -> dict[str, Any]:
    rq.ALL_QUESTIONS.clear()
    rq.ALL_QUESTIONS.extend(q for s in sets for q in s.questions)
    pools = [p for s in sets for p in s.pools]
    now = datetime.now().astimezone()
    base = PoolScorer(rq.ALL_QUESTIONS, pools, now)
    scorers: dict[float, PoolScorer] = {}

    def scorer(weight: float) -> PoolScorer:
        if weight not in scorers:
            scorers[weight] = base.with_weight(weight)
        return scorers[weight]

    reference = PoolScorer(rq.ALL_QUESTIONS, pools, now, scoring="reference")
    golds = [q.gold for q in rq.ALL_QUESTIONS]
    dev = [i for i, q in enumerate(rq.ALL_QUESTIONS) if q.split == "dev"]
    hybrid, _ = fit_hybrid(golds, scorer, dev)
    ref, _ = fit_calibration(golds, reference.full, dev)
    ref = Calibration(**{**asdict(ref), "recall_tail": fit_tail(golds, reference.run, ref, dev)})
    cals = {"hybrid": hybrid, "reference": ref, "shipped": shipped}
    print("  hybrid " + rq.numbers(hybrid))
    out: dict[str, Any] = {"calibration": asdict(hybrid), "sets": {}}
    offset = 0
    for built in sets:
        out["sets"][built.name] = rq.report_set(built, offset, scorer, reference, cals)
        offset += len(built.questions)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(rq.MODELS), default="use")
    parser.add_argument("--variants", default="raw,center,abtt1,abtt2,abtt3")
    parser.add_argument("--cross", action="store_true",
                        help="also fit the centre on one set's dev memories only")
    parser.add_argument("--save", type=Path, help="write the dev-memory mean and top-3 "
                                                  "directions here (.npz)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    embedder = rq.MODELS[args.model]()
    shipped = calibration_for(embedder.identity)
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-",
                                     dir=os.environ.get("TMPDIR")) as d:
        raws = [admit(rq.DATA / name, embedder, Path(d)) for name in rq.SETS]
        try:
            dev = np.concatenate([dev_rows(r) for r in raws])
            print(f"dev memories for the transform: {len(dev)} of "
                  f"{sum(len(r.row_ids) for r in raws)}")
            if args.save:
                t3 = fit_transform(dev, 3)
                assert t3.mean is not None
                np.savez(args.save, mean=t3.mean, directions=t3.directions)
            variants: dict[str, Transform | None] = {}
            for v in args.variants.split(","):
                if v == "raw":
                    variants[v] = None
                elif v == "center":
                    variants[v] = fit_transform(dev, 0)
                elif v.startswith("abtt"):
                    variants[v] = fit_transform(dev, int(v[4:]))
            if args.cross:
                for r in raws:
                    variants[f"center@{r.name[7:]}"] = fit_transform(dev_rows(r), 0)
            for name, t in variants.items():
                print(f"\n===== {name}")
                summary[name] = measure([pools_for(r, t) for r in raws], shipped)
        finally:
            for r in raws:
                r.store.close()
    print("\n===== summary (test splits: hybrid R@5 per kind | lexical | cosine; "
          "unrelated flagged / false abstention)")
    for name, out in summary.items():
        for set_name, s in out["sets"].items():
            kinds = [k for k in s["hybrid"] if isinstance(s["hybrid"][k], dict)]
            cells = " ".join(
                f"{k[:5]} {s['hybrid'][k]['recall_at_5']:.2f}/{s['lexical'][k]['recall_at_5']:.2f}"
                f"/{s['cosine'][k]['recall_at_5']:.2f}" for k in kinds)
            ret = s["returned_hybrid"]
            print(f"{name:<16}{set_name[7:]:<10} R@5 {s['hybrid']['recall_at_5']:.3f} "
                  f"(lex {s['lexical']['recall_at_5']:.3f}, cos {s['cosine']['recall_at_5']:.3f}) "
                  f"{cells} | unrel {100 * ret['abstain_unrelated']:.0f}% "
                  f"near {100 * ret['abstain_near-miss']:.0f}% "
                  f"false {100 * ret['false_abstention']:.1f}%")
    print(json.dumps(rq.round4(summary), sort_keys=True))


if __name__ == "__main__":
    with throwaway_key_store():
        main()
