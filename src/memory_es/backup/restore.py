"""Restoring a backup into a new root (C6, C16), resumable after a kill at any point.

The root is built in a private sibling directory (``.NAME.restoring``) and renamed into
place once its journal verifies and its projections are built, so ``NAME`` is either absent
(or the empty directory it was) or whole. The key store gets the backup's chain key under its
root id first; a run that was cut short is recognised and resumed: the key store's directory
for that root holds the same chain key and nothing else (before the rows went in), or the
restore's note naming this same target. Anything else there is another live copy's keys,
which a restore never shares (``restore_keys_exist``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from memory_es.backup.archive import read_backup
from memory_es.backup.fileformat import Body, Secret
from memory_es.backup.ledger import adopt
from memory_es.config import MemoryConfig
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.fsutil import atomic_write, crash_point, fsync_dir, make_private_dir
from memory_es.history import journal_guard
from memory_es.journal.chain import GENESIS, Chain
from memory_es.journal.layout import MARKER_FILE, POSTGRES, SCHEMA_VERSION, Marker
from memory_es.journal.migrate import postgres_sink, sqlite_sink
from memory_es.keystore import CHAIN_KEY_FILE, KeyStore, private_key_file
from memory_es.rootconfig import journal_of
from memory_es.transfer import rebuild_root
from projections.replay import RebuildReport

BATCH = 2000
NOTE_FILE = "restoring.json"  # in the key store's directory of the root, while restoring


@dataclass(frozen=True)
class RestoreReport:
    """What :func:`restore_backup` rebuilt (content-free)."""

    backup_id: str
    root_id: str
    position: int
    record_keys: int
    journal: str
    generation: int
    vectors_pending: int | None
    resumed: bool


def restore_backup(path: str | Path, root: str | Path, secret: Secret | None = None, *,
                   config: MemoryConfig | None = None,
                   key_store: str | Path | KeyStore | None = None) -> RestoreReport:
    """Build ``root`` (absent or empty) from the backup at ``path``: the same root id, chain
    and records, on the journal ``config`` names (SQLite in the root by default), then its
    projections. Nothing is written before the backup opens and verifies; a run that fails
    (rather than being killed) takes back the keys it installed."""
    root = Path(os.path.abspath(root))
    keys = KeyStore.resolve(key_store)
    backup_id, body, position, root_id = read_backup(path, secret)
    if not root.parent.is_dir():
        raise MemoryEsError(f"not_found: {root.parent} is not a directory", code="not_found")
    keys.check_outside(root)
    note = {"backup_id": backup_id, "target": str(root)}
    state = _key_state(keys, root_id, body.chain_key, note)
    # an existing directory (a mount point, say) is built in place; else beside, then renamed
    in_place = root.is_dir()
    if os.path.lexists(root) and (not in_place or (any(root.iterdir()) and state != "mine")):
        raise MemoryEsError(f"{root}: restore needs a new or empty directory",
                            code="root_not_empty")
    if state == "absent":
        keys.install_chain_key(root_id, body.chain_key)
        _write_note(keys, root_id, note)
    crash_point("restore.after_keys")
    work = root if in_place else root.parent / f".{root.name}.restoring"
    try:
        report = _build(work, body, position, root_id, keys, config, resumed=state == "mine")
        adopt(keys, root_id, body.ledger, backup_id,
              max((k[0] for k in body.record_keys), default=0), str(Path(path).resolve()))
        crash_point("restore.before_rename")
        if not in_place:
            os.rename(work, root)
            fsync_dir(root.parent)
    except Exception:
        if state == "absent":  # nothing of this run may block the next one
            _clear(work, keep=in_place)
            shutil.rmtree(keys.path / root_id, ignore_errors=True)
        raise
    note_path = private_key_file(keys, root_id, NOTE_FILE, create=False)
    if note_path is not None:
        note_path.unlink()
        fsync_dir(note_path.parent)
    return RestoreReport(backup_id=backup_id, root_id=root_id, position=position,
                         record_keys=len(body.record_keys),
                         journal="sqlite" if journal_of(config) is None else "postgres",
                         generation=report.generation, vectors_pending=report.vectors_pending,
                         resumed=state == "mine")


def _build(work: Path, body: Body, position: int, root_id: str, keys: KeyStore,
           config: MemoryConfig | None, *, resumed: bool) -> RebuildReport:
    """The journal, its signed marker and the projections in ``work`` (what a run cut short
    left there is built again from the backup)."""
    _clear(work, keep=True)
    make_private_dir(work)
    target = journal_of(config)
    chain = Chain(body.chain_key, body.keyed_from, root_id)
    location = _append(work, body, position, chain, keys, config, resumed=resumed)
    crash_point("restore.after_rows")
    if target is None:
        marker = Marker(SCHEMA_VERSION, root_id, body.keyed_from)
    else:
        marker = Marker(SCHEMA_VERSION, root_id, body.keyed_from, journal=POSTGRES,
                        location=location, pg_schema=target.schema)
    atomic_write(work / MARKER_FILE, marker.signed(chain).file_bytes())
    return rebuild_root(work, config, key_store=keys)


def _clear(work: Path, *, keep: bool) -> None:
    """Remove ``work`` (or, with ``keep``, everything in it)."""
    if not os.path.lexists(work):
        return
    if not keep:
        shutil.rmtree(work)
        return
    for child in work.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _key_state(keys: KeyStore, root_id: str, chain_key: bytes, note: dict[str, str]) -> str:
    """"absent": no keys for this root yet; "mine": an earlier run of this same restore
    (its note, or only the same chain key: killed before the note); anyone else's keys are
    refused (``restore_keys_exist``): two copies of a root never share a key store."""
    key_dir = keys.path / root_id
    if not os.path.lexists(key_dir):
        return "absent"
    names = set(os.listdir(key_dir))
    same_key = keys.load_chain_key(root_id) == chain_key
    note_path = private_key_file(keys, root_id, NOTE_FILE, create=False)
    mine = note_path is not None and json.loads(note_path.read_bytes()) == note
    if same_key and (mine or names == {CHAIN_KEY_FILE}):
        if note_path is None:
            _write_note(keys, root_id, note)
        return "mine"
    raise MemoryEsError(
        f"restore_keys_exist: the key store {keys.path} already holds keys for root "
        f"{root_id} (the original root's, or another restore's); restore into another key "
        "store ($MEMORY_ES_KEY_STORE) or remove that root and its keys first",
        code="restore_keys_exist")


def _write_note(keys: KeyStore, root_id: str, note: dict[str, str]) -> None:
    path = private_key_file(keys, root_id, NOTE_FILE, create=True)
    assert path is not None
    atomic_write(path, json.dumps(note, sort_keys=True).encode())


def _append(work: Path, body: Body, position: int, chain: Chain, keys: KeyStore,
            config: MemoryConfig | None, *, resumed: bool) -> str:
    """The backup's rows, payloads and record keys into the journal (SQLite in ``work``, or
    the PostgreSQL journal ``config`` names, resuming after what it already holds); returns
    the journal's location."""
    target = journal_of(config)
    with journal_guard(work):
        sink = sqlite_sink(work, chain, keys) if target is None \
            else postgres_sink(target, chain)
        try:
            head, head_chain = sink.verify()
            if head and not resumed:
                raise MemoryEsError(f"restore_target_used: {sink.location} already holds a "
                                    "journal (the original's?); restore into an empty "
                                    "database or schema", code="restore_target_used")
            if head and (head > len(body.rows) or body.rows[head - 1][5] != head_chain):
                raise IntegrityError(f"{sink.location}: that journal is not a prefix of the "
                                     "backup's; choose an empty database or schema",
                                     code="migrate_target_diverged")
            rows = body.rows[head:]
            for start in range(0, len(rows), BATCH):
                sink.append_rows(rows[start:start + BATCH])
            sink.append_rows([], body.payloads)
            if sink.sealer.keys is not None:
                sink.sealer.keys.import_all(body.record_keys, body.destroyed)
            if sink.verify() != (position, body.rows[-1][5] if body.rows else GENESIS):
                raise IntegrityError(f"{work}: the restored journal does not end where the "
                                     "backup does", code="backup_corrupt")
            return sink.location
        finally:
            sink.close()
