"""Golden replay fixtures (replay_fixtures/): replay each journal from scratch, diff byte-exact.

Regenerate with ``python replay_fixtures/regenerate.py`` and review the ``git diff``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

import memory_es.capture.factory as factory
import memory_es.capture.models as models
import memory_es.capture.pipeline as pipeline
import memory_es.embeddings as embeddings
import memory_es.store.vectors as store_vectors
import memory_es.transfer as transfer
from helpers_replay import FIXTURES, regen
from journal_backends import BACKENDS, use_backend
from memory_es.capture.chat_http import OllamaChat, OpenAICompatibleChat
from memory_es.capture.scripted import ScriptedChat
from memory_es.config import parse_config
from memory_es.root import MemoryRoot
from memory_es.store import MemoryStore
from memory_es.transfer import replay_export
from projections.consolidation import INDEX_FILE
from projections.graph import GRAPH_FILE, SIDECAR_FILE


@pytest.fixture(autouse=True, params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the root's own SQLite journal and on PostgreSQL (issue 18)."""
    return use_backend(request, monkeypatch)


REQUIRED = {"lite", "journal-repeats", "bujo-audit", "escaping-unicode", "bujo-capture"}
FIXTURE_DIRS = regen.fixture_dirs(FIXTURES)
# Journals written before ids stopped hashing content (Journal and Remember ids were the text's
# SHA-256, entity ids the folded name's, admissions kept digests in the clear): no spec builds
# them any more, and they must replay as they did, byte for byte.
LEGACY_DIRS = regen.fixture_dirs(FIXTURES / "legacy")
CAPTURE_SPECS = [spec for spec in regen.SPECS if spec.script]


def _is_capture(config: dict[str, Any]) -> bool:
    return config.get("mode") == "bujo" and config.get("writeMode") == "capture"


