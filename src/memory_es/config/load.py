"""Reading a `memory` config: a decoded JSON value (parse_config) or a file (load_config).

A document is the `memory` block itself or a host's whole config with the block under
`memory` (the host's other sections are not read). A file is strict JSON: duplicate keys,
NaN/Infinity and non-UTF-8 bytes are errors rather than being guessed at. Field errors,
cross-field rules and file problems are all reported together in one
:class:`~memory_es.errors.ConfigError`, one line each. No environment variable is ever
consulted here (O1): ``apiKeyEnv`` is only a name until a provider is built.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_es.config.model import LOADING, MemoryConfig
from memory_es.config.rules import ROOT, format_validation_error, json_type, key_path, rule_errors
from memory_es.errors import ConfigError
from memory_es.jsonobject import JsonObject, object_pairs

__all__ = ["is_host_file", "load_config", "parse_config", "validate_file"]

# The block's file keys (camelCase), to tell a bare block from something else.
_BLOCK_KEYS: frozenset[str] = frozenset(
    field.alias or name for name, field in MemoryConfig.model_fields.items()
)


def is_host_file(obj: object) -> bool:
    """A document with a top-level ``memory`` key is a host's config (``{"memory": {...}}``
    alone, or beside the host's own sections); anything else is the memory block itself."""
    return isinstance(obj, Mapping) and ROOT in obj


def _unwrap(obj: object) -> object:
    """The memory block of a host config, or the document itself when it is the block."""
    return obj[ROOT] if isinstance(obj, Mapping) and is_host_file(obj) else obj


def _shape_error(obj: object) -> str | None:
    """The one precise error for an object that is neither shape: no ``memory`` key and not
    one key of the block (a block with some known keys gets an error per unknown key)."""
    if not isinstance(obj, Mapping) or not obj or is_host_file(obj):
        return None
    if any(key in MemoryConfig.model_fields or key in _BLOCK_KEYS for key in obj):
        return None
    keys = ", ".join(json.dumps(str(key), ensure_ascii=True) for key in obj)
    return (f'{ROOT}: neither a memory block nor a host config with a "{ROOT}" object '
            f"(top-level keys: {keys})")


def _dedupe(lines: Iterable[str]) -> list[str]:
    """Drop repeated lines, keeping first-seen order."""
    return list(dict.fromkeys(lines))


def parse_config(obj: object) -> MemoryConfig:
    """Validate an already-decoded JSON value: a host config (its ``memory`` object is read,
    every other top-level key is the host's and ignored) or the bare block.

    Raises ConfigError listing every problem: field errors and cross-field rules together.
    """
    shape = _shape_error(obj)
    if shape is not None:
        raise ConfigError([shape])
    block = _unwrap(obj)
    if not isinstance(block, Mapping):
        raise ConfigError([f"{ROOT}: expected object, got {json_type(block)}"])
    raw = dict(block)
    errors: list[str] = []
    config: MemoryConfig | None = None
    try:
        config = MemoryConfig.model_validate(
            raw, strict=True, by_alias=True, by_name=False, context={LOADING: True}
        )
    except ValidationError as exc:
        errors.extend(format_validation_error(exc))
    errors.extend(rule_errors(raw))
    errors = _dedupe(errors)
    if errors or config is None:
        raise ConfigError(errors or [f"{ROOT}: invalid config"])
    return config


class _JsonConstantError(ValueError):
    """NaN / Infinity: accepted by Python's json module, but not JSON."""


def _reject_constant(name: str) -> Any:
    """parse_constant hook: NaN and Infinity are not JSON values."""
    raise _JsonConstantError(name)


