"""Every identity the engine derives, in one place: the intake id of a run, the aggregate ids
of the journal, memory ids, entity keys and text keys (B2, D3, D5, E17, L1, DESIGN 9.3).

Each is a pure function of its input, so a replayed commit reproduces the same ids and is a
no-op, never a duplicate. Never change one: ids are stored in journals.
"""

from __future__ import annotations

import hashlib
from uuid import UUID, uuid5

from memory_es.text import fold, journal_text

# Namespace of every aggregate id.
NAMESPACE = UUID("6d2c4c55-2f0b-5a0e-9b7e-6d656d6f7279")


def sha256_hex(text: str) -> str:
    """SHA-256 hex of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_hash(run_id: str) -> str:
    """The intake id: SHA-256 hex of the stable provider run id (B2)."""
    return sha256_hex(run_id)


def intake_uuid(run_hash: str) -> UUID:
    """Aggregate id of the intake for a run: uuid5 of its 64-hex run hash."""
    return uuid5(NAMESPACE, f"intake:{run_hash}")


def memory_uuid(memory_id: str) -> UUID:
    """Aggregate id of a memory: uuid5 of its 64-hex memory id."""
    return uuid5(NAMESPACE, f"memory:{memory_id}")


ROOT_UUID = uuid5(NAMESPACE, "root")  # the root's own aggregate: its recorded configuration


def entity_uuid(entity_id: str) -> UUID:
    """Aggregate id of an entity: uuid5 of its 64-hex content-derived id."""
    return uuid5(NAMESPACE, f"entity:{entity_id}")


def run_memory_id(run_hash: str, index: int) -> str:
    """Run-derived memory id: sha256(run_hash ":" index), so a replayed commit is a no-op."""
    return sha256_hex(f"{run_hash}:{index}")


def text_key(text: str) -> str:
    """Structural identity of a line (E16, DESIGN 9.3): the same words in the same order.
    It is also a Journal memory's id (D3, D5): repeated content converges on one identity."""
    return sha256_hex(journal_text(text))


def entity_key(name: str, type_: str) -> str:
    """A graph node's id (L1): the same folded name and type in two turns is one node; a
    person card finds people the same way (H20)."""
    return sha256_hex(f"{type_}\x00{fold(name)}")
