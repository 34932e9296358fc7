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
    projections. Nothing is written before the backup opens and verifies."""
    root = Path(os.path.abspath(root))
    keys = KeyStore.resolve(key_store)
    backup_id, body, position, root_id = read_backup(path, secret)
    if os.path.lexists(root) and (not root.is_dir() or any(root.iterdir())):
        raise MemoryEsError(f"{root}: restore needs a new or empty directory",
                            code="root_not_empty")
    keys.check_outside(root)
    note = {"backup_id": backup_id, "target": str(root)}
    resumed = _claim_keys(keys, root_id, body.chain_key, note)
    crash_point("restore.after_keys")
    work = root.parent / f".{root.name}.restoring"
    if os.path.lexists(work):
        shutil.rmtree(work)  # what a run cut short built: built again from the backup
    make_private_dir(work)
    target = journal_of(config)
    chain = Chain(body.chain_key, body.keyed_from, root_id)
    location = _append(work, body, position, chain, keys, config)
    crash_point("restore.after_rows")
    if target is None:
        marker = Marker(SCHEMA_VERSION, root_id, body.keyed_from)
    else:
        marker = Marker(SCHEMA_VERSION, root_id, body.keyed_from, journal=POSTGRES,
                        location=location, pg_schema=target.schema)
    atomic_write(work / MARKER_FILE, marker.signed(chain).file_bytes())
    report = rebuild_root(work, config, key_store=keys)
    adopt(keys, root_id, body.ledger, backup_id,
          max((k[0] for k in body.record_keys), default=0), str(Path(path).resolve()))
    crash_point("restore.before_rename")
    if os.path.isdir(root):
        os.rmdir(root)  # the empty directory the caller named
    os.rename(work, root)
    fsync_dir(root.parent)
    note_path = private_key_file(keys, root_id, NOTE_FILE, create=False)
    if note_path is not None:
        note_path.unlink()
        fsync_dir(note_path.parent)
    return RestoreReport(backup_id=backup_id, root_id=root_id, position=position,
                         record_keys=len(body.record_keys),
                         journal="sqlite" if target is None else "postgres",
                         generation=report.generation, vectors_pending=report.vectors_pending,
                         resumed=resumed)


def _claim_keys(keys: KeyStore, root_id: str, chain_key: bytes, note: dict[str, str]) -> bool:
    """Install the backup's chain key under its root id, with a note naming this restore;
    True when an earlier run of this same restore had (resume). Refuses anyone else's keys."""
    key_dir = keys.path / root_id
    if not os.path.lexists(key_dir):
        keys.install_chain_key(root_id, chain_key)
        _write_note(keys, root_id, note)
        return False
    names = set(os.listdir(key_dir))
    same_key = keys.load_chain_key(root_id) == chain_key
    note_path = private_key_file(keys, root_id, NOTE_FILE, create=False)
    mine = note_path is not None and json.loads(note_path.read_bytes()) == note
    if same_key and (mine or names == {CHAIN_KEY_FILE}):
        if note_path is None:
            _write_note(keys, root_id, note)
        return True
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
            config: MemoryConfig | None) -> str:
    """The backup's rows, payloads and record keys into the journal (SQLite in ``work``, or
    the PostgreSQL journal ``config`` names, resuming after what it already holds); returns
    the journal's location."""
    target = journal_of(config)
    with journal_guard(work):
        sink = sqlite_sink(work, chain, keys) if target is None \
            else postgres_sink(target, chain)
        try:
            head, head_chain = sink.verify()
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
