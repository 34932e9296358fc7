"""The journal: an fsynced, hash-chained event log with an integrity catalog (DESIGN 3).

Modules:

- ``chain``: GENESIS, ``chain_link`` and verification of the hash chain;
- ``codec``: the msgspec mapper (canonical encode, strict typed decode);
- ``catalog``: the integrity catalog, the journal's ``(position, chain)`` high-water mark;
- ``lock``: the one-writer-per-root ``flock``;
- ``recorder``: the apsw ApplicationRecorder, its schema and turn payloads;
- ``layout``: the files at a root, the schema marker and initialisation of a fresh root;
- ``open``: the eventsourcing application and ``open_journal``, which verifies before use;
- ``anchor``: the signed head an operator pins outside the root (``memory-es anchor``);
- ``records``, ``sealing``: per-record keys and the sealed fields they open.

The journal knows nothing of the domain: it imports no events, projections, store or worker.
"""

from memory_es.journal.anchor import Anchor, anchor_problems, make_anchor, parse_anchor
from memory_es.journal.catalog import Catalog
from memory_es.journal.chain import GENESIS, Chain, chain_link
from memory_es.journal.codec import MsgspecMapper
from memory_es.journal.layout import CATALOG_FILE, JOURNAL_FILE, LOCK_FILE, MARKER_FILE
from memory_es.journal.open import DEFAULT_LOCK_TIMEOUT, Journal, OpenedJournal, open_journal
from memory_es.journal.recorder import JournalRecorder, Payload

__all__ = [
    "CATALOG_FILE",
    "DEFAULT_LOCK_TIMEOUT",
    "GENESIS",
    "JOURNAL_FILE",
    "LOCK_FILE",
    "MARKER_FILE",
    "Anchor",
    "Catalog",
    "Chain",
    "Journal",
    "JournalRecorder",
    "MsgspecMapper",
    "OpenedJournal",
    "Payload",
    "anchor_problems",
    "chain_link",
    "make_anchor",
    "open_journal",
    "parse_anchor",
]
