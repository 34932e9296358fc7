"""The pydantic model of the `memory` config block: one frozen, strict class per block.

Attributes are snake_case, file keys camelCase; unknown keys, wrong types and (when loading a
file) JSON nulls are errors, never defaults or coercions (O1-O9). Field checks word their
problems through :mod:`memory_es.config.rules`, which also holds the cross-field rules that
:class:`MemoryConfig` enforces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from memory_es.config.defaults import (
    DEFAULT_EMBEDDINGS_DIM,
    DEFAULT_EMBEDDINGS_MODELS,
    DEFAULT_EMBEDDINGS_PROVIDER,
    DEFAULT_EMBEDDINGS_TIMEOUT_MS,
    DEFAULT_LLM_ENDPOINT,
    DEFAULT_LLM_TIMEOUT_MS,
    DEFAULT_MODE,
    DEFAULT_OPENAI_ENDPOINT,
    DEFAULT_PATH,
    DEFAULT_SCORING,
    DEFAULT_WRITE_MODE,
    FOCUS_MAX_BYTES,
    KEYED_PROVIDERS,
    LOCAL_EMBEDDINGS_DIM,
    LOCAL_MODELS,
    MAX_EMBEDDINGS_DIM,
    MAX_TIMEOUT_MS,
    CaptureKind,
    EmbeddingsProvider,
    LlmProvider,
    Mode,
    Scoring,
    WriteMode,
)
from memory_es.config.rules import NULL, RULES_ERROR, quote, rule, rule_errors

__all__ = [
    "DEFAULT_EMBEDDINGS_DIM",
    "DEFAULT_EMBEDDINGS_MODELS",
    "DEFAULT_EMBEDDINGS_PROVIDER",
    "DEFAULT_EMBEDDINGS_TIMEOUT_MS",
    "DEFAULT_LLM_ENDPOINT",
    "DEFAULT_LLM_TIMEOUT_MS",
    "DEFAULT_OPENAI_ENDPOINT",
    "FOCUS_MAX_BYTES",
    "KEYED_PROVIDERS",
    "LOADING",
    "LOCAL_EMBEDDINGS_DIM",
    "LOCAL_MODELS",
    "MAX_EMBEDDINGS_DIM",
    "MAX_TIMEOUT_MS",
    "CalibrationConfig",
    "CaptureConfig",
    "CaptureKind",
    "EmbeddingsConfig",
    "EmbeddingsProvider",
    "JournalConfig",
    "LlmConfig",
    "LlmProvider",
    "MemoryConfig",
    "OptInToggle",
    "ProfileConfig",
    "RecallConfig",
    "ToolToggle",
    "is_runtime_model_ref",
]

LOADING: Final = "memory_es.config.loading"  # validation-context flag set by parse_config

# provider:model, both non-empty, no whitespace; the model part may itself hold colons (qwen3:8b).
_RUNTIME_REF = re.compile(r"[^\s:]+:\S+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _checked_endpoint(value: str) -> str:
    """A provider endpoint: an http(s) URL without credentials, query or fragment. A URL that
    carries credentials is refused without echoing it (its password would be in the error)."""
    try:
        parts = urlsplit(value)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        userinfo = "@" in parts.netloc
    except ValueError:
        valid, userinfo = False, "@" in value
    if userinfo:
        raise rule("must not carry credentials (user:password@); name an environment "
                   "variable with apiKeyEnv")
    if not valid or any(ch.isspace() for ch in value) or _CONTROL.search(value):
        raise rule(f"must be an http(s) URL (got {quote(value)})")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise rule("must not carry a query or fragment")
    return value


def _checked_key_env(value: str | None, info: ValidationInfo) -> str | None:
    """``apiKeyEnv``: the name of the environment variable that holds the key, read only when
    the provider is built (never by a projection)."""
    if value is None:
        return None
    _keyed(info)
    if not _ENV_NAME.fullmatch(value):
        raise rule(f"must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), "
                   f"got {quote(value)}")
    return value


def _checked_key(value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
    """``apiKey``: a literal key (load_config reads it only from an owner-only file); never
    echoed in an error."""
    if value is None:
        return None
    _keyed(info)
    if info.data.get("api_key_env") is not None:
        raise rule("set apiKey or apiKeyEnv, not both")
    secret = value.get_secret_value()
    if not secret or any(ch.isspace() for ch in secret) or _CONTROL.search(secret):
        raise rule("must be a non-empty string without spaces or control characters")
    return value


def _keyed(info: ValidationInfo) -> None:
    """Only an OpenAI-compatible provider sends a key; elsewhere it would be silently unused."""
    provider = info.data.get("provider")
    if isinstance(provider, str) and provider not in KEYED_PROVIDERS:
        raise rule(f"provider {quote(provider)} sends no API key")


def is_runtime_model_ref(value: str) -> bool:
    """True for an agent-host runtime model ref `provider:model` (e.g. `openai-codex:gpt-6-sol`)."""
    return _RUNTIME_REF.fullmatch(value) is not None and _CONTROL.search(value) is None


class _Block(BaseModel):
    """Shared settings: strict, frozen, camelCase keys on input, unknown keys rejected (O7)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_type_errors(cls, data: Any, info: ValidationInfo) -> Any:
        """In a config file a JSON null is a wrong type, not "unset": omit the key instead."""
        loading = isinstance(info.context, Mapping) and bool(info.context.get(LOADING))
        if loading and isinstance(data, Mapping) and any(v is None for v in data.values()):
            return {k: (NULL if v is None else v) for k, v in data.items()}
        return data


