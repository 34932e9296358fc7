"""Literal gates: a cheap necessary condition checked before a costly regular expression.

A pattern can only match a text that holds the literal characters every one of its matches
contains. ``gate(pattern)`` reads the pattern's parse tree (the standard library's own regex
parser) and keeps those literals as clauses: a text passes when each clause has one of its
strings in it. A few substring tests cost well under a microsecond, where the credential
screen's forty-odd expressions cost about a hundred over an ordinary memory.

Sound by construction: only what every match must contain is kept. Whatever the reader does
not follow (look-arounds, back-references, optional or repeated-zero parts, classes with ranges,
scoped flags) adds no clause, and a pattern it cannot read gets none: it always runs.

A case-insensitive pattern's clauses are lowered and checked against ``fold(text)``: ASCII
letters lowered, and the four other characters ``re.IGNORECASE`` matches to an ASCII letter
(dotted İ, dotless ı, long ſ, the Kelvin sign) replaced by that letter.
"""

from __future__ import annotations

import importlib
import re
import string
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

#: Clauses kept per pattern, the most selective first: enough to reject ordinary text.
MAX_CLAUSES: Final = 3

# The standard library's own regex parser and its opcodes (``re`` has imported them already).
try:
    _PARSER: Any = importlib.import_module("re._parser")
    _OP: Any = importlib.import_module("re._constants")
except ImportError:  # a Python that lays its parser out otherwise: no gates, every pattern runs
    _PARSER = _OP = None
#: What ``re.IGNORECASE`` matches to an ASCII letter besides its two cases: the dotted İ and
#: dotless ı (i), the long ſ (s) and the Kelvin sign (k). A fixed table, constant in size;
#: tests/test_literal_gate.py holds it to re's own matching over every code point.
_FOLD: Final = str.maketrans(string.ascii_uppercase + "\u0130\u0131\u017f\u212a",
                             string.ascii_lowercase + "iisk")


def fold(text: str) -> str:
    """The text as a case-insensitive pattern's lowered literals see it."""
    return text.lower() if text.isascii() else text.translate(_FOLD)


@dataclass(frozen=True, slots=True)
class Gate:
    """Every clause must have one of its strings in the (folded) text."""

    clauses: tuple[tuple[str, ...], ...]
    folded: bool

    def admits(self, text: str, folded: str) -> bool:
        hay = folded if self.folded else text
        return all(any(s in hay for s in clause) for clause in self.clauses)


def gate(pattern: re.Pattern[str]) -> Gate | None:
    """The pattern's literal gate, or None when it requires no literal the reader can see."""
    ignorecase = bool(pattern.flags & re.IGNORECASE)
    if _PARSER is None:
        return None
    try:
        tree = _PARSER.parse(pattern.pattern, pattern.flags)
        clauses = _clauses(list(tree), ignorecase)
    except Exception:  # a private parser that changed shape: no gate, the pattern always runs
        return None
    if not clauses:
        return None
    best = sorted(set(clauses), key=lambda c: (*_selectivity(c), sorted(c)),
                  reverse=True)[:MAX_CLAUSES]
    return Gate(tuple(tuple(sorted(c, key=lambda s: (-len(s), s))) for c in best), ignorecase)


class GateSet:
    """Which of many patterns (or groups of patterns) a text may match, found with one scan.

    Each unit may match when any of its gates admits the text. The first (most selective)
    clause of every gate goes into one prefix-tree expression per case mode, so one
    ``findall`` over the text names the literals it holds; only the units those literals key
    check their other clauses. A unit with an ungated pattern is always a candidate."""

    def __init__(self, units: Sequence[tuple[Gate | None, ...]]) -> None:
        self._always = frozenset(i for i, gates in enumerate(units)
                                 if not gates or any(g is None for g in gates))
        self._keyed: dict[tuple[bool, str], list[tuple[int, Gate]]] = {}
        for i, gates in enumerate(units):
            if i not in self._always:
                for g in gates:
                    assert g is not None
                    for literal in g.clauses[0]:
                        self._keyed.setdefault((g.folded, literal), []).append((i, g))
        self._scans = tuple(
            (folded, _Scan(sorted(lit for f, lit in self._keyed if f is folded)))
            for folded in (False, True))

    def admitted(self, text: str, folded: str) -> set[int]:
        out = set(self._always)
        for is_folded, scan in self._scans:
            for literal in scan.present(folded if is_folded else text):
                for i, g in self._keyed[(is_folded, literal)]:
                    if i not in out and g.admits(text, folded):
                        out.add(i)
        return out


class _Scan:
    """The literals of a set a text holds: a prefix tree run at every position (a look-ahead
    finds the longest literal starting there; the set's other literals it begins with are
    there too)."""

    def __init__(self, literals: list[str]) -> None:
        self._prefixes = {s: [t for t in literals if s.startswith(t)] for s in literals}
        self._regex = re.compile(f"(?=({_trie(literals)}))", re.DOTALL) if literals else None

    def present(self, text: str) -> set[str]:
        if self._regex is None:
            return set()
        return {t for s in set(self._regex.findall(text)) for t in self._prefixes[s]}


def _trie(literals: Iterable[str]) -> str:
    root: dict[str, Any] = {}
    for word in literals:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def render(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + render(child) for char, child in sorted(node.items())
                    if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return render(root)


def _selectivity(clause: Collection[str]) -> tuple[int, int]:
    return min(map(len, clause)), -len(clause)


def _clauses(items: list[tuple[Any, Any]], ignorecase: bool) -> list[frozenset[str]]:
    """What a match of this sequence must contain: a list of clauses, all required."""
    op = _OP
    out: list[frozenset[str]] = []
    run: list[str] = []

    def char(code: int) -> str | None:
        c = chr(code)
        return (c.lower() if ignorecase else c) if c.isascii() else None

    def flush() -> None:
        if run:
            out.append(frozenset({"".join(run)}))
            run.clear()

    for kind, value in items:
        if kind is op.LITERAL and (c := char(value)) is not None:
            run.append(c)
            continue
        flush()
        if kind is op.SUBPATTERN:
            _group, add_flags, del_flags, body = value
            if not add_flags and not del_flags:
                out.extend(_clauses(list(body), ignorecase))
        elif kind in (op.MAX_REPEAT, op.MIN_REPEAT, op.POSSESSIVE_REPEAT):
            low, _high, body = value
            if low >= 1:
                out.extend(_clauses(list(body), ignorecase))
        elif kind is op.ATOMIC_GROUP:
            out.extend(_clauses(list(value), ignorecase))
        elif kind is op.BRANCH:
            options: set[str] = set()
            for alternative in value[1]:
                found = _clauses(list(alternative), ignorecase)
                if not found:
                    break
                options |= max(found, key=_selectivity)
            else:
                out.append(frozenset(options))
        elif kind is op.IN and value and all(k is op.LITERAL for k, _ in value):
            chars = [char(code) for _, code in value]
            if None not in chars:
                out.append(frozenset(c for c in chars if c is not None))
    flush()
    return out
