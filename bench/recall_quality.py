"""Recall quality on a hand-labelled set, and a calibration measured for the local MiniLM model.

The set (``bench/data/recall_labelled.json``, described in ``bench/data/README.md``) holds ~200
personal-assistant memories and questions of five kinds: ``paraphrase`` (no shared content word
with the answer: vectors should win), ``anchor`` (dates, numbers, ids, names: lexical should
win), ``keyword``, and the unanswerable ``unrelated`` and ``near-miss`` (a wrong date or id, an
unknown person or attribute).

A Journal root with the ``local`` provider (all-MiniLM-L6-v2 int8, 384-d) admits every memory
through ``MemoryStore`` (background off, drained, ``embed_pending`` until nothing is left).
Three rankers then answer every question:

- lexical: ``memory_es.recall.recall`` with ``query_vector=None`` (FTS5 bm25 pool, degraded);
- cosine: every memory sorted by cosine with numpy (the vector floor);
- hybrid: ``memory_es.recall.recall`` with the query vector and the store's ``VectorMatrix``.

Ranking figures (recall@1, recall@5, MRR; a question is a hit when any gold id is in the top k)
use the hybrid's full ranking; "returned" recall@5 is what ``recall`` hands an agent after the
tail cut and floor. Abstention: the share of unanswerable questions whose result is
``evidence == "insufficient"`` (unrelated and near-miss apart); false abstention: the share of
answerable questions that get it.

Calibration, measured on this set for MiniLM (the reference numbers, ``NOMIC_V15``, are for
nomic-embed-text v1.5) by the library's fitting (``memory_es.recall.calibrate``, which also backs
``memory-es calibrate``):

- ``no_evidence_cosine``: the highest value on a 0.01 grid (0.00-0.70) whose hybrid recall@5
  and MRR stay within 0.005 of the grid's best: zeroing cosines below it must cost no ranking.
  (The simpler rule, a high percentile of the unanswerable questions' best cosine, is printed
  too: for MiniLM it lands near 0.67, above most true answers' cosine, and wrecks paraphrases.)
- ``recall_floor``: with that no-evidence cosine, the threshold on the best hybrid score that
  maximises balanced accuracy between answerable and unanswerable questions (the middle of the
  best interval);
- ``recall_tail``: the reference's scaled by ``recall_floor / 0.65`` (kept proportional);
- ``auto_floor``, ``auto_window``: the reference's 0.62 / 0.04 (the set has no auto-block
  labels to fit them on).

The calibration is fitted on the same questions it is scored on; a stratified 2-fold split
(fit on one half, score the other, both ways) gives held-out figures beside it.
Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.embeddings import LocalEmbedder
from memory_es.ids import sha256_hex
from memory_es.recall import NOMIC_V15, Calibration, VectorMatrix, calibrate, recall
from memory_es.recall.calibrate import RANK_DEPTH, RANKING_SLACK, UNCUT, Run, ranking_metrics
from memory_es.text import journal_text

DATA = Path(__file__).resolve().parent / "data" / "recall_labelled.json"
CONFIG = {"mode": "journal", "embeddings": {"provider": "local"}}
ANSWERABLE = ("paraphrase", "anchor", "keyword")
UNANSWERABLE = ("unrelated", "near-miss")


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    gold: frozenset[str]  # store memory ids (sha256 of the journal text)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


class Bench:
    """The built root and everything the rankers need, with per-calibration runs cached."""

    def __init__(self, store: MemoryStore, embedder: LocalEmbedder, questions: list[Question],
                 now: datetime) -> None:
        self.store = store
        self.questions = questions
        self.now = now
        self.conn = store.projections.get().index.conn
        self.matrix: VectorMatrix = store.vectors.matrix(embedder, self.conn)
        ids = dict(self.conn.execute("SELECT rowid, id FROM memories"))
        self.row_ids = [ids[int(r)] for r in self.matrix.rowids]
        t0 = time.perf_counter()
        self.qvec = embedder.embed([q.text for q in questions])
        self.query_embed_s = time.perf_counter() - t0
        self.sims = self.qvec @ self.matrix.matrix.T  # questions x memories
        self._runs: dict[tuple[Calibration, int], Run] = {}
        self._full: dict[tuple[float, int], tuple[list[str], float]] = {}

    def cosine_ranking(self, i: int) -> list[str]:
        order = np.argsort(-self.sims[i], kind="stable")[:RANK_DEPTH]
        return [self.row_ids[j] for j in order]

    def best_cosine(self, i: int) -> float:
        return float(self.sims[i].max())

    def lexical_ranking(self, i: int) -> list[str]:
        result = recall(self.conn, self.questions[i].text, now=self.now, query_vector=None,
                        matrix=None, limit=RANK_DEPTH)
        return [h.id for h in result.recall.hits]

    def full(self, nec: float, i: int) -> tuple[list[str], float]:
        """The hybrid's whole ranked pool and best score (only ``no_evidence_cosine`` matters)."""
        key = (nec, i)
        if key not in self._full:
            result = recall(self.conn, self.questions[i].text, now=self.now,
                            query_vector=self.qvec[i], matrix=self.matrix,
                            calibration=Calibration(nec, UNCUT, UNCUT), limit=RANK_DEPTH)
            hits = result.recall.hits
            self._full[key] = ([h.id for h in hits], hits[0].score if hits else 0.0)
        return self._full[key]

    def run(self, cal: Calibration, i: int) -> Run:
        key = (cal, i)
        if key not in self._runs:
            ranking, best = self.full(cal.no_evidence_cosine, i)
            cut = recall(self.conn, self.questions[i].text, now=self.now,
                         query_vector=self.qvec[i], matrix=self.matrix, calibration=cal,
                         limit=10)
            self._runs[key] = Run(ranking=ranking, best=best,
                                  returned=[h.id for h in cut.recall.hits],
                                  insufficient=cut.recall.evidence == "insufficient")
        return self._runs[key]


