"""What a source file becomes before anything is written: items, refusals, the plan.

An :class:`ImportItem` is one completed turn to admit (its run id is derived from the
source's own id, so importing twice writes nothing new); a :class:`Refusal` names an item
that will not be written and why, in one content-free line. A reader (``formats``) turns a
whole source into a :class:`SourceRead` or fails with :class:`ImportSourceError` (the file is
missing, is not JSON, or is another format): then nothing is written at all.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_es.capture.contracts.common import check_safe_text
from memory_es.errors import MemoryEsError
from memory_es.intake.admission import SpeakerKind, Trigger

NOTE_MAX_BYTES = 2 * 1024  # a curated line (mem0 memory, note paragraph): Remember's bound
EXCHANGE_MAX_BYTES = 256 * 1024  # a ChatGPT exchange, well inside admission's 640 KiB record


class ImportSourceError(MemoryEsError):
    """The source as a whole cannot be read as the format named: nothing is written."""


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One turn to admit: ``answer`` is what a Lite or Journal root keeps as the memory,
    ``capture_text`` what capture reads (BuJo), ``at`` the source's own time."""

    original_id: str
    at: datetime
    answer: str
    capture_text: str | None = None
    session: str | None = None
    speaker_kind: SpeakerKind = "unknown"
    trigger: Trigger = "human"
    # another memory_es root's turn keeps its intake id and digest (a merge): None elsewhere
    intake_id_kept: str | None = None
    digest_kept: str | None = None

    def run_id(self, fmt: str) -> str:
        return f"import:{fmt}:{self.original_id}"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An item that is not written: its source id (or place) and a content-free reason."""

    original_id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.original_id, "reason": self.reason}


@dataclass
class SourceRead:
    """A whole source, read: the items in source order and what was refused."""

    fmt: str
    sha256: str
    items: list[ImportItem] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def add(self, item: ImportItem, max_bytes: int, *texts: str) -> None:
        """Keep ``item`` unless a rule refuses it: a repeated source id, an empty or
        oversized text, a credential or an unsafe character (the same screen as Remember)."""
        reason = self._problem(item, max_bytes, texts or (item.answer,))
        if reason is not None:
            self.refuse(item.original_id, reason)
            return
        self._seen.add(item.original_id)
        self.items.append(item)

    def refuse(self, original_id: str, reason: str) -> None:
        self.refused.append(Refusal(original_id, reason))

    def time_of(self, original_id: str, value: object, what: str) -> datetime | None:
        """:func:`parse_time` of an item's time, or None with the item refused."""
        try:
            return parse_time(value, what)
        except ValueError as e:
            self.refuse(original_id, f"invalid: {e}")
            return None

    def _problem(self, item: ImportItem, max_bytes: int, texts: tuple[str, ...]) -> str | None:
        if item.original_id in self._seen:
            return "duplicate_id: the source holds this id more than once"
        if not item.answer.strip():
            return "empty: no text to remember"
        return text_problem(*texts, max_bytes=max_bytes)


def text_problem(*texts: str, max_bytes: int) -> str | None:
    """Why texts cannot be written (content-free), or None: none is empty, together they
    fit ``max_bytes``, none holds a credential or an unsafe character (Remember's screen)."""
    if not any(t.strip() for t in texts):
        return "empty: no text to remember"
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    if size > max_bytes:
        return f"too_large: {size} UTF-8 bytes, more than {max_bytes}"
    for text in texts:
        rule = check_safe_text(text)
        if rule is not None:
            return f"unsafe_text: {rule}"
    return None


def parse_time(value: object, what: str) -> datetime:
    """An ISO 8601 string or epoch seconds, as an aware UTC instant (a naive ISO time is
    read as UTC); :class:`ValueError` naming ``what`` otherwise."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{what}: no time")
    if isinstance(value, int | float):
        if not 0 <= value < 253402300800:
            raise ValueError(f"{what}: not an epoch time")
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{what}: not an ISO 8601 time") from None
        return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).astimezone(UTC)
    raise ValueError(f"{what}: expected a time, got {type(value).__name__}")


MAX_FILE_BYTES = 512 * 1024 * 1024  # a source file is read whole


def regular_bytes(path: Path) -> bytes:
    """The bytes of ``path`` when it is a regular file (not a symlink, a FIFO or a device,
    which could lead out of the source or block) within :data:`MAX_FILE_BYTES`."""
    try:
        mode = path.lstat()
    except OSError as e:
        raise ImportSourceError(f"{path}: {e.strerror}", code="not_found") from None
    if not stat.S_ISREG(mode.st_mode):
        raise ImportSourceError(f"{path}: not a regular file (a link, FIFO or device)",
                                code="import_malformed")
    if mode.st_size > MAX_FILE_BYTES:
        raise ImportSourceError(f"{path}: larger than {MAX_FILE_BYTES} bytes",
                                code="import_malformed")
    return path.read_bytes()


def json_of(raw: bytes | str, where: str) -> Any:
    """``raw`` decoded as JSON, or :class:`ImportSourceError` naming ``where``."""
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ImportSourceError(f"{where}: not JSON ({e})", code="import_malformed") from None
    except RecursionError:
        raise ImportSourceError(f"{where}: JSON nested too deep", code="import_malformed") \
            from None
