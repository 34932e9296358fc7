"""Backups of a memory root and their restore (SPEC C5, C6, C16).

A backup (``take_backup``) is one owner-only file (:mod:`memory_es.backup.fileformat`)
holding the journal exactly as stored (every row with its keyed chain value, payloads), the
chain key and the record keys that open it: everything a root needs, so a backup is never the
trap a copied root is (a root without its key store can never be opened again). It is taken
from one read snapshot beside a running agent (C5: reads only), up to the head it saw.

A restore (``restore_backup``) needs a stopped agent and an empty target (C16): it
verifies the chain against the header's head before writing anything, installs the chain key
under the same root id (so anchors taken of the original still verify), appends the rows
verbatim to a SQLite or PostgreSQL journal, whichever the config names, and rebuilds the
projections. Exporting the restored root gives the original's export byte for byte.

Forget and backups: a forget destroys record keys; a backup taken before it still holds
them. The key store keeps a ledger of the backups each root made
(:mod:`memory_es.backup.ledger`) and a forget's receipt names every backup that holds a key
it destroyed.

The operations are in :mod:`memory_es.backup.archive`; this package's import stays light, so
the forget path reads the ledger without loading them.
"""
