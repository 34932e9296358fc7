"""Recall quality on labelled sets: fitted on a dev split, reported on the held-out test split.

Sets (``bench/data/*.json``, described in ``bench/data/README.md``): ``recall_labelled.json``
(~200 short curated notes; split by a hash of the question id, 40 % dev),
``recall_heldout.json`` (written apart from the code and the first set, with long multi-topic
chat turns and its own ``split`` field) and ``conversations/conversations.json`` (ten
two-person chats of 200+ turns over dated sessions, written apart from the ranking code; split
by conversation; one root per conversation, one memory per turn) and
``conversations_fresh/conversations_fresh.json`` (four more such chats, written after every
ranking choice and never used to make one: all test, so no fit sees it). Each set is admitted into
Journal roots with the offline ``local`` model, recorded at the memories' instants, then
``drain()`` (intakes, then vectors). Each turn carries its session's id as its conversation id;
``--sessions none`` admits the turns without one (as a host that passes none does) and
``--sessions conversation`` with one id for a whole conversation; ``--one-root`` puts every
conversation of a set in one root (one agent's memory of many people: more turns to search).

Per question, the candidate pool is computed once (``candidate_pool``: FTS5 bm25 top 50 union
vector top 50); every calibration is then scored over the pools exactly as ``recall`` would
(``PoolScorer``). Rankers:

- bm25: the index's FTS5 table (Porter over unicode61), the OR of the question's words, by
  bm25 alone (the plain lexical baseline);
- cosine: every memory sorted by cosine with numpy (the vector floor);
- rrf: reciprocal rank fusion (k = 60) of bm25 and cosine, equal weights (the naive hybrid);
- lexical: ``recall`` without a query vector (the product's lexical-only answer);
- hybrid: the default scoring, with the calibration fitted on the dev questions of every set
  (lexical weight, no-evidence cosine, recall floor, tail: ``fit_hybrid``);
- reference: the reference's embedding-first scoring, its calibration fitted the same way;
- shipped: what recall uses today for this model (``calibration_for``).

Figures (test split only, per set and per kind): recall@1, recall@5 (any@k: at least one
gold memory in the top k), MRR with 95 % Wilson
intervals; "returned" recall@5 (after the tail cut and floor, limit 10); abstention on
unrelated and near-miss questions (``evidence == "insufficient"``) and false abstention on
answerable ones; the automatic block's share of answers shown ("auto ans") and of no-answer
questions shown a block ("auto none"). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memory_es import CompletedTurn, MemoryStore
from memory_es.calibration.fit import (
    RANK_DEPTH,
    evaluate,
    fit_auto,
    fit_calibration,
    fit_hybrid,
    fit_tail,
    rank_of,
)
from memory_es.calibration.pools import PoolScorer
from memory_es.config import parse_config
from memory_es.embeddings import E5Embedder, Embedder, LocalEmbedder, UseEmbedder, embed_queries
from memory_es.ids import run_hash, run_memory_id
from memory_es.keystore import throwaway_key_store
from memory_es.recall import recall
from memory_es.recall.rank.calibrations import calibration_for
from memory_es.recall.rank.score import Calibration, Candidate
from memory_es.recall.retrieve.candidates import candidate_pool

DATA = Path(__file__).resolve().parent / "data"
SETS = ("recall_labelled.json", "recall_heldout.json", "conversations/conversations.json",
        "conversations_fresh/conversations_fresh.json")
CONFIG = {"mode": "journal", "embeddings": {"provider": "local"}}
NO_ANSWER = ("unrelated", "near-miss")
MODELS: dict[str, Callable[[], Embedder]] = {"minilm": LocalEmbedder, "use": UseEmbedder,
                                             "e5": E5Embedder}
DEV_SHARE = 4  # of 10: questions without a ``split`` go to dev when hash % 10 < 4


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    gold: frozenset[str]  # store memory ids (derived from each memory's run id)
    split: str
    set: str

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


@dataclass
class BuiltSet:
    name: str
    questions: list[Question]
    pools: list[list[Candidate]]
    cosine: list[list[str]]
    lexical: list[list[str]]
    bm25: list[list[str]]
    memories: int
    build_s: float
    asks: frozenset[str] = frozenset()  # memories whose text is a question (echo diagnostic)


def split_of(q: dict[str, Any]) -> str:
    if "split" in q:
        return str(q["split"])
    digest = int(hashlib.sha256(q["id"].encode()).hexdigest(), 16)
    return "dev" if digest % 10 < DEV_SHARE else "test"


SMALL_EACH = 8  # --small: questions kept per (split, answerable or not) of each part


def few(questions: list[dict[str, Any]], small: bool) -> list[dict[str, Any]]:
    """All of them; with ``small`` (the smoke run) the first few of each split, answerable
    and not, so every step of the fit still has what it needs, in a fraction of the time."""
    if not small:
        return questions
    seen: dict[tuple[str, bool], int] = {}
    kept = []
    for q in questions:
        key = (split_of(q), bool(q["gold"]))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= SMALL_EACH:
            kept.append(q)
    return kept


def build(path: Path, embedder: Embedder, workdir: Path, small: bool,
          sessions: str = "given", one_root: bool = False, burst: bool = False) -> BuiltSet:
    """A labelled set, read once: conversations (one root each) or curated memories."""
    data = json.loads(path.read_text("utf-8"))
    if "conversations" in data:
        return build_conversations(path.stem, data, embedder, workdir, small, sessions,
                                   one_root, burst)
    return build_curated(path.stem, data, embedder, workdir, small)


def build_curated(name: str, data: dict[str, Any], embedder: Embedder, workdir: Path,
                  small: bool) -> BuiltSet:
    """A curated set: one root holding every memory."""
    now = datetime.fromisoformat(data["now"].replace("Z", "+00:00"))
    memories = data["memories"][:60] if small else data["memories"]
    keep = {m["id"] for m in memories}
    questions = few([q for q in data["questions"] if all(g in keep for g in q["gold"])],
                    small)
    ats = [datetime.fromisoformat(m["at"].replace("Z", "+00:00")) if "at" in m
           else now - timedelta(days=60) + n * timedelta(minutes=10)
           for n, m in enumerate(memories)]
    return build_root(name, workdir / name, memories, ats, questions, embedder, now)


# The first turn's instant under --instants burst (any fixed instant: a run is reproducible).
BURST_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def build_conversations(name: str, data: dict[str, Any], embedder: Embedder, workdir: Path,
                        small: bool, sessions: str = "given", one_root: bool = False,
                        burst: bool = False) -> BuiltSet:
    """The conversational set: one root per conversation (one agent's memory of one
    relationship; ``one_root``: one root for them all), one memory per turn (``Speaker:
    text``) recorded at its session's instant plus a minute per turn, each turn's conversation
    id its session's (``sessions`` "given"), none or its conversation's; questions ask within
    their own conversation. Joined into one set whose ids are unique across roots (turn ids
    are). ``burst``: every turn recorded a second after the one before instead, sessions and
    conversations back to back (a host replaying a transcript as fast as it reads it)."""
    conversations = data["conversations"]
    if small:  # one of each split the set has
        conversations = [next(c for c in conversations if c["split"] == split)
                         for split in ("dev", "test")
                         if any(c["split"] == split for c in conversations)]
    # the conversations each root holds: one each, or all of them in one
    groups = [conversations] if one_root else [[conv] for conv in conversations]
    parts = []
    for group in groups:
        memories: list[dict[str, Any]] = []
        ats: list[datetime] = []
        questions: list[dict[str, Any]] = []
        for conv in group:
            for session in conv["sessions"]:
                start = datetime.fromisoformat(session["at"].replace("Z", "+00:00"))
                known = {"given": session["id"], "none": None,
                         "conversation": conv["id"]}[sessions]
                for n, turn in enumerate(session["turns"]):
                    memories.append({"id": turn["id"], "session": known,
                                     "text": f"{turn['speaker']}: {turn['text']}"})
                    ats.append(BURST_START + len(ats) * timedelta(seconds=1) if burst
                               else start + n * timedelta(minutes=1))
            questions += few([{"id": q["id"], "kind": q["kind"], "question": q["question"],
                               "gold": q["evidence"], "split": conv["split"]}
                              for q in conv["questions"]], small)
        parts.append(build_root(name, workdir / (name if one_root else group[0]["id"]),
                                memories, ats, questions, embedder,
                                max(ats) + timedelta(days=1)))
    return BuiltSet(name, [q for p in parts for q in p.questions],
                    [x for p in parts for x in p.pools], [x for p in parts for x in p.cosine],
                    [x for p in parts for x in p.lexical], [x for p in parts for x in p.bm25],
                    sum(p.memories for p in parts), sum(p.build_s for p in parts),
                    frozenset(x for p in parts for x in p.asks))


def build_root(name: str, root: Path, memories: Sequence[dict[str, Any]],
               ats: Sequence[datetime], raw_questions: Sequence[dict[str, Any]],
               embedder: Embedder, now: datetime) -> BuiltSet:
    """Admit ``memories`` (each at its instant, run id ``recall-<id>``) into a Journal root,
    drain it, and compute every question's pool and baseline rankings over it as of ``now``."""
    store_id = {m["id"]: run_memory_id(run_hash(f"recall-{m['id']}"), 0) for m in memories}
    questions = [Question(q["id"], q["kind"], q["question"],
                          frozenset(store_id[g] for g in q["gold"]), split_of(q), name)
                 for q in raw_questions]
    clock = [ats[0]]  # each memory is recorded at its own instant; later work at the last
    t0 = time.perf_counter()
    store = MemoryStore.open(root, parse_config(CONFIG), clock=lambda: clock[0],
                             background=False, embedder=embedder)
    try:
        for m, at in zip(memories, ats, strict=True):
            clock[0] = at
            result = store.persist_completed_turn(CompletedTurn(
                run_id=f"recall-{m['id']}", outcome="success", answer=m["text"],
                session=m.get("session")))
            if result.status != "admitted":
                raise SystemExit(f"{name}: memory {m['id']} not admitted: {result}")
        store.drain()
        build_s = time.perf_counter() - t0
        conn = store.projections.get().index.conn
        matrix = store.vectors.matrix(embedder, conn)
        ids = dict(conn.execute("SELECT rowid, id FROM memories"))
        row_ids = [ids[int(r)] for r in matrix.rowids]
        if len(row_ids) != len(ids):  # a repeated turn ("lol") may be one line: count lines
            raise SystemExit(f"{name}: {len(row_ids)} vectors for {len(ids)} memories")
        qvec = embed_queries(embedder, [q.text for q in questions])
        sims = qvec @ matrix.matrix.T
        cosine = [[row_ids[j] for j in np.argsort(-sims[i], kind="stable")[:RANK_DEPTH]]
                  for i in range(len(questions))]
        pools = [candidate_pool(conn, q.text, query_vector=qvec[i], matrix=matrix)
                 for i, q in enumerate(questions)]
        lexical = [[h.id for h in recall(conn, q.text, now=now, query_vector=None, matrix=None,
                                         limit=RANK_DEPTH).recall.hits] for q in questions]
        bm25 = [bm25_ranking(conn, ids, q.text) for q in questions]
    finally:
        store.close()
    asks = frozenset(store_id[m["id"]] for m in memories if asks_question(m["text"]))
    return BuiltSet(name, questions, pools, cosine, lexical, bm25, len(memories), build_s,
                    asks)


