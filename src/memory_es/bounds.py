"""Range checks for the values callers pass to the library (timeouts, intake ids, free text).

Each check raises :class:`~memory_es.errors.InvalidArgumentError` with one line naming the
argument and its allowed range, before anything is opened, read or written. The CLI runs the
same checks on its arguments, so the library and ``memory-es`` agree on every range.
"""

from __future__ import annotations

import math
import re
from typing import Final

from memory_es.errors import InvalidArgumentError

__all__ = ["MAX_WAIT_SECONDS", "check_intake_id", "check_seconds", "check_slug", "check_text",
           "describe"]

MAX_WAIT_SECONDS: Final = 86_400.0  # a day: any longer wait is a mistake, not a plan
_INTAKE_ID = re.compile(r"[0-9a-f]{64}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def describe(value: object, limit: int = 40) -> str:
    """A short, printable repr of a rejected value (a 5,000-digit number stays one line)."""
    text = ascii(value)
    return text if len(text) <= limit else f"{text[:limit - 5]}...{text[-4:]}"


def check_seconds(name: str, value: object, *, maximum: float = MAX_WAIT_SECONDS) -> float:
    """A finite number of seconds from 0 to ``maximum`` (NaN, infinities and bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not 0 <= value <= maximum:
        raise InvalidArgumentError(
            f"{name} must be a number of seconds from 0 to {maximum:g}, got {describe(value)}")
    return float(value)


def check_intake_id(value: object, name: str = "intake id") -> str:
    """An intake id: the SHA-256 hex of the run id, 64 lowercase hex characters (C2)."""
    if not isinstance(value, str) or _INTAKE_ID.fullmatch(value) is None:
        raise InvalidArgumentError(
            f"{name} {describe(value, 80)} is not 64 lowercase hex characters "
            "(the SHA-256 of the run id)")
    return value


def check_text(name: str, value: object, *, code: str = "invalid_argument") -> str:
    """A string that is valid Unicode text, i.e. encodes as UTF-8 (no unpaired surrogate)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}",
                                   code=code)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"{name} must be valid UTF-8 text: unpaired surrogate at character {e.start}",
            code=code) from None
    return value


def check_slug(value: object, name: str = "reason slug") -> str:
    """An operator's reason (resolve, set-status, forget): 1-64 of a-z, 0-9 and '-', starting
    with a letter or digit (``invalid_slug``)."""
    if not isinstance(value, str) or _SLUG.fullmatch(value) is None:
        raise InvalidArgumentError(f"{name} {describe(value)} must be 1-64 of a-z, 0-9 and "
                                   "'-', starting with a letter or digit", code="invalid_slug")
    return value