class LlmConfig(_Block):
    """`memory.llm`: the chat model capture uses; required for BuJo (O4)."""

    provider: LlmProvider
    model: str
    endpoint: str = Field(default_factory=lambda data: _default_llm_endpoint(data))
    timeout_ms: int = Field(default=DEFAULT_LLM_TIMEOUT_MS, gt=0, le=MAX_TIMEOUT_MS)
    api_key_env: str | None = None
    api_key: SecretStr | None = None

    _key_env = field_validator("api_key_env")(_checked_key_env)
    _key = field_validator("api_key")(_checked_key)

    @field_validator("model")
    @classmethod
    def _model_matches_provider(cls, value: str, info: ValidationInfo) -> str:
        """agent-host resolves models through the runtime, so it needs a `provider:model` ref."""
        if not value.strip():
            raise rule("must be a non-empty string")
        if info.data.get("provider") == "agent-host" and not is_runtime_model_ref(value):
            raise rule(
                'provider "agent-host" requires a runtime model ref "provider:model" '
                f"(got {quote(value)})"
            )
        return value

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_http_url(cls, value: str) -> str:
        """The chat endpoint is an HTTP(S) URL; anything else cannot be called."""
        return _checked_endpoint(value)


def _default_llm_endpoint(data: dict[str, Any]) -> str:
    """Ollama's local server (the reference's default), or OpenAI's for provider openai."""
    return DEFAULT_OPENAI_ENDPOINT if data.get("provider") == "openai" else DEFAULT_LLM_ENDPOINT


def _default_embeddings_model(data: dict[str, Any]) -> str | None:
    """The embedding model default depends on the provider (SPEC O table)."""
    return DEFAULT_EMBEDDINGS_MODELS.get(data.get("provider", DEFAULT_EMBEDDINGS_PROVIDER))


def _default_embeddings_dim(data: dict[str, Any]) -> int:
    """768 (the reference's default); a local model has its own dimension."""
    if data.get("provider") == "local":
        return LOCAL_MODELS.get(str(data.get("model")), LOCAL_EMBEDDINGS_DIM)
    return DEFAULT_EMBEDDINGS_DIM


MAX_DIALOGUE_BOOST = 8.0
# a turn model's weight or offset: a number from -10 to 10 (recall.rank.turns.MAX_WEIGHT, which
# the fit keeps to; tests hold the two equal)
MAX_TURN_WEIGHT = 10.0


class TurnModelConfig(_Block):
    """`memory.embeddings.calibration.turnModel`: a conversation turn's score as a linear
    model, in units of its cosine (`memory_es.recall.rank.turns`); every weight required."""

    evidence: float
    neighbour_cosine: float
    neighbour_evidence: float
    length: float
    asking: float
    offset: float

    @field_validator("evidence", "neighbour_cosine", "neighbour_evidence", "length", "asking",
                     "offset")
    @classmethod
    def _bounded(cls, value: float) -> float:
        """A finite number from -10 to 10; NaN fails the check too."""
        if not -MAX_TURN_WEIGHT <= value <= MAX_TURN_WEIGHT:
            raise rule(f"must be a number from {-MAX_TURN_WEIGHT:g} to {MAX_TURN_WEIGHT:g} "
                       f"(got {value!r})")
        return value


