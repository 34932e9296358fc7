"""``import apply --from reference`` and ``adopt-replay`` (SPEC C6-C8, C16, F11-F14, K):
the reference host's own memory folder, legacy roots entering through import (DESIGN 9.1).

Every golden BuJo fixture's tree, read as a reference folder, must come back byte for byte
(daily Markdown, graph.jsonl, index.md; the sidecar but for journal positions and authority
digests). Bad metadata, unsafe text, repeated ids and dangling history are refused line by line
with a reason; a malformed graph or sidecar fails the whole import (exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers_imports import AT, JOURNAL, SIDECAR, cli, imported, tree
from helpers_replay import FIXTURES, regen
from memory_es import MemoryRoot
from memory_es.config import parse_config
from memory_es.errors import MemoryEsError
from memory_es.imports import ImportSourceError, apply_import, plan_import
from memory_es.imports.adopt import adopt_replay
from memory_es.transfer import replay_export
from projections.derived import read_current
from projections.graph import canonical

# -- the reference host's own folder (DESIGN 9.1: legacy roots enter through import) ---------

BUJO_FOLDERS = [s for s in regen.SPECS if s.config.get("mode") == "bujo"
                and (FIXTURES / s.name / "expected" / "graph.jsonl").exists()]
PROJECTED = ("graph.jsonl", "index.md")


@pytest.mark.parametrize("spec", BUJO_FOLDERS, ids=lambda s: s.name)
def test_a_reference_folder_becomes_the_same_lines(spec: Any, tmp_path: Path) -> None:
    """Each golden BuJo tree, read as a reference host's folder (its daily Markdown,
    graph.jsonl and sidecar) into a new BuJo root: the same daily files, graph and
    consolidation byte for byte, supersession timed as the sidecar says, health clean; a
    second run writes nothing; the dry run counts what apply writes."""
    folder = FIXTURES / spec.name / "expected"
    root = tmp_path / "root"
    config = parse_config(spec.config)
    plan = plan_import(root, folder, "reference", config=config)
    report = apply_import(root, folder, "reference", config=config, clock=lambda: AT)
    assert (plan.new, plan.already, plan.refused) == (report.new, 0, [])
    daily = sorted((folder / "daily").glob("*.md"))
    assert daily and [p.name for p in sorted((root / "daily").glob("*.md"))] == \
        [p.name for p in daily]
    for source in [*daily, *(folder / name for name in PROJECTED)]:
        assert (root / source.relative_to(folder)).read_bytes() == source.read_bytes(), source
    ended = [{k: v for k, v in e.items() if k not in ("position", "digest", "authority")}
             for e in json.loads((folder / SIDECAR).read_text())["entries"]]
    assert [{k: v for k, v in e.items() if k not in ("position", "digest", "authority")}
            for e in json.loads((root / SIDECAR).read_text())["entries"]] == ended
    health = MemoryRoot.open(root).health()
    assert (health.status, health.findings) == ("clean", ())
    before = tree(root)
    again = apply_import(root, folder, "reference")
    assert (again.new, again.already, again.receipts) == ([], len(report.new), [])
    assert tree(root) == before


def test_a_reference_folder_into_journal_keeps_its_live_lines(tmp_path: Path) -> None:
    """Lite and Journal keep no supersession (F10): live lines become turns on their own
    day with their session; superseded ones are refused, saying why."""
    folder = FIXTURES / "lifecycle" / "expected"
    report = apply_import(tmp_path / "root", folder, "reference", config=parse_config(JOURNAL))
    history = [r for r in report.refused if r.reason.startswith("history: superseded")]
    assert len(history) == 2 and len(report.new) == 8
    handle = MemoryRoot.open(tmp_path / "root")
    texts = {m.text for m in handle.list_memories(limit=50).memories}
    assert len(texts) == 8
    assert {p.name for p in (tmp_path / "root" / "daily").glob("*.md")} <= \
        {p.name for p in (folder / "daily").glob("*.md")}


def test_reference_bullets_old_and_new_forms(tmp_path: Path) -> None:
    """K11/K12: a legacy one-line bullet and one without metadata read too (the latter with
    an id from its place and no session, K7, K8); a credential is refused (J5)."""
    folder = tmp_path / "legacy"
    (folder / "daily").mkdir(parents=True)
    (folder / "daily" / "2024-05-01.md").write_text(
        "# 2024-05-01\n\n"
        "- Old bullet with &lt;b&gt; tags <!--mem id=" + "a" * 64 + " type=note status=open "
        "recorded=2024-05-01T08:00:00.000Z source_session=web%3Aold-->\n\n"
        "- A bullet written before metadata existed\n\n"
        "- The AWS secret is AKIAIOSFODNN7EXAMPLE\n"
        "  <!--mem id=" + "b" * 64 + " type=note status=open "
        "recorded=2024-05-01T09:00:00.000Z-->\n")
    report = apply_import(tmp_path / "root", folder, "reference",
                          config=parse_config(JOURNAL))
    assert [r.to_json() for r in report.refused] == [
        {"id": "b" * 64, "reason": "unsafe_text: looks like a credential"}]
    rows = {e.summary: e for _, e in MemoryRoot.open(tmp_path / "root").events()
            if hasattr(e, "summary")}
    assert set(rows) == {"Old bullet with <b> tags", "A bullet written before metadata existed"}
    assert rows["Old bullet with <b> tags"].session == "web:old"
    assert rows["A bullet written before metadata existed"].session is None
    assert rows["A bullet written before metadata existed"].timestamp == \
        datetime(2024, 5, 1, tzinfo=UTC)


def legacy_folder(spec: Any, workdir: Path, *, managed: bool = False) -> Path:
    """A reference folder as a legacy host leaves it: the golden tree without its sidecar,
    and the SQLite index holding the replay state (an unmanaged memory.db, or a managed
    generation under index/)."""
    folder = workdir / "legacy"
    shutil.copytree(FIXTURES / spec.name / "expected", folder)
    (folder / SIDECAR).unlink()
    built = workdir / "built"
    replay_export(FIXTURES / spec.name / "journal.jsonl", built)
    generation = read_current(built)
    target = folder / "memory.db"
    if managed:
        (folder / "index" / "gen-3").mkdir(parents=True)
        (folder / "index" / "CURRENT").write_text("3\n")
        target = folder / "index" / "gen-3" / "memory.db"
    shutil.copy(built / "index" / f"gen-{generation}" / "memory.db", target)
    return folder


ADOPTABLE = [s for s in BUJO_FOLDERS if (FIXTURES / s.name / "expected" / SIDECAR).exists()]


@pytest.mark.parametrize(("spec", "managed"), [
    *((s, False) for s in ADOPTABLE), (ADOPTABLE[0], True)],
    ids=[*(s.name for s in ADOPTABLE), f"{ADOPTABLE[0].name}-generation"])
def test_adopt_replay_then_import_gives_the_original_tree(spec: Any, managed: bool,
                                                          tmp_path: Path) -> None:
    """C7, C8, F11-F14: a folder whose SQLite holds replay state but which has no sidecar is
    refused by the import (never inferred from SQLite); adoption writes the sidecar the
    original had, byte for byte; the import then gives the original's projections."""
    folder = legacy_folder(spec, tmp_path, managed=managed)
    root = tmp_path / "root"
    with pytest.raises(ImportSourceError) as refused:
        plan_import(root, folder, "reference", config=parse_config(spec.config))
    assert refused.value.code == "replay_adoption_required"
    run = cli("--root", str(root), "import", "apply", str(folder), "--from", "reference")
    assert run.returncode == 1 and "adopt-replay" in run.stderr and not root.exists()
    adopted = cli("--json", "adopt-replay", str(folder))
    assert adopted.returncode == 0, adopted.stderr
    shape = json.loads(adopted.stdout)
    assert shape["lifecycle"] > 0 and shape["migration_marker"] is False
    original = (FIXTURES / spec.name / "expected" / SIDECAR).read_bytes()
    assert (folder / SIDECAR).read_bytes() == original
    assert (folder / SIDECAR).stat().st_mode & 0o777 == 0o600
    assert cli("adopt-replay", str(folder)).returncode == 1  # adopt_not_needed
    apply_import(root, folder, "reference", config=parse_config(spec.config))
    for name in [*(f"daily/{p.name}" for p in (folder / "daily").glob("*.md")), *PROJECTED]:
        assert (root / name).read_bytes() == (folder / name).read_bytes(), name


