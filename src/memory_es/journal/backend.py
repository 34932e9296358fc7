"""Which backend holds a root's journal: the root's own SQLite file, or a PostgreSQL server.

A root whose journal is on PostgreSQL keeps everything else (projections, its schema marker,
the writer lock) in its directory as before; the marker names the server without credentials.
The DSN comes from ``memory.journal.dsn`` or ``$MEMORY_ES_PG_DSN`` and is never logged, put
in a message, or written to disk (``repr`` hides it too). An empty password in it lets libpq
read the password file (``PGPASSFILE``, ``~/.pgpass``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from memory_es.errors import InvalidArgumentError

DSN_ENV = "MEMORY_ES_PG_DSN"
DEFAULT_PG_SCHEMA = "public"


@dataclass(frozen=True)
class PostgresJournal:
    """A journal on a PostgreSQL server: its DSN (secret) and the schema of its tables."""

    dsn: str = field(repr=False)
    schema: str = DEFAULT_PG_SCHEMA

    @classmethod
    def from_env(cls, schema: str = DEFAULT_PG_SCHEMA) -> PostgresJournal | None:
        dsn = os.environ.get(DSN_ENV, "").strip()
        return cls(dsn, schema) if dsn else None

    def __post_init__(self) -> None:
        if not self.dsn.strip():
            raise InvalidArgumentError("the PostgreSQL journal needs a DSN "
                                       f"(memory.journal.dsn or ${DSN_ENV})")
        if not self.schema.isidentifier():
            raise InvalidArgumentError(f"memory.journal.schema {self.schema!r} is not a plain "
                                       "SQL identifier")


def journal_target(backend: str, dsn: str | None, schema: str = DEFAULT_PG_SCHEMA
                   ) -> PostgresJournal | None:
    """The ``memory.journal`` block as what :func:`~memory_es.journal.open_journal` takes:
    None for SQLite, else the server from ``dsn`` or ``$MEMORY_ES_PG_DSN``."""
    if backend != "postgres":
        return None
    target = PostgresJournal(dsn, schema) if dsn else PostgresJournal.from_env(schema)
    if target is None:
        raise InvalidArgumentError("memory.journal.backend is \"postgres\" but no DSN was given: "
                                   f"set memory.journal.dsn or ${DSN_ENV}",
                                   code="journal_dsn_missing")
    return target