def _tree_under(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` by relative path ({} when it does not exist)."""
    if not directory.is_dir():
        return {}
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_at_least_four_fixtures_are_committed() -> None:
    names = {d.name for d in FIXTURE_DIRS}
    assert len(names) >= 4, names
    assert names >= REQUIRED, REQUIRED - names
    for d in FIXTURE_DIRS:
        assert (d / "expected" / "index.jsonl").is_file(), d.name
        assert _tree_under(d / "expected" / "daily") or _tree_under(d / "expected" / "audit"), (
            f"{d.name}: a fixture with no Markdown checks nothing")


@pytest.mark.parametrize("fixture", [*FIXTURE_DIRS, *LEGACY_DIRS],
                         ids=[*(d.name for d in FIXTURE_DIRS),
                              *(f"legacy/{d.name}" for d in LEGACY_DIRS)])
def test_replaying_the_journal_reproduces_the_expected_tree(fixture: Path,
                                                            tmp_path: Path) -> None:
    journal = fixture / "journal.jsonl"
    expected = fixture / "expected"
    root = tmp_path / "root"
    replay_export(journal, root)

    # daily/*.md, audit/*.md, graph.jsonl, the sidecar and the index dump, byte for byte
    want, have = _tree_under(expected), regen.projection_tree(root)
    assert sorted(have) == sorted(want)
    for name, data in want.items():
        assert have[name] == data, f"{name} differs from the fixture"
    assert regen.index_dump(root) == (expected / "index.jsonl").read_bytes()

    re_export = tmp_path / "re-export.jsonl"
    MemoryRoot.open(root).export_to(re_export)
    assert re_export.read_bytes() == journal.read_bytes()

    report = MemoryRoot.open(root).health()
    assert report.status == "clean", report.to_json()
    assert report.findings == ()
    assert report.projection_position == report.journal_position > 0


def test_fixture_shapes_match_their_tier() -> None:
    """bujo append-host-summary fixtures are audit-only; lite/journal fixtures write no audit
    (D2, D7, D8); bujo capture fixtures write both, plus graph.jsonl and the sidecar, and carry
    the scripted model replies they were generated with (model.jsonl); every BuJo fixture has
    an index.md, no Lite or Journal one does (L6, D14)."""
    by_name = {d.name: d for d in FIXTURE_DIRS}
    for spec in regen.SPECS:
        fixture = by_name[spec.name]
        expected = fixture / "expected"
        daily, audit = _tree_under(expected / "daily"), _tree_under(expected / "audit")
        capture = _is_capture(spec.config)
        if capture:
            assert daily and audit, spec.name
        elif spec.config.get("mode") == "bujo":
            assert audit and not daily, spec.name
        else:
            assert daily and not audit, spec.name
        for name in (GRAPH_FILE, SIDECAR_FILE):
            assert (expected / name).is_file() == capture, (spec.name, name)
        # L6, D14: the living index.md is BuJo's; Lite and Journal have no graph, no file
        assert (expected / INDEX_FILE).is_file() == (spec.config.get("mode") == "bujo"), \
            spec.name
        assert (fixture / "model.jsonl").is_file() == capture == bool(spec.script), spec.name
    lite = _tree_under(by_name["lite"] / "expected" / "daily")
    assert len(lite) >= 2, "the lite fixture must span two days"


def test_regeneration_reproduces_the_committed_fixtures(tmp_path: Path) -> None:
    """A behaviour change fails here; regenerating then shows it as a reviewable diff."""
    names = regen.build_all(tmp_path)
    assert sorted(names) == sorted(d.name for d in FIXTURE_DIRS)
    differences = list(regen.iter_differences(FIXTURES, tmp_path))
    assert differences == [], (
        "fixtures are stale: run `python replay_fixtures/regenerate.py` and review git diff")
    for name in names:
        assert _tree_under(tmp_path / name) == _tree_under(FIXTURES / name), name


def test_regeneration_refuses_a_spec_whose_steps_do_not_behave(tmp_path: Path) -> None:
    """The script checks each step's admission status, so a silently changed rule cannot
    slip into a fixture."""
    lite = next(s for s in regen.SPECS if s.name == "lite")
    broken = regen.Spec(name="broken", description="", config=lite.config,
                        steps=(regen.Admit("x", "NOTHING_TO_REPORT"),))
    with pytest.raises(AssertionError, match="got 'skipped', expected 'admitted'"):
        regen.build_all(tmp_path, (broken,))
    assert not (tmp_path / "broken").exists()


# --------------------------------------------------------------------------------------------
# Capture fixtures: replay needs no model (and no embedder, and no network)


def _free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _UnreachableEmbedder:
    """An embedding provider that is down: every call fails (and is counted)."""

    def __init__(self, dim: int) -> None:
        self.identity = embeddings.EmbeddingIdentity("fixture", "unreachable", dim)
        self.calls = 0

    def embed(self, texts: Any) -> Any:
        self.calls += 1
        raise embeddings.EmbeddingError("the embedder is unreachable in this test",
                                        code="embedding_unavailable")


@pytest.mark.parametrize("spec", CAPTURE_SPECS, ids=[s.name for s in CAPTURE_SPECS])
def test_capture_fixture_replays_with_the_model_unreachable(
        spec: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaying a capture journal asks no chat model: with every chat model, every outbound
    connection and the recorded embedding provider failing (and recorded), replay produces
    the expected tree byte for byte and no chat model was asked. A store then opened on the replayed
    root, its ``memory.llm`` endpoint a closed port and its embedder down, has nothing to
    capture: it makes no model call and leaves the tree byte-identical."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise models.ModelError(f"{what} is unreachable in this test",
                                    code="model_unavailable")
        return fail

    for cls in (ScriptedChat, OllamaChat, OpenAICompatibleChat):
        monkeypatch.setattr(cls, "complete", refuse(f"{cls.__name__}.complete"))
    monkeypatch.setattr(factory, "make_chat_model", refuse("make_chat_model"))
    monkeypatch.setattr(pipeline, "make_chat_model", refuse("make_chat_model"))
    monkeypatch.setattr(embeddings, "make_embedder", refuse("make_embedder"))
    monkeypatch.setattr(store_vectors, "make_embedder", refuse("make_embedder"))
    # replay embeds with the root's recorded provider (issue 12 item 1): here it is down,
    # which replay tolerates (vectors wait); the projections never depend on it
    down: list[_UnreachableEmbedder] = []
    monkeypatch.setattr(transfer, "make_embedder",
                        lambda block: down.append(_UnreachableEmbedder(block.dim)) or down[-1])
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))

    fixture = FIXTURES / spec.name
    want = _tree_under(fixture / "expected")
    assert {GRAPH_FILE, SIDECAR_FILE, "index.jsonl"} <= set(want)
    root = tmp_path / "root"
    replay_export(fixture / "journal.jsonl", root)
    assert attempts == [], attempts
    assert [e.calls for e in down] == [1]  # asked once, found down, replay went on
    assert regen.projection_tree(root) == want

    port = _free_port()
    config = parse_config({**spec.config, "llm": {**spec.config["llm"],
                                                  "endpoint": f"http://127.0.0.1:{port}"}})
    assert config.is_capture and config.embeddings is not None
    embedder = _UnreachableEmbedder(config.embeddings.dim)
    with MemoryStore.open(root, config, background=False, embedder=embedder) as store:
        assert store.drain() == 0
        assert store.inspect().records == ()  # nothing pending: nothing to ask a model
    assert attempts == [], attempts  # (the embedder may be asked for vectors: it is down)
    assert regen.projection_tree(root) == want
    report = MemoryRoot.open(root).health()
    assert report.status == "clean", report.to_json()


@pytest.mark.parametrize("spec", CAPTURE_SPECS, ids=[s.name for s in CAPTURE_SPECS])
def test_capture_fixture_regenerates_from_its_committed_model_script(
        spec: Any, tmp_path: Path) -> None:
    """The committed model.jsonl is exactly what the spec scripts, and generating from it
    reproduces journal.jsonl and expected/ byte for byte (every reply used, every model call
    as the spec expects)."""
    fixture = FIXTURES / spec.name
    script = fixture / "model.jsonl"
    assert script.read_bytes() == regen.model_script(spec)
    files = regen.render_fixture(spec, script)
    committed = _tree_under(fixture)
    assert sorted(files) == sorted(committed)
    assert files["journal.jsonl"] == committed["journal.jsonl"]
    for name, data in committed.items():
        assert files[name] == data, f"{spec.name}/{name} differs"


READ_SPECS = [spec for spec in regen.SPECS if spec.reads]


def test_the_m_switches_have_golden_reads() -> None:
    """Issue 15: the profile and each intention read policy have golden reads, and every
    read switch is shown both ways."""
    assert {spec.name for spec in READ_SPECS} >= {"profile", "intentions"}
    switches = {json.dumps(read.switches, sort_keys=True) for spec in READ_SPECS
                for read in spec.reads}
    for block in ('"intentExpiry": true', '"recency": true', '"enabled": false'):
        assert any(block in s for s in switches), block


@pytest.mark.parametrize("spec", READ_SPECS, ids=[s.name for s in READ_SPECS])
def test_golden_reads_of_the_replayed_journal_with_every_model_path_blocked(
        spec: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reads.jsonl (the profile, the automatic context, recall under each read switch) is
    reproduced byte for byte from a replay of journal.jsonl, at the read's fixed instant,
    with every chat model, model factory and outbound connection failing: no read asks a
    model (G1, M7). Only the deterministic fixture embedder gives vectors."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise models.ModelError(f"{what} is unreachable", code="model_unavailable")
        return fail

    for cls in (ScriptedChat, OllamaChat, OpenAICompatibleChat):
        monkeypatch.setattr(cls, "complete", refuse(f"{cls.__name__}.complete"))
    monkeypatch.setattr(factory, "make_chat_model", refuse("make_chat_model"))
    monkeypatch.setattr(pipeline, "make_chat_model", refuse("make_chat_model"))
    monkeypatch.setattr(transfer, "make_embedder",
                        lambda block: _UnreachableEmbedder(block.dim))
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    root = tmp_path / "root"
    replay_export(FIXTURES / spec.name / "journal.jsonl", root)
    assert regen.golden_reads(spec, root) == (FIXTURES / spec.name / "reads.jsonl").read_bytes()
    assert attempts == [], attempts
