"""A root knows its own configuration (B26).

A root records the tier, the write mode, and what names the embedding and chat models
(provider, model, dimension: never an endpoint or a key) as ``Root.Configured``, in the same
transaction as the first thing it writes (an open that writes nothing leaves no trace).
A later open without a config uses what is recorded, so ``memory-es search`` on a Journal root
embeds with the root's own model even without ``--config``. A different config is a
journalled reconfiguration (``Root.Reconfigured``), refused before anything is written when it
would strand work: a BuJo capture root whose intakes hold retained capture plans cannot be
reopened as another tier or write mode until they are resolved (B26).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from eventsourcing.persistence import MapperDeserialisationError

from memory_es.config.defaults import DEFAULT_PATH
from memory_es.errors import MemoryEsError
from memory_es.events import Root
from memory_es.ids import MIGRATION_UUID, ROOT_UUID
from memory_es.journal import OpenedJournal
from memory_es.journal.backend import PostgresJournal, journal_target

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig

REFUSED = "reconfigure_refused"


class RootConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What a root records of its configuration."""

    tier: str
    write_mode: str
    embeddings: dict[str, Any] | None = None  # {"provider", "model", "dim"}
    llm: dict[str, Any] | None = None  # {"provider", "model"}

    @classmethod
    def of(cls, config: MemoryConfig) -> RootConfig:
        embeddings = None
        if config.embeddings is not None and config.mode != "lite":
            embeddings = {"provider": str(config.embeddings.provider),
                          "model": config.embeddings.model, "dim": int(config.embeddings.dim)}
        llm = None
        if config.llm is not None and config.mode == "bujo":
            llm = {"provider": str(config.llm.provider), "model": config.llm.model}
        return cls(tier=config.mode, write_mode=config.write_mode, embeddings=embeddings,
                   llm=llm)

    def config(self) -> MemoryConfig:
        """A config with exactly what the root recorded (defaults for the rest)."""
        from memory_es.config import parse_config  # pydantic: only when a config is wanted

        block: dict[str, Any] = {"mode": self.tier, "writeMode": self.write_mode}
        if self.embeddings is not None:
            block["embeddings"] = dict(self.embeddings)
        if self.llm is not None:
            block["llm"] = dict(self.llm)
        return parse_config(block)

    def describe(self) -> str:
        model = self.embeddings["model"] if self.embeddings else "none"
        return f"tier {self.tier}, writeMode {self.write_mode}, embeddings {model}"


def recorded(opened: OpenedJournal) -> tuple[int, RootConfig] | None:
    """The root's last recorded configuration and its aggregate version, or None."""
    stored = opened.recorder.select_events(ROOT_UUID, desc=True, limit=1)
    if not stored:
        return None
    try:
        event = opened.app.mapper.to_domain_event(stored[0])
    except MapperDeserialisationError:  # an edit a read from the checkpoint does not see
        raise MemoryEsError("journal_invalid: the root's recorded configuration does not "
                            "decode (the journal was edited); memory-es health names the row",
                            code="journal_invalid") from None
    if not isinstance(event, Root.Configured | Root.Reconfigured):
        raise MemoryEsError(f"unexpected root event {type(event).__name__}",
                            code="journal_invalid")
    return event.originator_version, RootConfig(
        tier=event.tier, write_mode=event.write_mode, embeddings=event.embeddings,
        llm=event.llm)


def migration_pending(opened: OpenedJournal) -> bool:
    """Whether a ``migrate`` began and was never finished (its marker stands, F4, F13)."""
    rows = opened.recorder.aggregate_rows(MIGRATION_UUID)
    return bool(rows) and rows[-1][2] == Root.MigrationStarted.TOPIC


def effective(opened: OpenedJournal, config: MemoryConfig | None) -> MemoryConfig:
    """The config to open with: the caller's, else the recorded one, else the defaults.

    A caller's embeddings block that names no model keeps the model the root recorded for the
    same provider: a new default model (or a config written before the root) never re-embeds
    a root by accident; naming another model does, as a journalled reconfiguration.
    """
    found = recorded(opened)
    if config is None:
        from memory_es.config import MemoryConfig

        return found[1].config() if found is not None else MemoryConfig()
    return config if found is None else keep_recorded_model(config, found[1])


def keep_recorded_model(config: MemoryConfig, current: RootConfig) -> MemoryConfig:
    """``config`` with the recorded embedding model and dimension where it names no model."""
    block, kept = config.embeddings, current.embeddings
    if block is None or kept is None or "model" in block.model_fields_set \
            or kept.get("provider") != block.provider:
        return config
    update: dict[str, Any] = {"model": kept["model"]}
    if "dim" not in block.model_fields_set:
        update["dim"] = kept["dim"]
    return config.model_copy(update={"embeddings": block.model_copy(update=update)})


def settle(opened: OpenedJournal, config: MemoryConfig, *, at: datetime,
           retained_plans: bool) -> Root.Configured | Root.Reconfigured | None:
    """The event that records ``config`` for this root, or None when it is already recorded.

    Raises ``MemoryEsError`` (``reconfigure_refused``) when leaving BuJo capture would strand
    ``retained_plans`` (B26); nothing is written then.
    """
    wanted = RootConfig.of(config)
    found = recorded(opened)
    fields = msgspec.structs.asdict(wanted)
    if found is None:
        return Root.configured(at=at, **fields)
    version, current = found
    if current == wanted:
        return None
    leaves_capture = (current.tier, current.write_mode) == ("bujo", "capture") and \
        (wanted.tier, wanted.write_mode) != ("bujo", "capture")
    if current.tier == "bujo" and wanted.tier != "bujo" and \
            opened.recorder.aggregate_rows(MIGRATION_UUID):
        raise MemoryEsError(
            f"{REFUSED}: this root was migrated to BuJo (memory-es migrate); it cannot be "
            f"reopened as {wanted.describe()}: give a BuJo config", code=REFUSED)
    if leaves_capture and retained_plans:
        raise MemoryEsError(
            f"{REFUSED}: this root is BuJo capture with retained capture plans; it cannot be "
            f"reopened as {wanted.describe()} until they are resolved (finish them with "
            "memory-es drain under the root's own config, or resolve them) (B26)",
            code=REFUSED)
    return Root.reconfigured(version=version, at=at, **fields)


def journal_of(config: MemoryConfig | None) -> PostgresJournal | None:
    """Where ``config`` puts the journal: None for the root's own SQLite file (or, for a root
    made on PostgreSQL, the server its marker names), else the server ``memory.journal``
    names."""
    if config is None:
        return None
    dsn = config.journal.dsn
    return journal_target(config.journal.backend,
                          None if dsn is None else dsn.get_secret_value(),
                          config.journal.pg_schema)


def resolve_root(root: str | Path | None, config: MemoryConfig | None) -> Path:
    """--root wins, then ``memory.path`` from config (default ``./.memory``)."""
    if root is not None:
        return Path(root)
    return Path(config.path if config is not None else DEFAULT_PATH)
