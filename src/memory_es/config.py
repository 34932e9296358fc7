"""The `memory` config block: keys, defaults and validation (SPEC section O, DESIGN 9.13).

Config is strict on purpose: a typo, a wrong type or a setting the chosen tier cannot honour is an
error, never a silent default, coercion, fallback or tier downshift (O1-O9, A5). Every problem found
is reported at once, one line each, starting with the dotted camelCase key path, so an operator can
fix a file in one pass. No environment variable is ever consulted (O1).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from memory_es.errors import MemoryEsError

__all__ = [
    "DEFAULT_EMBEDDINGS_DIM",
    "DEFAULT_EMBEDDINGS_MODELS",
    "DEFAULT_EMBEDDINGS_PROVIDER",
    "DEFAULT_LLM_ENDPOINT",
    "DEFAULT_LLM_TIMEOUT_MS",
    "DEFAULT_MODE",
    "DEFAULT_PATH",
    "DEFAULT_WRITE_MODE",
    "FOCUS_MAX_BYTES",
    "CalibrationConfig",
    "CaptureConfig",
    "CaptureKind",
    "ConfigError",
    "EmbeddingsConfig",
    "EmbeddingsProvider",
    "LlmConfig",
    "LlmProvider",
    "MemoryConfig",
    "Mode",
    "ProfileConfig",
    "RecallConfig",
    "ToolToggle",
    "WriteMode",
    "is_runtime_model_ref",
    "load_config",
    "parse_config",
    "validate_file",
]

Mode = Literal["lite", "journal", "bujo"]
WriteMode = Literal["disabled", "append-host-summary", "capture"]
LlmProvider = Literal["ollama", "agent-host"]
EmbeddingsProvider = Literal["ollama", "lmstudio", "openai", "local"]
CaptureKind = Literal["fact", "preference", "lesson"]

# DESIGN 9.13: the reference states no default for these three.
DEFAULT_MODE: Final[Mode] = "lite"
DEFAULT_WRITE_MODE: Final[WriteMode] = "append-host-summary"
DEFAULT_PATH: Final = "./.memory"
# Defaults the reference states (SPEC O table).
DEFAULT_LLM_ENDPOINT: Final = "http://localhost:11434"
DEFAULT_LLM_TIMEOUT_MS: Final = 60000
DEFAULT_EMBEDDINGS_PROVIDER: Final[EmbeddingsProvider] = "ollama"
DEFAULT_EMBEDDINGS_DIM: Final = 768
DEFAULT_EMBEDDINGS_MODELS: Final[Mapping[str, str | None]] = {
    "ollama": "nomic-embed-text:v1.5",
    "lmstudio": "text-embedding-nomic-embed-text-v1.5",
    "openai": None,  # the reference states no default for openai
    "local": "all-MiniLM-L6-v2-onnx-int8",  # the offline provider (memory-es[local])
}
LOCAL_EMBEDDINGS_DIM: Final = 384
FOCUS_MAX_BYTES: Final = 2048  # A15: UTF-8 bytes, not characters

_MODES: Final = ("lite", "journal", "bujo")
_WRITE_MODES: Final = ("disabled", "append-host-summary", "capture")
_CAPTURE_MODE_KEYS: Final = ("reconcileModel", "cron", "webhook", "focus", "only")  # O6, A17
_RULE_ERROR: Final = "memory_config_rule"
_RULES_ERROR: Final = "memory_config_rules"
_LOADING: Final = "memory_es.config.loading"  # validation-context flag set by parse_config
_ROOT: Final = "memory"

# provider:model, both non-empty, no whitespace; the model part may itself hold colons (qwen3:8b).
_RUNTIME_REF = re.compile(r"[^\s:]+:\S+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


class ConfigError(MemoryEsError, ValueError):
    """Invalid memory config; `.errors` lists every problem found, one line each."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors: list[str] = list(errors)
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


class _Null:
    """Stands in for a JSON null so that strict validation reports it as a type error."""

    def __repr__(self) -> str:
        return "null"


