"""Reads of index tables that some generations lack: a generation built before a table existed
(the graph, the vector queue, capture metadata) simply has no such rows, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw


def optional_rows(conn: apsw.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Reads of tables newer than some index generations (graph, vector queue): a generation
    from before them simply has no such rows."""
    try:
        return list(conn.execute(sql, params))
    except apsw.SQLError:
        return []
