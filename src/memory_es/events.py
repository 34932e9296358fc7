"""Domain events: the only authority (DESIGN 1, 4).

Every event class carries an explicit, stable TOPIC so that moving or renaming a module never
breaks a stored journal. Aggregates are plain state folded from their events; they hold no
business rules beyond applying what the event says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate

# Namespace of every run-derived aggregate id. Never change it: ids are stored in journals.
NAMESPACE = UUID("6d2c4c55-2f0b-5a0e-9b7e-6d656d6f7279")


def intake_uuid(run_hash: str) -> UUID:
    """Aggregate id of the intake for a run: uuid5 of its 64-hex run hash."""
    return uuid5(NAMESPACE, f"intake:{run_hash}")


class Intake(Aggregate):
    """One admitted completed turn, keyed by sha256(run_id) (B2)."""

    TOPIC = "memory_es/Intake"

    class Created(Aggregate.Created):
        TOPIC = "memory_es/Intake.Created"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Intake.Event"

    class Admitted(Created):
        """A successful turn was durably admitted (A3, A4, B1, B5).

        ``content_sha256`` covers the whole turn record and decides duplicate vs conflict
        (B3); ``payload_*`` describe the capture text kept in the payloads table.
        """

        TOPIC = "memory_es/Intake.Admitted"
        run_hash: str
        content_sha256: str
        content_bytes: int
        payload_sha256: str | None
        payload_bytes: int
        summary: str
        write_mode: str
        tier: str
        speaker_kind: str
        source_label: str
        session: str | None
        trigger: str
        attachments: list[dict[str, Any]]

    def __init__(
        self,
        run_hash: str,
        content_sha256: str,
        content_bytes: int,
        payload_sha256: str | None,
        payload_bytes: int,
        summary: str,
        write_mode: str,
        tier: str,
        speaker_kind: str,
        source_label: str,
        session: str | None,
        trigger: str,
        attachments: list[dict[str, Any]],
    ) -> None:
        self.run_hash = run_hash
        self.content_sha256 = content_sha256
        self.content_bytes = content_bytes
        self.payload_sha256 = payload_sha256
        self.payload_bytes = payload_bytes
        self.summary = summary
        self.write_mode = write_mode
        self.tier = tier
        self.speaker_kind = speaker_kind
        self.source_label = source_label
        self.session = session
        self.trigger = trigger
        self.attachments = attachments

    @classmethod
    def admitted(cls, *, at: datetime, **fields: Any) -> Intake.Admitted:
        """The Admitted event (version 1) stamped by the caller's clock.

        Built directly rather than through the aggregate: admission is the hot path, and the
        event is all the journal needs.
        """
        return cls.Admitted(
            originator_id=intake_uuid(fields["run_hash"]),
            originator_version=cls.INITIAL_VERSION,
            timestamp=at,
            originator_topic=cls.TOPIC,
            **fields,
        )


ADMITTED_TOPIC = Intake.Admitted.TOPIC
