"""B27/O8: enabling writes on a store without persist_completed_turn is rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_es import MemoryStore
from memory_es.config import ConfigError, parse_config
from memory_es.store import require_writable


class ReadOnlyStore:
    """A host's read-only store: recall only, no admission method."""

    def recall(self, query: str) -> list[str]:
        return []


def test_b27_writes_enabled_on_read_only_store_is_rejected() -> None:
    config = parse_config({"writeMode": "append-host-summary"})
    with pytest.raises(ConfigError) as err:
        require_writable(ReadOnlyStore(), config)
    assert err.value.errors == [
        'memory.writeMode: "append-host-summary" requires a writable store '
        "(ReadOnlyStore has no persist_completed_turn)"
    ]


def test_b27_read_only_store_is_fine_when_writes_are_disabled() -> None:
    require_writable(ReadOnlyStore(), parse_config({"writeMode": "disabled"}))


def test_b27_memory_store_is_writable(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "root") as store:
        require_writable(store, parse_config({"writeMode": "append-host-summary"}))
