"""What health reports: :class:`Finding`, :class:`HealthReport` and their statuses and exit
codes (N12: stable codes, root-relative paths, content-free details)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, Literal

import msgspec

from projections.derived import INDEX_DB

EXIT_CLEAN, EXIT_FINDINGS, EXIT_CANNOT_AUDIT, EXIT_COULD_NOT_RUN = 0, 1, 2, 3

HealthStatus = Literal["clean", "in_progress", "recoverable", "findings", "cannot_audit"]
# Findings the next writer open repairs by itself: what a killed writer left,
# projections behind the journal, the newer generation a live writer's rebuild is building,
# and committed rows past the catalog whose keyed chain verifies (a kill between the journal
# commit and the catalog write; the next writer open adopts them). A report holding only
# these is ``recoverable`` (exit 0), or ``in_progress`` while a writer holds the root;
# anything else is drift (``findings``).
# Hygiene findings (B16, B17): a file that has one can never be crash residue.
HYGIENE_CODES = frozenset({"symlink", "foreign_owner", "unsafe_mode", "hard_link"})
RECOVERABLE = frozenset({"crash_residue", "projection_behind", "rebuild_in_progress",
                         "journal_ahead_of_catalog"})
RESIDUE_DETAIL = "left by a writer killed mid-write; the next writer open repairs it"
TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.tmp-\d+-[a-z0-9_]{8}$")
GEN_FILES = {INDEX_DB + s for s in ("", "-wal", "-shm", "-journal")}


class NotARegularFileError(OSError):
    """A managed path that is a FIFO, socket, device or directory: health never reads it."""


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (a symlink is followed: hygiene reports it).
    Anything else raises :class:`NotARegularFileError` without being read, so a FIFO in a
    managed file's place can never block the audit (N8: the sidecar is a regular file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFileError(f"{path}: not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Finding(msgspec.Struct, frozen=True, order=True):
    """One problem: stable ``code``, root-relative ``path``, content-free ``detail``.
    Findings order by code, then path, then detail."""

    code: str
    path: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "detail": self.detail}


class HealthReport(msgspec.Struct, frozen=True, kw_only=True):
    """The audit result; ``exit_code`` is what ``memory-es health`` exits with."""

    status: HealthStatus
    journal_position: int = 0
    projection_position: int = 0
    findings: tuple[Finding, ...] = ()
    vectors_pending: int | None = None  # live memories without a vector; None: not embedded
    worker: str | None = None  # "running", "stalled", "not_running"; None: not asked
    runtime: str | None = None  # the snapshot: "absent", "current", "stale", "invalid"
    # the generation's saved ANN index (a cache, never drift): "absent", "current", "stale"
    # (the next writer open builds it again), "invalid"; None: not embedded
    ann_index: str | None = None

    @property
    def exit_code(self) -> int:
        """0 clean, in progress or recoverable (only crash residue and projections behind,
        which the next writer open repairs), 1 findings (drift), 2 no memory root there, 3
        could not run (the root could not be read: I/O, permissions, a lock)."""
        if self.status == "cannot_audit":
            if any(f.code == "not_a_root" for f in self.findings):
                return EXIT_CANNOT_AUDIT
            return EXIT_COULD_NOT_RUN
        if self.status in ("clean", "in_progress", "recoverable"):
            return EXIT_CLEAN
        return EXIT_FINDINGS

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "journal_position": self.journal_position,
                "projection_position": self.projection_position,
                "findings": [f.to_json() for f in sorted(self.findings)],
                "vectors_pending": self.vectors_pending, "worker": self.worker,
                "runtime": self.runtime, "ann_index": self.ann_index}




def with_findings(report: HealthReport, extra: list[Finding]) -> HealthReport:
    """``report`` with findings audited beside the replay (the vector cache, sealed records):
    any that is not recoverable makes the status ``findings``."""
    if not extra:
        return report
    status: HealthStatus = report.status
    if status in ("clean", "in_progress", "recoverable") \
            and any(f.code not in RECOVERABLE for f in extra):
        status = "findings"
    return msgspec.structs.replace(report, status=status,
                                   findings=tuple(sorted({*report.findings, *extra})))