def _duplicate_errors(value: object, path: str) -> list[str]:
    """Walk the decoded document and report each duplicated key by its dotted path."""
    errors: list[str] = []
    if isinstance(value, JsonObject):
        for key in value.duplicates:
            errors.append(f"{key_path([key], path)}: duplicate key")
        for key, child in value.items():
            errors.extend(_duplicate_errors(child, key_path([key], path)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            errors.extend(_duplicate_errors(child, f"{path}[{index}]"))
    return errors


MAX_DEPTH = 32  # the memory block nests 4 levels; deeper is never a config


def _depth(document: object) -> int:
    """How deeply arrays and objects nest (iterative: a hostile file cannot overflow it)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else \
            value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _plain(value: object) -> object:
    """Copy decoded JSON into plain dicts so validation sees ordinary containers."""
    if isinstance(value, dict):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_plain(child) for child in value]
    return value


def _key_file_errors(name: str, block: object, stat: os.stat_result) -> list[str]:
    """A literal ``apiKey`` is read only from an owner-only file (no group or other access,
    owned by this user); one line per key otherwise, naming the file, never the key."""
    if not isinstance(block, Mapping):
        return []
    keyed = [f"{section}.{key}" for section, key in (("llm", "apiKey"), ("embeddings", "apiKey"),
                                                    ("journal", "dsn"))
             if isinstance(block.get(section), Mapping) and key in block[section]]
    if not keyed:
        return []
    problems = []
    if stat.st_mode & 0o077:
        problems.append(f"mode {stat.st_mode & 0o7777:04o}")
    if stat.st_uid != os.geteuid():
        problems.append(f"owned by uid {stat.st_uid}")
    if not problems:
        return []
    return [f"{name}: {ROOT}.{field}: a literal {_SECRET_WHAT[field]} is read only from an "
            f"owner-only file (mode 0600, owned by you; this one is {' and '.join(problems)}): "
            f"chmod 600 it, or {_SECRET_ELSE[field]}" for field in keyed]


_SECRET_WHAT = {"llm.apiKey": "API key", "embeddings.apiKey": "API key",
                "journal.dsn": "PostgreSQL DSN"}
_SECRET_ELSE = {"llm.apiKey": "name an environment variable with apiKeyEnv",
                "embeddings.apiKey": "name an environment variable with apiKeyEnv",
                "journal.dsn": "set $MEMORY_ES_PG_DSN instead"}


def load_config(path: str | os.PathLike[str] | None) -> MemoryConfig:
    """Read and validate a JSON config file; None means all defaults (Lite, O1).

    Duplicate keys, NaN/Infinity and non-UTF-8 bytes are errors rather than being guessed at.
    The file may be a host's whole config (the ``memory`` object is read). A literal
    ``apiKey`` is accepted only from an owner-only file (mode 0600 or stricter, owned by
    this user); ``apiKeyEnv`` names an environment variable instead, read only when the
    provider is built.
    """
    if path is None:
        return MemoryConfig()
    name = os.fspath(path)
    try:
        with Path(name).open("rb") as handle:
            data = handle.read()
            stat = os.fstat(handle.fileno())  # the file read, not what the path names later
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
            text, object_pairs_hook=object_pairs, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [f"{name}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
        ) from None
    except _JsonConstantError as exc:
        raise ConfigError([f"{name}: invalid JSON: {exc} is not a JSON value"]) from None
    except RecursionError:
        raise ConfigError([f"{name}: invalid JSON: nested too deeply"]) from None
    except ValueError as exc:  # an integer past Python's digit limit (4,300 digits)
        raise ConfigError([f"{name}: invalid JSON: a number has more than "
                           f"{sys.get_int_max_str_digits()} digits ({type(exc).__name__})"]) \
            from None
    if _depth(document) > MAX_DEPTH:
        raise ConfigError([f"{name}: invalid JSON: nested more than {MAX_DEPTH} levels deep "
                           "(a memory config nests 4)"])

    if isinstance(document, JsonObject) and is_host_file(document):
        # The host's own sections are not ours to judge; only `memory` and what it holds are.
        errors = [f"{ROOT}: duplicate key"] if ROOT in document.duplicates else []
        errors.extend(_duplicate_errors(document[ROOT], ROOT))
    else:
        errors = _duplicate_errors(document, ROOT)
    errors.extend(_key_file_errors(name, _unwrap(document), stat))
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


def config_notices(config: MemoryConfig) -> list[str]:
    """What a valid config should be checked against before it runs: ``intentExpiry``
    changes how stored dated and done lines read, which nothing stored can settle (M26), so
    it points to the reviewed step (C14)."""
    if config.mode == "bujo" and config.recall.intent_expiry:
        return ["memory.recall.intentExpiry: before enabling it, drain pending capture and "
                "review the dated and done lines it reads differently with `memory-es curate "
                "audit` (C14, M26)"]
    return []
