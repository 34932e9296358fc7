"""BuJo capture: pipeline overhead per turn at 10,000 stored memories, beside a floor measured
in the same run.

Setup: a BuJo capture root (``MemoryStore.open(..., background=False)`` with a deterministic
word-bag embedder, dim 384, and an instant scripted chat model) is filled through the real
capture path, turns of 8 memories each (75% user, 25% assistant lines; ~60% name 1-2 entities
of a shared pool of ~N/30 people, organisations, places and projects; texts are the seeded
40-200 character sentences of ``bench/rebuild.py``, spread over 60 days), until the index holds
N stored memories (default 10,000). Shared entities make reconcile retrieval offer same-entity
lines, which the setup classifier answers with ADD.

Timed: T further turns (default 300, after 5 untimed warm-up turns), one at a time. Each is
admitted (not timed), then ``store.drain()`` of exactly that one due capture is timed: the
whole attempt (projections caught up, extraction, host bounds, review, structural duplicates,
reconcile retrieval with embedding and vector search, guards, the fsynced retained-stage
commits and the final commit) and the foreground projection catch-up (index, Markdown,
``graph.jsonl``, sidecar) the drain ends with. The chat model answers instantly; the time spent
inside ``model.complete`` is measured and subtracted: overhead = drain time - model time.
Extraction and review replies come from ``ScriptedChat`` keyed by (stage, intake id); the
reconcile reply is built from the prompt (it names the lines retrieval offered), also inside
``complete``, so it counts as model time.

Mix (seeded): novel 40% (1-8 lines with new or no entities: extract + review only),
supersede 20%, update 15%, noop 15% (one line naming a pool entity, so reconcile offers that
entity's lines, and the classifier SUPERSEDEs / UPDATEs / NOOPs the first offered line; plus
0-3 novel lines), duplicate 10% (one line repeats a live stored line word for word: a
structural NOOP without a classifier call; plus 0-3 novel lines).

Floor, per turn, alternating with the store so that disk noise hits both alike: the minimum
durable work of that turn with bare calls: one apsw ``BEGIN IMMEDIATE; INSERT; COMMIT`` of the
journal rows the store wrote for the turn (same bytes, all its transactions in one, WAL with
synchronous=FULL, as in ``bench/admission.py``), plus the projection catch-up reduced to its
essentials: the turn's new memory rows and their FTS5 text into an index table in one
transaction (WAL, synchronous=NORMAL, as the index), and one atomic durable rewrite (temp file,
fsync, rename, directory fsync) of that day's Markdown with the bytes the store wrote.

The table splits each kind's turns into plan lines, lines stored as new memories and turns that
made the reconcile call; the p50 parts are the store's journal commits (``insert_events``, each
fsynced), its projection catch-ups (``Projector.catch_up``: index, Markdown, ``graph.jsonl`` and
sidecar, each changed file written atomically with two fsyncs), embedding, and the rest.

Target: p50 overhead < 10 ms. Setup costs what the turns it runs cost, so it grows with the
root: ~3 minutes at 10,000 memories on 2 cores; ``--cache DIR`` keeps the set-up root and later
runs reuse a copy. ``--quick``: 1,000 memories, 50 turns. ``--profile`` runs 100 more turns
under cProfile and prints the hot spots. Ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import random
import re
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memory_es.capture.contracts import parse_extraction
from memory_es.capture.models import Message
from memory_es.capture.rules import Turn, bound_plan
from memory_es.capture.scripted import ScriptedChat
from memory_es.config import parse_config
from memory_es.ids import run_hash
from memory_es.intake import CompletedTurn
from memory_es.keystore import throwaway_key_store
from memory_es.store import MemoryStore
from memory_es.testing import WordBagEmbedder
from rebuild import mark, peak_rss_mb, sentences  # bench/ is sys.path[0] when run as a script

SEED = 20262
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
DAYS = 60
DIM = 384  # the local MiniLM's width, so the vector matrix has a realistic size
SETUP_LINES = 8  # memories per setup turn (the extraction maximum, E2)
ADMIT_AHEAD = 50  # setup turns admitted per drain
WARMUP = 5
PROFILE_TURNS = 100
P50_TARGET_MS = 10.0
CONFIG: dict[str, Any] = {"mode": "bujo", "writeMode": "capture", "embeddings": {"dim": DIM},
                          "llm": {"provider": "ollama", "model": "bench"}}
KINDS = ("novel", "supersede", "update", "noop", "duplicate")
MIX = (0.40, 0.20, 0.15, 0.15, 0.10)
ACTIONS = {"supersede": "SUPERSEDE", "update": "UPDATE", "noop": "NOOP"}
ENTITY_TYPES = ("person", "organization", "place", "project")
RELATIONS = ("works_at", "knows", "based_in", "leads", "uses")
FIRST_NAMES = ("Dana", "Ravi", "Mei", "Jonas", "Amara", "Luis", "Priya", "Olek", "Sana", "Theo",
               "Ines", "Kofi", "Yuki", "Marta", "Emeka", "Lena")
_SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai"))

# --------------------------------------------------------------------------------------------
# Instant models that time themselves.


class BagEmbedder(WordBagEmbedder):
    """The shared deterministic word-bag embedder, timing its own calls."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim)
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            return super().embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0


