"""A verified checkpoint of the keyed chain, so a reader need not recompute all of it.

Recomputing every link costs about 4 microseconds a row: 0.1 s at 10,000 memories, over a
second at 100,000, on every ``memory-es search``. The writer has verified the whole chain when
it opened and computed every later link itself, so at open and at close it records how far the
chain is known good: ``.runtime/verified-chain`` holds ``(position, chain value)`` and a MAC of
both (and the root id) under the root's chain key. Nobody without the key can write one that a
reader accepts, so a forged checkpoint cannot make a reader skip rows.

The writer vouches only for what it verified or wrote itself: the tail it verified at open,
moved on by each of its own commits that followed it; a row another process put in while the
writer was open is never vouched for (the checkpoint stays where the writer's knowledge
ends). It also pins the one earlier row such a read decodes, the root's recorded
configuration (:data:`~memory_es.ids.ROOT_UUID`'s last row): its position and digest are
under the MAC, so an edit of that row makes the read verify everything.

A reading door (search, list, profile, the journal) that trusts it checks that the stored
chain at that position still equals the recorded value and that the pinned row is as pinned
(a replaced or truncated journal, or an edited configuration, fails that and is verified in
full), then recomputes only the links after it. A read that must decode other rows before
the checkpoint (an unfinished forget's) verifies the whole chain first. What such a read gives
up: another row before the checkpoint edited since (its chain value left as it was) is not
seen by it; ``health`` (which reports that edit), ``show``, ``export``, backups and every
writer open verify every link. A missing, damaged or stale checkpoint means a full
verification, never an error.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memory_es.errors import MemoryEsError
from memory_es.fsutil import atomic_write, check_private, make_private_dir
from memory_es.ids import ROOT_UUID
from memory_es.journal.chain import Chain

CHECKPOINT_FILE: Final = ".runtime/verified-chain"
PINNED: Final = str(ROOT_UUID)  # the originator whose last row a checkpointed read decodes
_MAGIC: Final = b"MESV"
_BODY = struct.Struct(">4sQ32sQ32s")
_LABEL: Final = b"verified-chain"
_NONE: Final = bytes(32)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """How far the chain is verified, and the pinned row at or before it (None: no row)."""

    position: int
    value: bytes
    pinned: tuple[int, bytes] | None


def _body(point: Checkpoint) -> bytes:
    pin_position, pin_digest = point.pinned or (0, _NONE)
    return _BODY.pack(_MAGIC, point.position, point.value, pin_position, pin_digest)


def _mac(chain: Chain, body: bytes) -> bytes:
    return chain.mac(_LABEL, (chain.root_id or "").encode() + body)


def read_checkpoint(root: Path, chain: Chain) -> Checkpoint | None:
    """The checkpoint the writer attested for this root, or None: no checkpoint, an unkeyed
    chain, or one whose MAC does not verify (damaged, forged, another root's)."""
    if not chain.keyed:
        return None
    path = root / CHECKPOINT_FILE
    try:
        check_private(path, is_dir=False)
        data = path.read_bytes()
    except (OSError, MemoryEsError):  # absent, unreadable or not ours: verify everything
        return None
    if len(data) != _BODY.size + 32:
        return None
    magic, position, value, pin_position, pin_digest = _BODY.unpack_from(data)
    if magic != _MAGIC or not hmac.compare_digest(data[_BODY.size:],
                                                  _mac(chain, data[:_BODY.size])):
        return None
    return Checkpoint(position, value, (pin_position, pin_digest) if pin_position else None)


def write_checkpoint(root: Path, chain: Chain, point: Checkpoint) -> None:
    """Attest ``point`` (the writer's own knowledge). Runtime state: not fsynced, and a
    failure only costs the next reader a full check."""
    if not chain.keyed or point.position <= 0:
        return
    body = _body(point)
    with contextlib.suppress(OSError, MemoryEsError):
        make_private_dir(root / os.path.dirname(CHECKPOINT_FILE))
        atomic_write(root / CHECKPOINT_FILE, body + _mac(chain, body), durable=False)
