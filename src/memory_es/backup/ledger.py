"""The key store's ledger of the backups a root made: ``<store>/<root id>/backups.jsonl``.

Beside the keys, not in the root: it is about where copies of the keys went, it must outlive
the root's files, and a backup taken beside a running agent cannot write the journal. One
line per step, appended and fsynced, owner-only::

    {"backup_id": ..., "created_at": ..., "path": ..., "position": N, "step": "begin"}
    {"backup_id": ..., "highest_key": K, "path": ..., "step": "done"}
    {"backup_id": ..., "step": "failed"}

A backup is begun before its keys are read, so a forget that runs meanwhile names it. A
backup holds only the keys its rows use, and a new record's key id is always above every id
used before it, so a finished backup holds a live key ``k`` exactly when
``k <= highest_key``; one still "writing" (or killed) is named with the path it was going to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from memory_es.keystore import KeyStore, private_key_file

LEDGER_FILE = "backups.jsonl"


def _append(keys: KeyStore, root_id: str, lines: Iterable[dict[str, Any]]) -> None:
    path = private_key_file(keys, root_id, LEDGER_FILE, create=True)
    assert path is not None
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, b"".join(json.dumps(line, sort_keys=True, separators=(",", ":")).encode()
                              + b"\n" for line in lines))
        os.fsync(fd)
    finally:
        os.close(fd)


def begin(keys: KeyStore, root_id: str, backup_id: str, created_at: str, position: int,
          path: str) -> None:
    _append(keys, root_id, [{"backup_id": backup_id, "created_at": created_at, "path": path,
                             "position": position, "step": "begin"}])


def finish(keys: KeyStore, root_id: str, backup_id: str, *, failed: bool = False,
           highest_key: int = 0, path: str = "") -> None:
    line: dict[str, Any] = {"backup_id": backup_id, "step": "failed" if failed else "done"}
    if not failed:
        line |= {"highest_key": highest_key, "path": path}
    _append(keys, root_id, [line])


def read_entries(keys: KeyStore, root_id: str) -> list[dict[str, Any]]:
    """Each backup once, in the order begun: its id, time, position, ``state`` ("writing",
    "done" or "failed"), and once done its ``highest_key`` and ``path``."""
    path = private_key_file(keys, root_id, LEDGER_FILE, create=False)
    if path is None:
        return []
    entries: dict[str, dict[str, Any]] = {}
    with open(path, "rb") as f:
        for raw in f:
            try:
                line = json.loads(raw)
                backup_id = str(line["backup_id"])
            except (ValueError, KeyError, TypeError):
                continue  # a line a crash cut short: the step after it never happened
            if line.get("step") == "begin":
                entries[backup_id] = {"backup_id": backup_id, "state": "writing",
                                      "created_at": line.get("created_at"),
                                      "position": line.get("position"),
                                      "path": line.get("path")}
            elif backup_id in entries:
                entry = entries[backup_id]
                entry["state"] = "failed" if line.get("step") == "failed" else "done"
                if entry["state"] == "done":
                    entry |= {"highest_key": line.get("highest_key"), "path": line.get("path")}
    return list(entries.values())


def adopt(keys: KeyStore, root_id: str, entries: Iterable[dict[str, Any]],
          restored_from: str, highest_key: int, path: str) -> None:
    """A restored root's ledger: the backups its original made, the one it came from done."""
    lines: list[dict[str, Any]] = []
    for entry in entries:
        lines.append({"backup_id": entry["backup_id"], "created_at": entry.get("created_at"),
                      "path": entry.get("path"), "position": entry.get("position"),
                      "step": "begin"})
        if entry["backup_id"] == restored_from:
            lines.append({"backup_id": restored_from, "highest_key": highest_key,
                          "path": path, "step": "done"})
        elif entry.get("state") == "done":
            lines.append({"backup_id": entry["backup_id"],
                          "highest_key": entry.get("highest_key"),
                          "path": entry.get("path"), "step": "done"})
        elif entry.get("state") == "failed":
            lines.append({"backup_id": entry["backup_id"], "step": "failed"})
    _append(keys, root_id, lines)


def holding(keys: KeyStore, root_id: str, key_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The backups that hold any of ``key_ids``: every finished one whose highest key reaches
    the lowest of them, and every one still being written."""
    lowest = min(key_ids, default=None)
    if lowest is None:
        return []
    return [e for e in read_entries(keys, root_id)
            if e["state"] == "writing"
            or (e["state"] == "done" and int(e.get("highest_key") or 0) >= lowest)]