class CalibrationConfig(_Block):
    """`memory.embeddings.calibration`: overrides the embedding identity's recall calibration
    (DESIGN 9.4). All five numbers are required when the block is present; each is in [0, 1].
    `memory-es calibrate LABELLED.json` prints a block fitted on the user's own questions.
    """

    no_evidence_cosine: float
    recall_floor: float
    recall_tail: float
    auto_floor: float
    auto_window: float
    lexical_weight: float | None = None  # hybrid scoring; None: the identity's shipped weight
    # a conversation turn's lexical weight, boost and neighbour support (hybrid); None: the
    # identity's shipped ones
    dialogue_weight: float | None = None
    dialogue_boost: float | None = None
    dialogue_support: float | None = None
    echo_removal: float | None = None  # share of the model's question axis taken out (hybrid)
    # a conversation turn's score as a linear model (hybrid); None: the dialogue numbers
    turn_model: TurnModelConfig | None = None

    @field_validator("no_evidence_cosine", "recall_floor", "recall_tail", "auto_floor",
                     "auto_window", "lexical_weight", "dialogue_weight", "dialogue_support",
                     "echo_removal")
    @classmethod
    def _unit_interval(cls, value: float | None) -> float | None:
        """Cosines, scores, windows and weights all live in [0, 1]; NaN fails the check too."""
        if value is not None and not 0.0 <= value <= 1.0:
            raise rule(f"must be a number from 0 to 1 (got {value!r})")
        return value

    @field_validator("dialogue_boost")
    @classmethod
    def _boost(cls, value: float | None) -> float | None:
        """An exponent from 1 (evidence as it is) to 8; NaN fails the check too."""
        if value is not None and not 1.0 <= value <= MAX_DIALOGUE_BOOST:
            raise rule(f"must be a number from 1 to {MAX_DIALOGUE_BOOST:g} (got {value!r})")
        return value

    @model_validator(mode="after")
    def _one_turn_score(self) -> CalibrationConfig:
        """A turn model replaces a turn's lexical weight and neighbour support: naming both
        would leave one of them unused."""
        if self.turn_model is not None:
            both = [name for name, value in (("dialogueWeight", self.dialogue_weight),
                                             ("dialogueSupport", self.dialogue_support))
                    if value is not None]
            if both:
                raise rule(f"turnModel replaces {' and '.join(both)}: give one or the other")
        return self


class EmbeddingsConfig(_Block):
    """`memory.embeddings`: Journal/BuJo require an explicit, non-empty block (O3).

    A block built with nothing set (`{}` or `EmbeddingsConfig()`) counts as empty.
    """

    provider: EmbeddingsProvider = DEFAULT_EMBEDDINGS_PROVIDER
    model: str | None = Field(default_factory=_default_embeddings_model)
    dim: int = Field(default_factory=_default_embeddings_dim, gt=0, le=MAX_EMBEDDINGS_DIM)
    calibration: CalibrationConfig | None = None
    endpoint: str | None = None  # None: the provider's own default server
    timeout_ms: int = Field(default=DEFAULT_EMBEDDINGS_TIMEOUT_MS, gt=0, le=MAX_TIMEOUT_MS)
    api_key_env: str | None = None
    api_key: SecretStr | None = None

    _key_env = field_validator("api_key_env")(_checked_key_env)
    _key = field_validator("api_key")(_checked_key)

    @field_validator("endpoint", "timeout_ms")
    @classmethod
    def _remote_only(cls, value: Any, info: ValidationInfo) -> Any:
        """The local provider runs in-process: a server or a timeout would be silently unused."""
        if info.data.get("provider") == "local":
            key = "endpoint" if info.field_name == "endpoint" else "timeoutMs"
            raise rule(f'provider "local" runs in-process and takes no {key}')
        return _checked_endpoint(value) if info.field_name == "endpoint" else value

    @model_validator(mode="after")
    def _local_is_one_model(self) -> EmbeddingsConfig:
        """The local provider runs only the models it ships; anything else would silently
        differ."""
        if self.provider == "local":
            if self.model is None or self.model not in LOCAL_MODELS:
                *others, last = (repr(m) for m in LOCAL_MODELS)
                raise rule(f'model: provider "local" ships {", ".join(others)} and {last}, '
                           f"not {self.model!r}")
            if self.dim != LOCAL_MODELS[self.model]:
                raise rule(f'dim: provider "local" model {self.model!r} is '
                           f"{LOCAL_MODELS[self.model]}-dimensional, not {self.dim}")
        return self

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str | None) -> str | None:
        """An explicit blank model would silently mean "some model": refuse it."""
        if value is not None and not value.strip():
            raise rule("must be a non-empty string")
        return value


class ToolToggle(_Block):
    """`memory.recallTool` / `memory.rememberTool`: on unless explicitly false."""

    enabled: bool = True


class OptInToggle(_Block):
    """`memory.forgetTool`: a destructive tool is off unless explicitly true."""

    enabled: bool = False