# --------------------------------------------------------------------------------------------
# Metrics and calibration: the library's (``memory_es.recall.calibrate``), over this bench's
# rankings


def evaluate(bench: Bench, cal: Calibration, idx: Sequence[int]) -> dict[str, Any]:
    """Hybrid figures of one calibration over the questions ``idx``."""
    return calibrate.evaluate(bench.questions, bench.run, cal, idx)


def fit_calibration(bench: Bench, idx: Sequence[int]) -> tuple[Calibration, dict[str, Any]]:
    """Measure the five numbers on the questions ``idx`` (see the module docstring)."""
    cal, fit = calibrate.fit_calibration([q.gold for q in bench.questions], bench.full, idx)
    neg = [i for i in idx if not bench.questions[i].answerable]
    fit["p90_unanswerable_cosine"] = round(
        float(np.percentile([bench.best_cosine(i) for i in neg], 90)), 3)
    return cal, fit


def two_fold(bench: Bench) -> dict[str, Any]:
    """Stratified halves (alternate questions of each kind): fit on one, score the other."""
    qs = bench.questions
    folds: list[list[int]] = [[], []]
    for kind in (*ANSWERABLE, *UNANSWERABLE):
        for n, i in enumerate(i for i in range(len(qs)) if qs[i].kind == kind):
            folds[n % 2].append(i)
    cals = []
    held: list[dict[str, Any]] = []
    for k in (0, 1):
        cal, _ = fit_calibration(bench, folds[k])
        cals.append(cal)
        held.append(evaluate(bench, cal, folds[1 - k]))
    sizes = [len(folds[1]), len(folds[0])]

    def pooled(key: str, subset: Callable[[Question], bool]) -> float:
        """Average of the two held-out halves, weighted by how many questions each holds."""
        weights = [sum(1 for i in folds[1 - k] if subset(qs[i])) for k in (0, 1)]
        total = sum(weights)
        return sum(h[key] * w for h, w in zip(held, weights, strict=True)) / total

    figures: dict[str, Any] = {"calibrations": [asdict(c) for c in cals], "sizes": sizes}
    for key in ("recall_at_1", "recall_at_5", "mrr", "returned_recall_at_5", "false_abstention"):
        figures[key] = pooled(key, lambda q: q.answerable)
    figures["abstain_unrelated"] = pooled("abstain_unrelated", lambda q: q.kind == "unrelated")
    figures["abstain_near-miss"] = pooled("abstain_near-miss", lambda q: q.kind == "near-miss")
    return figures


# --------------------------------------------------------------------------------------------
# Build


def load(path: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]], datetime]:
    data = json.loads(path.read_text("utf-8"))
    now = datetime.fromisoformat(data["now"].replace("Z", "+00:00"))
    return data["memories"], data["questions"], now


