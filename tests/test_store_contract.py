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
    with MemoryStore.open(tmp_path / "root", background=False) as store:
        require_writable(store, parse_config({"writeMode": "append-host-summary"}))


def test_b4_a_broken_index_never_blocks_admission(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Admission depends on the journal only: with a garbage index pointer the store still
    opens and admits (warning memory_degraded), drain names the cause, rebuild heals it."""
    from memory_es import CompletedTurn
    from memory_es.errors import MemoryEsError
    from memory_es.root import MemoryRoot
    from memory_es.transfer import rebuild_root

    root = tmp_path / "root"
    with MemoryStore.open(root, background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="a", outcome="success", answer="one"))
        store.drain()
    (root / "index" / "CURRENT").write_text("garbage\n")
    with caplog.at_level("WARNING", logger="memory_es"), MemoryStore.open(
        root, background=False
    ) as store:
        result = store.persist_completed_turn(
            CompletedTurn(run_id="b", outcome="success", answer="two"))
        assert result.status == "admitted"
        with pytest.raises(MemoryEsError) as err:
            store.drain()
        assert err.value.code == "index_pointer_invalid"
    assert any("memory_degraded" in r.getMessage() and "index_pointer_invalid" in r.getMessage()
               for r in caplog.records)
    assert [f.code for f in MemoryRoot.open(root).health().findings] == ["index_pointer_invalid"]
    rebuild_root(root)
    with MemoryStore.open(root, background=False) as store:
        assert store.drain() == 1
        assert [h.text for h in store.lexical_search("two")] == ["two"]
    assert MemoryRoot.open(root).health().status == "clean"
