"""The projection interface (DESIGN 7): fold events in journal order, nothing else."""

from __future__ import annotations

from typing import Protocol


class Projection(Protocol):
    """A pure function of the event sequence.

    ``apply`` is called once per event in journal order; ``flush`` makes everything applied so
    far visible (and durable) together with ``position``. A projection never reads the clock,
    the environment, or files outside its own output.
    """

    position: int

    def apply(self, position: int, event: object) -> None: ...

    def flush(self) -> None: ...
