"""The writer's verified chain checkpoint and the reads that start from it (B13, C9, DESIGN 3).

A writer attests at open and close how far it knows the keyed chain is good
(``.runtime/verified-chain``, MAC'd under the chain key); the index-reading doors of
``MemoryRoot`` (search, list, show, the journal) recompute only the links after it. These
tests count the links a read recomputes, forge, move and outdate the checkpoint, and edit the
journal on both sides of it: a forged or foreign checkpoint is worth nothing (every link is
recomputed), an edit after it or a truncation or replacement still fails the read closed, and
an edit before it, which such a read gives up seeing, is reported by health and refused by
export and by every writer.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from memory_es.errors import MemoryEsError
from memory_es.history import unfinished_forgets
from memory_es.intake import CompletedTurn
from memory_es.journal import open_journal
from memory_es.journal.chain import Chain
from memory_es.journal.checkpoint import CHECKPOINT_FILE, read_checkpoint
from memory_es.journal.layout import MARKER_FILE, read_marker
from memory_es.keystore import KeyStore
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from tamper import SqliteTamper


def admit(root: Path, runs: list[str]) -> None:
    with MemoryStore.open(root, background=False) as store:
        for run in runs:
            assert store.persist_completed_turn(CompletedTurn(
                run_id=run, outcome="success", answer=f"answer for {run}.")).status == "admitted"
        store.drain()


@pytest.fixture
def links(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions whose link a verification recomputes, in order."""
    seen: list[int] = []
    real = Chain.link

    def counted(self: Chain, prev: bytes, position: int, *rest: object) -> bytes:
        seen.append(position)
        return real(self, prev, position, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Chain, "link", counted)
    return seen


def read_links(root: Path, links: list[int]) -> list[int]:
    """The links a reader that trusts the checkpoint recomputes."""
    links.clear()
    open_journal(root, writable=False, checkpoint=True).close()
    return list(links)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root whose checkpoint is older than its head: three turns, the checkpoint the
    writer left then, two more turns, and that older checkpoint put back."""
    r = tmp_path / "root"
    admit(r, ["a", "b", "c"])
    early = (r / CHECKPOINT_FILE).read_bytes()
    admit(r, ["d", "e"])
    (r / CHECKPOINT_FILE).write_bytes(early)
    return r


def head(root: Path) -> int:
    return SqliteTamper(root).rows()[-1][0]


def test_a_reader_recomputes_only_the_links_after_the_writers_checkpoint(
        root: Path, links: list[int]) -> None:
    """The older checkpoint covers the first three turns' events; a read recomputes the rest
    only, while a reader that does not trust it (inspect, export) recomputes every link."""
    rows = SqliteTamper(root).rows()
    after = read_links(root, links)
    assert after and after[0] > 1 and after == list(range(after[0], rows[-1][0] + 1))
    links.clear()
    open_journal(root, writable=False).close()
    assert links == list(range(1, rows[-1][0] + 1))
    # A writer verifies everything, then attests its head: the next read links nothing.
    links.clear()
    with MemoryStore.open(root, background=False):
        assert links[: rows[-1][0]] == list(range(1, rows[-1][0] + 1))
    assert read_links(root, links) == []


@pytest.mark.parametrize("forge", ["position", "mac", "short", "another root"])
def test_a_forged_or_foreign_checkpoint_is_worth_nothing(
        root: Path, links: list[int], tmp_path: Path, forge: str) -> None:
    """Without the chain key nobody writes a checkpoint a reader accepts: a moved position,
    a flipped MAC byte, a cut file or another root's checkpoint make the read recompute every
    link (and still succeed); nothing is an error."""
    path = root / CHECKPOINT_FILE
    data = bytearray(path.read_bytes())
    if forge == "position":
        data[4:12] = head(root).to_bytes(8, "big")
    elif forge == "mac":
        data[-1] ^= 1
    elif forge == "short":
        data = data[:-1]
    else:
        other = tmp_path / "other"
        admit(other, ["x", "y", "z", "w", "v", "u"])
        data = bytearray((other / CHECKPOINT_FILE).read_bytes())
    path.write_bytes(bytes(data))
    assert read_links(root, links) == list(range(1, head(root) + 1))
    assert MemoryRoot.open(root).search("answer for e", 2).recall.hits


def test_an_edit_after_the_checkpoint_fails_the_read_closed(root: Path) -> None:
    """The last row's state edited: every read refuses it (chain_broken, naming the row)."""
    t = SqliteTamper(root)
    last = t.rows()[-1]
    t.update(last[0], state=last[4].replace(b'"', b"'", 1))
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).search("answer", 2)
    assert err.value.code == "chain_broken" and f"position {last[0]}" in str(err.value)


