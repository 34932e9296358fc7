"""Every identity the engine derives, in one place: the intake id of a run, the aggregate ids
of the journal, memory ids, entity keys and text keys (B2, D3, D5, E17, L1, DESIGN 9.3).

Each is a pure function of its input, so a replayed commit reproduces the same ids and is a
no-op, never a duplicate.
Never change one: ids are stored in journals. No id written to a journal hashes content: a
forget must leave nothing that confirms a guessed text.
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
REVIEW_UUID = uuid5(NAMESPACE, "review")  # the curate audit's reviewed decisions, in order
MIGRATION_UUID = uuid5(NAMESPACE, "migration")  # migrate's marker: started, then finished


def import_uuid(import_id: str) -> UUID:
    """The aggregate id of one import's receipt."""
    return uuid5(NAMESPACE, f"import:{import_id}")


def entity_uuid(entity_id: str) -> UUID:
    """Aggregate id of an entity: uuid5 of its 64-hex content-derived id."""
    return uuid5(NAMESPACE, f"entity:{entity_id}")


def run_memory_id(run_hash: str, index: int) -> str:
    """Run-derived memory id: sha256(run_hash ":" index), so a replayed commit is a no-op."""
    return sha256_hex(f"{run_hash}:{index}")


def remember_id(head: int, at: str) -> str:
    """A Remember's id: from the journal position it follows and its instant (``at``, ISO
    8601), unique in one journal and the same in a replayed build
    with the same clock. A write with no run has nothing else stable to derive one from, and
    an id must never hash its text (a forget would leave a digest that confirms a guess); a
    repeat finds the stored line by its text instead (J11)."""
    return sha256_hex(f"remember:{head}:{at}")


def retype_id(memory_id: str, kind: str) -> str:
    """The id of a line retyped by a reviewed decision: from the line it replaces and its new
    kind (never its text), so a repeated decision names the same line."""
    return sha256_hex(f"retype:{memory_id}:{kind}")


def migrated_id(memory_id: str, index: int) -> str:
    """The id of the ``index``-th BuJo note ``migrate`` made of a legacy line: from the line's
    id (never its text), so a resumed migration names the same notes."""
    return sha256_hex(f"migrate:{memory_id}:{index}")


def text_key(text: str) -> str:
    """Structural identity of a line (E16, DESIGN 9.3): the same words in the same order.
    Journal's content identity (D3): kept in the index beside stored lines (a projection,
    erased with them), never an id in the journal. Journals written before keep it as the
    id of their Journal observations and Remember notes."""
    return sha256_hex(journal_text(text))


def run_entity_id(run_hash: str, ref: str) -> str:
    """A new graph node's id (L1): from the run that first named it and the plan's ref for it,
    so a retried capture names the same node. The same folded name and type in a later turn
    is the same node, found by name in the index (``projections.search.entities_by_name``);
    the id never hashes the name (a forget must leave nothing that confirms it)."""
    return sha256_hex(f"{run_hash}:entity:{ref}")


def name_key(name: str, type_: str) -> tuple[str, str]:
    """How two entity names compare (L1, H20): the type and the folded name."""
    return type_, fold(name)