def test_adoption_refusals(tmp_path: Path) -> None:
    spec = ADOPTABLE[0]
    folder = legacy_folder(spec, tmp_path)
    intake = folder / ".capture-intake"
    (intake / "pending").mkdir(parents=True)
    (intake / "pending" / "a.json").write_text("{}")
    (intake / "migration-1.json").write_text("{}")
    with pytest.raises(MemoryEsError, match="pending capture work beside a pending migration"):
        adopt_replay(folder)
    (intake / "migration-2.json").write_text("{}")
    with pytest.raises(MemoryEsError, match="2 migration markers"):
        adopt_replay(folder)
    shutil.rmtree(intake)
    (folder / "memory.db").unlink()
    with pytest.raises(MemoryEsError) as nothing:
        adopt_replay(folder)
    assert nothing.value.code == "adopt_nothing"
    root, _ = imported("mem0", tmp_path / "root")
    with pytest.raises(MemoryEsError) as rooted:
        adopt_replay(root)
    assert rooted.value.code == "adopt_not_legacy"
    assert not (folder / SIDECAR).exists()


def test_a_sidecar_thread_comes_over_and_a_bad_sidecar_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    shutil.copytree(FIXTURES / "lifecycle" / "expected", folder)
    sidecar = json.loads((folder / SIDECAR).read_text())
    ids = [e["memory"] for e in sidecar["entries"]]
    thread = {"at": "2026-07-08T09:00:00.000Z", "authority": "capture", "digest": "d" * 64,
              "from": ids[1], "kind": "thread", "position": 99, "to": ids[0], "weight": 0.5}
    sidecar["entries"].append(thread)
    (folder / SIDECAR).write_bytes(canonical(sidecar) + b"\n")
    root = tmp_path / "root"
    apply_import(root, folder, "reference", config=parse_config(regen.BUJO_CAPTURE))
    threads = [e for e in json.loads((root / SIDECAR).read_text())["entries"]
               if e["kind"] == "thread"]
    assert [(e["from"], e["to"], e["weight"], e["at"]) for e in threads] == \
        [(ids[1], ids[0], 0.5, thread["at"])]
    (folder / SIDECAR).write_text(json.dumps(sidecar, indent=1))  # not canonical (F6)
    with pytest.raises(ImportSourceError) as bad:
        plan_import(tmp_path / "other", folder, "reference")
    assert bad.value.code == "import_malformed"


