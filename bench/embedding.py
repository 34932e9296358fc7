"""Background embedding at the model's speed: the store's vector queue,
beside the model alone on the same texts, measured in the same run.

Texts: the turns of the conversational set (``bench/data/conversations``: what agents store),
cycled with a round mark until there are ``--n`` distinct ones (default 5,000), or
``--texts sentences`` for the synthetic sentences of ``bench/rebuild.py``.

- store: a Journal root with a ``local`` model (``--model``: USE multilingual v3 by default,
  ``minilm``, ``e5``), ``N`` turns
  admitted and projected with ``drain(embed=False)`` (so every line waits for its vector), then
  ``store.background.embed_pending()`` until nothing waits, timed: what the background worker
  runs (batches of 32, the vector cache, the index writes and the matrix refresh included).
- floor: the same model's ``embed`` on the same texts in batches of 32, nothing else.

Figure: texts/s of each and the ratio store / floor (goal >= 0.8). The two alternate for
``--rounds`` rounds (fresh root and a fresh vector cache each round), medians reported. Each
side loads its own model once before timing, so neither warms the other's tokenizer tables.
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.embeddings import (
    E5_MODEL,
    LOCAL_MODEL,
    USE_MODEL,
    E5Embedder,
    Embedder,
    LocalEmbedder,
    UseEmbedder,
)
from memory_es.embeddings.base import batched
from memory_es.keystore import throwaway_key_store
from rebuild import sentences  # bench/ is sys.path[0] when run as a script

SEED = 20262
GOAL = 0.8
CONVERSATIONS = Path(__file__).resolve().parent / "data" / "conversations" / "conversations.json"
# --model: the local provider's models, each with the name a config gives it
MODELS: dict[str, tuple[type[Embedder], str]] = {
    "use": (UseEmbedder, USE_MODEL), "minilm": (LocalEmbedder, LOCAL_MODEL),
    "e5": (E5Embedder, E5_MODEL)}


def conversation_turns(n: int) -> list[str]:
    """``n`` distinct conversation turns: the set's turns, then again with a round mark."""
    data = json.loads(CONVERSATIONS.read_text("utf-8"))
    turns = list(dict.fromkeys(f"{t['speaker']}: {t['text']}" for c in data["conversations"]
                               for s in c["sessions"] for t in s["turns"]))
    return [turns[i % len(turns)] + (f" ({i // len(turns) + 1})" if i >= len(turns) else "")
            for i in range(n)]


def store_round(texts: list[str], embedder: Embedder, model: str) -> float:
    """Seconds the store takes to embed every pending line of a fresh root."""
    config = parse_config({"mode": "journal",
                           "embeddings": {"provider": "local", "model": model}})
    with tempfile.TemporaryDirectory() as tmp, throwaway_key_store() as keys, \
            MemoryStore.open(Path(tmp) / "root", config, background=False, key_store=keys,
                             embedder=embedder) as store:
        for i, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(
                run_id=f"e{i}", outcome="success", answer=text))
            if i % 2000 == 1999:  # stay below the active-intake cap (B18)
                store.drain(embed=False)
        store.drain(embed=False)
        start = time.perf_counter()
        done = 0
        while (n := store.background.embed_pending()):
            done += n
        elapsed = time.perf_counter() - start
        assert done == len(texts), (done, len(texts))
        assert store.vector_backlog() == 0
    return elapsed


def floor_round(texts: list[str], embedder: Embedder) -> float:
    start = time.perf_counter()
    for batch in batched(texts, 32):
        embedder.embed(batch)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="texts per round")
    parser.add_argument("--texts", choices=("conversations", "sentences"),
                        default="conversations", help="what is embedded (default: "
                        "conversation turns)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=sorted(MODELS), default="use",
                        help="the local model (default: use, the provider's default)")
    parser.add_argument("--small", action="store_true", help="200 texts, 1 round (CI smoke)")
    args = parser.parse_args()
    n, rounds = (200, 1) if args.small else (args.n, args.rounds)
    logging.getLogger("memory_es").setLevel(logging.ERROR)
    texts = (conversation_turns(n) if args.texts == "conversations"  # distinct: no cache hit
             else sorted(set(sentences(n * 2, SEED)))[:n])  # inside a round
    kind, model_name = MODELS[args.model]
    floor_model, store_model = kind(), kind()
    for model in (floor_model, store_model):
        model.embed(texts[:32])  # warm
    stores, floors = [], []
    for _ in range(rounds):
        floors.append(floor_round(texts, floor_model))
        stores.append(store_round(texts, store_model, model_name))
    store_rate = len(texts) / statistics.median(stores)
    floor_rate = len(texts) / statistics.median(floors)
    ratio = store_rate / floor_rate
    print(f"{len(texts)} texts, {rounds} rounds: store {store_rate:,.0f} texts/s | model alone "
          f"{floor_rate:,.0f} texts/s | ratio {ratio:.2f} (goal >= {GOAL}) "
          f"{'✓' if ratio >= GOAL else '✗'}")
    print(json.dumps({"bench": "embedding", "model": model_name, "texts": len(texts),
                      "rounds": rounds,
                      "source": args.texts,
                      "store_texts_per_s": round(store_rate, 1),
                      "floor_texts_per_s": round(floor_rate, 1), "ratio": round(ratio, 3)},
                     sort_keys=True))


if __name__ == "__main__":
    main()