class CaptureConfig(_Block):
    """`memory.capture`: BuJo capture-mode tuning (A12, A15-A17, O6, O7)."""

    reconcile_model: str | None = None
    cron: bool = True
    webhook: bool = True
    focus: str | None = None
    only: tuple[CaptureKind, ...] | None = None
    intent_lifecycle: bool = False

    @field_validator("reconcile_model")
    @classmethod
    def _reconcile_model_is_runtime_ref(cls, value: str | None) -> str | None:
        """The classifier model runs through agent-host, so it must be a runtime ref (O7)."""
        if value is not None and not is_runtime_model_ref(value):
            raise rule(
                f'must be an agent-host runtime model ref "provider:model" (got {quote(value)})'
            )
        return value

    @field_validator("focus")
    @classmethod
    def _focus_fits(cls, value: str | None) -> str | None:
        """A15/O7: the cap is UTF-8 bytes, so multi-byte text reaches it sooner."""
        if value is not None:
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError:
                raise rule("must be valid Unicode text (found a lone surrogate)") from None
            if size > FOCUS_MAX_BYTES:
                raise rule(f"must be at most {FOCUS_MAX_BYTES} UTF-8 bytes (got {size})")
        return value

    @field_validator("only", mode="before")
    @classmethod
    def _only_from_array(cls, value: Any) -> Any:
        """JSON arrays decode to lists; store them as tuples so the frozen model is hashable."""
        return tuple(value) if isinstance(value, list) else value


class RecallConfig(_Block):
    """`memory.recall`: how recall scores (every tier) and the BuJo-only read policies,
    default off (O6). `scoring`: "hybrid" (default: lexical evidence fused with the cosine)
    or "reference" (the reference's embedding-first formula, exactly)."""

    scoring: Scoring = DEFAULT_SCORING
    intent_expiry: bool = False
    recency: bool = False


class ProfileConfig(_Block):
    """`memory.profile`: the optional owner profile (M1-M9), default off; `enabled: true`
    requires `memory.mode: "bujo"` (O5, checked in `config.rules`). Read by
    `recall.engine.Recaller.auto_block`."""

    enabled: bool = False


class JournalConfig(_Block):
    """`memory.journal`: where the journal is. `backend` "sqlite" (default): the
    root's own `journal.db`; "postgres": a PostgreSQL server that many hosts share, reached
    with `dsn` (a literal, read only from an owner-only file like `apiKey`; else
    `$MEMORY_ES_PG_DSN` when the store opens), its tables in `schema` (default "public")."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    dsn: SecretStr | None = None
    pg_schema: str = Field(default="public", alias="schema")

    @field_validator("dsn")
    @classmethod
    def _dsn_usable(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is None:
            return None
        if info.data.get("backend") != "postgres":
            raise rule('only the "postgres" backend takes a DSN')
        if not value.get_secret_value().strip() or _CONTROL.search(value.get_secret_value()):
            raise rule("must be a non-empty PostgreSQL DSN without control characters")
        return value

    @field_validator("pg_schema")
    @classmethod
    def _schema_usable(cls, value: str) -> str:
        if not value.isidentifier() or not value.isascii():
            raise rule(f"must be a plain SQL identifier, got {quote(value)}")
        return value


class MemoryConfig(_Block):
    """The whole `memory` block. Attributes are snake_case; file keys are camelCase."""

    mode: Mode = DEFAULT_MODE
    write_mode: WriteMode = DEFAULT_WRITE_MODE
    path: str = DEFAULT_PATH
    llm: LlmConfig | None = None
    embeddings: EmbeddingsConfig | None = None
    recall_tool: ToolToggle = Field(default_factory=ToolToggle)
    remember_tool: ToolToggle = Field(default_factory=ToolToggle)
    forget_tool: OptInToggle = Field(default_factory=OptInToggle)
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    max_bytes: int | None = Field(default=None, gt=0)
    journal: JournalConfig = Field(default_factory=JournalConfig)

    @property
    def tier(self) -> Mode:
        """The recall tier; an alias of `mode` that reads better at call sites."""
        return self.mode

    @property
    def is_capture(self) -> bool:
        """True only for BuJo with writeMode capture, the one combination that curates (A4)."""
        return self.mode == "bujo" and self.write_mode == "capture"

    @field_validator("path")
    @classmethod
    def _path_usable(cls, value: str) -> str:
        """An empty path or one holding NUL can never name the memory root."""
        if not value or "\x00" in value:
            raise rule("must be a non-empty path without NUL characters")
        return value

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> MemoryConfig:
        """O2-O7 rules that span keys; parse_config runs them itself to report every error."""
        if isinstance(info.context, Mapping) and info.context.get(LOADING):
            return self
        problems = rule_errors(self.model_dump(by_alias=True, exclude_unset=True))
        if problems:
            raise PydanticCustomError(RULES_ERROR, "{detail}", {"detail": "\n".join(problems)})
        return self