def build_store(root: Path, memories: list[dict[str, str]], embedder: LocalEmbedder,
                now: datetime) -> tuple[MemoryStore, float]:
    ticks = itertools.count()
    start = now - timedelta(days=60)

    def clock() -> datetime:  # memories recorded over the 60 days before "now"
        return start + next(ticks) * timedelta(minutes=10)

    t0 = time.perf_counter()
    store = MemoryStore.open(root, parse_config(CONFIG), clock=clock, background=False,
                             embedder=embedder)
    for m in memories:
        result = store.persist_completed_turn(
            CompletedTurn(run_id=f"recall-{m['id']}", outcome="success", answer=m["text"]))
        if result.status != "admitted":
            raise SystemExit(f"memory {m['id']} not admitted: {result}")
    store.drain()
    while store.embed_pending():
        pass
    return store, time.perf_counter() - t0


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--small", action="store_true",
                        help="smoke test: the first 60 memories and the questions they answer")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    memories, raw_questions, now = load(args.data)
    if args.small:
        keep = {m["id"] for m in memories[:60]}
        memories = memories[:60]
        raw_questions = [q for q in raw_questions
                         if not q["gold"] or all(g in keep for g in q["gold"])]
    store_id = {m["id"]: sha256_hex(journal_text(m["text"])) for m in memories}
    questions = [Question(q["id"], q["kind"], q["question"],
                          frozenset(store_id[g] for g in q["gold"])) for q in raw_questions]

    wall0 = time.perf_counter()
    embedder = LocalEmbedder()
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        store, build_s = build_store(Path(d) / "root", memories, embedder, now)
        try:
            bench = Bench(store, embedder, questions, now)
            if len(bench.row_ids) != len(memories):
                raise SystemExit(f"{len(bench.row_ids)} vectors for {len(memories)} memories")
            figures = report(bench, build_s)
        finally:
            store.close()
    print(f"(whole run {time.perf_counter() - wall0:.1f} s)")
    print(json.dumps(figures, sort_keys=True))


