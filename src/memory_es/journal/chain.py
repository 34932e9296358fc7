"""The journal's hash chain (DESIGN 3).

Every event row carries a running chain value over ``(chain_{n-1}, position, originator_id,
version, topic, state)``, starting from GENESIS, so any edit, deletion or replacement of a
committed row breaks every later link. Two link functions, one encoding:

- plain (schema 1, and every export): ``sha256(chain_{n-1} || fields)``. Anyone can recompute
  it, so it detects accidents, not an editor who recomputes the chain.
- keyed (schema 2): ``HMAC-SHA256(key, chain_{n-1} || fields)`` with the root's 32-byte chain
  key, held outside the root (:mod:`memory_es.keystore`). Rewriting or appending rows needs
  the key.

A root upgraded from schema 1 keeps its plain links below ``keyed_from`` (rewriting them would
be a risky in-place migration) and links keyed from there on: the first keyed link covers the
last plain chain value, so the plain prefix cannot change without breaking it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from collections.abc import Iterable
from pathlib import Path
from uuid import UUID

from memory_es.errors import IntegrityError

GENESIS = bytes(32)
NEVER = 2**63 - 1  # keyed_from of a plain (schema 1) chain


_HEAD = struct.Struct(">QqI")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


@functools.lru_cache(maxsize=256)
def _topic_field(topic: str) -> bytes:
    """A topic's length-prefixed bytes: a journal has a few dozen topics, every read links
    each row, so they are encoded once."""
    t = topic.encode()
    return _U32.pack(len(t)) + t


def _fields(position: int, originator_id: UUID | str, version: int, topic: str,
            state: bytes) -> bytes:
    """Fixed-width integers and length prefixes make the encoding unambiguous."""
    oid = str(originator_id).encode()
    return b"".join((_HEAD.pack(position, version, len(oid)), oid, _topic_field(topic),
                     _U64.pack(len(state)), state))


def chain_link(
    prev: bytes, position: int, originator_id: UUID | str, version: int, topic: str, state: bytes
) -> bytes:
    """The plain link: chain_n = sha256(chain_{n-1} || position || originator_id || version
    || topic || state)."""
    return hashlib.sha256(prev + _fields(position, originator_id, version, topic, state)).digest()


class Chain:
    """The link function of one root: plain below ``keyed_from``, HMAC-SHA256 with ``key``
    from there on. ``Chain.plain()`` is a schema-1 root (no key)."""

    def __init__(self, key: bytes | None, keyed_from: int, root_id: str | None = None) -> None:
        if key is None and keyed_from != NEVER:
            raise ValueError("a keyed chain needs its key")
        self.keyed_from = keyed_from
        self.root_id = root_id
        self._key = key
        self._pads = _hmac_pads(key) if key is not None else None

    @classmethod
    def plain(cls) -> Chain:
        return cls(None, NEVER)

    @property
    def keyed(self) -> bool:
        return self._pads is not None

    @property
    def key(self) -> bytes | None:
        """The chain key (None for a plain chain): what a backup carries to open the root."""
        return self._key

    def link(self, prev: bytes, position: int, originator_id: UUID | str, version: int,
             topic: str, state: bytes) -> bytes:
        if self._pads is None or position < self.keyed_from:
            return chain_link(prev, position, originator_id, version, topic, state)
        # HMAC-SHA256 (RFC 2104) from the key's two padded hash states, computed once per
        # open: a link is then two hash copies and one message, a third faster than hmac.HMAC
        inner, outer = self._pads[0].copy(), self._pads[1].copy()
        inner.update(prev + _fields(position, originator_id, version, topic, state))
        outer.update(inner.digest())
        return outer.digest()

    def mac(self, label: bytes, data: bytes) -> bytes:
        """HMAC-SHA256 of ``label || 0 || data`` under the chain key (anchors, the marker);
        the label keeps these apart from chain links, which start with 32 bytes of chain."""
        if self._key is None:
            raise IntegrityError("chain_unkeyed: this root's chain has no key",
                                 code="chain_unkeyed")
        return hmac.new(self._key, label + b"\0" + data, hashlib.sha256).digest()


def _hmac_pads(key: bytes) -> tuple[hashlib._Hash, hashlib._Hash]:
    """SHA-256 states after the HMAC inner and outer key blocks (RFC 2104)."""
    block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    return (hashlib.sha256(bytes(b ^ 0x36 for b in block)),
            hashlib.sha256(bytes(b ^ 0x5C for b in block)))


def row_digest(position: int, topic: str, state: bytes) -> bytes:
    """What pins one verified row: SHA-256 of its position, topic and state."""
    return hashlib.sha256(_fields(position, "", 0, topic, state)).digest()


def verify_chain(
    path: Path | str, rows: Iterable[tuple[int, str, int, str, bytes, bytes]], chain: Chain,
    start: tuple[int, bytes] | None = None, watch: list[tuple[int, bytes]] | None = None,
    watched: str = "",
) -> tuple[int, bytes]:
    """Recompute the chain over ``rows`` (position order, from GENESIS, or from ``start``: a
    verified ``(position, chain)`` that ``rows`` follow). ``watch`` receives the position and
    :func:`row_digest` of each verified row of the originator ``watched``.

    Returns the verified tail ``(position, chain)``, or fails closed naming the first row whose
    position skips or whose stored chain does not match.
    """
    expected_position, value = start or (0, GENESIS)
    link = chain.link
    for position, oid, version, topic, state, stored_chain in rows:
        if watch is not None and oid == watched:
            watch.append((position, row_digest(position, topic, state)))
        expected_position += 1
        if position != expected_position:
            raise IntegrityError(
                f"{path}: journal position {expected_position} is missing "
                f"(found {position}); events were deleted",
                code="chain_broken",
            )
        value = link(value, position, oid, version, topic, state)
        if not hmac.compare_digest(value, stored_chain):
            raise IntegrityError(
                f"{path}: hash chain does not verify at position {position}; "
                "the journal was edited or replaced"
                + (" (or rows were written without this root's chain key)"
                   if chain.keyed and position >= chain.keyed_from else ""),
                code="chain_broken",
            )
    return expected_position, value