# -- what a hostile or damaged folder gets: a reason per line, or a one-line refusal -----------

BUJO = regen.BUJO_CAPTURE


def bullet(memory_id: str, text: str, **meta: str) -> str:
    fields = {"id": memory_id, "type": "note", "status": "open",
              "recorded": "2025-06-01T09:00:00.000Z", "scope": "agent", "source": "user", **meta}
    return f"\n- {text}\n  <!--mem {' '.join(f'{k}={v}' for k, v in fields.items())}-->\n"


def folder_of(path: Path, days: dict[str, list[str]], *, graph: str | None = None,
              sidecar: bytes | None = None) -> Path:
    (path / "daily").mkdir(parents=True)
    for day, bullets in days.items():
        (path / "daily" / f"{day}.md").write_text(f"# {day}\n" + "".join(bullets))
    if graph is not None:
        (path / "graph.jsonl").write_text(graph)
    if sidecar is not None:
        (path / SIDECAR).write_bytes(sidecar)
    return path


def ident(n: int) -> str:
    return f"{n:064x}"


def test_bad_metadata_unsafe_text_and_repeats_are_refused_line_by_line(tmp_path: Path) -> None:
    """A value recall would trip on later (a due that is no date), text a live write would
    refuse, history without its successor, and an id seen twice: each refused with its
    reason; the rest goes in and the root still answers."""
    folder = folder_of(tmp_path / "f", {
        "2025-06-01": [
            bullet(ident(1), "Dentist is Dr Okafor on Mill Road"),
            bullet(ident(2), "Bad due", due="not-a-date"),
            bullet(ident(3), "Bad validity", valid_to="never"),
            bullet(ident(4), "Odd status", status="frobbed"),
            bullet(ident(5), "x" * 3000),
            bullet(ident(6), "invoice \u202egnp.exe"),
            bullet(ident(7), "Retracted", status="invalidated"),
            bullet(ident(8), "Replaced by itself", status="superseded",
                   superseded_by=ident(8)),
            bullet(ident(9), "Replaced by a stranger", status="superseded",
                   superseded_by=ident(99)),
            bullet("not-an-id", "Short id")],
        "2025-06-02": [bullet(ident(1), "The same id again")]})
    plan = plan_import(tmp_path / "root", folder, "reference", config=parse_config(BUJO))
    report = apply_import(tmp_path / "root", folder, "reference", config=parse_config(BUJO))
    reasons = {r.original_id: r.reason for r in report.refused}
    assert report.new == [ident(1)] and plan.new == report.new
    assert plan.refused == report.refused
    assert reasons == {
        ident(2): "invalid: due is not a valid time",
        ident(3): "invalid: valid_to is not a valid time",
        ident(4): "invalid: status or type is not one the format has (K14)",
        ident(5): "too_large: 3000 UTF-8 bytes, more than 2048",
        ident(6): "unsafe_text: contains a control, bidi or surrogate character",
        ident(7): "invalid: invalidated without the line that replaced it",
        ident(8): "invalid: superseded without the line that replaced it",
        ident(9): "invalid: the line that replaced it is not imported",
        "not-an-id": "invalid: id is not 64 lowercase hex characters",
    } | {ident(1): "duplicate_id: the folder holds this id more than once"}
    hits = MemoryRoot.open(tmp_path / "root").search("who is my dentist").recall.hits
    assert [h.id for h in hits] == [ident(1)]