def asks_question(text: str) -> bool:
    """A memory that ends in a question mark (a diagnostic of the bench, never of ranking)."""
    return text.rstrip().endswith(("?", "\uff1f", "\u061f"))


def bm25_ranking(conn: Any, ids: dict[int, str], text: str) -> list[str]:
    """The plain baseline: the index's own FTS5 table (Porter over unicode61), the OR of the
    question's words, ranked by bm25 alone."""
    words = re.findall(r"\w+", text.lower())
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in words)
    return [ids[r] for (r,) in conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
        "ORDER BY bm25(memories_fts), rowid LIMIT ?", (match, RANK_DEPTH))]


def rrf_ranking(*rankings: Sequence[str], k: int = 60) -> list[str]:
    """Reciprocal rank fusion of whole rankings, equal weights (the naive hybrid baseline)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, memory_id in enumerate(ranking, 1):
            scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda m: -scores[m])[:RANK_DEPTH]


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion."""
    if not n:
        return math.nan, math.nan
    z = 1.96
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def at_k(rankings: Sequence[Sequence[str]], golds: Sequence[frozenset[str]], k: int
         ) -> tuple[float, int, int]:
    ranks = [rank_of(r, g) for r, g in zip(rankings, golds, strict=True)]
    hits = sum(1 for r in ranks if r is not None and r <= k)
    return (hits / len(ranks) if ranks else math.nan), hits, len(ranks)


