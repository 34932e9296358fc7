"""Run a test module's own tests on both journal backends (issue 18); not a test module.

A module opts in with an autouse fixture that calls :func:`use_backend`::

    @pytest.fixture(autouse=True, params=BACKENDS)
    def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
        return use_backend(request, monkeypatch)

On "postgres" every new root those tests open, in this process, gets its journal in a database
of its own on the test server (conftest.py: pg_cluster), and every later open of that root
finds it there: the same assertions then hold of the PostgreSQL journal.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_es.journal import JOURNAL_FILE, MARKER_FILE
from memory_es.journal import open as journal_open
from memory_es.journal.backend import PostgresJournal

BACKENDS = ["sqlite", "postgres"]
_DATABASES: dict[Path, str] = {}  # root -> DSN of its journal's database, for this test


def database_of(root: Path) -> str | None:
    """The DSN of ``root``'s journal when the running test put it on PostgreSQL."""
    return _DATABASES.get(Path(root).resolve())


def use_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    backend: str = request.param
    _DATABASES.clear()
    if backend == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        if not cluster.running:
            cluster.start()
        databases = _DATABASES
        real = journal_open._open_locked

        def open_locked(root: Path, **kwargs: Any) -> Any:
            key = Path(root).resolve()
            if kwargs.get("journal") is None:
                new = not (root / MARKER_FILE).exists() and not (root / JOURNAL_FILE).exists()
                if key not in databases and new and kwargs.get("writable"):
                    databases[key] = cluster.create_database(f"r_{uuid.uuid4().hex[:16]}")
                if key in databases:
                    kwargs["journal"] = PostgresJournal(databases[key])
            return real(root, **kwargs)

        monkeypatch.setattr(journal_open, "_open_locked", open_locked)
    return backend