@dataclass
class ReconcilePlan:
    """What the classifier answers for one turn: ``action`` on the first line offered for the
    candidate whose text is ``text``; every other candidate is an ADD."""

    action: str  # SUPERSEDE | UPDATE | NOOP
    text: str
    applied: bool = False


_CANDIDATE = re.compile(r"^(\d+)\. \[source [^;\]]+; observed [^\]]+\] (.*)$")
_OFFERED = re.compile(r"^   - id (m\d+) \[observed [^\]]*\] (.*)$")


class BenchModel:
    """Extraction and review from a :class:`ScriptedChat` keyed by (stage, intake id); the
    reconcile reply built from the prompt per :class:`ReconcilePlan`. Answers instantly and
    accumulates the time spent inside ``complete`` (the model time the bench subtracts)."""

    name = "bench-scripted"

    def __init__(self) -> None:
        self.scripts: dict[str, ScriptedChat] = {}  # intake id -> its script
        self.plans: dict[str, ReconcilePlan] = {}
        self.changed: set[str] = set()  # stored texts a SUPERSEDE / UPDATE took out of play
        self.seconds = 0.0
        self.calls: list[tuple[str, str]] = []  # (stage, intake id)

    def add(self, specs: Sequence[Spec]) -> None:
        """Script the extraction and review replies of ``specs`` (one ScriptedChat for all)."""
        script = ScriptedChat([r for spec in specs for r in script_records(spec)],
                              name=self.name)
        for spec in specs:
            self.scripts[spec.intake_id] = script
            if spec.plan is not None:
                self.plans[spec.intake_id] = spec.plan

    def complete(self, messages: Sequence[Message], *, timeout: float) -> str:
        t0 = time.perf_counter()
        try:
            head = messages[-1].content.split("\n", 2)
            stage, turn = head[0].removeprefix("stage: "), head[1].removeprefix("turn: ")
            self.calls.append((stage, turn))
            if stage == "reconcile":
                return self._reconcile(messages[-1].content, self.plans.get(turn))
            return self.scripts[turn].complete(messages, timeout=timeout)
        finally:
            self.seconds += time.perf_counter() - t0

    def _reconcile(self, content: str, plan: ReconcilePlan | None) -> str:
        texts: dict[int, str] = {}
        first: dict[int, str] = {}  # candidate -> text of the first offered line (m1)
        current = -1
        for line in content.splitlines():
            m = _CANDIDATE.match(line)
            if m:
                current = int(m[1])
                texts[current] = m[2]
                continue
            m = _OFFERED.match(line)
            if m and current >= 0 and current not in first:
                first[current] = m[2]
        decisions: list[dict[str, Any]] = []
        for i in sorted(texts):
            decision: dict[str, Any] = {"index": i, "action": "ADD"}
            if plan is not None and not plan.applied and texts[i] == plan.text and i in first:
                plan.applied = True
                decision = {"index": i, "action": plan.action, "target": "m1"}
                if plan.action == "SUPERSEDE":
                    decision["text"] = plan.text
                    self.changed.add(first[i])
                elif plan.action == "UPDATE":
                    decision["text"] = first[i] + " Confirmed again."
                    self.changed.add(first[i])
            decisions.append(decision)
        return json.dumps({"decisions": decisions})


