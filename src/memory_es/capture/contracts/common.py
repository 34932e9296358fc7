"""What the three capture-model contracts share (SPEC E6, E8-E10; DESIGN 6, 9.11).

:func:`decode` checks a completion in this order: at most 262,144 UTF-16 code units, counted
before parsing (E9); one valid JSON value with no duplicate key in any object (E6); a strict
msgspec decode into the stage's Structs: no unknown or missing field, no coercion, the field
constraints stated as ``msgspec.Meta`` (E10); then the Structs' ``__post_init__`` rules (unsafe
text, UTF-8 byte bounds, distinct values). Any violation is a ``model_invalid_output``
:class:`~memory_es.capture.models.ModelError` (E8) whose message is one content-free line,
``<json path>: <rule>``: numbers and our own field names, never model text.

Unsafe text: C0/C1 controls other than tab, bidi embeddings, overrides and isolates, lone
surrogates, ``<!--`` and ``-->``, and credentials (:mod:`memory_es.credentials`: detect-secrets'
detectors and a few targeted rules, on the text's NFKC form without zero-width characters). It
rejects the whole value and is never cleaned.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Annotated, Any, Final, TypeVar

import msgspec

from memory_es.capture.models import INVALID_OUTPUT, ModelError
from memory_es.credentials import CREDENTIAL_RULE, looks_like_credential
from memory_es.jsonobject import JsonObject, object_pairs
from memory_es.text import UNSAFE_CHARS

MAX_COMPLETION_UTF16: Final = 262_144  # E9: JavaScript characters
TEXT_MAX_BYTES: Final = 2_048  # memory / replacement text, UTF-8 bytes (our bound)
NAME_MAX_BYTES: Final = 256  # entity name, fact value, target id, UTF-8 bytes (our bound)

# msgspec applies a pattern with re.search: \A and \Z anchor it (``$`` would pass "e1\n").
ENTITY_ID_PATTERN: Final = r"\A[a-z][a-z0-9_-]{0,31}\Z"
WORD_PATTERN: Final = r"\A[a-z][a-z0-9_]{0,63}\Z"
NOT_BLANK_PATTERN: Final = r"\S"  # \s is exactly str.isspace, so this is ``text.strip()``

EntityId = Annotated[str, msgspec.Meta(pattern=ENTITY_ID_PATTERN)]
Word = Annotated[str, msgspec.Meta(pattern=WORD_PATTERN)]  # a relation, type or fact key (E11)
NonBlank = Annotated[str, msgspec.Meta(pattern=NOT_BLANK_PATTERN)]
Index = Annotated[int, msgspec.Meta(ge=0)]
Salience = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]  # never clamped (E10)

# Our wording for each msgspec.Meta constraint, keyed by how msgspec reports it.
_PATTERN_RULES: Final = {
    f"Expected `str` matching regex {ENTITY_ID_PATTERN!r}":
        "is not an entity id [a-z][a-z0-9_-]{0,31}",
    f"Expected `str` matching regex {WORD_PATTERN!r}":
        "is not a lowercase word [a-z][a-z0-9_]{0,63}",
    f"Expected `str` matching regex {NOT_BLANK_PATTERN!r}": "must not be blank",
}
_NEGATIVE: Final = "Expected `int` >= 0"
_OUTSIDE_SALIENCE: Final = ("Expected `float` >= 0.0", "Expected `float` <= 1.0")
_TOO_LONG = re.compile(r"Expected `array` of length <= (\d+)")

_UNSAFE_CHARS = re.compile(f"[{UNSAFE_CHARS}\ud800-\udfff]")  # and lone surrogates
_COMMENT = re.compile("<!--|-->")
S = TypeVar("S")


def utf16_length(text: str) -> int:
    """``text``'s length in UTF-16 code units (JavaScript characters, E9)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def check_safe_text(text: str) -> str | None:
    """The name of the unsafe-text rule ``text`` breaks (DESIGN 9.11), or ``None`` if safe."""
    if _UNSAFE_CHARS.search(text):
        return "contains a control, bidi or surrogate character"
    if _COMMENT.search(text):
        return "contains an HTML comment marker"
    if looks_like_credential(text):  # detect-secrets and targeted rules (memory_es.credentials)
        return CREDENTIAL_RULE
    return None


def text_rule(value: str, max_bytes: int) -> str | None:
    """The rule a (non-blank) text breaks: unsafe, or over ``max_bytes`` UTF-8 bytes."""
    unsafe = check_safe_text(value)
    if unsafe is not None:
        return unsafe
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        return f"is {size} UTF-8 bytes, more than {max_bytes}"
    return None


def require(field: str, rule: str | None) -> None:
    """Fail a ``__post_init__`` with ``field: rule`` (msgspec adds the object's path)."""
    if rule is not None:
        raise ValueError(f"{field}: {rule}")


def distinct(field: str, values: Sequence[str]) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"{field}: repeats a value")


class Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every contract Struct: frozen, no unknown field."""


def invalid(message: str) -> ModelError:
    return ModelError(message, code=INVALID_OUTPUT)


@functools.cache
def _field_names() -> frozenset[str]:
    """Every JSON field name of the contracts: the only keys a message may show. Read on the
    first parse, after the package has imported every contract module."""
    names: set[str] = set()
    structs: list[type[Strict]] = [Strict]
    while structs:
        struct = structs.pop()
        structs.extend(struct.__subclasses__())
        names.update(field.encode_name for field in msgspec.structs.fields(struct))
        if struct.__struct_config__.tag_field is not None:
            names.add(struct.__struct_config__.tag_field)
    return frozenset(names)


def _shown_key(key: str) -> str:
    """A key as a message may show it: one of our field names, else ``<key>`` (content-free)."""
    return key if key in _field_names() else "<key>"


def _find_duplicate(value: Any, path: str) -> str | None:
    if isinstance(value, JsonObject):
        if value.duplicates:
            return f"{path or '$'}: duplicate key {_shown_key(value.duplicates[0])!r}"
        for key, child in value.items():
            shown = _shown_key(key)
            found = _find_duplicate(child, f"{path}.{shown}" if path else shown)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found = _find_duplicate(child, f"{path}[{i}]")
            if found is not None:
                return found
    return None


_AT = re.compile(r"^(?P<head>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_FIELD_RULE = re.compile(r"^(?P<field>[A-Za-z_][A-Za-z0-9_\[\].]*): (?P<rule>.*)$", re.DOTALL)


def _safe_path(path: str) -> str:
    """A msgspec path made only of our field names and indices; anything else (a model key
    that forged a path) is replaced by ``$``, so no model text reaches a message."""
    pos = 0
    while pos < len(path):
        part = _PATH_PART.match(path, pos)
        if part is None or (part.group(1) is not None and part.group(1) not in _field_names()):
            return ""
        pos = part.end()
    return path


def _meta_rule(head: str, path: str, tree: Any) -> str | None:
    """Our wording for a ``msgspec.Meta`` constraint that the value at ``path`` broke (the
    number is read back from the parsed JSON), or ``None`` if ``head`` is not one."""
    rule = _PATTERN_RULES.get(head)
    if rule is not None or not path:
        return rule
    value = tree
    try:
        for part in _PATH_PART.finditer(path):
            name, index = part.groups()
            value = value[name] if name is not None else value[int(index)]
    except (KeyError, IndexError, TypeError):
        return None
    if head == _NEGATIVE and isinstance(value, int):
        return f"{value} is negative"
    if head in _OUTSIDE_SALIENCE and isinstance(value, int | float):
        return f"{float(value)!r} is outside 0..1"
    too_long = _TOO_LONG.fullmatch(head)
    if too_long is not None and isinstance(value, list):
        return f"has {len(value)} items, more than {too_long.group(1)}"
    return None


def _content_free(error: msgspec.ValidationError, tree: Any) -> str:
    """``path: rule`` from a msgspec validation error, without any model-supplied string."""
    match = _AT.match(str(error))
    head = match.group("head") if match else str(error)
    path = _safe_path(((match.group("path") or "") if match else "").lstrip("."))
    fr = _FIELD_RULE.match(head)
    if fr is not None:  # one of our __post_init__ rules: "field: rule"
        field = fr.group("field")
        full = f"{path}.{field}" if path and not field.startswith("[") else path + field
        return f"{full}: {fr.group('rule')}"
    rule = _meta_rule(head, path, tree)
    return f"{path or '$'}: {_msgspec_rule(head) if rule is None else rule}"


def _msgspec_rule(head: str) -> str:
    """msgspec's own rule text, with any quoted (possibly model-supplied) string elided."""
    if head.startswith("Object contains unknown field"):
        return "unknown field"
    if head.startswith(("Invalid enum value", "Invalid value")):
        return "value is not one of the allowed values"
    if head.startswith("Object missing required field"):
        return head.replace("Object missing", "missing")
    return re.sub(r"'[^']*'", "'...'", head)


def decode(raw: str, kind: type[S]) -> S:
    """``raw`` as one ``kind``: the size cap, duplicate keys, then msgspec (see above)."""
    if not isinstance(raw, str):
        raise invalid(f"$: completion must be text, got {type(raw).__name__}")
    length = utf16_length(raw)
    if length > MAX_COMPLETION_UTF16:  # E9, before any parsing
        raise invalid(
            f"$: completion is {length} UTF-16 code units, more than {MAX_COMPLETION_UTF16}"
        )
    try:
        tree = json.loads(raw, object_pairs_hook=object_pairs)
    except (ValueError, RecursionError) as e:
        raise invalid("$: not one valid JSON value") from e
    duplicate = _find_duplicate(tree, "")
    if duplicate is not None:
        raise invalid(duplicate)
    try:
        return msgspec.json.decode(raw.encode("utf-8", "surrogatepass"), type=kind, strict=True)
    except msgspec.ValidationError as e:
        raise invalid(_content_free(e, tree)) from e
    except msgspec.DecodeError as e:
        raise invalid("$: not one valid JSON value") from e


def check_indices(indices: Sequence[int], count: int) -> None:
    """Exactly one decision per listed index ``0..count-1`` (E24, E6)."""
    seen: set[int] = set()
    for i, index in enumerate(indices):
        if index >= count:
            listed = f"0..{count - 1}" if count else "none (nothing is listed)"
            raise invalid(f"decisions[{i}].index: {index} is not a listed index: {listed}")
        if index in seen:
            raise invalid(f"decisions[{i}].index: {index} has another decision")
        seen.add(index)
    missing = sorted(set(range(count)) - seen)
    if missing:
        raise invalid(f"decisions: no decision for index {missing[0]}")
