"""The journal's hash chain (DESIGN 3).

Every event row carries ``chain_n = sha256(chain_{n-1} || position || originator_id || version
|| topic || state)``, starting from GENESIS, so any edit, deletion or replacement of a committed
row breaks every later link.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from pathlib import Path
from uuid import UUID

from memory_es.errors import IntegrityError

GENESIS = bytes(32)


def chain_link(
    prev: bytes, position: int, originator_id: UUID | str, version: int, topic: str, state: bytes
) -> bytes:
    """chain_n = sha256(chain_{n-1} || position || originator_id || version || topic || state).

    Fixed-width integers and length prefixes make the encoding unambiguous.
    """
    oid = str(originator_id).encode()
    t = topic.encode()
    h = hashlib.sha256(prev)
    h.update(struct.pack(">QqI", position, version, len(oid)))
    h.update(oid)
    h.update(struct.pack(">I", len(t)))
    h.update(t)
    h.update(struct.pack(">Q", len(state)))
    h.update(state)
    return h.digest()


def verify_chain(
    path: Path, rows: Iterable[tuple[int, str, int, str, bytes, bytes]]
) -> tuple[int, bytes]:
    """Recompute the chain over ``rows`` (position order, from GENESIS).

    Returns the verified tail ``(position, chain)``, or fails closed naming the first row whose
    position skips or whose stored chain does not match.
    """
    expected_position, chain = 0, GENESIS
    for position, oid, version, topic, state, stored_chain in rows:
        expected_position += 1
        if position != expected_position:
            raise IntegrityError(
                f"{path}: journal position {expected_position} is missing "
                f"(found {position}); events were deleted",
                code="chain_broken",
            )
        chain = chain_link(chain, position, oid, version, topic, state)
        if chain != stored_chain:
            raise IntegrityError(
                f"{path}: hash chain does not verify at position {position}; "
                "the journal was edited or replaced",
                code="chain_broken",
            )
    return expected_position, chain
