"""Sealed fields: content encrypted under a per-record key before it is chained.

The domain hands the journal a policy (topic -> {field: tombstone}); the journal knows no
event class. A sealed field is replaced in the stored JSON by a self-describing value::

    {"$sealed": 1, "key": 7, "nonce": "<b64>", "ct": "<b64>", "void": ""}

AES-GCM (``cryptography``'s AESGCM, never a cipher written here) over the field's canonical
JSON, with the topic, originator id, version and field name as associated data, so a sealed
value cannot be moved to another record. The chain hashes these bytes, so destroying the key
erases the content and the chain still verifies. ``void`` is the field's content-free
tombstone, what a reader gets once the key is gone; an export of a forgotten record keeps only
``{"$sealed": 1, "void": ...}`` (no key id, no ciphertext), and so does a root replayed from it.

A sealed size says little about the text: each plaintext is padded to a power of two, at
least 64 bytes (a field's JSON with trailing spaces, which every JSON reader skips; a payload
behind a length prefix), so the ciphertext left after a forget tells its length only to within
a factor of two, and nothing about texts under 64 bytes.

Events stored before sealing existed hold plain fields and decode unchanged.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memory_es.errors import IntegrityError
from memory_es.journal.records import RecordKeys

SEALED = "$sealed"
SEALED_MARK = b'"$sealed"'
# A sealed value's key id, read without decoding the state (canonical JSON sorts the keys):
# the writer's open scans every sealed row with it to collect unused keys.
SEALED_KEY_ID = re.compile(rb'"\$sealed":1,"ct":"[A-Za-z0-9+/=]*","key":(\d+)')
PAYLOAD_MAGIC = b"\x00mes-sealed-1\x00"  # unpadded: payloads sealed before padding
PADDED_PAYLOAD_MAGIC = b"\x00mes-sealed-2\x00"  # a 4-byte length, the bytes, zero padding
NONCE_BYTES = 12
PAD_FLOOR = 64


def padded_size(n: int) -> int:
    """The sealed size of ``n`` plaintext bytes: the next power of two, at least 64."""
    return max(PAD_FLOOR, 1 << (n - 1).bit_length())

SealPolicy = Mapping[str, Mapping[str, Any]]  # topic -> {field: tombstone value}


@dataclass(frozen=True)
class Unsealed:
    """A stored state with its sealed fields opened (or voided), and what it referenced."""

    state: bytes
    forgotten: bool
    key_ids: tuple[int, ...]


def _aad(topic: str, oid: UUID | str, version: int, field: str) -> bytes:
    return f"{topic}\x00{oid}\x00{version}\x00{field}".encode()


def is_sealed(value: object) -> bool:
    return isinstance(value, dict) and SEALED in value


def void_of(value: dict[str, Any]) -> dict[str, Any]:
    """The content-free form of a sealed value: no key id, no ciphertext."""
    return {SEALED: 1, "void": value.get("void")}


class Sealer:
    """Seals a writer's events under fresh record keys and opens anyone's sealed states.

    ``policy`` is None for readers (they only open); ``keys`` is None for a schema-1 root,
    which has no root id and so no record keys (nothing in it was ever sealed)."""

    def __init__(self, keys: RecordKeys | None, policy: SealPolicy | None) -> None:
        self.keys = keys
        self.policy = policy if keys is not None else None
        # Keys a committed forget names that still exist (a kill before it destroyed them):
        # a reader treats them as destroyed from the moment the forget committed.
        self.withheld: frozenset[int] = frozenset()

    # -- sealing (writers) -----------------------------------------------------------------------

    def seal_state(self, topic: str, oid: UUID | str, version: int, state: bytes) -> bytes:
        """``state`` with the policy's fields of ``topic`` sealed under one fresh key."""
        if self.policy is None or not self.policy.get(topic):
            return state
        data = msgspec.json.decode(state)
        if not self.seal_fields(topic, oid, version, data):
            return state
        return msgspec.json.encode(data, order="sorted")

    def seal_fields(self, topic: str, oid: UUID | str, version: int,
                    data: dict[str, Any]) -> bool:
        """Seal the policy's fields of ``topic`` in ``data`` in place, under one fresh key
        (each field's canonical JSON); False when there was nothing to seal."""
        fields = self.policy.get(topic) if self.policy is not None else None
        if not fields:
            return False
        # an empty value ("", [], {}) or None states nothing: it stays plain (and cheap)
        todo = [f for f in fields if data.get(f) and not is_sealed(data[f])]
        if not todo:
            return False
        assert self.keys is not None
        key_id, key = self.keys.take()
        aead = AESGCM(key)
        prefix = f"{topic}\x00{oid}\x00{version}\x00".encode()
        for field in todo:
            nonce = os.urandom(NONCE_BYTES)
            plain = msgspec.json.encode(data[field], order="sorted")
            plain = plain.ljust(padded_size(len(plain)), b" ")
            ct = aead.encrypt(nonce, plain, prefix + field.encode())
            # bytes: msgspec writes them as standard base64 strings, in C
            data[field] = {SEALED: 1, "key": key_id, "nonce": nonce, "ct": ct,
                           "void": fields[field]}
        return True

    def seal_payload(self, intake_id: str, data: bytes) -> bytes:
        """A turn payload sealed under its own key (forgetting the turn destroys it)."""
        if self.policy is None or self.keys is None:
            return data
        key_id, key = self.keys.take()
        nonce = os.urandom(NONCE_BYTES)
        plain = len(data).to_bytes(4, "big") + data
        plain = plain.ljust(padded_size(len(plain)), b"\x00")
        ct = AESGCM(key).encrypt(nonce, plain, b"payload\x00" + intake_id.encode())
        return PADDED_PAYLOAD_MAGIC + key_id.to_bytes(8, "big") + nonce + ct

    # -- opening (everyone) ----------------------------------------------------------------------

    def unseal(self, topic: str, oid: UUID | str, version: int, state: bytes, *,
               export: bool = False) -> Unsealed:
        """Open every sealed field: plaintext while its key exists, else its tombstone (with
        ``export``: the content-free sealed form, so a replay of the export keeps it void)."""
        if SEALED_MARK not in state:
            return Unsealed(state, False, ())
        data = msgspec.json.decode(state)
        forgotten = False
        key_ids: list[int] = []
        for field, value in data.items():
            if not is_sealed(value):
                continue
            key_id = value.get("key")
            key = self._key(key_id) if isinstance(key_id, int) else None
            if isinstance(key_id, int):
                key_ids.append(key_id)
            if key is None:
                forgotten = True
                data[field] = void_of(value) if export else value.get("void")
                continue
            try:
                plain = AESGCM(key).decrypt(base64.b64decode(value["nonce"]),
                                            base64.b64decode(value["ct"]),
                                            _aad(topic, oid, version, field))
            except (InvalidTag, KeyError, ValueError) as e:
                raise IntegrityError(
                    f"sealed field {field} of {oid} v{version} ({topic}) does not open: "
                    f"{type(e).__name__}", code="record_seal_invalid") from None
            data[field] = msgspec.json.decode(plain)
        return Unsealed(msgspec.json.encode(data, order="sorted"), forgotten, tuple(key_ids))

    def unseal_payload(self, intake_id: str, blob: bytes) -> bytes | None:
        """A payload's bytes; None once its key is destroyed."""
        padded = blob.startswith(PADDED_PAYLOAD_MAGIC)
        if not padded and not blob.startswith(PAYLOAD_MAGIC):
            return blob
        rest = blob[len(PAYLOAD_MAGIC):]
        key = self._key(int.from_bytes(rest[:8], "big"))
        if key is None:
            return None
        try:
            plain = AESGCM(key).decrypt(rest[8:8 + NONCE_BYTES], rest[8 + NONCE_BYTES:],
                                        b"payload\x00" + intake_id.encode())
        except InvalidTag:
            raise IntegrityError(f"payload of intake {intake_id} does not open",
                                 code="record_seal_invalid") from None
        if not padded:
            return plain
        size = int.from_bytes(plain[:4], "big")
        if size > len(plain) - 4:
            raise IntegrityError(f"payload of intake {intake_id} names more bytes than it holds",
                                 code="record_seal_invalid")
        return plain[4:4 + size]

    def _key(self, key_id: int) -> bytes | None:
        if key_id in self.withheld:
            return None
        if self.keys is None:
            raise IntegrityError("record_key_missing: this root has sealed records but no "
                                 "root id to find their keys by", code="record_key_missing")
        return self.keys.get(key_id)


def payload_key_id(blob: bytes) -> int | None:
    """The record key a sealed payload is under (None: a plain payload)."""
    if not blob.startswith((PAYLOAD_MAGIC, PADDED_PAYLOAD_MAGIC)):
        return None
    return int.from_bytes(blob[len(PAYLOAD_MAGIC):len(PAYLOAD_MAGIC) + 8], "big")


def state_key_ids(state: bytes) -> list[int]:
    """The record keys a stored state's sealed fields reference (no key needed)."""
    if SEALED_MARK not in state:
        return []
    data = msgspec.json.decode(state)
    return [v["key"] for v in data.values() if is_sealed(v) and isinstance(v.get("key"), int)]
