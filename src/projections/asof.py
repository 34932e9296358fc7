"""The journal as it stood at an instant: the cut and the throwaway fold.

What the store knew at instant T is a journal *prefix*, never the events whose timestamp is at
most T. A timestamp is the caller's clock when the event was made, not when it was committed:
a captured line carries its turn's admission instant although it is committed when curation
finishes (seconds later, or days of retries later), and a fold of events picked by timestamp
could hold a supersession without the line it supersedes. The position is the journal's own
commit order, so the cut is by position:

- a position's recording instant is the latest timestamp stamped at or before it (every
  timestamp is taken before its commit, so the store cannot have held that position earlier);
  the cut is the last position before the first event stamped after T;
- one commit is never split: the memory events of a curated or observed turn (their
  ``run_hash``) are committed together with that intake's ``Intake.Resolved``, which is stamped
  with the commit's instant; a cut that would hold them but not the resolution moves back
  before the first of them (the turn was not yet recorded at T).

The fold is the replay driver's own :class:`IndexProjection` over a private in-memory SQLite
database: the same decoding and projection code as ``rebuild``, so what a replay does not show
(a forgotten line's text) an as-of answer cannot show either, and nothing reaches the disk.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from memory_es.events import Intake, Memory
from memory_es.ids import intake_uuid
from memory_es.journal.codec import is_forgotten
from projections.derived import IN_MEMORY
from projections.replay import fold_into
from projections.sqlite_index import IndexProjection


def as_of_cut(events: Iterable[tuple[int, object]], instant: datetime) -> int:
    """The last journal position the store had recorded at ``instant`` (0: none), from the
    decoded ``events`` in journal order (module docstring). Reads past the cut only while a
    turn's commit is still open, to find whether its resolution came after ``instant``."""
    cut = 0
    stopped = False
    open_turns: dict[UUID, int] = {}  # intake id -> first position of its memory events
    resolved: set[UUID] = set()
    for position, event in events:
        if not stopped:
            if _stamped(event) > instant:
                stopped = True
            else:
                cut = position
        if isinstance(event, Intake.Resolved):
            intake = event.originator_id
            resolved.add(intake)
            start = open_turns.pop(intake, None)
            if stopped and start is not None:  # resolved after the cut: not recorded at T
                cut = min(cut, start - 1)
        elif not stopped and isinstance(event, Memory.Created | Memory.Event):
            run = getattr(event, "run_hash", None)
            if isinstance(run, str) and intake_uuid(run) not in resolved:
                open_turns.setdefault(intake_uuid(run), position)
        if stopped and not open_turns:
            break
    return cut


def _stamped(event: object) -> datetime:
    stamp = getattr(event, "timestamp", None)
    if not isinstance(stamp, datetime):  # every domain event has one; never guess
        raise TypeError(f"{type(event).__name__} has no timestamp")
    return stamp


def fold_in_memory(events: Iterable[tuple[int, object]]) -> IndexProjection:
    """A throwaway index holding ``events`` folded and committed, in memory only.

    An event whose content a later forget destroyed is left out: the prefix ends before the
    ``Forgotten`` event that would remove its rows, and a line with its text voided would
    still answer with its id, instant and score. A forgotten memory is not in any past."""
    return fold_into(IndexProjection(IN_MEMORY, create=True),
                     ((position, event) for position, event in events
                      if not is_forgotten(event)))
