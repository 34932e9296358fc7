"""A CLI that starts at once (issue 16 item 4): ``memory-es --version`` and ``--help`` load
the parser and nothing heavy. Checked by the modules a fresh interpreter has imported, never
by a time (timings belong in bench/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import memory_es.version
from ceilings import HANG_S

HEAVY = ("numpy", "eventsourcing", "pydantic", "msgspec", "onnxruntime", "cryptography",
         "tenacity", "memory_es.store", "memory_es.recall", "memory_es.vectors",
         "memory_es.browse", "memory_es.calibration", "memory_es.host", "memory_es.root",
         "memory_es.events", "memory_es.journal", "memory_es.config", "projections")

PROBE = """
import json, sys
from memory_es.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*argv: str) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, timeout=HANG_S, check=True)
    *printed, last = done.stdout.strip().splitlines()
    probe = json.loads(last)
    return probe["code"], probe["modules"], "\n".join(printed)


@pytest.mark.parametrize("argv", [("--version",), ("--help",), ("search", "--help")])
def test_version_and_help_import_nothing_heavy(argv: tuple[str, ...]) -> None:
    code, modules, out = loaded(*argv)
    assert code == 0
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == [], heavy
    if argv == ("--version",):  # answered before any parser or metadata lookup is built
        assert out == f"memory-es {memory_es.version.__version__}"
        assert not [m for m in modules if m.startswith(("memory_es.cli.", "importlib.metadata",
                                                        "argparse"))]


def test_the_package_face_is_lazy_and_complete() -> None:
    """``import memory_es`` loads no submodule but the face's own helper; each public name
    still resolves to the class its module defines (and ``from memory_es import *`` gives all
    of them)."""
    probe = ("import json, sys, memory_es\n"
             "before = sorted(m for m in sys.modules if m.startswith('memory_es.'))\n"
             "ns = {}\n"
             "exec('from memory_es import *', ns)\n"
             "names = sorted(k for k in ns if not k.startswith('__'))\n"
             "print(json.dumps({'before': before, 'names': names,"
             " 'store': memory_es.MemoryStore.__module__}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=HANG_S, check=True)
    got = json.loads(done.stdout)
    assert got["before"] == ["memory_es.lazy"]
    import memory_es

    assert got["names"] == sorted(memory_es.__all__)
    assert got["store"] == "memory_es.store.facade"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        memory_es.Nope  # noqa: B018


WRITER = ("memory_es.store.facade", "memory_es.capture", "memory_es.transfer")


def test_a_read_command_does_not_import_the_writer(tmp_path: Path) -> None:
    """``memory-es search`` on a Lite root reads the index: the writable store, the capture
    pipeline and rebuild stay unimported (the store package resolves its names lazily)."""
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config

    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="The dentist is on Tuesday."))
        store.drain()
    code, modules, out = loaded("search", "--root", str(root), "dentist")
    assert code == 0 and "dentist is on Tuesday" in out
    writer = [m for m in modules if any(m == w or m.startswith(w + ".") for w in WRITER)]
    assert writer == [], writer
    assert "memory_es.root" in modules  # the probe did run the read path