def report(bench: Bench, build_s: float) -> dict[str, Any]:
    qs = bench.questions
    every = list(range(len(qs)))
    ans = [i for i in every if qs[i].answerable]
    counts = {k: sum(1 for q in qs if q.kind == k) for k in (*ANSWERABLE, *UNANSWERABLE)}
    print(f"{len(bench.row_ids)} memories admitted, drained and embedded in {build_s:.1f} s; "
          f"{len(qs)} questions embedded in {bench.query_embed_s * 1e3:.0f} ms")
    print("questions: " + ", ".join(f"{k} {n}" for k, n in counts.items()))

    measured, fit = fit_calibration(bench, every)
    lexical = [bench.lexical_ranking(i) for i in every]
    cosine = [bench.cosine_ranking(i) for i in every]
    rankers: dict[str, Callable[[int], Sequence[str]]] = {
        "lexical": lambda i: lexical[i],
        "cosine": lambda i: cosine[i],
        "hybrid NOMIC_V15": lambda i: bench.run(NOMIC_V15, i).ranking,
        "hybrid measured": lambda i: bench.run(measured, i).ranking,
    }

    print("\nranking (answerable questions; recall@5 by kind)")
    print(f"  {'ranker':<18}{'R@1':>7}{'R@5':>7}{'MRR':>7}"
          + "".join(f"{k[:10]:>12}" for k in ANSWERABLE))
    table: dict[str, dict[str, float]] = {}
    for name, rank in rankers.items():
        row = ranking_metrics([rank(i) for i in ans], [qs[i].gold for i in ans])
        for kind in ANSWERABLE:
            sub = [i for i in ans if qs[i].kind == kind]
            row[kind] = ranking_metrics([rank(i) for i in sub],
                                        [qs[i].gold for i in sub])["recall_at_5"]
        table[name] = row
        print(f"  {name:<18}{row['recall_at_1']:7.3f}{row['recall_at_5']:7.3f}{row['mrr']:7.3f}"
              + "".join(f"{row[k]:12.3f}" for k in ANSWERABLE))

    print(f"\nmeasured calibration for {LocalEmbedder().identity.model} (fitted on this set: "
          f"no held-out split; balanced accuracy {fit['balanced_accuracy']:.3f})")
    print(f"  no_evidence_cosine {measured.no_evidence_cosine:.3f}  (the highest on a 0.01 grid "
          f"whose hybrid R@5 and MRR stay within {RANKING_SLACK} of the grid's best "
          f"{fit['top_recall_at_5']:.3f} / {fit['top_mrr']:.3f})")
    print(f"  recall_floor       {measured.recall_floor:.3f}  (max balanced accuracy of the best "
          "hybrid score, answerable vs unanswerable)")
    print(f"  recall_tail        {measured.recall_tail:.3f}  (NOMIC_V15 x {fit['scale']:.3f})"
          f"  auto_floor {measured.auto_floor:.3f}  auto_window {measured.auto_window:.3f}"
          "  (NOMIC_V15's: no auto-block labels)")
    curve = "  ".join(f"{n:.2f}:{r5:.3f}" for n, (r5, _) in fit["grid"].items()
                      if round(n * 100) % 10 == 0)
    print(f"  hybrid R@5 by no_evidence_cosine: {curve}")
    p90 = fit["p90_unanswerable_cosine"]
    p90_r5 = ranking_metrics([bench.full(p90, i)[0] for i in ans],
                             [qs[i].gold for i in ans])["recall_at_5"]
    print(f"  (rejected rule: p90 of the unanswerable questions' best cosine = {p90:.3f} as "
          f"no_evidence_cosine gives hybrid R@5 {p90_r5:.3f})")
    neg_cos = [bench.best_cosine(i) for i in every if not qs[i].answerable]
    pos_cos = [bench.best_cosine(i) for i in ans]
    print(f"  best cosine: answerable median {statistics.median(pos_cos):.3f}, "
          f"unanswerable median {statistics.median(neg_cos):.3f} max {max(neg_cos):.3f}")

    per_cal = {"NOMIC_V15": evaluate(bench, NOMIC_V15, every),
               "measured": evaluate(bench, measured, every)}
    held = two_fold(bench)
    print("\nhybrid as returned (recall's tail cut and floor) and abstention")
    print(f"  {'calibration':<22}{'R@5 ret':>8}{'hits':>6}{'abst unrel':>11}{'abst near':>10}"
          f"{'false abst':>11}{'auto on none':>13}")
    rows = [(n, e) for n, e in per_cal.items()] + [("measured, 2-fold held", held)]
    for name, e in rows:
        hits = f"{e['returned_hits_mean']:6.1f}" if "returned_hits_mean" in e else f"{'':6}"
        auto = pct(e["auto_block_on_unanswerable"]) if "auto_block_on_unanswerable" in e else ""
        print(f"  {name:<22}{e['returned_recall_at_5']:8.3f}{hits}"
              f"{pct(e['abstain_unrelated']):>11}{pct(e['abstain_near-miss']):>10}"
              f"{pct(e['false_abstention']):>11}{auto:>13}")
    print(f"  2-fold held-out ranking: R@1 {held['recall_at_1']:.3f}  R@5 "
          f"{held['recall_at_5']:.3f}  MRR {held['mrr']:.3f}; fold calibrations: "
          + "; ".join(", ".join(f"{v:.3f}" for v in c.values()) for c in held["calibrations"]))

    hybrid = table["hybrid measured"]
    lex5, cos5 = table["lexical"]["recall_at_5"], table["cosine"]["recall_at_5"]
    wins = hybrid["recall_at_5"] > max(lex5, cos5)
    print(f"\nhybrid (measured) recall@5 {hybrid['recall_at_5']:.3f} vs lexical {lex5:.3f}, "
          f"cosine {cos5:.3f}: {'beats both' if wins else 'does NOT beat both'}  "
          f"{'✓' if wins else '✗'}")

    m = per_cal["measured"]
    r4 = 4

    def rounded(d: dict[str, Any]) -> dict[str, Any]:
        return {k: round(v, r4) if isinstance(v, float) else v for k, v in d.items()}

    return {
        "bench": "recall_quality",
        "memories": len(bench.row_ids),
        "questions": counts,
        "lexical_recall_at_5": round(lex5, r4),
        "cosine_recall_at_5": round(cos5, r4),
        "hybrid_recall_at_1": round(hybrid["recall_at_1"], r4),
        "hybrid_recall_at_5": round(hybrid["recall_at_5"], r4),
        "hybrid_mrr": round(hybrid["mrr"], r4),
        "hybrid_beats_both_at_5": wins,
        "hybrid_returned_recall_at_5": round(m["returned_recall_at_5"], r4),
        "hybrid_nomic_recall_at_5": round(table["hybrid NOMIC_V15"]["recall_at_5"], r4),
        "abstention": {
            "unrelated": round(m["abstain_unrelated"], r4),
            "near_miss": round(m["abstain_near-miss"], r4),
            "false_abstention": round(m["false_abstention"], r4),
            "nomic_v15": {"unrelated": round(per_cal["NOMIC_V15"]["abstain_unrelated"], r4),
                          "near_miss": round(per_cal["NOMIC_V15"]["abstain_near-miss"], r4),
                          "false_abstention": round(per_cal["NOMIC_V15"]["false_abstention"],
                                                    r4)},
            "held_out_2fold": rounded({k: held[k] for k in (
                "abstain_unrelated", "abstain_near-miss", "false_abstention",
                "recall_at_5", "returned_recall_at_5")}),
        },
        "calibration": asdict(measured),
        "calibration_fit": "same set (no held-out split); 2-fold held-out figures beside it",
    }


if __name__ == "__main__":
    main()
