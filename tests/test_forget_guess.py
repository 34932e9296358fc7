"""A forget leaves nothing that can confirm or open a guessed text.

Before, a Journal memory's id and a Remember's id were the SHA-256 of the text, and an
admission kept the turn record's digest and size and the capture text's digest and length in
the clear: trying candidates against the journal recovered a forgotten PIN in milliseconds.
Here every byte under the root, the key store, the model cache and (on PostgreSQL) the
server's data directory after ``CHECKPOINT`` is scanned, after forgets by id, by run id and
by query on every tier, for the text, its UTF-16 and base64 forms and every digest the old
code kept. The same text written again after a forget is new, not a duplicate.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers_attack import open_store
from helpers_capture import entity, extraction, memory, open_capture, review, script
from helpers_capture import turn as capture_turn
from journal_backends import BACKENDS, database_of, use_backend
from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.intake import PreparedIntake
from memory_es.intake.admission import prepare_turn
from memory_es.text import fold, journal_text

PIN = "The safe code is 4-1-7-7 qwzx."  # the example, made unique to this suite
NAME = "Zorvath Quibble"  # a person only the forgotten line names


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(request, monkeypatch)


def _digests(data: bytes) -> list[bytes]:
    digest = hashlib.sha256(data)
    return [digest.hexdigest().encode(), digest.digest()]


def needles(text: str, *, prepared: PreparedIntake | None = None,
            names: tuple[tuple[str, str], ...] = ()) -> dict[str, bytes]:
    """What must be nowhere after the forget: the text in three encodings, and every digest
    of it the old code stored (of the text, its Journal normal form, the turn record, the
    capture text, an entity's folded name)."""
    found = {"utf-8": text.encode(), "utf-16-le": text.encode("utf-16-le"),
             "utf-16-be": text.encode("utf-16-be"),
             "base64": base64.b64encode(text.encode()).rstrip(b"=")}
    for label, value in (("sha256(text)", text), ("text_key", journal_text(text))):
        for i, digest in enumerate(_digests(value.encode())):
            found[f"{label}#{i}"] = digest
    if prepared is not None:
        found["content_sha256"] = prepared.content_sha256.encode()
        found["content_sha256#raw"] = bytes.fromhex(prepared.content_sha256)
        if prepared.payload_sha256 is not None:
            found["payload_sha256"] = prepared.payload_sha256.encode()
            found["payload_sha256#raw"] = bytes.fromhex(prepared.payload_sha256)
    for name, kind in names:
        for i, digest in enumerate(_digests(f"{kind}\x00{fold(name)}".encode())):
            found[f"entity_key({name})#{i}"] = digest
    return found


def _files(base: Path) -> Iterator[Path]:
    if base.is_file() and not base.is_symlink():
        yield base
    elif base.exists():
        yield from (p for p in base.rglob("*") if p.is_file() and not p.is_symlink())


def places(root: Path, request: pytest.FixtureRequest) -> list[Path]:
    """The root, the key store, the model cache and, on PostgreSQL, what the server's data
    directory holds of this test (after a CHECKPOINT, so what the server keeps is on disk):
    every file but another database's tables and the WAL segments nothing wrote to since the
    test began (the shared server holds every earlier test's too)."""
    out = [root, Path(os.environ["MEMORY_ES_KEY_STORE"])]
    if os.environ.get("MEMORY_ES_MODEL_CACHE"):
        out.append(Path(os.environ["MEMORY_ES_MODEL_CACHE"]))
    dsn = database_of(root)
    if dsn is not None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            row = conn.execute("SELECT oid FROM pg_database "
                               "WHERE datname = current_database()").fetchone()
        assert row is not None
        data: Path = request.getfixturevalue("pg_cluster").data
        since = root.parent.stat().st_ctime - 1.0  # the test's own tmp_path: its start
        out += [p for p in data.iterdir() if p.name not in ("base", "pg_wal")]
        out.append(data / "base" / str(row[0]))
        out += [p for p in (data / "pg_wal").rglob("*")
                if p.is_file() and p.stat().st_mtime >= since]
    return out


def leftovers(bases: list[Path], wanted: dict[str, bytes]) -> list[str]:
    hits = []
    for base in bases:
        for path in _files(base):
            data = path.read_bytes()
            hits += [f"{label} in {path}" for label, needle in wanted.items() if needle in data]
    return hits


def prepared_for(turn: CompletedTurn, tier: str, write_mode: str) -> PreparedIntake:
    prepared = prepare_turn(turn, tier=tier, write_mode=write_mode, capture_cron=False,
                            capture_webhook=False)
    assert isinstance(prepared, PreparedIntake)
    return prepared


def pin_turn(run_id: str, text: str = PIN) -> CompletedTurn:
    return CompletedTurn(run_id=run_id, outcome="success", answer=text, session="web:g",
                         speaker_kind="human-turn")


def forget_by(store: MemoryStore, how: str, run_id: str) -> None:
    if how == "id":
        (hit,) = store.lexical_search("qwzx")
        receipt = store.forget(hit.id, reason="user-request")
    elif how == "run":
        receipt = store.forget_turn(run_id, reason="user-request")
    else:
        receipt = store.forget_matching("qwzx", reason="user-request", dry_run=False)
    assert receipt.status == "forgotten"
    assert "sha256" not in str(receipt.to_json())  # no digest a log could confirm a guess with


@pytest.mark.parametrize("how", ["id", "run", "query"])
@pytest.mark.parametrize("tier", ["lite", "journal"])
def test_a_forgotten_turn_leaves_no_text_and_no_digest_of_it(
        tmp_path: Path, request: pytest.FixtureRequest, tier: str, how: str) -> None:
    root = tmp_path / "root"
    turn = pin_turn("pin-1")
    wanted = needles(PIN, prepared=prepared_for(turn, tier, "append-host-summary"))
    with open_store(root, tier, background=False) as store:
        assert store.persist_completed_turn(turn).status == "admitted"
        store.persist_completed_turn(pin_turn("other", "The boiler was serviced in April."))
        store.drain()
        before = leftovers([root], wanted)
        assert any(h.startswith("utf-8 in") for h in before)  # stored before the forget
        forget_by(store, how, "pin-1")
        assert leftovers(places(root, request), wanted) == []
        assert len(store.lexical_search("boiler")) == 1
    assert MemoryRoot.open(root).health().status == "clean"


def test_the_same_text_after_a_forget_is_new_on_journal(tmp_path: Path) -> None:
    """D5 still holds for live content; after a forget nothing remembers the text."""
    root = tmp_path / "root"
    with open_store(root, "journal", background=False) as store:
        store.persist_completed_turn(pin_turn("a"))
        store.persist_completed_turn(pin_turn("b"))  # a repeat converges on one memory
        store.drain()
        (first,) = store.lexical_search("qwzx")
        store.forget(first.id, reason="user-request")
        store.persist_completed_turn(pin_turn("c"))
        store.drain()
        (again,) = store.lexical_search("qwzx")
        assert again.id != first.id
        store.persist_completed_turn(pin_turn("d"))
        store.drain()
        assert [h.id for h in store.lexical_search("qwzx")] == [again.id]


def test_a_forgotten_remember_leaves_no_digest_and_a_repeat_is_new(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = tmp_path / "root"
    wanted = needles(PIN)
    with open_store(root, "journal", background=False) as store:
        first = store.remember(PIN)
        assert first.status == "remembered"
        assert store.remember(PIN).status == "duplicate"  # J11: an exact repeat
        store.forget(first.memory_id, reason="user-request")
        assert leftovers(places(root, request), wanted) == []
        again = store.remember(PIN)
        assert (again.status, again.memory_id != first.memory_id) == ("remembered", True)


def test_a_forgotten_capture_leaves_no_digest_of_its_text_or_the_person_it_named(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = tmp_path / "root"
    capture = f"{NAME} told me: {PIN}"
    line = f"{NAME} keeps the safe code 4-1-7-7 qwzx"
    plan = extraction([memory(line, entities=["z"]),
                       memory("Acme Robotics builds warehouse arms", entities=["a"])],
                      [entity("z", NAME), entity("a", "Acme Robotics", "organization")])
    turn = capture_turn("cap-1", capture, answer="Noted.")
    wanted = {**needles(line, names=((NAME, "person"),)),
              **{f"capture {k}": v for k, v in needles(
                  capture, prepared=prepared_for(turn, "bujo", "capture")).items()}}
    store, _model = open_capture(root, script(("extract", "cap-1", plan),
                                              ("review", "cap-1", review("keep", "keep"))))
    with store:
        assert store.persist_completed_turn(turn).status == "admitted"
        assert store.drain() == 1
        assert leftovers([root], wanted) != []
        receipt = store.forget_turn("cap-1", reason="user-request")
        assert receipt.status == "forgotten"
        hits: Any = leftovers(places(root, request), wanted)
        assert hits == []
