"""Taking a backup, and reading one back verified (see :mod:`memory_es.backup`)."""

from __future__ import annotations

import errno
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from memory_es.backup.fileformat import NONE, Body, Secret, open_body, read_file, seal
from memory_es.backup.ledger import begin, finish, read_entries
from memory_es.config import MemoryConfig
from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.events import FORGOTTEN_TOPICS
from memory_es.fsutil import crash_point, fsync_dir, private_temp, remove_stale_temps, write_all
from memory_es.history import journal_guard, open_reader
from memory_es.intake import utc_now
from memory_es.journal.chain import GENESIS, Chain
from memory_es.journal.sealing import SEALED_KEY_ID, SEALED_MARK, payload_key_id
from memory_es.keystore import KeyStore
from memory_es.rootconfig import journal_of
from memory_es.text import iso_ms

BATCH = 2000


@dataclass(frozen=True)
class BackupReport:
    """What :func:`take_backup` wrote (content-free)."""

    backup_id: str
    path: str
    root_id: str
    position: int
    record_keys: int
    protection: str
    bytes: int


def take_backup(root: str | Path, dest: str | Path, secret: Secret = NONE, *,
                config: MemoryConfig | None = None,
                key_store: str | Path | KeyStore | None = None) -> BackupReport:
    """Write a backup of ``root`` to ``dest`` (a new file, not inside the root), protected
    by ``secret``; safe beside a running agent. The backup is recorded in the key store's
    ledger before its keys are read, so a forget from then on names it. It carries only the
    record keys its own rows and payloads use, less those a forget among its rows (or an
    unfinished one) named: never a key of a record written after it, nor of one forgotten."""
    root, dest = Path(root), Path(os.path.abspath(dest))
    keys = KeyStore.resolve(key_store)
    _check_dest(root, dest)
    # a backup killed while writing left a whole copy of the root and its keys beside dest
    remove_stale_temps(dest.parent, dest.name)
    with open_reader(root, keys, journal_of(config)) as opened:
        chain = opened.chain
        if not chain.keyed or chain.root_id is None or chain.key is None:
            raise IntegrityError(f"{root}: a plain-chain root cannot be backed up; open it once "
                                 "as a writer to key it", code="chain_unkeyed")
        recorder = opened.recorder
        position, head = recorder.verify()
        backup_id = secrets.token_hex(8)
        created = iso_ms(utc_now())
        begin(keys, chain.root_id, backup_id, created, position, str(dest))
        written = False
        try:
            with journal_guard(root):
                rows = [row for row in recorder.rows() if row[0] <= position]
                intakes = {row[1] for row in rows}
                payloads = [p for p in recorder.payload_rows() if p[0] in intakes]
                held, destroyed = ([], []) if recorder.sealer.keys is None \
                    else recorder.sealer.keys.export_all()
            used = _used_keys(rows, payloads)
            gone = set(recorder.sealer.withheld) | _forgotten_keys(rows, chain.root_id)
            record_keys = [k for k in held if k[0] in used and k[0] not in gone]
            destroyed = sorted(set(destroyed) | (gone & used))
            body = Body(chain_key=chain.key, keyed_from=chain.keyed_from, rows=rows,
                        payloads=payloads, record_keys=record_keys, destroyed=destroyed,
                        ledger=read_entries(keys, chain.root_id))
            data = seal({"backup_id": backup_id, "chain": head.hex(), "created_at": created,
                         "position": position, "root_id": chain.root_id}, body, secret)
            _write_new(dest, data)
            written = True
        finally:
            if not written and not os.path.lexists(dest):
                finish(keys, chain.root_id, backup_id, failed=True)
        highest = max((k[0] for k in record_keys), default=0)
        finish(keys, chain.root_id, backup_id, highest_key=highest, path=str(dest))
    return BackupReport(backup_id=backup_id, path=str(dest), root_id=chain.root_id,
                        position=position, record_keys=len(record_keys),
                        protection=secret.kind, bytes=len(data))


