"""Anchors: the signed head of a root's journal, kept by the operator outside the root.

The keyed chain stops anyone without the key from editing, appending or rewriting rows. It
cannot stop a *whole-root* rollback (an older copy of the root, journal, catalog and marker
together, is a perfectly valid root) or a swap with another root whose key is in the same
store. An anchor pins what the operator saw: the root id and the chain value at a position.
``health --expect-anchor FILE`` then fails on anything that does not extend it.

An anchor is one line of canonical JSON::

    {"chain": <hex: keyed chain at position>, "export_chain": <hex: plain SHA-256 chain at
     position, the "chain" of that line in an export>, "format": "memory-es-anchor",
     "mac": <hex: HMAC-SHA256 of the other fields under the root's chain key>,
     "position": N, "root_id": <hex>, "version": 1}

The MAC makes an edited anchor detectable too (checking it needs the key, like every open).
``export_chain`` lets an export be checked against the anchor without any key.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

import msgspec

from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.journal.chain import GENESIS, chain_link
from memory_es.journal.layout import JOURNAL_FILE, MARKER_FILE
from memory_es.journal.open import OpenedJournal

ANCHOR_FORMAT = "memory-es-anchor"
ANCHOR_VERSION = 1
MAX_ANCHOR_BYTES = 4096
_LABEL = b"memory-es anchor"


class Anchor(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A pinned journal head (see the module docstring)."""

    chain: str
    export_chain: str
    format: str
    mac: str
    position: int
    root_id: str
    version: int

    def body(self) -> dict[str, Any]:
        return {"chain": self.chain, "export_chain": self.export_chain, "format": self.format,
                "position": self.position, "root_id": self.root_id, "version": self.version}

    def to_json(self) -> dict[str, Any]:
        return self.body() | {"mac": self.mac}

    def line(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def _signed(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def make_anchor(opened: OpenedJournal) -> Anchor:
    """The signed head of ``opened``, re-verified in the same read snapshot it is taken from
    (a row appended after the open's verification is checked before it is pinned)."""
    chain = opened.chain
    if not chain.keyed or chain.root_id is None:
        raise IntegrityError(
            f"chain_unkeyed: {opened.recorder.location}: this root still has a plain SHA-256 chain "
            "(schema 1), which an anchor cannot pin; open it once as a writer (e.g. memory-es "
            "drain) to key it", code="chain_unkeyed")
    position, keyed, plain = 0, GENESIS, GENESIS
    unseal = opened.recorder.sealer.unseal  # the export holds sealed content open
    for pos, oid, version, topic, state, stored in opened.recorder.rows():
        position += 1
        keyed = chain.link(keyed, pos, oid, version, topic, state)
        exported = unseal(topic, oid, version, bytes(state), export=True).state
        plain = chain_link(plain, pos, oid, version, topic, exported)
        if pos != position or not hmac.compare_digest(keyed, bytes(stored)):
            raise IntegrityError(f"{opened.recorder.location}: hash chain does not verify at "
                                 f"position {pos}", code="chain_broken")
    unsigned = Anchor(chain=keyed.hex(), export_chain=plain.hex(), format=ANCHOR_FORMAT,
                      mac="", position=position, root_id=chain.root_id,
                      version=ANCHOR_VERSION)
    mac = chain.mac(_LABEL, _signed(unsigned.body())).hex()
    return msgspec.structs.replace(unsigned, mac=mac)


def parse_anchor(data: bytes) -> Anchor:
    """An anchor file's content, or ``anchor_invalid`` naming what is wrong."""
    if len(data) > MAX_ANCHOR_BYTES:
        raise MemoryEsError(f"anchor_invalid: more than {MAX_ANCHOR_BYTES} bytes; not an "
                            "anchor written by memory-es anchor", code="anchor_invalid")
    try:
        anchor = msgspec.json.decode(data.strip(), type=Anchor)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise MemoryEsError(f"anchor_invalid: not an anchor written by memory-es anchor ({e})",
                            code="anchor_invalid") from None
    if anchor.format != ANCHOR_FORMAT or anchor.version != ANCHOR_VERSION:
        raise MemoryEsError(f"anchor_invalid: format {anchor.format!r} version "
                            f"{anchor.version!r} is not {ANCHOR_FORMAT} {ANCHOR_VERSION}",
                            code="anchor_invalid")
    if anchor.position < 0 or not all(_is_hex(v, 64) for v in (
            anchor.chain, anchor.export_chain, anchor.mac)) or not _is_hex(anchor.root_id, 32):
        raise MemoryEsError("anchor_invalid: a field is out of range (position, hex digests)",
                            code="anchor_invalid")
    return anchor


def _is_hex(value: str, length: int) -> bool:
    return len(value) == length and all(c in "0123456789abcdef" for c in value)


def anchor_problems(opened: OpenedJournal, anchor: Anchor) -> list[tuple[str, str, str]]:
    """Why ``opened`` does not extend ``anchor``: (code, root-relative path, content-free
    detail) triples; empty when the journal holds the anchored head (and maybe more)."""
    chain = opened.chain
    if not chain.keyed or chain.root_id != anchor.root_id:
        mine = chain.root_id if chain.keyed else "none (schema 1, unkeyed)"
        return [("anchor_root_mismatch", MARKER_FILE,
                 f"anchor pins root {anchor.root_id}, this root is {mine}: another root was "
                 "put in its place, or the anchor belongs to another root")]
    if not hmac.compare_digest(chain.mac(_LABEL, _signed(anchor.body())).hex(), anchor.mac):
        return [("anchor_mac_invalid", MARKER_FILE,
                 "the anchor does not verify with this root's chain key: it was edited, or "
                 "the key store holds another key for this root id")]
    head = opened.recorder.max_notification_id() or 0
    if anchor.position > head:
        return [("anchor_rollback", JOURNAL_FILE,
                 f"journal ends at position {head}, the anchor pins position "
                 f"{anchor.position}: the root was rolled back to an older copy or truncated")]
    stored = opened.recorder.chain_at(anchor.position) if anchor.position else GENESIS
    if stored is None or not hmac.compare_digest(stored.hex(), anchor.chain):
        return [("anchor_fork", JOURNAL_FILE,
                 f"chain at position {anchor.position} differs from the anchor: the history "
                 "the anchor pinned was replaced")]
    return []
