"""What a failure means, whatever raised it: an exit code (SPEC C), a stable content-free
``code`` and a one-line message (:func:`classify`). The CLI prints it (``memory_es.cli.contract``);
the web inspector answers it as an HTTP status. No traceback ever reaches a user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import apsw

from memory_es.errors import (
    STORAGE_CODES,
    ConfigError,
    IntegrityError,
    InvalidArgumentError,
    LockTimeoutError,
    MemoryEsError,
    NotARootError,
    UnsafePathError,
    storage_kind,
)

OK: Final = 0
REFUSED: Final = 1  # findings, an invalid config, a rejected turn, a refused operation
USAGE: Final = 2  # a bad argument, option or config file; nothing was read or written
COULD_NOT_RUN: Final = 3  # I/O, the writer lock held, a corrupt or unsafe root, a provider down
INTERRUPTED: Final = 130  # Ctrl-C, the shell's convention

# MemoryEsError codes that are a refusal of a well-formed request (exit 1).
REFUSED_CODES: Final = frozenset({
    "already_resolved", "plan_retained", "reconfigure_refused", "root_not_empty",
    "journal_cursor_stale", "chain_unkeyed", "memory_not_found", "memory_id_ambiguous",
    "remember_credential", "remember_disabled", "remember_text_only", "remember_about_unknown",
    "remember_supersedes_refused", "status_transition_refused",
    "turn_not_found", "turn_unresolved", "recall_about_unknown", "recall_original_unavailable",
    "backup_exists", "restore_keys_exist", "restore_target_used",
    "replay_adoption_required", "adopt_not_legacy", "adopt_not_needed", "adopt_nothing",
    "adopt_refused", "curate_refused", "curate_bujo_only", "migration_pending",
    "migrate_pending_work", "migrate_nothing", "migrate_unmigratable", "migrate_not_pending",
})
# MemoryEsError codes that mean the caller's arguments are wrong (exit 2).
USAGE_CODES: Final = frozenset({
    "usage", "invalid_argument", "migrate_needs_bujo", "migrate_ollama_only", "not_found",
    "invalid_slug", "export_malformed",
    "anchor_invalid", "remember_invalid_text", "invalid_validity", "invalid_status",
    "invalid_time_zone",
    "recall_invalid_limit", "recall_invalid_query", "recall_invalid_kind",
    "recall_invalid_about", "recall_invalid_turn", "recall_query_conflict",
    "recall_invalid_argument", "calibrate_invalid_file",
    "calibrate_too_few", "calibrate_needs_embeddings", "journal_cursor_invalid",
    "journal_invalid_date", "journal_invalid_limit", "journal_invalid_filter",
    "journal_invalid_range", "journal_invalid_request", "journal_invalid_zone",
    "journal_missing_range", "journal_range_too_long",
    "backup_malformed", "backup_inside_root", "backup_not_encrypted", "backup_secret_required",
    "backup_secret_wrong", "backup_secret_unreadable", "backup_secret_unsafe",
    "backup_secret_weak", "import_malformed", "import_wrong_format", "import_format_unknown",
})
# Admission results that say the engine could not write, not that the turn was refused.
COULD_NOT_ADMIT: Final = frozenset({"journal_write_failed", "store_closed", "internal_error",
                                    "io_error"})


class UsageError(MemoryEsError):
    """A usage problem the user can fix (bad argument, unreadable input file): exit 2."""

    def __init__(self, message: str, *, code: str = "usage") -> None:
        super().__init__(message, code=code)


@dataclass(frozen=True)
class Failure:
    exit_code: int
    code: str
    message: str


def one_line(text: str) -> str:
    """Printable on one line whatever it holds (newlines, unpaired surrogates)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()) or "(no detail)"


def _sqlite(exc: apsw.Error) -> Failure:
    """An SQLite error no door mapped to its file (they raise ``journal_corrupt``,
    ``index_unreadable``...): still one stable code per kind (:func:`storage_kind`)."""
    kind = storage_kind(exc) or "sqlite"
    code = "corrupt" if kind == "corrupt" else STORAGE_CODES[kind]
    return Failure(COULD_NOT_RUN, code, f"{code}: SQLite {type(exc).__name__}: {exc}")


def classify(exc: BaseException) -> Failure:
    """The contract's answer for any exception a command raised."""
    if isinstance(exc, ConfigError):
        return Failure(USAGE, "config_invalid", "; ".join(exc.errors) or str(exc))
    if isinstance(exc, NotARootError):
        return Failure(USAGE, "not_a_root", str(exc))
    if isinstance(exc, InvalidArgumentError | UsageError):
        return Failure(USAGE, exc.code, str(exc))
    if isinstance(exc, LockTimeoutError):
        return Failure(COULD_NOT_RUN, "lock_held", str(exc))
    if isinstance(exc, MemoryEsError) and exc.code in REFUSED_CODES:
        return Failure(REFUSED, exc.code, str(exc))
    if isinstance(exc, MemoryEsError) and exc.code in USAGE_CODES:  # e.g. replay of a file
        return Failure(USAGE, exc.code, str(exc))  # that is no export (export_malformed)
    if isinstance(exc, IntegrityError | UnsafePathError | MemoryEsError):
        return Failure(COULD_NOT_RUN, exc.code, str(exc))
    if isinstance(exc, apsw.Error):
        return _sqlite(exc)
    if isinstance(exc, OSError):
        return Failure(COULD_NOT_RUN, "io_error", f"io_error: {exc}")
    if storage_kind(exc) == "io":  # the PostgreSQL journal's server down or unreachable
        return Failure(COULD_NOT_RUN, "io_error", f"io_error: {type(exc).__name__}: {exc}")
    # a bug: still one line, never a traceback in the operator's face
    return Failure(COULD_NOT_RUN, "internal_error",
                   f"internal error: {type(exc).__name__}: {exc}")