def mrr(rankings: Sequence[Sequence[str]], golds: Sequence[frozenset[str]]) -> float:
    ranks = [rank_of(r, g) for r, g in zip(rankings, golds, strict=True)]
    return sum(1.0 / r for r in ranks if r) / len(ranks) if ranks else math.nan


def report_set(built: BuiltSet, offset: int, scorer: Callable[[float], PoolScorer],
               reference: PoolScorer, cals: dict[str, Calibration]) -> dict[str, Any]:
    """Test-split figures of one set; question i of the set is ``offset + i`` overall."""
    qs = built.questions
    test = [i for i, q in enumerate(qs) if q.split == "test"]
    kinds = sorted({qs[i].kind for i in test if qs[i].answerable})
    rankers: dict[str, Callable[[int], Sequence[str]]] = {
        "bm25": lambda i: built.bm25[i],
        "cosine": lambda i: built.cosine[i],
        "rrf": lambda i: rrf_ranking(built.bm25[i], built.cosine[i]),
        "lexical": lambda i: built.lexical[i],
        "hybrid": lambda i: scorer(cals["hybrid"].lexical_weight).run(
            cals["hybrid"], offset + i).ranking,
        "reference": lambda i: reference.run(cals["reference"], offset + i).ranking,
        "shipped": lambda i: scorer(cals["shipped"].lexical_weight).run(
            cals["shipped"], offset + i).ranking,
    }
    print(f"\n{built.name}: {built.memories} memories (built in {built.build_s:.1f} s), "
          f"{len(test)} test questions ({sum(1 for i in test if qs[i].answerable)} answerable)")
    heads = [*kinds, "top asks"] if built.asks else kinds
    print(f"  {'ranker':<10}{'R@1':>7}{'R@5':>7}{'R@10':>7}{'MRR':>7}  "
          + "".join(f"{k[:12]:>18}" for k in heads))
    if built.asks:
        gold = [g for i in test for g in qs[i].gold]
        print(f"  ('top asks': the top hit is a question; of all memories "
              f"{100 * len(built.asks) / built.memories:.0f}% are, of the evidence "
              f"{100 * sum(1 for g in gold if g in built.asks) / max(1, len(gold)):.0f}%)")
    out: dict[str, Any] = {"memories": built.memories, "test_questions": len(test)}
    for name, rank in rankers.items():
        ans = [i for i in test if qs[i].answerable]
        golds = [qs[i].gold for i in ans]
        rankings = [rank(i) for i in ans]
        r1, _, _ = at_k(rankings, golds, 1)
        r5, _, _ = at_k(rankings, golds, 5)
        r10, _, _ = at_k(rankings, golds, 10)
        row: dict[str, Any] = {"recall_at_1": r1, "recall_at_5": r5, "recall_at_10": r10,
                               "mrr": mrr(rankings, golds)}
        cells = []
        for kind in kinds:
            sub = [i for i in ans if qs[i].kind == kind]
            value, hits, n = at_k([rank(i) for i in sub], [qs[i].gold for i in sub], 5)
            low, high = wilson(hits, n)
            row[kind] = {"recall_at_5": value, "ci95": [low, high], "n": n}
            cells.append(f"{value:.2f} [{low:.2f},{high:.2f}]")
        if built.asks:  # answers, not echoes: how often the top hit only asks
            row["top_hit_asks"] = sum(1 for r in rankings if r and r[0] in built.asks) \
                / len(rankings)
            cells.append(f"{100 * row['top_hit_asks']:.0f}%")
        out[name] = row
        print(f"  {name:<10}{r1:7.3f}{r5:7.3f}{r10:7.3f}{row['mrr']:7.3f}  "
              + "".join(f"{c:>18}" for c in cells))
    print(f"  {'returned':<22}{'R@5':>6}{'hits':>6}{'abst unrel':>12}{'abst near':>11}"
          f"{'false abst':>11}{'auto ans':>10}{'auto none':>10}")
    index = [offset + i for i in test]
    for name, cal in cals.items():
        runs = reference if name == "reference" else scorer(cal.lexical_weight)
        figures = evaluate(ALL_QUESTIONS, runs.run, cal, index)
        out[f"returned_{name}"] = figures
        print(f"  {name:<22}{figures['returned_recall_at_5']:6.3f}"
              f"{figures['returned_hits_mean']:6.1f}{pct(figures['abstain_unrelated']):>12}"
              f"{pct(figures['abstain_near-miss']):>11}{pct(figures['false_abstention']):>11}"
              f"{pct(figures['auto_answer_present']):>10}"
              f"{pct(figures['auto_block_on_unanswerable']):>10}")
    return out