def test_a_truncated_or_replaced_journal_is_verified_in_full(root: Path) -> None:
    """Rows deleted back past the checkpoint (and the catalog moved with them): the stored
    chain no longer holds the attested value, so the read verifies everything, and the
    catalog check still names the truncation; a journal whose rows differ there is refused
    too."""
    t = SqliteTamper(root)
    snap = t.snapshot()
    t.delete("position > ?", 2)
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).search("answer", 2)
    assert err.value.code == "journal_truncated"
    t.restore(snap)
    rows = t.rows()
    t.replace_rows([(p, o, v, topic, s, bytes(32)) for p, o, v, topic, s, _ in rows])
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).search("answer", 2)
    assert err.value.code == "chain_broken"


def test_an_edit_before_the_checkpoint_is_reported_by_health_export_and_writers(
        root: Path) -> None:
    """What a read that starts at the checkpoint gives up: an old row edited in place (its
    chain value kept). The search still answers from the index; health reports the broken
    chain, export refuses, and the next writer open fails closed."""
    t = SqliteTamper(root)
    second = t.rows()[1]
    t.update(second[0], state=second[4].replace(b'"', b"'", 1))
    handle = MemoryRoot.open(root)
    assert handle.search("answer for a", 2).recall.hits
    assert "chain_broken" in {f.code for f in handle.health().findings}
    with pytest.raises(MemoryEsError) as err:
        handle.export(io.BytesIO())
    assert err.value.code == "chain_broken"
    with pytest.raises(MemoryEsError) as err:
        MemoryStore.open(root, background=False)
    assert err.value.code == "chain_broken"


def test_the_recorded_configuration_is_pinned_by_the_checkpoint(
        root: Path, capsys: pytest.CaptureFixture[str], links: list[int]) -> None:
    """The one earlier row a checkpointed read decodes is the root's recorded configuration:
    the checkpoint pins it, so an edit of it (even one that still decodes, naming another
    embedding provider) makes the read verify every link and fail closed, one line through
    the CLI, never a traceback, never obeyed."""
    from memory_es.cli import main

    t = SqliteTamper(root)
    first = t.rows()[0]
    assert first[3].endswith("Root.Configured")
    t.update(1, state=first[4].replace(b'"tier":"lite"', b'"tier":"journal"'))
    assert t.rows()[0][4] != first[4]
    with pytest.raises(MemoryEsError):
        read_links(root, links)
    assert links == [1]  # the pinned row no longer matches: it verified from the start
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).search("answer", 2)
    assert err.value.code == "chain_broken" and "position 1" in str(err.value)
    code = main(["--root", str(root), "search", "answer"])
    out, errors = capsys.readouterr()
    assert code == 3 and out == ""
    assert errors.count("\n") == 1 and "hash chain does not verify at position 1" in errors
    assert "Traceback" not in errors
    assert "chain_broken" in {f.code for f in MemoryRoot.open(root).health().findings}


def test_a_writer_never_vouches_for_rows_it_did_not_write(tmp_path: Path) -> None:
    """A long-lived writer while another process puts a forged row in behind its back (any
    chain value: it has no key): neither the writer's later commit nor its close moves the
    checkpoint over that row, so every read still fails closed on it."""
    r = tmp_path / "root"
    admit(r, ["a"])
    store = MemoryStore.open(r, background=False)
    try:
        assert store.persist_completed_turn(CompletedTurn(
            run_id="b", outcome="success", answer="answer for b.")).status == "admitted"
        t = SqliteTamper(r)
        last = t.rows()[-1]
        forged = last[0] + 1
        t.insert((forged, last[1], last[2] + 1, last[3], last[4], bytes(32)))
        store.persist_completed_turn(CompletedTurn(run_id="c", outcome="success",
                                                   answer="answer for c."))
    finally:
        store.close()
    with pytest.raises(MemoryEsError):
        open_journal(r, writable=False)  # a full read refuses the forged row
    chain = read_marker(r / MARKER_FILE).chain(KeyStore.resolve(None))
    point = read_checkpoint(r, chain)
    assert point is not None and point.position < forged
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(r).search("answer", 2)
    assert err.value.code == "chain_broken" and f"position {forged}" in str(err.value)


