"""Remember (SPEC J): one explicitly stated fact, written now, without waiting for capture.

The fact becomes a ``Memory.Recorded`` note (``source: remember``) whose id is the content hash
of its text (J4, the Journal identity, D3), committed to the journal and projected into the
daily Markdown and the index under the same hold of the journal, so it is recallable the moment
the call returns (J1). Writing it again is a ``duplicate`` that changes nothing, and completes
the projection if a crash left the event without its line (N11); the session of the first
write is kept (J12). Text carrying a credential is refused with nothing written (J5). Capture
switches do not apply (J14). This slice is the text-only write every tier accepts (J6); BuJo's
``about`` / ``supersedes`` / ``replaceable`` come with the note lifecycle (issue 14).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memory_es.capture.contracts.common import TEXT_MAX_BYTES, check_safe_text
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import Memory
from memory_es.ids import memory_uuid, text_key
from memory_es.journal import OpenedJournal
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.text import journal_text

REMEMBER_SOURCE = "remember"


@dataclass(frozen=True)
class RememberResult:
    """``remembered`` (written now) or ``duplicate`` (this exact text is already stored)."""

    status: Literal["remembered", "duplicate"]
    memory_id: str

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "id": self.memory_id}


def checked_text(text: object) -> str:
    """The normalised fact, or a one-line error: empty, too long, unsafe (J5: credentials
    are refused as ``remember_credential``, nothing written)."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"remember: text must be a string, got {type(text).__name__}",
                                   code="remember_invalid_text")
    clean = journal_text(text)
    if not clean:
        raise InvalidArgumentError("remember: text is empty", code="remember_invalid_text")
    rule = check_safe_text(clean)
    if rule == "looks like a credential":
        raise MemoryEsError("remember_credential: the text looks like a credential; nothing "
                            "was written (J5)", code="remember_credential")
    if rule is not None:
        raise InvalidArgumentError(f"remember: text {rule}", code="remember_invalid_text")
    size = len(clean.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        raise InvalidArgumentError(f"remember: text is {size} UTF-8 bytes; at most "
                                   f"{TEXT_MAX_BYTES}", code="remember_invalid_text")
    return clean


def remember(opened: OpenedJournal, journal: GroupCommit, projections: LiveProjections,
             text: str, *, session: str | None, tier: str, now: datetime) -> RememberResult:
    """Write one fact and project it before returning (J1, J4, N11, J12)."""
    clean = checked_text(text)
    memory_id = text_key(clean)
    with journal.exclusive():
        known = opened.recorder.has_events(memory_uuid(memory_id))
        if not known:
            journal.commit_held([Memory.recorded(
                at=now, memory_id=memory_id, kind="note", text=clean,
                day=now.date().isoformat(), status="open", source=REMEMBER_SOURCE,
                session=session, run_hash=None, tier=tier)])
        projections.catch_up()  # the daily line and the index row, in the same hold (J1)
    return RememberResult("duplicate" if known else "remembered", memory_id)