_NULL: Final = _Null()


def _rule(message: str) -> PydanticCustomError:
    """A rule violation whose message is already in operator wording (no pydantic prefix)."""
    return PydanticCustomError(_RULE_ERROR, "{detail}", {"detail": message})


def _quote(value: str, limit: int = 80) -> str:
    """Echo a config value on one line: JSON-quoted, ASCII-escaped and bounded."""
    shown = value if len(value) <= limit else value[:limit] + "..."
    return json.dumps(shown, ensure_ascii=True)


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
        loading = isinstance(info.context, Mapping) and bool(info.context.get(_LOADING))
        if loading and isinstance(data, Mapping) and any(v is None for v in data.values()):
            return {k: (_NULL if v is None else v) for k, v in data.items()}
        return data


class LlmConfig(_Block):
    """`memory.llm`: the chat model capture uses; required for BuJo (O4)."""

    provider: LlmProvider
    model: str
    endpoint: str = DEFAULT_LLM_ENDPOINT
    timeout_ms: int = Field(default=DEFAULT_LLM_TIMEOUT_MS, gt=0)

    @field_validator("model")
    @classmethod
    def _model_matches_provider(cls, value: str, info: ValidationInfo) -> str:
        """agent-host resolves models through the runtime, so it needs a `provider:model` ref."""
        if not value.strip():
            raise _rule("must be a non-empty string")
        if info.data.get("provider") == "agent-host" and not is_runtime_model_ref(value):
            raise _rule(
                'provider "agent-host" requires a runtime model ref "provider:model" '
                f"(got {_quote(value)})"
            )
        return value

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_http_url(cls, value: str) -> str:
        """The Ollama chat endpoint is an HTTP(S) URL; anything else cannot be called."""
        try:
            parts = urlsplit(value)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            valid = False
        if not valid or any(ch.isspace() for ch in value) or _CONTROL.search(value):
            raise _rule(f"must be an http(s) URL (got {_quote(value)})")
        return value


def _default_embeddings_model(data: dict[str, Any]) -> str | None:
    """The embedding model default depends on the provider (SPEC O table)."""
    return DEFAULT_EMBEDDINGS_MODELS.get(data.get("provider", DEFAULT_EMBEDDINGS_PROVIDER))


def _default_embeddings_dim(data: dict[str, Any]) -> int:
    """768 (the reference's default); the offline local model is 384-dimensional."""
    local = data.get("provider") == "local"
    return LOCAL_EMBEDDINGS_DIM if local else DEFAULT_EMBEDDINGS_DIM


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

    @field_validator("*")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        """Cosines, scores and windows all live in [0, 1]; NaN fails the check too."""
        if not 0.0 <= value <= 1.0:
            raise _rule(f"must be a number from 0 to 1 (got {value!r})")
        return value


class EmbeddingsConfig(_Block):
    """`memory.embeddings`: Journal/BuJo require an explicit, non-empty block (O3).

    A block built with nothing set (`{}` or `EmbeddingsConfig()`) counts as empty.
    """

    provider: EmbeddingsProvider = DEFAULT_EMBEDDINGS_PROVIDER
    model: str | None = Field(default_factory=_default_embeddings_model)
    dim: int = Field(default_factory=_default_embeddings_dim, gt=0)
    calibration: CalibrationConfig | None = None

    @model_validator(mode="after")
    def _local_is_one_model(self) -> EmbeddingsConfig:
        """The local provider ships exactly one model; anything else would silently differ."""
        if self.provider == "local":
            if self.model != DEFAULT_EMBEDDINGS_MODELS["local"]:
                raise _rule(f'model: provider "local" has one model, '
                            f'{DEFAULT_EMBEDDINGS_MODELS["local"]!r}')
            if self.dim != LOCAL_EMBEDDINGS_DIM:
                raise _rule(f'dim: provider "local" is {LOCAL_EMBEDDINGS_DIM}-dimensional, '
                            f"not {self.dim}")
        return self

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str | None) -> str | None:
        """An explicit blank model would silently mean "some model": refuse it."""
        if value is not None and not value.strip():
            raise _rule("must be a non-empty string")
        return value