def backups_of(root: str | Path, *, config: MemoryConfig | None = None,
               key_store: str | Path | KeyStore | None = None
               ) -> tuple[str, list[dict[str, Any]]]:
    """(root id, the backups the key store's ledger records for it, in the order taken):
    each one's id, time, position, state ("done", "writing": killed or running, "failed")
    and path."""
    keys = KeyStore.resolve(key_store)
    with open_reader(Path(root), keys, journal_of(config)) as opened:
        root_id = opened.chain.root_id
    if root_id is None:
        raise IntegrityError(f"{root}: a plain-chain root has no key store entry and no "
                             "backups; open it once as a writer to key it", code="chain_unkeyed")
    return root_id, read_entries(keys, root_id)


def _used_keys(rows: list[tuple[int, str, int, str, bytes, bytes]],
               payloads: list[tuple[str, str, bytes]]) -> set[int]:
    """The record key ids these rows' sealed fields and these payloads reference."""
    used = {int(k) for row in rows if SEALED_MARK in row[4]
            for k in SEALED_KEY_ID.findall(row[4])}
    used.update(k for p in payloads if (k := payload_key_id(p[2])) is not None)
    return used


def _forgotten_keys(rows: list[tuple[int, str, int, str, bytes, bytes]], root_id: str
                    ) -> set[int]:
    """The record keys the ``Forgotten`` events among these rows name (this root's own: a
    replayed root's events name another's ids)."""
    gone: set[int] = set()
    for row in rows:
        if row[3] in FORGOTTEN_TOPICS:
            event = msgspec.json.decode(row[4])
            if event.get("keys_root") == root_id:
                gone.update(int(k) for k in event.get("key_ids", ()))
    return gone


def _check_dest(root: Path, dest: Path) -> None:
    where, parent = Path(os.path.realpath(root)), Path(os.path.realpath(dest.parent))
    if parent == where or where in parent.parents:
        raise MemoryEsError(f"backup_inside_root: {dest} is inside the memory root {root}; "
                            "keep backups elsewhere", code="backup_inside_root")
    if os.path.lexists(dest):
        raise _exists(dest)
    if not dest.parent.is_dir():
        raise MemoryEsError(f"not_found: {dest.parent} is not a directory", code="not_found")


def _exists(dest: Path) -> MemoryEsError:
    return MemoryEsError(f"backup_exists: {dest} already exists; a backup never replaces a "
                         "file", code="backup_exists")


def _write_new(dest: Path, data: bytes) -> None:
    """``data`` into the new owner-only file ``dest``: a private temp file, fsync, then a
    link that fails if ``dest`` appeared meanwhile (a backup never replaces a file)."""
    fd, tmp = private_temp(dest)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("backup.before_link")
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise _exists(dest) from None
        except OSError as e:  # no hard links here (FAT, exFAT, some shares): rename instead
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            if os.path.lexists(dest):
                raise _exists(dest) from None
            os.rename(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(dest.parent)


def read_backup(path: str | Path, secret: Secret | None = None) -> tuple[str, Body, int, str]:
    """(backup id, body, position, root id) of the backup at ``path``, its chain verified
    against the header's head before anything else uses it."""
    where = str(path)
    header, body = open_body(read_file(path), secret, where)
    chain = Chain(body.chain_key, body.keyed_from, header.root_id)
    link = GENESIS
    for n, (position, oid, version, topic, state, stored) in enumerate(body.rows, start=1):
        link = chain.link(link, position, oid, version, topic, state)
        if position != n or link != stored:
            raise IntegrityError(f"{where}: the backup's journal breaks at position {position}",
                                 code="backup_corrupt")
    if len(body.rows) != header.position or link.hex() != header.chain:
        raise IntegrityError(f"{where}: the backup's journal does not end at the head its "
                             f"header names (position {header.position})",
                             code="backup_corrupt")
    return header.backup_id, body, header.position, header.root_id
