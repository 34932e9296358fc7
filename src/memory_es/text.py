"""Text normalisation and identities (DESIGN 9.3, D3, D5)."""

from __future__ import annotations

import hashlib
import unicodedata


def collapse_ws(text: str) -> str:
    """Every run of Unicode whitespace becomes one space; ends trimmed. Case is preserved."""
    return " ".join(text.split())


def journal_text(text: str) -> str:
    """The Journal tier's normal form: NFKC, then whitespace collapsed (case preserved)."""
    return collapse_ws(unicodedata.normalize("NFKC", text))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_memory_id(run_hash: str, index: int) -> str:
    """Run-derived memory id: sha256(run_hash ":" index), so a replayed commit is a no-op."""
    return sha256_hex(f"{run_hash}:{index}")


def fold(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: how names and fact values compare."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def entity_key(name: str, type_: str) -> str:
    """A graph node's id (L1): the same folded name and type in two turns is one node; a
    person card finds people the same way (H20)."""
    return sha256_hex(f"{type_}\x00{fold(name)}")


def text_key(text: str) -> str:
    """Structural identity of a line (E16, DESIGN 9.3): the same words in the same order."""
    return sha256_hex(journal_text(text))
