"""Approximate nearest neighbours for a large vector matrix.

Below :data:`ANN_THRESHOLD` live vectors recall searches the matrix exactly (numpy). Past it, a
writable store builds an HNSW index in a background thread and searches it once it is ready.
The library is faiss (``IndexHNSWSQ``, f16 storage: half the memory at the same recall), chosen
with ``bench/ann.py``: wheels for every platform, save and load, the fastest queries measured
here. usearch measured alike and can remove rows, but the process crashes when onnxruntime (the
MiniLM provider) is imported after it. faiss cannot remove a row: the matrix marks dead rows
and they are filtered out of every proposal; past :data:`REBUILD_SHARE` dead rows the index is
built afresh.

The index only proposes rows. Every proposed row is scored exactly against the float32 matrix,
so a score never depends on the index; only which rows are proposed can (recall@10 against
exact >= 0.98 on the bench's queries, ``bench/recall_latency.py``).

The index is a cache of the generation's vectors, never an authority. Its ids are positions in
the matrix. It is saved beside the generation (``vectors-<identity>.faiss``, with a ``.json``
of what it covers: the row count and SHA-256 of the rowids and of the matrix) only when it was
built or grown from a matrix nothing was removed from, which is exactly the matrix a fresh load
reads. A load that finds a different matrix ignores the file and builds again. A removal (a
forgotten or rewritten row) deletes the file at once, so a forgotten text's vector never
outlives it on disk; the next open builds a fresh one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from memory_es.fsutil import atomic_write, private_temp
from memory_es.vectors import spill

ANN_THRESHOLD: Final = 20_000  # live vectors; below it exact numpy search is as fast (bench)
CONNECTIVITY: Final = 16
EXPANSION_ADD: Final = 128
BUILD_CHUNK: Final = 1024  # rows per add while building: a close stops a build between chunks
OVERFETCH: Final = 2  # rows proposed per row asked, before exact scoring drops the dead ones
REBUILD_SHARE: Final = 0.1  # dead positions past this share of the index: build it afresh

AnnState = Literal["absent", "current", "stale", "invalid"]


def expansion(size: int, k: int) -> int:
    """The search breadth that kept recall@k >= 0.985 in ``bench/ann.py`` (M=16): 96 / 192
    at 10k for k 10 / 50, 256 / 512 at 100k; wider for larger indexes."""
    base = 96 if size <= 10_000 else 256 if size <= 100_000 else 512
    return base * (2 if k > 10 else 1)


def ann_paths(generation_dir: Path, identity: str) -> tuple[Path, Path]:
    """(index file, its coverage record) for one embedding identity in one generation."""
    tag = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return (generation_dir / f"vectors-{tag}.faiss",
            generation_dir / f"vectors-{tag}.json")


def coverage(rowids: np.ndarray, matrix: np.ndarray) -> dict[str, Any]:
    """What an index built over these rows covers: compared on load and by health."""
    return {"rows": len(rowids), "rowids_sha256": _sha256(rowids, "<i8"),
            "matrix_sha256": _sha256(matrix, "<f4")}


def _sha256(array: np.ndarray, dtype: str) -> str:
    """SHA-256 of the array's bytes in ``dtype``, read in slices: never a second copy of a
    matrix that may hold a million rows."""
    digest = hashlib.sha256()
    for start in range(0, len(array), spill.CHUNK_ROWS):
        end = start + spill.CHUNK_ROWS
        digest.update(np.ascontiguousarray(array[start:end], dtype=dtype).data)
        spill.release(array, start, end)
    return digest.hexdigest()


def saved_rows(meta: Path) -> int | None:
    """The row count a saved index's record states (None: no readable record)."""
    try:
        rows = json.loads(meta.read_bytes()).get("rows")
    except (OSError, ValueError, AttributeError):
        return None
    return rows if isinstance(rows, int) else None