def test_health_reports_an_edited_configuration_row_instead_of_failing(root: Path) -> None:
    """The recorded configuration's row rewritten (its chain value kept) into JSON the codec
    cannot make an event of: health still reports the broken chain (exit 1), never an
    internal error."""
    SqliteTamper(root).update(1, state=b'["$sealed"]')
    report = MemoryRoot.open(root).health()
    assert "chain_broken" in {f.code for f in report.findings}


def test_a_checkpointed_read_verifies_every_link_before_decoding_a_forget(
        root: Path, links: list[int]) -> None:
    """An unfinished forget's rows may lie before the checkpoint: a reader that started from
    it verifies the whole chain before it decodes them, so an edited row there fails
    closed."""
    with MemoryStore.open(root, background=False) as store:
        store.forget_turn("a", reason="user-request")
    t = SqliteTamper(root)
    second = t.rows()[1]
    t.update(second[0], state=second[4].replace(b'"', b"'", 1))
    opened = open_journal(root, writable=False, checkpoint=True)
    try:
        assert opened.from_checkpoint
        with pytest.raises(MemoryEsError) as err:
            unfinished_forgets(opened, 0)
        assert err.value.code == "chain_broken"
    finally:
        opened.close()


def test_show_checks_the_links_of_the_rows_it_decodes(root: Path, links: list[int]) -> None:
    """``show`` starts from the checkpoint too, and decodes a memory's events only after
    recomputing each one's own link: the same answer as a whole verification, a handful of
    links instead of every one, and an in-place edit of one of those rows fails it closed
    (an edit of another old row it gives up seeing, like search)."""
    handle = MemoryRoot.open(root)
    first = next(m for m in handle.list_memories(limit=10).memories
                 if m.text == "answer for a.")
    links.clear()
    detail = handle.show(first.id)
    positions = [e.position for e in detail.events]
    mark = read_checkpoint(root, read_marker(root / MARKER_FILE).chain(KeyStore.resolve(None)))
    assert mark is not None and positions and max(positions) <= mark.position
    after = list(range(mark.position + 1, head(root) + 1))
    assert sorted(links) == sorted(after + positions)  # its own rows and the links after
    whole = MemoryRoot.open(root)
    assert whole.show(first.id).to_json() == detail.to_json()
    t = SqliteTamper(root)
    second = next(m for m in handle.list_memories(limit=10).memories
                  if m.text == "answer for b.")
    elsewhere = handle.show(second.id).events[0].position  # another memory's old row
    other = next(r for r in t.rows() if r[0] == elsewhere)
    t.update(other[0], state=other[4].replace(b'"', b"'", 1))
    assert MemoryRoot.open(root).show(first.id).to_json() == detail.to_json()
    own = next(r for r in t.rows() if r[0] == positions[0])
    t.update(own[0], state=own[4].replace(b'"', b"'", 1))
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).show(first.id)
    assert err.value.code == "chain_broken"


def test_a_row_below_the_first_position_fails_every_read(root: Path) -> None:
    """No link covers a position below 1, and one below the keyed start would be a plain
    link anyone can compute: such a row fails open, show and health alike."""
    t = SqliteTamper(root)
    handle = MemoryRoot.open(root)
    first = next(m for m in handle.list_memories(limit=10).memories
                 if m.text == "answer for a.")
    row = next(r for r in t.rows() if r[0] == handle.show(first.id).events[-1].position)
    t.insert((0, row[1], row[2] + 1, row[3], row[4], bytes(32)))
    for read in (lambda: MemoryRoot.open(root).show(first.id),
                 lambda: open_journal(root, writable=False),
                 lambda: MemoryStore.open(root, background=False)):
        with pytest.raises(MemoryEsError) as err:
            read()
        assert err.value.code == "chain_broken"
    assert "chain_broken" in {f.code for f in MemoryRoot.open(root).health().findings}


def test_show_fails_on_a_deleted_event_of_its_memory(root: Path) -> None:
    """A memory's events run in versions 1..n: a deleted one before the checkpoint, which a
    read from the checkpoint does not recompute, still fails show closed."""
    handle = MemoryRoot.open(root)
    first = next(m for m in handle.list_memories(limit=10).memories
                 if m.text == "answer for a.")
    with MemoryStore.open(root, background=False) as store:  # a second event, checkpointed
        store.mark(first.id, insight=True)
    events = handle.show(first.id).events
    assert [e.version for e in events] == [1, 2]
    SqliteTamper(root).delete("position = ?", events[0].position)
    with pytest.raises(MemoryEsError) as err:
        MemoryRoot.open(root).show(first.id)
    assert err.value.code == "chain_broken"
