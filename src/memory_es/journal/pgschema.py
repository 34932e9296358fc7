"""The PostgreSQL journal's schema: its tables, its one write function, and the statements
:class:`~memory_es.journal.pgrecorder.PostgresJournalRecorder` runs on them.

- ``memory_es_events``: the rows, ``notification_id`` (the journal position) the primary key,
  each with its keyed ``chain`` link, ``UNIQUE (originator_id, originator_version)`` so a
  second admission of a run id fails in the database itself (B3);
- ``memory_es_payloads``: turn payloads, written in their events' transaction (B5);
- ``memory_es_head``: one row, the last committed ``(position, chain)`` (the SQLite root's
  integrity catalog, B12), moved in the same transaction as the rows it ends at;
- ``memory_es_meta``: one row, the journal's schema marker;
- the record keys' tables (:mod:`~memory_es.journal.pgrecords`).

Every name is quoted as an identifier and the schema is the datastore's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.sql import SQL, Composed, Identifier, Literal

from memory_es.journal.chain import GENESIS
from memory_es.journal.pgrecords import table_statements as record_key_tables

EVENTS_TABLE = "memory_es_events"
# The write function, versioned by name: a change is a new function beside the old one (a
# CREATE OR REPLACE would need its owner's role on every host, and the last host to open would
# choose everyone's version). Hosts of one journal run one version: stop them all to upgrade.
APPEND_FUNCTION = "memory_es_append_v1"
TABLE_NAMES = ("events", "payloads", "head", "meta")


@dataclass(frozen=True)
class JournalStatements:
    """The statements of one journal's schema (built once per recorder)."""

    schema: str
    tables: dict[str, Composed]  # "events", "payloads", "head", "meta": qualified names
    create: list[Composed]  # eventsourcing's ``sql_create_statements``: tables and head row
    create_function: Composed
    append: Composed  # one write through the function (see :func:`journal_statements`)
    insert_rows: Composed  # rows as columns, positions and chains given: one statement
    head: Composed  # the head row's (position, chain)


def journal_statements(schema: str, channel: str) -> JournalStatements:
    """The statements for the journal in ``schema`` that notifies ``channel`` on each append.

    The append function is one write: the head checked and moved, rows and payloads
    inserted, listeners told. When the head was not the one given, nothing is written and the
    current head is returned, so a writer that guessed it from its last write learns the new
    one in the same round trip."""
    s = Identifier(schema)
    tables = {name: SQL("{}.{}").format(s, Identifier(f"memory_es_{name}"))
              for name in TABLE_NAMES}
    events, payloads, head = tables["events"], tables["payloads"], tables["head"]
    function = SQL("{}.{}").format(s, Identifier(APPEND_FUNCTION))
    create_function = SQL(
        "CREATE FUNCTION {fn}(p bigint, c bytea, ids bigint[], oids uuid[], vs bigint[], "
        "ts text[], ss bytea[], cs bytea[], pids text[], pshas text[], pbytes bytea[]) "
        "RETURNS TABLE (head_position bigint, head_chain bytea) LANGUAGE plpgsql "
        "SET search_path = pg_catalog, pg_temp AS $$ "
        "DECLARE n int := array_length(ids, 1); BEGIN "
        "UPDATE {head} SET position = ids[n], chain = cs[n] "
        "WHERE position = p AND chain = c; "
        "IF NOT FOUND THEN RETURN QUERY SELECT h.position, h.chain FROM {head} h; "
        "RETURN; END IF; "
        "INSERT INTO {events} (notification_id, originator_id, originator_version, topic, "
        "state, chain) SELECT * FROM unnest(ids, oids, vs, ts, ss, cs); "
        "INSERT INTO {payloads} (intake_id, sha256, bytes) "
        "SELECT * FROM unnest(pids, pshas, pbytes); "
        "PERFORM pg_notify({channel}, ''); END $$").format(
        fn=function, events=events, head=head, payloads=payloads, channel=Literal(channel))
    # Our own insert needs neither eventsourcing's function, nor its composite type, nor a
    # second index on notification_id (the primary key here).
    create = [
        SQL("CREATE TABLE IF NOT EXISTS {} (notification_id bigint PRIMARY KEY, "
            "originator_id uuid NOT NULL, originator_version bigint NOT NULL, "
            "topic text NOT NULL, state bytea NOT NULL, chain bytea NOT NULL, "
            "UNIQUE (originator_id, originator_version))").format(events),
        SQL("CREATE TABLE IF NOT EXISTS {} (intake_id text PRIMARY KEY, "
            "sha256 text NOT NULL, bytes bytea NOT NULL)").format(payloads),
        SQL("CREATE TABLE IF NOT EXISTS {} (one boolean PRIMARY KEY DEFAULT true "
            "CHECK (one), position bigint NOT NULL, chain bytea NOT NULL)").format(head),
        SQL("INSERT INTO {} (position, chain) VALUES (0, %s) ON CONFLICT DO NOTHING"
            ).format(head),
        SQL("CREATE TABLE IF NOT EXISTS {} (one boolean PRIMARY KEY DEFAULT true "
            "CHECK (one), marker text NOT NULL)").format(tables["meta"]),
        *record_key_tables(schema),
    ]
    return JournalStatements(
        schema=schema, tables=tables, create=create, create_function=create_function,
        append=SQL("SELECT * FROM {}(%s, %s, %s::bigint[], %s::uuid[], %s::bigint[], "
                   "%s::text[], %s::bytea[], %s::bytea[], %s::text[], %s::text[], "
                   "%s::bytea[])").format(function),
        insert_rows=SQL(
            "INSERT INTO {} (notification_id, originator_id, originator_version, topic, "
            "state, chain) SELECT * FROM unnest(%s::bigint[], %s::uuid[], %s::bigint[], "
            "%s::text[], %s::bytea[], %s::bytea[])").format(events),
        head=SQL("SELECT position, chain FROM {}").format(head))


def create_schema(curs: psycopg.Cursor[Any], sql: JournalStatements) -> None:
    """Create what is missing, in the caller's transaction. ``CREATE ... IF NOT EXISTS``
    races itself (a duplicate pg_type row) when hosts open an empty database at once: one
    creator at a time, for this transaction. The head row starts at genesis (position 0)."""
    curs.execute("SELECT pg_advisory_xact_lock(hashtext('memory_es schema'))")
    for statement in sql.create:
        params = (GENESIS,) if statement.as_string().startswith("INSERT INTO") else None
        curs.execute(statement, params, prepare=False)
    if not curs.execute("SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = "
                        "p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
                        (sql.schema, APPEND_FUNCTION)).fetchone():
        curs.execute(sql.create_function, prepare=False)


def drop_schema(curs: psycopg.Cursor[Any], schema: str) -> None:
    """Drop the journal in ``schema``: its tables, its write function and its record keys,
    in the caller's transaction."""
    s = Identifier(schema)
    curs.execute(SQL("DROP FUNCTION IF EXISTS {}.{}").format(s, Identifier(APPEND_FUNCTION)))
    for name in (*TABLE_NAMES, "record_keys", "destroyed_keys"):
        curs.execute(SQL("DROP TABLE IF EXISTS {}.{}").format(
            s, Identifier(f"memory_es_{name}")))
    curs.execute(SQL("DROP SEQUENCE IF EXISTS {}.memory_es_record_key_ids").format(s))