class AnnIndex:
    """An HNSW index over matrix positions (inner product of L2-normalised rows = cosine).

    faiss numbers rows in the order they are added, so every matrix position is added, a dead
    one as the zero row the matrix holds for it: ids are positions, and the matrix's dead
    marks filter what the index cannot remove.
    """

    def __init__(self, dim: int, index: Any = None) -> None:
        import faiss  # imported on the large-store path only

        faiss.omp_set_num_threads(1)  # one core: the same insertion order gives the same graph
        self.dim = dim
        if index is None:
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_fp16, CONNECTIVITY,
                                      faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = EXPANSION_ADD
        self._index = index
        self._lock = threading.Lock()  # faiss calls from the build thread and from readers

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, start: int, block: np.ndarray) -> None:
        """Rows for positions ``start``, ``start + 1``, ... (``start`` is the next id)."""
        if len(block):
            with self._lock:
                if start != self._index.ntotal:
                    raise ValueError(f"ANN index holds {self._index.ntotal} rows, not {start}")
                self._index.add(np.ascontiguousarray(block, dtype=np.float32))

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """Up to ``k`` proposed positions per query (rows of ``queries``)."""
        with self._lock:
            self._index.hnsw.efSearch = expansion(len(self), k)
            _, found = self._index.search(np.ascontiguousarray(queries, dtype=np.float32),
                                          min(k, len(self)))
        return [row[row >= 0].astype(np.int64) for row in found]

    def write(self, tmp: Path, rows: int) -> bool:
        """The index into ``tmp`` (private); False (nothing written) when it has grown past
        ``rows``, what its coverage record describes."""
        import faiss

        with self._lock:
            if self._index.ntotal != rows:
                return False
            fd, name = private_temp(tmp)
            os.close(fd)
            os.replace(name, tmp)
            faiss.write_index(self._index, str(tmp))
        return True

    def save(self, path: Path, meta: Path, covered: dict[str, Any]) -> bool:
        """:meth:`write`, then :func:`publish`."""
        tmp = path.with_name(path.name + ".tmp")
        if not self.write(tmp, covered["rows"]):
            return False
        publish(tmp, path, meta, {**covered, "dim": self.dim})
        return True

    @classmethod
    def load(cls, path: Path, meta: Path, dim: int,
             covered: dict[str, Any]) -> AnnIndex | None:
        """The saved index when it covers exactly ``covered``; None otherwise."""
        try:
            saved = json.loads(meta.read_bytes())
        except (OSError, ValueError):
            return None
        if saved != {**covered, "dim": dim}:
            return None
        import faiss

        try:
            index = faiss.read_index(str(path))
        except (OSError, RuntimeError):
            return None
        if index.ntotal != covered["rows"] or index.d != dim:
            return None
        return cls(dim, index)


def publish(tmp: Path, path: Path, meta: Path, record: dict[str, Any]) -> None:
    """Put a written index in place, then its record: the old record goes first, so a crash
    between the two never leaves a record beside an index it does not describe."""
    with contextlib.suppress(FileNotFoundError):
        meta.unlink()
    os.replace(tmp, path)
    atomic_write(meta, json.dumps(record, sort_keys=True).encode(),
                 durable=False)  # a cache: a lost file is built again


def discard(path: Path, meta: Path) -> None:
    """Remove every ANN file of the generation ``path`` lies in, of every identity, temps
    included: a removed row's vector must not survive in any of them."""
    discard_all(path.parent)