def test_a_folder_changed_since_its_import_is_refused_not_merged(tmp_path: Path) -> None:
    """A line whose status the folder changed after it was imported is refused
    (``changed_since_import``): the root keeps its own history; a new line and the relation
    it states from an entity imported before come over."""
    person, place = ident(50), ident(51)
    graph = (json.dumps({"id": person, "kind": "entity", "name": "Ana", "type": "person"}) +
             "\n" + json.dumps({"entity": person, "kind": "association",
                                "memory": ident(1)}) + "\n")
    first = folder_of(tmp_path / "a", {"2025-06-01": [bullet(ident(1), "Ana lives in Porto")]},
                      graph=graph)
    root = tmp_path / "root"
    apply_import(root, first, "reference", config=parse_config(BUJO))
    graph += "\n".join(json.dumps(r) for r in (
        {"id": place, "kind": "entity", "name": "Lisbon", "type": "place"},
        {"entity": person, "kind": "association", "memory": ident(2)},
        {"from": person, "kind": "relation", "memory": ident(2), "relation": "moved_to",
         "to": place})) + "\n"
    second = folder_of(tmp_path / "b", {"2025-06-01": [
        bullet(ident(1), "Ana lives in Porto", status="superseded", superseded_by=ident(2)),
        bullet(ident(2), "Ana moved to Lisbon", recorded="2025-06-03T09:00:00.000Z")]},
        graph=graph)
    report = apply_import(root, second, "reference")
    assert report.new == [ident(2)]
    assert [r.reason for r in report.refused] == [
        "changed_since_import: open here, superseded in the folder; change it here "
        "(set-status, remember --supersedes)"]
    rows = [json.loads(x) for x in (root / "graph.jsonl").read_text().splitlines()]
    assert {"from": person, "kind": "relation", "memory": ident(2), "relation": "moved_to",
            "to": place} in rows


@pytest.mark.parametrize(("graph", "sidecar"), [
    ('{"kind": "entity", "id": "x"}\n', None),  # no name, no type
    ('{"kind": "relation", "from": "a", "to": "b"}\n', None),
    ("[" * 100_000 + "]" * 100_000 + "\n", None),
    (None, canonical({"entries": [{"kind": "lifecycle", "memory": "m"}], "version": 1})
     + b"\n"),
    (None, canonical({"entries": [{"at": "soon", "by": "b", "kind": "lifecycle",
                                   "memory": "m", "status": "superseded"}], "version": 1})
     + b"\n"),
], ids=["entity-keys", "relation-keys", "deep-json", "sidecar-keys", "sidecar-time"])
def test_a_malformed_graph_or_sidecar_fails_whole_with_exit_2(graph: str | None,
                                                              sidecar: bytes | None,
                                                              tmp_path: Path) -> None:
    folder = folder_of(tmp_path / "f", {"2025-06-01": [bullet(ident(1), "A line")]},
                       graph=graph, sidecar=sidecar)
    root = tmp_path / "root"
    run = cli("--root", str(root), "import", "apply", str(folder), "--from", "reference",
              "--yes")
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert not root.exists()


def test_links_and_fifos_in_a_folder_are_refused_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# 2025-06-02\n" + bullet(ident(2), "A file outside the folder"))
    folder = folder_of(tmp_path / "f", {"2025-06-01": [bullet(ident(1), "A line")]})
    os.symlink(outside, folder / "daily" / "2025-06-02.md")
    with pytest.raises(ImportSourceError, match="not a regular file"):
        plan_import(tmp_path / "root", folder, "reference")
    (folder / "daily" / "2025-06-02.md").unlink()
    os.mkfifo(folder / "daily" / "2025-06-03.md")  # would block a reader forever
    with pytest.raises(ImportSourceError, match="not a regular file"):
        plan_import(tmp_path / "root", folder, "reference")


def test_nothing_serves_an_adopted_folder_before_its_import(tmp_path: Path) -> None:
    """F14: between adoption and the import, memory-es refuses to start a journal in the
    folder (its projections are there, its journal is not)."""
    folder = legacy_folder(ADOPTABLE[0], tmp_path)
    os.chmod(folder, 0o700)
    assert cli("adopt-replay", str(folder)).returncode == 0
    started = cli("--root", str(folder), "admit", "--run-id", "r", "--answer", "too early")
    assert started.returncode == 3 and "refusing to start a new journal" in started.stderr
    assert not (folder / "journal.db").exists()
