"""What recall reads of a configuration, as plain values (:class:`ReadSetup`).

A writer's store hands recall its validated :class:`~memory_es.config.MemoryConfig`
(:meth:`ReadSetup.of`). A reading command without ``--config`` uses what the root recorded
(:class:`~memory_es.rootconfig.RootConfig`: the tier, the write mode, the models), which was
validated when it was written and which the verified chain vouches for; everything else a
record leaves out is a default. :meth:`ReadSetup.recorded` reads it as it stands, without
building the pydantic model again, so a cold ``memory-es search`` does not import pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_es.config.defaults import DEFAULT_SCORING, Scoring
from memory_es.recall.rank.policy import OFF, ReadPolicy

if TYPE_CHECKING:
    from memory_es.config import CalibrationConfig, MemoryConfig


@dataclass(frozen=True, slots=True)
class ReadSetup:
    """The settings :class:`~memory_es.recall.engine.Recaller` answers with."""

    mode: str
    scoring: Scoring = DEFAULT_SCORING
    policy: ReadPolicy = OFF  # intentExpiry, recency: BuJo only (M24-M33)
    profile: bool = False  # memory.profile.enabled (M1-M9)
    max_bytes: int | None = None  # memory.maxBytes
    calibration: CalibrationConfig | None = None  # memory.embeddings.calibration

    @classmethod
    def of(cls, config: MemoryConfig) -> ReadSetup:
        """The settings of a validated config."""
        return cls(mode=config.mode, scoring=config.recall.scoring,
                   policy=ReadPolicy.of(config), profile=config.profile.enabled,
                   max_bytes=config.max_bytes,
                   calibration=config.embeddings.calibration
                   if config.embeddings is not None else None)

    @classmethod
    def recorded(cls, tier: str) -> ReadSetup:
        """The settings of a root's recorded configuration: its tier, the rest defaults
        (a record holds no recall, profile, size or calibration setting)."""
        return cls(mode=tier)