def discard_all(generation_dir: Path) -> None:
    """:func:`discard` for a generation directory (the forget path, which has no matrix)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for name in os.listdir(generation_dir):
            if name.startswith("vectors-") and name.endswith((".faiss", ".json", ".tmp")):
                with contextlib.suppress(FileNotFoundError):
                    (generation_dir / name).unlink()


def saved_state(path: Path, meta: Path, dim: int, rowids: np.ndarray,
                matrix: np.ndarray) -> AnnState:
    """Health's view of a generation's saved index: absent, current (it covers exactly these
    live vectors), stale (it covers others: the next writer open builds again) or invalid
    (unreadable)."""
    if not path.exists() and not meta.exists():
        return "absent"
    covered = coverage(rowids, matrix)
    if AnnIndex.load(path, meta, dim, covered) is not None:
        return "current"
    try:
        json.loads(meta.read_bytes())
    except (OSError, ValueError):
        return "invalid"
    return "stale"


Rows = tuple[np.ndarray, np.ndarray]  # (rowids, matrix) of a VectorMatrix, -1: a dead slot


class AnnCache:
    """The index of one growing matrix: loaded or built (in a background thread) once the
    matrix holds :data:`ANN_THRESHOLD` live rows, grown with it, saved when nothing was removed.

    ``lock`` is held by the matrix while it changes, so the build thread's catch-up sees a
    consistent matrix; ``current`` returns the matrix as it is.
    """

    def __init__(self, dim: int, files: tuple[Path, Path] | None,
                 current: Any, *, saved_only: bool = False) -> None:
        """``saved_only`` (a read-only door): use the saved index when it covers the matrix,
        never build, save or remove a file; a row that goes away drops the index (the
        matrix is then searched exactly)."""
        self.dim = dim
        self.saved_only = saved_only
        self.lock = threading.RLock()
        self._files = files
        self._current = current
        self._index: AnnIndex | None = None
        self._covered = 0  # matrix positions the index has seen (dead ones skipped)
        self._removed = False  # since the matrix loaded: its file would not be a fresh load's
        self._dead = 0  # dead positions the index still holds (faiss cannot remove)
        self._thread: threading.Thread | None = None
        self._threads: list[threading.Thread] = []  # every build started: close joins all
        self._stop = threading.Event()
        self._saved = 0  # positions covered by the file on disk
        self._tried: tuple[int, int, int] | None = None  # saved_only: the record last tried

    @property
    def ready(self) -> bool:
        return self._index is not None

    def grown(self) -> None:
        """The matrix took new rows (call with :attr:`lock` held)."""
        rowids, matrix = self._current()
        if self._index is not None:
            self._add(self._index, rowids, matrix, self._covered, len(rowids))
            self._covered = len(rowids)
            return
        if self._thread is not None or int(np.count_nonzero(rowids >= 0)) < ANN_THRESHOLD:
            return
        if self.saved_only:
            self._load_saved(rowids, matrix)
            return
        if self._files is not None and not self._removed:
            loaded = AnnIndex.load(*self._files, self.dim, coverage(rowids, matrix))
            if loaded is not None:
                self._index, self._covered, self._saved = loaded, len(rowids), len(rowids)
                return
        self._start_build()

    def _load_saved(self, rowids: np.ndarray, matrix: np.ndarray) -> None:
        """A reader's try at the saved index: again whenever its record file changed (a
        writer saved one since), never twice for the same record; the row count is compared
        before the matrix is hashed."""
        if self._files is None or self._removed:
            return
        try:
            stat = self._files[1].stat()
        except OSError:
            return
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen == self._tried:
            return
        self._tried = seen
        if saved_rows(self._files[1]) != len(rowids):
            return
        loaded = AnnIndex.load(*self._files, self.dim, coverage(rowids, matrix))
        if loaded is not None:
            self._index, self._covered, self._saved = loaded, len(rowids), len(rowids)

    def _start_build(self) -> None:
        rowids, matrix = self._current()
        self._dead = 0  # rows dead now are zero rows in the new index: they crowd nothing
        self._thread = threading.Thread(target=self._build, args=(rowids, matrix),
                                        name="memory-es-ann", daemon=True)
        self._threads.append(self._thread)
        self._thread.start()

    def mark_removed(self) -> None:
        """Rows went away elsewhere (a forget): never save again, and no file stays."""
        with self.lock:
            self._removed = True
            if self.saved_only:
                self._index = None
            elif self._files is not None:
                discard(*self._files)

    def removed(self, positions: np.ndarray) -> None:
        """These matrix positions died (call with :attr:`lock` held): out of the index, and
        the file goes at once (a forgotten text's vector never outlives it)."""
        self._removed = True
        if self.saved_only:  # a reader writes nothing: it searches exactly from now on
            self._index = None
            return
        if self._files is not None:
            discard(*self._files)
        self._dead += len(positions)
        if self._index is not None and self._dead > REBUILD_SHARE * len(self._index):
            self._index, self._dead = None, 0  # too many dead proposals: build afresh
            self._start_build()

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray] | None:
        """Proposed matrix positions per query, or None while there is no index (search the
        matrix exactly)."""
        index = self._index
        if index is None or not len(index):
            return None
        return index.search(queries, k * OVERFETCH)

    def close(self) -> None:
        """Stop a build; save a grown index that covers a fresh load's matrix."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        if self.saved_only:
            return
        with self.lock:
            index, rows = self._index, self._savable()
        if index is not None and rows is not None and self._saved != len(rows[0]):
            self._save(index, rows)

    def _build(self, rowids: np.ndarray, matrix: np.ndarray) -> None:
        index = AnnIndex(self.dim)
        end = len(rowids)
        for start in range(0, end, BUILD_CHUNK):
            if self._stop.is_set():
                return
            self._add(index, rowids, matrix, start, min(end, start + BUILD_CHUNK))
        with self.lock:  # catch up with what the matrix did meanwhile, then serve
            now_rowids, now_matrix = self._current()
            self._add(index, now_rowids, now_matrix, end, len(now_rowids))
            self._covered = len(now_rowids)
            self._index = index
            rows = self._savable()
        if rows is not None:
            self._save(index, rows)

    def _savable(self) -> Rows | None:
        """The matrix as it is, when a file of it may be kept (call with :attr:`lock` held)."""
        return self._current() if self._files is not None and not self._removed else None

    def _save(self, index: AnnIndex, rows: Rows) -> None:
        """Hash the rows and write the index without holding :attr:`lock` (the matrix's
        writer and readers wait only on faiss's own write); put it in place under the lock,
        unless a removal came meanwhile: rows below their count change only by a removal."""
        assert self._files is not None
        path, meta = self._files
        tmp = path.with_name(path.name + ".tmp")
        try:
            covered = coverage(*rows)
            written = index.write(tmp, covered["rows"])
            with self.lock:
                if written and not self._removed:
                    publish(tmp, path, meta, {**covered, "dim": self.dim})
                    self._saved = len(rows[0])
                else:
                    discard(path, meta)
        except (OSError, RuntimeError):  # a cache (faiss raises RuntimeError): built again
            discard(path, meta)

    @staticmethod
    def _add(index: AnnIndex, rowids: np.ndarray, matrix: np.ndarray,
             start: int, end: int) -> None:
        """Positions ``start``..``end``, dead ones as the zero rows the matrix holds."""
        if end > start:
            index.add(start, matrix[start:end])
            spill.release(matrix, start, end)  # a mapped matrix's rows leave the resident set