def pct(x: float) -> str:
    return "    -" if math.isnan(x) else f"{100 * x:5.1f}%"


ALL_QUESTIONS: list[Question] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, action="append",
                        help="a labelled set (repeatable; default: every set in bench/data)")
    parser.add_argument("--model", choices=sorted(MODELS), default="use",
                        help="the offline local model to measure (default: use, the local "
                             "provider's default)")
    parser.add_argument("--small", action="store_true",
                        help="smoke test: the first 60 memories of each curated set, one "
                             "conversation of each split, a few questions of each kind")
    parser.add_argument("--sessions", choices=("given", "none", "conversation"),
                        default="given",
                        help="the conversation id each conversational turn is admitted with: "
                             "its session's (default), none (a host that passes none), or one "
                             "for the whole conversation")
    parser.add_argument("--instants", choices=("sessions", "burst"), default="sessions",
                        help="when each conversational turn is recorded: at its session's "
                             "instant plus a minute a turn (default), or a second after the "
                             "turn before, whatever its session (a transcript replayed at once)")
    parser.add_argument("--one-root", action="store_true",
                        help="every conversation of a set in one root instead of one each")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    paths = args.data or [DATA / name for name in SETS if (DATA / name).exists()]
    wall0 = time.perf_counter()
    embedder = MODELS[args.model]()
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-",
                                     dir=os.environ.get("TMPDIR")) as d:
        sets = [build(path, embedder, Path(d), args.small, args.sessions, args.one_root,
                      args.instants == "burst")
                for path in paths]
    ALL_QUESTIONS.extend(q for s in sets for q in s.questions)
    if not any(q.split == "dev" for q in ALL_QUESTIONS):
        raise SystemExit("recall_quality: no dev question in the chosen sets to fit on (the "
                         "fresh set is all test); add a set with a dev split, e.g. --data "
                         "bench/data/conversations/conversations.json")
    pools = [p for s in sets for p in s.pools]
    now = datetime.now().astimezone()
    base = PoolScorer(ALL_QUESTIONS, pools, now)
    scorers: dict[float, PoolScorer] = {}

    def scorer(weight: float) -> PoolScorer:
        if weight not in scorers:
            scorers[weight] = base.with_weight(weight)
        return scorers[weight]

    reference = PoolScorer(ALL_QUESTIONS, pools, now, scoring="reference")
    golds = [q.gold for q in ALL_QUESTIONS]
    dev = [i for i, q in enumerate(ALL_QUESTIONS) if q.split == "dev"]
    t0 = time.perf_counter()
    sets_of = [q.set for q in ALL_QUESTIONS]
    hybrid, fit = fit_hybrid(golds, scorer, dev, groups=sets_of)
    ref, _ = fit_calibration(golds, reference.full, dev)
    ref = Calibration(**{**asdict(ref), "recall_tail": fit_tail(golds, reference.run, ref, dev)})
    ref = fit_auto(golds, reference.auto, ref, dev)
    shipped = calibration_for(embedder.identity)
    cals = {"hybrid": hybrid, "reference": ref, "shipped": shipped}
    print(f"fitted on {len(dev)} dev questions of {len(sets)} set(s) in "
          f"{time.perf_counter() - t0:.1f} s")
    for name, cal in cals.items():
        print(f"  {name:<10}" + numbers(cal))
    print("  dev (R@5, MRR) by lexical weight: " + ", ".join(
        f"{w}: {r5:.3f}/{m:.3f}" for w, (r5, m) in fit["by_lexical_weight"].items()))
    print("  dev (R@5, MRR) by conversation turn (weight/boost/support): " + ", ".join(
        f"{w}/{b:g}/{s:g}: {r5:.3f}/{m:.3f}"
        for (w, b, s), (r5, m) in fit["by_dialogue"].items()))
    print("  dev (R@5, MRR) by turn score: " + ", ".join(
        f"{how}: {r5:.3f}/{m:.3f}" for how, (r5, m) in fit["by_turn_model"].items()))
    print("  dev (R@5, MRR) by echo removal: " + ", ".join(
        f"{share:g}: {r5:.3f}/{m:.3f}" for share, (r5, m) in fit["by_echo"].items()))

    figures: dict[str, Any] = {"bench": "recall_quality", "model": embedder.identity.model,
                               "sessions": args.sessions, "one_root": args.one_root,
                               "instants": args.instants,
                               "calibration_fitted_on": "dev split",
                               "calibrations": {k: asdict(v) for k, v in cals.items()},
                               "sets": {}}
    offset = 0
    for built in sets:
        figures["sets"][built.name] = report_set(built, offset, scorer, reference, cals)
        offset += len(built.questions)
    print(f"(whole run {time.perf_counter() - wall0:.1f} s)")
    print(json.dumps(round4(figures), sort_keys=True))


def numbers(cal: Calibration) -> str:
    """A calibration on one line: each number to three places, a turn model's in brackets."""
    return "  ".join(f"{k}=({numbers_of(v)})" if isinstance(v, dict) else
                     f"{k}={v}" if v is None else f"{k}={v:.3f}" for k, v in asdict(cal).items())


def numbers_of(values: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.3f}" for k, v in values.items())


def round4(value: Any) -> Any:
    """Floats to four places, all the way down (NaN as null)."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    if isinstance(value, dict):
        return {str(k): round4(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round4(v) for v in value]
    return value


if __name__ == "__main__":
    with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
        main()