def test_a_cold_search_reads_the_recorded_config_without_pydantic(tmp_path: Path) -> None:
    """``memory-es search`` on a Journal root with the local model and no ``--config`` reads
    the root's recorded configuration as it stands (recall.setup): pydantic is never
    imported, nor the HTTP client or what only other reads need; the paraphrase is found
    through its vector, and the answer is exactly that of the same search with the config
    file (which validates) and of the library."""
    from memory_es import CompletedTurn, MemoryRoot, MemoryStore
    from memory_es.config import parse_config

    root, block = tmp_path / "root", {"mode": "journal", "embeddings": {"provider": "local"}}
    texts = ["Dentist appointment with Dr. Hale on Tuesday at nine.",
             "The office printer is on the third floor."]
    with MemoryStore.open(root, parse_config(block), background=False) as store:
        for n, text in enumerate(texts):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                       answer=text))
        store.drain()
    query = ("search", "when are my teeth getting checked", "--limit", "2", "--json")
    code, modules, out = loaded("--root", str(root), *query)
    assert code == 0 and not [m for m in modules if m.split(".")[0] == "pydantic"]
    assert [m for m in NOT_FOR_A_SEARCH if m in modules] == []
    found = json.loads(out)
    assert found["degraded"] is False and found["results"][0]["text"] == texts[0]
    config = tmp_path / "memory.json"
    config.write_text(json.dumps({"memory": block}), "utf-8")
    code, modules, out = loaded("--root", str(root), "--config", str(config), *query)
    assert code == 0 and "pydantic" in modules
    assert json.loads(out)["results"] == found["results"]
    assert MemoryRoot.open(root).search(query[1], 2).to_json()["results"] == found["results"]


def test_a_cold_inspect_counts_the_vector_backlog_without_pydantic(tmp_path: Path) -> None:
    """``memory-es inspect`` on a Journal root with the local model and no ``--config`` counts
    the lines waiting for a vector of the recorded model's identity: pydantic is never
    imported, and the count is the one the same inspect gives with the config file."""
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config

    root, block = tmp_path / "root", {"mode": "journal", "embeddings": {"provider": "local"}}
    with MemoryStore.open(root, parse_config(block), background=False) as store:
        for n in range(3):
            store.persist_completed_turn(CompletedTurn(run_id=f"r{n}", outcome="success",
                                                       answer=f"Line number {n} to embed."))
        store.drain(embed=False)  # projected, none embedded yet: a backlog of three
    code, modules, out = loaded("--root", str(root), "inspect", "--json")
    assert code == 0 and not [m for m in modules if m.split(".")[0] == "pydantic"]
    assert json.loads(out)["vectors_pending"] == 3
    config = tmp_path / "memory.json"
    config.write_text(json.dumps({"memory": block}), "utf-8")
    code, modules, out = loaded("--root", str(root), "--config", str(config), "inspect",
                                "--json")
    assert code == 0 and "pydantic" in modules
    assert json.loads(out)["vectors_pending"] == 3


# What a search never needs: the HTTP client (the local model calls no provider), the other
# reads' modules (listing, reflect, curate, the journal's pages), health and the worker.
NOT_FOR_A_SEARCH = ("http.client", "tenacity", "memory_es.transport.client",
                    "memory_es.browse.inventory", "memory_es.browse.reflect",
                    "memory_es.browse.curation", "memory_es.browse.journal",
                    "projections.health", "projections.compare", "memory_es.worker",
                    # nor any event class but the root's (its recorded config), nor the
                    # intake fold or the projection and rebuild code
                    "memory_es.events.intake", "memory_es.events.memory",
                    "memory_es.events.entity", "memory_es.intake", "projections.replay",
                    "projections.sqlite_index")


READER = ("memory_es.recall.engine", "memory_es.recall.explicit", "memory_es.store.reading",
          "memory_es.capture.pipeline")


def test_a_write_command_does_not_import_recall(tmp_path: Path) -> None:
    """``memory-es admit`` and ``remember`` on a Journal root write through the store: the
    recall engine (the store builds its reads on first use) and the capture pipeline (only
    a capture tier builds it) stay unimported; a later search on the same root still works."""
    root = str(tmp_path / "root")
    for argv in (("admit", "--run-id", "r1", "--answer", "The dentist is on Tuesday."),
                 ("remember", "Ada prefers tea.")):
        code, modules, _ = loaded("--root", root, *argv)
        assert code == 0
        reader = [m for m in modules if m in READER]
        assert reader == [], (argv, reader)
        assert "memory_es.store.facade" in modules  # the probe did write through the store
    code, _, out = loaded("--root", root, "search", "tea")
    assert code == 0 and "Ada prefers tea." in out
