"""Where a long-lived writer's vector matrix keeps its rows: an unnamed file in the generation
directory, memory-mapped, so that a million 512-d rows (2 GB of float32) do not stay resident
(peak RSS < 2 GB at 1M memories).

The ANN index proposes rows and only those are scored against the matrix, so a query touches
a few hundred rows, copied out (:func:`gather`) and released at once. Every pass that reads
the whole matrix (its first load, a growth copy, the index build, the coverage hash, an exact
scan) goes chunk by chunk and then tells the kernel the chunk's pages are not needed
(``MADV_DONTNEED``): they stay in the page cache, which the kernel may reclaim, and leave the
process's resident set. A small matrix (below
:data:`RELEASE_BYTES`) is never released: re-reading it would cost more than it holds.

The file has no name (``O_TMPFILE``; where the filesystem lacks it, a ``vectors-*.tmp`` name
unlinked at once, which a crash leaves for the forget and rebuild sweeps that remove every
``vectors-*`` file), is owner-only, and goes when the last view of the mapping does. One-shot
readers (``memory-es search``) keep their matrix in RAM: they load, query once and exit.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from pathlib import Path
from typing import Final

import numpy as np

CHUNK_ROWS: Final = 65_536  # rows per pass step: 128 MB at 512-d, aligned to pages
RELEASE_BYTES: Final = 64 * 1024 * 1024  # a mapping smaller than this stays resident
_PAGE: Final = mmap.PAGESIZE


def allocate(rows: int, dim: int, directory: Path | None) -> np.ndarray:
    """A zeroed ``(rows, dim)`` float32 matrix: in RAM, or mapped from an unnamed file in
    ``directory``."""
    if directory is None or rows == 0:
        return np.zeros((rows, dim), dtype=np.float32)
    size = rows * dim * 4
    fd = _unnamed_file(directory)
    try:
        os.ftruncate(fd, size)  # sparse: zero pages cost nothing until written
        mapping = mmap.mmap(fd, size)
    finally:
        os.close(fd)  # the mapping keeps the file
    matrix: np.ndarray = np.frombuffer(mapping, dtype=np.float32).reshape(rows, dim)
    return matrix


def _unnamed_file(directory: Path) -> int:
    flags = os.O_RDWR | os.O_CLOEXEC
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(directory, flags | os.O_TMPFILE, 0o600)
        except OSError:  # a filesystem without O_TMPFILE
            pass
    fd, name = tempfile.mkstemp(dir=directory, prefix="vectors-", suffix=".tmp")
    os.unlink(name)
    return fd


def mapping_of(matrix: np.ndarray) -> mmap.mmap | None:
    """The file mapping behind ``matrix`` (or a view of it), None for a RAM array."""
    base = matrix.base
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    return None


def release(matrix: np.ndarray, start: int, end: int) -> None:
    """Rows ``start``..``end`` of a large mapped matrix leave the resident set (their data
    stays in the file and the page cache); nothing for a RAM or small matrix."""
    mapping = mapping_of(matrix)
    if mapping is None or mapping.size() < RELEASE_BYTES or end <= start:
        return
    row = matrix.shape[1] * 4
    first = (start * row) // _PAGE * _PAGE
    last = min(mapping.size(), -(-(end * row) // _PAGE) * _PAGE)
    if last > first:
        mapping.madvise(mmap.MADV_DONTNEED, first, last - first)


def copy_rows(target: np.ndarray, source: np.ndarray, rows: int) -> None:
    """``target[:rows] = source[:rows]`` a chunk at a time, releasing both as it goes."""
    for start in range(0, rows, CHUNK_ROWS):
        end = min(rows, start + CHUNK_ROWS)
        target[start:end] = source[start:end]
        release(source, start, end)
        release(target, start, end)


def scores(matrix: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``matrix @ queries.T`` (one column per query) a chunk at a time, releasing as it goes:
    an exact scan of a large mapped matrix never holds it all resident."""
    out = np.empty((len(matrix), len(queries)), dtype=np.float32)
    for start in range(0, len(matrix), CHUNK_ROWS):
        end = min(len(matrix), start + CHUNK_ROWS)
        np.matmul(matrix[start:end], queries.T, out=out[start:end])
        release(matrix, start, end)
    return out


def gather(matrix: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``matrix[positions]`` (a copy), and the mapping's pages dropped again: a file mapping
    faults in whole page-cache folios (up to 2 MB here), so a hundred scattered rows would
    otherwise leave ~160 MB resident per query until the whole matrix is."""
    rows: np.ndarray = matrix[positions]
    release(matrix, 0, len(matrix))
    return rows
