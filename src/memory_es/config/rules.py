"""What a valid `memory` block is beyond each key's type, and how problems are worded.

The cross-field rules (A5, O2-O7) work on the raw camelCase block, so they run even when some
field failed validation; pydantic's errors are translated into the same one-line,
key-path-first messages (`memory.capture.only[2]: ...`), so an operator sees every problem at
once, in one style.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from memory_es.config.defaults import (
    DEFAULT_MODE,
    DEFAULT_PATH,
    DEFAULT_WRITE_MODE,
    Mode,
    WriteMode,
)

__all__ = [
    "DEFAULT_MODE",
    "DEFAULT_PATH",
    "DEFAULT_WRITE_MODE",
    "NULL",
    "ROOT",
    "RULES_ERROR",
    "Mode",
    "Null",
    "WriteMode",
    "format_validation_error",
    "json_type",
    "key_path",
    "quote",
    "rule",
    "rule_errors",
]


_MODES: Final = ("lite", "journal", "bujo")
_WRITE_MODES: Final = ("disabled", "append-host-summary", "capture")
_CAPTURE_MODE_KEYS: Final = ("reconcileModel", "cron", "webhook", "focus", "only")  # O6, A17
_RULE_ERROR: Final = "memory_config_rule"
RULES_ERROR: Final = "memory_config_rules"
ROOT: Final = "memory"

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


class Null:
    """Stands in for a JSON null so that strict validation reports it as a type error."""

    def __repr__(self) -> str:
        return "null"


NULL: Final = Null()


def rule(message: str) -> PydanticCustomError:
    """A rule violation whose message is already in operator wording (no pydantic prefix)."""
    return PydanticCustomError(_RULE_ERROR, "{detail}", {"detail": message})


def quote(value: str, limit: int = 80) -> str:
    """Echo a config value on one line: JSON-quoted, ASCII-escaped and bounded."""
    shown = value if len(value) <= limit else value[:limit] + "..."
    return json.dumps(shown, ensure_ascii=True)


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


def rule_errors(block: Mapping[str, Any]) -> list[str]:
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
    if mode == "bujo" and write_mode is not None and write_mode != "capture" and \
            capture.get("intentLifecycle") is True:  # M13: a switch that would do nothing
        errors.append('memory.capture.intentLifecycle: requires memory.writeMode "capture"')
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
                    errors.append(f"memory.capture.only[{index}]: duplicate {quote(kind)}")
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


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for "expected X, got Y" messages."""
    if value is None or isinstance(value, Null):
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


def key_path(loc: Iterable[int | str], root: str = ROOT) -> str:
    """Map a pydantic loc to `memory.capture.only[2]`; odd keys are JSON-quoted to stay one line."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{quote(part)}]"
    return path


def _literal_choices(expected: str) -> str:
    """Turn pydantic's "'a', 'b' or 'c'" into "a, b, c"."""
    return ", ".join(re.findall(r"'([^']*)'", expected))


def _translate(error: Mapping[str, Any]) -> list[str]:
    """One pydantic error as operator-facing lines (usually one)."""
    kind: str = error["type"]
    path = key_path(error["loc"])
    value = error.get("input")
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    if kind == "default_factory_not_called":
        return []  # a consequence of another reported error
    if kind == RULES_ERROR:
        return str(ctx.get("detail", "")).splitlines()
    if kind == _RULE_ERROR:
        return [f"{path}: {ctx.get('detail', '')}"]
    if kind == "extra_forbidden":
        return [f"{path}: unknown key"]
    if kind == "missing":
        return [f"{path}: required key is missing"]
    if kind in _EXPECTED:
        return [f"{path}: expected {_EXPECTED[kind]}, got {json_type(value)}"]
    if kind == "literal_error":
        if not isinstance(value, str):
            return [f"{path}: expected string, got {json_type(value)}"]
        choices = _literal_choices(str(ctx.get("expected", "")))
        return [f"{path}: {quote(value)} is not one of {choices}"]
    if kind == "greater_than" and ctx.get("gt") == 0:
        return [f"{path}: must be a positive integer"]
    if kind == "less_than_equal" and isinstance(value, int):
        shown = str(value) if len(str(value)) <= 24 else f"a {len(str(value))}-digit number"
        return [f"{path}: must be an integer from 1 to {ctx.get('le')} (got {shown})"]
    return [f"{path}: {error.get('msg', kind)}"]


def format_validation_error(exc: ValidationError) -> list[str]:
    """Every pydantic error as one-line, key-path-first messages."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        lines.extend(_translate(error))
    return lines