class ToolToggle(_Block):
    """`memory.recallTool` / `memory.rememberTool`: on unless explicitly false."""

    enabled: bool = True


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
            raise _rule(
                f'must be an agent-host runtime model ref "provider:model" (got {_quote(value)})'
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
                raise _rule("must be valid Unicode text (found a lone surrogate)") from None
            if size > FOCUS_MAX_BYTES:
                raise _rule(f"must be at most {FOCUS_MAX_BYTES} UTF-8 bytes (got {size})")
        return value

    @field_validator("only", mode="before")
    @classmethod
    def _only_from_array(cls, value: Any) -> Any:
        """JSON arrays decode to lists; store them as tuples so the frozen model is hashable."""
        return tuple(value) if isinstance(value, list) else value


class RecallConfig(_Block):
    """`memory.recall`: BuJo-only read policies, default off (O6)."""

    intent_expiry: bool = False
    recency: bool = False


class ProfileConfig(_Block):
    """`memory.profile`: the optional BuJo owner profile, default off (O5)."""

    enabled: bool = False


class MemoryConfig(_Block):
    """The whole `memory` block. Attributes are snake_case; file keys are camelCase."""

    mode: Mode = DEFAULT_MODE
    write_mode: WriteMode = DEFAULT_WRITE_MODE
    path: str = DEFAULT_PATH
    llm: LlmConfig | None = None
    embeddings: EmbeddingsConfig | None = None
    recall_tool: ToolToggle = Field(default_factory=ToolToggle)
    remember_tool: ToolToggle = Field(default_factory=ToolToggle)
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    max_bytes: int | None = Field(default=None, gt=0)

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
            raise _rule("must be a non-empty path without NUL characters")
        return value

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> MemoryConfig:
        """O2-O7 rules that span keys; parse_config runs them itself to report every error."""
        if isinstance(info.context, Mapping) and info.context.get(_LOADING):
            return self
        problems = _rule_errors(self.model_dump(by_alias=True, exclude_unset=True))
        if problems:
            raise PydanticCustomError(_RULES_ERROR, "{detail}", {"detail": "\n".join(problems)})
        return self


# --- cross-field rules -------------------------------------------------------------------------


def _choice(
    block: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str
) -> str | None:
    """The effective value of an enum key, or None when it is invalid (reported elsewhere)."""
    value = block.get(key, default)
    return value if isinstance(value, str) and value in allowed else None


def _sub(block: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A nested block as a mapping; a missing or malformed one reads as empty."""
    value = block.get(key)
    return value if isinstance(value, Mapping) else {}


def _rule_errors(block: Mapping[str, Any]) -> list[str]:
    """Rules that depend on several keys or on which keys were set (A5, O2-O7).

    Works on the raw camelCase block so it can run even when some field failed validation;
    a key whose value is null/None counts as not set.
    """
    errors: list[str] = []
    mode = _choice(block, "mode", _MODES, DEFAULT_MODE)
    write_mode = _choice(block, "writeMode", _WRITE_MODES, DEFAULT_WRITE_MODE)

    # O2 / A5: no downshift, no fallback.
    if mode is not None and mode != "bujo" and write_mode == "capture":
        errors.append('memory.writeMode: "capture" requires memory.mode "bujo"')

    # O3: Journal and BuJo need an explicit, non-empty embeddings block.
    if mode in ("journal", "bujo"):
        embeddings = block.get("embeddings")
        if embeddings is None:
            errors.append(
                f'memory.embeddings: memory.mode "{mode}" requires an explicit, non-empty block'
            )
        elif isinstance(embeddings, Mapping) and not embeddings:
            errors.append(
                f'memory.embeddings: {{}} is empty; memory.mode "{mode}" requires an explicit, '
                "non-empty block"
            )

    # O4: BuJo curation needs a chat model.
    if mode == "bujo" and block.get("llm") is None:
        errors.append('memory.llm: memory.mode "bujo" requires a memory.llm block')

    # O5
    if mode is not None and mode != "bujo" and _sub(block, "profile").get("enabled") is True:
        errors.append('memory.profile.enabled: true requires memory.mode "bujo"')

    # O6 / A17: capture tuning only means something in BuJo capture mode.
    capture = _sub(block, "capture")
    outside_capture = (mode is not None and mode != "bujo") or (
        write_mode is not None and write_mode != "capture"
    )
    if outside_capture:
        for key in _CAPTURE_MODE_KEYS:
            if capture.get(key) is not None:
                errors.append(
                    f'memory.capture.{key}: requires memory.mode "bujo" with '
                    'memory.writeMode "capture"'
                )
    if mode is not None and mode != "bujo":
        recall = _sub(block, "recall")
        switches = (
            ("capture.intentLifecycle", capture.get("intentLifecycle")),
            ("recall.intentExpiry", recall.get("intentExpiry")),
            ("recall.recency", recall.get("recency")),
        )
        for key, value in switches:
            if value is True:
                errors.append(f'memory.{key}: BuJo-only; requires memory.mode "bujo"')

    # O7 / A16: `only` is a set of kinds; a repeated kind is a mistake, not a no-op.
    only = capture.get("only")
    if isinstance(only, list | tuple):
        seen: set[str] = set()
        for index, kind in enumerate(only):
            if isinstance(kind, str):
                if kind in seen:
                    errors.append(f"memory.capture.only[{index}]: duplicate {_quote(kind)}")
                seen.add(kind)
    return errors


# --- pydantic error translation ----------------------------------------------------------------

_EXPECTED: Final[Mapping[str, str]] = {
    "bool_type": "boolean",
    "int_type": "integer",
    "float_type": "number",
    "string_type": "string",
    "list_type": "array",
    "tuple_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for "expected X, got Y" messages."""
    if value is None or isinstance(value, _Null):
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _key_path(loc: Iterable[int | str], root: str = _ROOT) -> str:
    """Map a pydantic loc to `memory.capture.only[2]`; odd keys are JSON-quoted to stay one line."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{_quote(part)}]"
    return path


def _literal_choices(expected: str) -> str:
    """Turn pydantic's "'a', 'b' or 'c'" into "a, b, c"."""
    return ", ".join(re.findall(r"'([^']*)'", expected))


def _translate(error: Mapping[str, Any]) -> list[str]:
    """One pydantic error as operator-facing lines (usually one)."""
    kind: str = error["type"]
    path = _key_path(error["loc"])
    value = error.get("input")
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    if kind == "default_factory_not_called":
        return []  # a consequence of another reported error
    if kind == _RULES_ERROR:
        return str(ctx.get("detail", "")).splitlines()
    if kind == _RULE_ERROR:
        return [f"{path}: {ctx.get('detail', '')}"]
    if kind == "extra_forbidden":
        return [f"{path}: unknown key"]
    if kind == "missing":
        return [f"{path}: required key is missing"]
    if kind in _EXPECTED:
        return [f"{path}: expected {_EXPECTED[kind]}, got {_json_type(value)}"]
    if kind == "literal_error":
        if not isinstance(value, str):
            return [f"{path}: expected string, got {_json_type(value)}"]
        choices = _literal_choices(str(ctx.get("expected", "")))
        return [f"{path}: {_quote(value)} is not one of {choices}"]
    if kind == "greater_than" and ctx.get("gt") == 0:
        return [f"{path}: must be a positive integer"]
    return [f"{path}: {error.get('msg', kind)}"]


def _format_validation_error(exc: ValidationError) -> list[str]:
    """Every pydantic error as one-line, key-path-first messages."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        lines.extend(_translate(error))
    return lines


# --- loading -----------------------------------------------------------------------------------


def _unwrap(obj: object) -> object:
    """`{"memory": {...}}` (only that key) is the wrapper form; anything else is the block."""
    if isinstance(obj, Mapping) and len(obj) == 1 and _ROOT in obj:
        return obj[_ROOT]
    return obj


def _dedupe(lines: Iterable[str]) -> list[str]:
    """Drop repeated lines, keeping first-seen order."""
    return list(dict.fromkeys(lines))


def parse_config(obj: object) -> MemoryConfig:
    """Validate an already-decoded JSON value: the wrapper form or the bare block.

    Raises ConfigError listing every problem: field errors and cross-field rules together.
    """
    block = _unwrap(obj)
    if not isinstance(block, Mapping):
        raise ConfigError([f"{_ROOT}: expected object, got {_json_type(block)}"])
    raw = dict(block)
    errors: list[str] = []
    config: MemoryConfig | None = None
    try:
        config = MemoryConfig.model_validate(
            raw, strict=True, by_alias=True, by_name=False, context={_LOADING: True}
        )
    except ValidationError as exc:
        errors.extend(_format_validation_error(exc))
    errors.extend(_rule_errors(raw))
    errors = _dedupe(errors)
    if errors or config is None:
        raise ConfigError(errors or [f"{_ROOT}: invalid config"])
    return config


class _JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys appeared more than once."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    """object_pairs_hook: keep the object but record duplicate keys instead of last-wins."""
    obj = _JsonObject()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


class _JsonConstantError(ValueError):
    """NaN / Infinity: accepted by Python's json module, but not JSON."""


def _reject_constant(name: str) -> Any:
    """parse_constant hook: NaN and Infinity are not JSON values."""
    raise _JsonConstantError(name)


def _duplicate_errors(value: object, path: str) -> list[str]:
    """Walk the decoded document and report each duplicated key by its dotted path."""
    errors: list[str] = []
    if isinstance(value, _JsonObject):
        for key in value.duplicates:
            errors.append(f"{_child_path(path, key)}: duplicate key")
        for key, child in value.items():
            errors.extend(_duplicate_errors(child, _child_path(path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            errors.extend(_duplicate_errors(child, f"{path}[{index}]"))
    return errors


def _child_path(path: str, key: str) -> str:
    """`path.key`, or the key alone at the top of a wrapper document (path "")."""
    return _key_path([key], path) if path else _key_path([], key)


def _plain(value: object) -> object:
    """Copy decoded JSON into plain dicts so validation sees ordinary containers."""
    if isinstance(value, dict):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_plain(child) for child in value]
    return value


def load_config(path: str | os.PathLike[str] | None) -> MemoryConfig:
    """Read and validate a JSON config file; None means all defaults (Lite, O1).

    Duplicate keys, NaN/Infinity and non-UTF-8 bytes are errors rather than being guessed at.
    """
    if path is None:
        return MemoryConfig()
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise ConfigError([f"{name}: config file not found"]) from None
    except OSError as exc:
        raise ConfigError([f"{name}: cannot read config file: {exc.strerror or exc}"]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{name}: config file is not valid UTF-8 (byte {exc.start})"]) from None
    try:
        document = json.loads(
            text, object_pairs_hook=_object_pairs, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [f"{name}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
        ) from None
    except _JsonConstantError as exc:
        raise ConfigError([f"{name}: invalid JSON: {exc} is not a JSON value"]) from None
    except RecursionError:
        raise ConfigError([f"{name}: invalid JSON: nested too deeply"]) from None

    wrapped = isinstance(document, Mapping) and len(document) == 1 and _ROOT in document
    errors = _duplicate_errors(document, "" if wrapped else _ROOT)
    try:
        config = parse_config(_plain(document))
    except ConfigError as exc:
        errors.extend(exc.errors)
    else:
        if not errors:
            return config
    raise ConfigError(_dedupe(errors))


def validate_file(path: str | os.PathLike[str] | None) -> list[str]:
    """Error lines for a config file, [] when valid; backs the `memory-es validate` command."""
    try:
        load_config(path)
    except ConfigError as exc:
        return list(exc.errors)
    return []