# --------------------------------------------------------------------------------------------
# Turn generation.


@dataclass
class Pool:
    """Shared entities (named by setup lines, so reconcile finds same-entity lines)."""

    entities: list[tuple[str, str]]  # (name, type)
    named: set[int] = field(default_factory=set)  # pool indices some stored line names


def pseudo(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3)))).title()


def make_pool(size: int, rng: random.Random) -> Pool:
    names: set[str] = set()
    entities: list[tuple[str, str]] = []
    while len(entities) < size:
        type_ = ENTITY_TYPES[len(entities) % len(ENTITY_TYPES)]
        if type_ == "person":
            name = f"{rng.choice(FIRST_NAMES)} {pseudo(rng)}"
        elif type_ == "organization":
            name = f"{pseudo(rng)} {rng.choice(('Labs', 'Group', 'Robotics', 'Health'))}"
        elif type_ == "place":
            name = f"{pseudo(rng)}{rng.choice(('ville', 'burg', ' Bay', ' Park'))}"
        else:
            name = f"Project {pseudo(rng)}"
        if name not in names:
            names.add(name)
            entities.append((name, type_))
    return Pool(entities)


@dataclass
class Spec:
    """One turn: its extraction plan (as JSON-ready values) and how it is meant to go."""

    run_id: str
    session: str
    kind: str  # setup | novel | supersede | update | noop | duplicate
    memories: list[dict[str, Any]]
    entities: list[dict[str, str]]
    relations: list[dict[str, str]]
    plan: ReconcilePlan | None = None

    @property
    def intake_id(self) -> str:
        return run_hash(self.run_id)

    def extraction(self) -> str:
        return json.dumps({"memories": self.memories, "entities": self.entities,
                           "relations": self.relations})

    def completed_turn(self) -> CompletedTurn:
        user = [m["text"] for m in self.memories if m["source"] == "user"]
        said = [m["text"] for m in self.memories if m["source"] == "assistant"]
        return CompletedTurn(run_id=self.run_id, outcome="success",
                             answer=" ".join(said) or "Noted.",
                             capture_text=" ".join(user) or "Please remember this.",
                             session=self.session,
                             speaker_kind="human-turn", trigger="human")


class TurnMaker:
    """Seeded turns: setup turns of 8 lines, then the timed mix."""

    def __init__(self, memories: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool = make_pool(max(40, memories // 30), self.rng)
        self._texts = iter(sentences(memories * 2 + 20_000, seed))
        self._seen: set[str] = set()
        self.stored: list[str] = []  # setup line texts (structural-duplicate sources)
        self._fresh = 0

    def text(self) -> str:
        while True:
            text = next(self._texts)
            if text not in self._seen:
                self._seen.add(text)
                return text

    def line(self, refs: list[str], names: list[str], *, source: str | None = None
             ) -> dict[str, Any]:
        rng = self.rng
        source = source or ("user" if rng.random() < 0.75 else "assistant")
        text = self.text()
        if names:
            text = f"{names[0]} {text[0].lower()}{text[1:]}"
            self._seen.add(text)
        kind = rng.choices(("note", "event", "task"), (0.7, 0.2, 0.1))[0]
        if source == "user":
            labels = ["preference"] if rng.random() < 0.05 else []
            salience = round(rng.uniform(0.3, 1.0), 2)
        else:
            labels = ["fact"] if rng.random() < 0.2 else []
            salience = round(rng.uniform(0.5, 1.0), 2)  # >= 0.5: kept (E18)
        return {"text": text, "kind": kind, "labels": labels, "source": source,
                "salience": salience, "entities": refs}

    def setup_turn(self, i: int) -> Spec:
        rng = self.rng
        spec = Spec(f"setup-{i}", f"web:{i // 4}", "setup", [], [], [])
        ids: dict[int, str] = {}
        for _ in range(SETUP_LINES):
            picks: list[int] = []
            if rng.random() < 0.6:
                picks = rng.sample(range(len(self.pool.entities)), rng.choice((1, 1, 2)))
            refs, names = [], []
            for p in picks:
                if p not in ids:
                    ids[p] = f"e{len(ids) + 1}"
                    name, type_ = self.pool.entities[p]
                    spec.entities.append({"id": ids[p], "name": name, "type": type_})
                refs.append(ids[p])
                names.append(self.pool.entities[p][0])
            spec.memories.append(self.line(refs, names))
            self.pool.named.update(picks)
        if len(ids) >= 2 and rng.random() < 0.5:
            a, b = rng.sample(sorted(ids.values()), 2)
            spec.relations.append({"from": a, "relation": rng.choice(RELATIONS), "to": b})
        self.stored += [m["text"] for m in spec.memories]
        return spec

    def timed_turn(self, i: int, changed: set[str]) -> Spec:
        rng = self.rng
        kind = rng.choices(KINDS, MIX)[0]
        spec = Spec(f"timed-{i}", f"web:{i // 4}", kind, [], [], [])
        if kind in ACTIONS:  # one line naming a pool entity that stored lines name
            p = rng.choice(sorted(self.pool.named))
            name, type_ = self.pool.entities[p]
            spec.entities.append({"id": "e1", "name": name, "type": type_})
            line = self.line(["e1"], [name], source="user")
            line["labels"] = []
            spec.memories.append(line)
            spec.plan = ReconcilePlan(ACTIONS[kind], line["text"])
        elif kind == "duplicate":  # a live stored line, word for word
            text = rng.choice(self.stored)
            while text in changed:
                text = rng.choice(self.stored)
            spec.memories.append({"text": text, "kind": "note", "labels": [],
                                  "source": "user", "salience": 0.8, "entities": []})
        extra = rng.randint(1, 8) if kind == "novel" else rng.randint(0, 3)
        for _ in range(extra):  # novel: a new project, or no entity at all
            refs, names = [], []
            if rng.random() < 0.5:
                self._fresh += 1
                ref = f"e{len(spec.entities) + 1}"
                name = f"Project {pseudo(rng)} {self._fresh}"
                spec.entities.append({"id": ref, "name": name, "type": "project"})
                refs, names = [ref], [name]
            spec.memories.append(self.line(refs, names))
        return spec


def script_records(spec: Spec) -> list[dict[str, str]]:
    """ScriptedChat records for a turn: its extraction, and a review keeping every listed line
    (the listed lines are exactly those ``bound_plan`` marks reviewable)."""
    raw = spec.extraction()
    plan = parse_extraction(raw)  # a malformed generated plan fails here, not in the store
    turn = Turn(run_hash=spec.intake_id, owner=True, human_text=True, scope="agent",
                session=None)
    listed = [line for line in bound_plan(plan, turn) if line.reviewable]
    out = [{"stage": "extract", "turn": spec.intake_id, "response": raw}]
    if listed:
        out.append({"stage": "review", "turn": spec.intake_id, "response": json.dumps(
            {"decisions": [{"index": i, "decision": "keep"} for i in range(len(listed))]})})
    return out


# --------------------------------------------------------------------------------------------
# The store under test, with light timers around its journal and projection calls.


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Probe:
    """Per-turn counters around the store's journal commits and projection catch-up."""

    journal_s: float = 0.0
    transactions: int = 0
    catch_up_s: float = 0.0

    def reset(self) -> None:
        self.journal_s = self.catch_up_s = 0.0
        self.transactions = 0


def instrument(store: MemoryStore, probe: Probe) -> None:
    """Wrap the journal's ``insert_events`` and the projector's ``catch_up`` (instance
    attributes: the store's code is unchanged; each wrapper adds ~1 µs per call)."""
    recorder = store._opened.recorder
    insert = recorder.insert_events

    def timed_insert(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return insert(*args, **kwargs)
        finally:
            probe.journal_s += time.perf_counter() - t0
            probe.transactions += 1

    projector = store.projections.get()
    catch_up = projector.catch_up

    def timed_catch_up(*args: Any, **kwargs: Any) -> int:
        t0 = time.perf_counter()
        try:
            return catch_up(*args, **kwargs)
        finally:
            probe.catch_up_s += time.perf_counter() - t0

    recorder.insert_events = timed_insert  # type: ignore[method-assign]
    projector.catch_up = timed_catch_up  # type: ignore[method-assign]


def open_store(root: Path, clock: Clock, model: BenchModel,
               embedder: BagEmbedder) -> MemoryStore:
    return MemoryStore.open(root, parse_config(CONFIG), clock=clock, background=False,
                            embedder=embedder, chat_model=model)


def fill(store: MemoryStore, clock: Clock, setup: list[Spec]) -> None:
    """Admit and drain the setup turns (50 admitted per drain; each capture is its own
    attempt either way), spread over DAYS days."""
    step = timedelta(seconds=DAYS * 86_400 / max(1, len(setup)))
    for start in range(0, len(setup), ADMIT_AHEAD):
        for n, spec in enumerate(setup[start:start + ADMIT_AHEAD]):
            clock.now = START + (start + n) * step
            result = store.persist_completed_turn(spec.completed_turn())
            if result.status != "admitted":
                raise SystemExit(f"setup turn {spec.run_id}: {result}")
        store.drain()
    counts = store.inspect().counts
    if counts.active:
        raise SystemExit(f"setup left intakes unresolved: {counts.to_json()}")


def setup_root(directory: Path, cache: Path | None, maker: TurnMaker, model: BenchModel,
               embedder: BagEmbedder, memories: int, seed: int
               ) -> tuple[MemoryStore, Clock, list[Spec], float | None, int]:
    """The open store on a root holding ``memories`` captured lines (from ``cache`` when it
    holds one); returns the store, its clock, the setup turns, the setup seconds (None when
    reused) and the stored-memory count. The setup turns are always generated: they carry the
    state the timed turns draw from (pool entities in use, live texts)."""
    setup = [maker.setup_turn(i) for i in range(-(-memories // SETUP_LINES))]
    model.add(setup)
    clock = Clock()
    seconds: float | None = None
    if cache is None:
        t0 = time.perf_counter()
        store = open_store(directory / "root", clock, model, embedder)
        fill(store, clock, setup)
        seconds = time.perf_counter() - t0
    else:
        cache.mkdir(parents=True, exist_ok=True)
        cached = cache / f"capture-root-{memories}-{seed}"
        done = cache / f"capture-root-{memories}-{seed}.done"  # outside the root
        if not (done.exists() and cached.is_dir()):
            done.unlink(missing_ok=True)
            shutil.rmtree(cached, ignore_errors=True)
            t0 = time.perf_counter()
            with open_store(cached, clock, model, embedder) as store:
                fill(store, clock, setup)
            seconds = time.perf_counter() - t0
            done.write_text("ok\n")
        shutil.copytree(cached, directory / "root", symlinks=True)  # modes kept (0700/0600)
        store = open_store(directory / "root", clock, model, embedder)
    stored = stored_count(store)
    if stored < memories:
        store.close()
        raise SystemExit(f"setup stored {stored} memories, wanted {memories}")
    return store, clock, setup, seconds, stored


def stored_count(store: MemoryStore) -> int:
    row: Any = store.projections.get().index.conn.execute(
        "SELECT count(*) FROM memories").fetchone()
    return int(row[0])


# --------------------------------------------------------------------------------------------
# Floor.


class Floor:
    """Bare apsw/os equivalents of a turn's durable work (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.journal = apsw.Connection(str(directory / "journal.db"))
        self.journal.execute("PRAGMA journal_mode=WAL").fetchall()
        self.journal.execute("PRAGMA synchronous=FULL")
        self.journal.execute(
            "CREATE TABLE events (position INTEGER PRIMARY KEY, originator_id TEXT NOT NULL, "
            "originator_version INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL, "
            "chain BLOB NOT NULL, UNIQUE (originator_id, originator_version))")
        self.index = apsw.Connection(str(directory / "index.db"))
        self.index.execute("PRAGMA journal_mode=WAL").fetchall()
        self.index.execute("PRAGMA synchronous=NORMAL")
        self.index.execute(
            "CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
            "kind TEXT NOT NULL, text TEXT NOT NULL, day TEXT NOT NULL, "
            "recorded_at TEXT NOT NULL, status TEXT NOT NULL, source TEXT NOT NULL, "
            "source_session TEXT, run_hash TEXT, tier TEXT NOT NULL)")
        self.index.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(text, "
                           "tokenize='unicode61 remove_diacritics 2')")
        self.markdown = directory / "daily.md"

    def once(self, events: list[tuple[Any, ...]], rows: list[tuple[Any, ...]],
             markdown: bytes) -> float:
        t0 = time.perf_counter()
        self.journal.execute("BEGIN IMMEDIATE")
        self.journal.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", events)
        self.journal.execute("COMMIT")
        if rows:
            self.index.execute("BEGIN IMMEDIATE")
            self.index.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   rows)
            self.index.executemany("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                                   [(r[0], r[3]) for r in rows])
            self.index.execute("COMMIT")
        tmp = self.directory / ".daily.md.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, markdown)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.markdown)
        dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.journal.close()
        self.index.close()


# --------------------------------------------------------------------------------------------
# Timed turns.


@dataclass
class Sample:
    kind: str
    drain_s: float
    model_s: float
    embed_s: float
    journal_s: float
    catch_up_s: float
    transactions: int
    events: int
    calls: list[str]
    lines: int  # lines in the extraction plan
    topics: Counter[str]
    reconcile: str | None  # the non-ADD decision the classifier gave, if any
    floor_s: float

    @property
    def overhead_s(self) -> float:
        return self.drain_s - self.model_s


def run_turn(store: MemoryStore, clock: Clock, model: BenchModel, embedder: BagEmbedder,
             probe: Probe, floor: Floor | None, spec: Spec, at: datetime,
             journal: Any) -> Sample:
    """Admit ``spec`` (not timed), time ``drain()`` of it, then the floor of the same work."""
    model.add([spec])
    clock.now = at
    index = store.projections.get().index.conn
    last: Any = index.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()
    rowid_before = last[0]
    result = store.persist_completed_turn(spec.completed_turn())
    if result.status != "admitted":
        raise SystemExit(f"turn {spec.run_id}: {result}")
    admitted_at = journal.execute("SELECT max(position) FROM events").fetchone()[0]
    probe.reset()
    model.seconds = embedder.seconds = 0.0
    ncalls = len(model.calls)
    t0 = time.perf_counter()
    attempts = store.drain()
    drain_s = time.perf_counter() - t0
    if attempts != 1:
        raise SystemExit(f"turn {spec.run_id}: drain made {attempts} attempts, expected 1")
    record = store.inspect(spec.intake_id).records[0]
    if record.state != "resolved":
        raise SystemExit(f"turn {spec.run_id} ({spec.kind}) not resolved: {record.to_json()}")
    rows = list(journal.execute(
        "SELECT position, originator_id, originator_version, topic, state, chain FROM events "
        "WHERE position > ? ORDER BY position", (admitted_at,)))
    floor_s = 0.0
    if floor is not None:
        memories = list(index.execute("SELECT * FROM memories WHERE rowid > ? ORDER BY rowid",
                                      (rowid_before,)))
        day = at.date().isoformat()
        path = store.root / "daily" / f"{day}.md"
        markdown = path.read_bytes() if path.exists() else b""
        floor_s = floor.once(rows, memories, markdown)
    plan = spec.plan
    return Sample(
        kind=spec.kind, drain_s=drain_s, model_s=model.seconds, embed_s=embedder.seconds,
        journal_s=probe.journal_s, catch_up_s=probe.catch_up_s,
        transactions=probe.transactions, events=len(rows),
        calls=[stage for stage, _ in model.calls[ncalls:]], lines=len(spec.memories),
        topics=Counter(str(r[3]).rsplit("/", 1)[-1] for r in rows),
        reconcile=plan.action if plan is not None and plan.applied else None,
        floor_s=floor_s)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def profile_turns(run: Callable[[int], Sample], count: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for i in range(count):
        run(i)
    prof.disable()
    out = []
    for key, restrict in (("tottime", ()), ("cumulative", (r"/src/",))):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(*restrict, 25)
        where = " (functions under src/)" if restrict else ""
        out.append(f"-- cProfile of {count} turns, by {key}{where} --\n" + buf.getvalue())
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000, help="stored before timing")
    parser.add_argument("--turns", type=int, default=300, help="timed capture turns")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 1,000 memories, 50 turns")
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep (and reuse) the set-up root in this directory")
    parser.add_argument("--profile", action="store_true",
                        help=f"cProfile {PROFILE_TURNS} more turns and print the hot spots")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if args.quick:
        args.memories, args.turns = 1_000, 50

    wall0 = time.perf_counter()
    maker = TurnMaker(args.memories, args.seed)
    model = BenchModel()
    embedder = BagEmbedder()
    with tempfile.TemporaryDirectory(prefix="memory-es-bench-", dir=os.environ.get("TMPDIR")) as d:
        directory = Path(d)
        store, clock, setup, setup_s, stored = setup_root(
            directory, args.cache, maker, model, embedder, args.memories, args.seed)
        if setup_s is None:
            print(f"setup: reusing a cached root of {stored} memories ({len(setup)} capture "
                  "turns)", flush=True)
        else:
            print(f"setup: {stored} memories stored by {len(setup)} capture turns in "
                  f"{setup_s:.1f} s", flush=True)
        step = timedelta(seconds=DAYS * 86_400 / max(1, len(setup)))
        probe = Probe()
        floor = Floor(directory / "floor")
        journal = apsw.Connection(str(store.root / "journal.db"),
                                  flags=apsw.SQLITE_OPEN_READONLY)
        try:
            instrument(store, probe)
            counter = [len(setup)]

            def run(_: int, *, with_floor: bool = True) -> Sample:
                i = counter[0]
                counter[0] += 1
                spec = maker.timed_turn(i, model.changed)
                return run_turn(store, clock, model, embedder, probe,
                                floor if with_floor else None, spec, START + i * step, journal)

            for w in range(WARMUP):
                run(w)
            samples = [run(n) for n in range(args.turns)]
            profile = (profile_turns(lambda n: run(n, with_floor=False), PROFILE_TURNS)
                       if args.profile else None)
            stored_after = stored_count(store)
        finally:
            journal.close()
            floor.close()
            store.close()

    overhead = [s.overhead_s for s in samples]
    floors = [s.floor_s for s in samples]
    p50 = statistics.median(overhead)
    floor_p50 = statistics.median(floors)
    mix = Counter(s.kind for s in samples)
    paths = Counter("+".join(s.calls) for s in samples)
    topics: Counter[str] = Counter()
    for s in samples:
        topics.update(s.topics)
    decided = Counter(s.reconcile for s in samples if s.reconcile is not None)
    figures: dict[str, Any] = {
        "bench": "capture",
        "memories": stored,
        "memories_after": stored_after,
        "turns": len(samples),
        "setup_s": None if setup_s is None else round(setup_s, 1),
        "setup_turns": len(setup),
        "p50_ms": ms(p50),
        "p95_ms": ms(pct(overhead, 0.95)),
        "p99_ms": ms(pct(overhead, 0.99)),
        "drain_p50_ms": ms(statistics.median(s.drain_s for s in samples)),
        "model_p50_ms": ms(statistics.median(s.model_s for s in samples)),
        "model_max_ms": ms(max(s.model_s for s in samples)),
        "embed_p50_ms": ms(statistics.median(s.embed_s for s in samples)),
        "journal_p50_ms": ms(statistics.median(s.journal_s for s in samples)),
        "catch_up_p50_ms": ms(statistics.median(s.catch_up_s for s in samples)),
        "other_p50_ms": ms(statistics.median(
            s.overhead_s - s.embed_s - s.journal_s - s.catch_up_s for s in samples)),
        "journal_tx_per_turn": statistics.median(s.transactions for s in samples),
        "events_per_turn": statistics.median(s.events for s in samples),
        "floor_p50_ms": ms(floor_p50),
        "floor_p95_ms": ms(pct(floors, 0.95)),
        "ratio": round(p50 / floor_p50, 3),
        "mix": dict(sorted(mix.items())),
        "paths": dict(sorted(paths.items())),
        "reconcile_decisions": dict(sorted(decided.items())),
        "superseded": topics["Memory.Superseded"],
        "text_updated": topics["Memory.TextUpdated"],
        "threaded": topics["Memory.Threaded"],
        "captured_lines": topics["Memory.Captured"],
        "plan_lines": sum(s.lines for s in samples),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "target_ok": p50 * 1e3 < P50_TARGET_MS,
    }
    print(f"{len(samples)} timed capture turns at {stored} stored memories "
          f"(journal transactions per turn: median {figures['journal_tx_per_turn']}, "
          f"events {figures['events_per_turn']})")
    print(f"  {'kind':<10}{'turns':>6}{'lines':>6}{'stored':>7}{'reconcile':>10}{'p50 ms':>9}"
          f"{'p95 ms':>9}{'floor p50':>10}")
    for kind in (*KINDS, "all"):
        chosen = [s for s in samples if kind in ("all", s.kind)]
        if not chosen:
            continue
        over = [s.overhead_s for s in chosen]
        print(f"  {kind:<10}{len(chosen):>6}{sum(s.lines for s in chosen):>6}"
              f"{sum(s.topics['Memory.Captured'] for s in chosen):>7}"
              f"{sum('reconcile' in s.calls for s in chosen):>10}"
              f"{statistics.median(over) * 1e3:>9.2f}{pct(over, 0.95) * 1e3:>9.2f}"
              f"{statistics.median(s.floor_s for s in chosen) * 1e3:>10.2f}")
    print(f"overhead (drain - model) p50 {figures['p50_ms']:.2f} ms  p95 "
          f"{figures['p95_ms']:.2f} ms  p99 {figures['p99_ms']:.2f} ms   "
          f"(drain p50 {figures['drain_p50_ms']:.2f} ms, model p50 "
          f"{figures['model_p50_ms']:.3f} ms)")
    print(f"  p50 parts: journal commits {figures['journal_p50_ms']:.2f} ms, projection "
          f"catch-up {figures['catch_up_p50_ms']:.2f} ms, embedding "
          f"{figures['embed_p50_ms']:.2f} ms, rest {figures['other_p50_ms']:.2f} ms")
    print(f"floor (1 FULL journal commit + index rows + 1 durable Markdown write) p50 "
          f"{figures['floor_p50_ms']:.2f} ms  p95 {figures['floor_p95_ms']:.2f} ms   "
          f"ratio {figures['ratio']:.2f}")
    print("mix " + ", ".join(f"{k} {v}" for k, v in figures["mix"].items())
          + "; model calls " + ", ".join(f"{k} {v}" for k, v in figures["paths"].items())
          + f"; superseded {figures['superseded']}, updated {figures['text_updated']}, "
          f"threaded {figures['threaded']}, lines captured {figures['captured_lines']}")
    print(f"p50 {figures['p50_ms']:.2f} ms (target < {P50_TARGET_MS:.0f} ms) "
          f"{mark(figures['target_ok'])}   peak RSS {figures['peak_rss_mb']:.0f} MB   "
          f"(setup {'cached' if setup_s is None else f'{setup_s:.0f} s'}; "
          f"whole run {time.perf_counter() - wall0:.0f} s)")
    if profile is not None:
        print(profile)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    with throwaway_key_store():  # the bench's roots are thrown away, so are their keys
        main()
