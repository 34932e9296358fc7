"""Contract fuzzing for the three capture-model contracts (SPEC E6-E11, E7, E24; DESIGN 9.11).

Requirement (issue): "Contract fuzzing (hypothesis, >= 5,000 generated outputs per contract):
every malformed output is rejected with a precise reason and no partial effect; every valid one
round-trips." The example tests live in ``tests/test_contracts.py``; this file generates.

Generated outputs per run (``max_examples``: hypothesis runs that many examples per test
unless one fails; draws its filters reject are retried and not counted), split between a valid
and a malformed test per contract so the file stays under a minute (about 40 s of CPU, 40-55 s
wall on two busy cores; pytest runs it in one process):

============  =====================  =========================  ======
contract      valid (round-trips)    malformed (one mutation)   total
============  =====================  =========================  ======
extraction    2,500                  2,500                      5,000
review        2,500                  2,500                      5,000
reconcile     2,500                  2,500                      5,000
============  =====================  =========================  ======

Valid outputs are built as Python values and rendered to JSON text by hand with random
whitespace, key order, number spelling (``0.5``, ``5.0000000000000000e-01``, ``1`` for ``1.0``)
and string escaping (raw UTF-8, ``ensure_ascii``, every code unit as ``\\uXXXX``). Each must
parse, equal the generated value field for field (salience exactly: never clamped or coerced,
E10), and round-trip through ``msgspec.json.encode`` and the same parser.

Malformed outputs mutate a valid one in exactly one way, of a drawn *kind* (the ``*_MUTATORS``
tables: a missing, unknown, duplicate or wrongly typed field, string-for-number, out-of-range
or non-finite salience, too many items, a bad entity id or uppercase relation, unsafe text,
dangling references, a missing/extra/repeated/negative decision index, a disallowed decision,
the E7 reconcile shapes, an untargeted id, an ambiguous target collision, a completion over
262,144 UTF-16 code units, truncated JSON, ...; every kind equally often). Each must raise
``ModelError`` code
``model_invalid_output`` whose message is exactly the expected ``<path>: <rule>`` line (built
from our field names and numbers only), fits the closed message grammar ``MESSAGE`` and holds
none of the injected model text (content-free). "No partial effect": the parsers are pure, so
the same text fails again with the same message, the caller's ``allowed``/``targets`` are left
unchanged, and the unmutated output still parses to the same plan afterwards.

Values (texts, ids, numbers, sizes) are hypothesis draws; layout and positions (whitespace, key
order, which field or decision a mutation hits) come from a ``random.Random`` seeded by one
hypothesis draw, which keeps a run fast. Two tests at the end pin leaks of model text into
messages found while writing these tests (duplicate keys, a forged path), since fixed.
"""

from __future__ import annotations

import copy
import json
import random
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memory_es.capture.contracts import (
    DECISIONS,
    LABELS,
    MEMORY_KINDS,
    SOURCES,
    ExtractionPlan,
    ReconcileAdd,
    ReconcilePlan,
    ReviewPlan,
    parse_extraction,
    parse_reconcile,
    parse_review,
)
from memory_es.capture.models import ModelError

VALID_RUNS = 2_500  # per contract
MALFORMED_RUNS = 2_500  # per contract
assert VALID_RUNS + MALFORMED_RUNS >= 5_000  # the floor per contract


#: ``data.draw`` of ``st.data()``: what the mutations and their helpers draw with.
Draw = Callable[[st.SearchStrategy[Any]], Any]


def fuzz(max_examples: int) -> settings:
    return settings(max_examples=max_examples, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# --------------------------------------------------------------------------------------------
# The documented contract, restated here (not imported) so the parsers are checked against the
# contract text rather than against themselves.

CAP = 262_144  # E9
MAX_MEMORIES, MAX_ENTITIES, MAX_RELATIONS, MAX_REFS, MAX_LABELS = 8, 32, 32, 8, 3
TEXT_BYTES, NAME_BYTES = 2_048, 256
ID_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
WORD_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
ACTIONS = ("ADD", "NOOP", "UPDATE", "SUPERSEDE")
TARGETED = ("NOOP", "UPDATE", "SUPERSEDE")
REWRITES = ("UPDATE", "SUPERSEDE")

CONTROL_RULE = "contains a control, bidi or surrogate character"
COMMENT_RULE = "contains an HTML comment marker"
CREDENTIAL_RULE = "looks like a credential"
ID_RULE = "is not an entity id [a-z][a-z0-9_-]{0,31}"
WORD_RULE = "is not a lowercase word [a-z][a-z0-9_]{0,63}"
ENUM_RULE = "value is not one of the allowed values"
NOT_JSON = "$: not one valid JSON value"

FIELDS = ("memories", "entities", "relations", "text", "kind", "labels", "source", "salience",
          "id", "name", "type", "from", "to", "relation", "decisions", "index", "decision",
          "action", "target")
_F = "|".join(FIELDS)
_PATH = rf"(?:\$|(?:{_F})(?:\[\d+\])*(?:\.(?:{_F})(?:\[\d+\])*)*)"
_TYPES = r"(?:str|int|float|bool|null|array|object)"
_RULES = (
    r"unknown field",
    rf"missing required field `(?:{_F})`",
    rf"duplicate key '(?:{_F})'",
    rf"Expected `{_TYPES}`(?:, got `{_TYPES}`)?",
    re.escape(ENUM_RULE),
    r"not one valid JSON value",
    rf"completion is \d+ UTF-16 code units, more than {CAP}",
    r"completion must be text, got \w+",
    r"has \d+ items, more than \d+",
    r"repeats a value",
    r"repeats another entity's id",
    r"names no entity of the plan",
    re.escape(ID_RULE),
    re.escape(WORD_RULE),
    r"must not be blank",
    re.escape(CONTROL_RULE),
    re.escape(COMMENT_RULE),
    re.escape(CREDENTIAL_RULE),
    r"is \d+ UTF-8 bytes, more than \d+",
    r"-?\d+(?:\.\d+)?(?:e[+-]\d+)? is outside 0\.\.1",
    r"-\d+ is negative",
    r"\d+ is not a listed index: (?:0\.\.\d+|none \(nothing is listed\))",
    r"\d+ has another decision",
    r"no decision for index \d+",
    r"not allowed for line \d+",
    r"is not an id offered for index \d+",
    r"collides with decisions\[\d+\] on the same target",
)
#: Every message is one line, ``<path>: <rule>``: the path holds only our field names and
#: numbers, the rule is one of ours with only numbers filled in. Model text cannot fit (E6).
MESSAGE = re.compile(rf"{_PATH}: (?:{'|'.join(_RULES)})")

# --------------------------------------------------------------------------------------------
# Text

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# Broader than the real rules on purpose: text this does not flag is certainly safe.
_MAYBE_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]|<!--|-->"
    r"|sk-|akia|gh[pousr]_|xox|private key|eyj|pass|pwd|api|secret|token",
    re.IGNORECASE,
)


def surely_safe(text: str) -> bool:
    return bool(text.strip()) and not _MAYBE_UNSAFE.search(text)


BOOL = st.booleans()
# Every code point but the surrogates (Cs) encodes as UTF-8: no ``codec="utf-8"``, whose table
# hypothesis builds by encoding all 1,114,112 code points once per process (~4 s of CPU).
SAFE_CHARS = st.characters(exclude_categories=("Cc", "Cs"), exclude_characters=BIDI,
                           include_characters="\t")
SAFE_WORDS = st.text(SAFE_CHARS, min_size=1, max_size=24).filter(surely_safe)
SAFE_TAILS = st.text(SAFE_CHARS, max_size=12).filter(lambda s: not _MAYBE_UNSAFE.search(s))
# Near misses that are safe by the documented rules and must stay accepted.
NEAR_MISSES = ("Uses a\ttab", "Morgan's task-list app", "sk-learn is a library",
               "The password was reset.", "Zoë moved to Łódź → Kraków", "a -> b",
               "AKIA is an acronym", "<b>bold</b>", "<!- not a comment ->", "x = 1",
               "ghp_short", "eyJ.not.a.jwt", "xoxb-short", "-----BEGIN PUBLIC KEY-----",
               "line\u2028separator", "zero\u200bwidth", "emoji 😀 ok", 'quote " and \\ ok')


def safe_text(max_bytes: int) -> st.SearchStrategy[str]:
    at_bound = ["x" * max_bytes, "é" * (max_bytes // 2), "😀" * (max_bytes // 4),
                "\tx" + "y" * (max_bytes - 2)]
    return st.one_of(SAFE_WORDS, st.sampled_from(NEAR_MISSES), st.sampled_from(at_bound))


TEXTS = safe_text(TEXT_BYTES)
NAMES = safe_text(NAME_BYTES)
LOWER = string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
ENTITY_IDS = st.builds(str.__add__, st.sampled_from(LOWER),
                       st.text(LOWER + string.digits + "_-", max_size=31))
WORDS = st.builds(str.__add__, st.sampled_from(LOWER),
                  st.text(LOWER + string.digits + "_", max_size=63))
SALIENCE = st.one_of(st.floats(0.0, 1.0), st.integers(0, 1),
                     st.sampled_from([0, 1, 0.0, 1.0, -0.0, 5e-324, 1 - 2**-53, 0.5]))
TARGETS = st.one_of(ENTITY_IDS, NAMES)
# Layout (whitespace, key order, spellings, decision order) comes from a seeded random.Random:
# one draw rather than hundreds of hypothesis draws per rendering.
RANDOMS = st.integers(0, 2**32 - 1).map(random.Random)

_CREDENTIAL_KEYS = ("password", "passwd", "pwd", "passphrase", "api_key", "api-key", "apikey",
                    "secret_key", "secret-key", "client_secret", "access_token", "auth_token",
                    "auth-token")
CREDENTIALS = (  # one strategy per documented format
    st.text(ALNUM, min_size=20, max_size=40).map(lambda s: "sk-" + s),
    st.text(ALNUM + "_-", min_size=16, max_size=30).map(lambda s: "sk-" + s),
    st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16)
    .map(lambda s: "AKIA" + s),
    st.builds(lambda c, s: f"gh{c}_{s}", st.sampled_from("pousr"),
              st.text(ALNUM, min_size=20, max_size=40)),
    st.builds(lambda c, s: f"xox{c}-{s}", st.sampled_from("abposr"),
              st.text(ALNUM + "-", min_size=10, max_size=30)),
    st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "])
    .map(lambda k: f"-----BEGIN {k}PRIVATE KEY-----"),
    st.builds(lambda a, b, c: f"eyJ{a}.{b}.{c}",
              *[st.text(ALNUM + "_-", min_size=5, max_size=20)] * 3),
    st.builds(lambda k, op, v: k + op + v,
              st.sampled_from([f(k) for k in _CREDENTIAL_KEYS
                               for f in (str.lower, str.upper, str.title)]),
              st.sampled_from(["=", ":", " = ", ": ", "\t:"]),
              st.text(ALNUM + "!@#$%^&*", min_size=1, max_size=12)),
)
C0 = [chr(c) for c in range(0x20) if c != 0x09]
C1 = [chr(c) for c in range(0x7F, 0xA0)]  # DEL and C1
COMMENTS = ("<!--", "-->", "<!---->", "a<!--b", "x-->y")
BLANKS = st.text(st.sampled_from(" \t\u00a0\u2003\u3000\u2028\u205f"), max_size=6)


def unsafe_text(draw: Draw, r: random.Random) -> tuple[str, str, str]:
    """(text, the token that makes it unsafe, the rule), each rule and group equally often.
    The token is set off by spaces, so the safe text around it can neither complete nor break
    it."""
    group = r.randrange(5)
    if group < 3:
        token, rule = r.choice((C0, C1, list(BIDI))[group]), CONTROL_RULE
    elif group == 3:
        token, rule = r.choice(COMMENTS), COMMENT_RULE
    else:
        token, rule = draw(r.choice(CREDENTIALS)), CREDENTIAL_RULE
    return f"{draw(SAFE_WORDS)} {token} {draw(SAFE_TAILS)}", token, rule


OVERSIZE_CHARS = SAFE_CHARS.filter(lambda c: surely_safe(c * 3))


def oversize_text(draw: Draw, r: random.Random, limit: int) -> tuple[str, int]:
    """A safe, non-blank text just over ``limit`` UTF-8 bytes, and its size."""
    extra = r.randrange(8)
    if r.getrandbits(1):
        char = draw(OVERSIZE_CHARS)
        text = char * (limit // len(char.encode()) + 1 + extra)
    else:
        head = draw(SAFE_WORDS)
        text = head + "x" * max(1, limit + 1 - len(head.encode()) + extra)
    return text, len(text.encode())


def bad(pattern: re.Pattern[str], good: st.SearchStrategy[str],
        fixed: Iterable[str]) -> st.SearchStrategy[str]:
    """Strings outside ``pattern``: random text, upper-cased good values, fixed near misses."""
    return st.one_of(
        st.text(max_size=40),
        good.map(lambda s: s[0].upper() + s[1:]),
        good.map(str.upper),
        st.sampled_from(list(fixed)),
    ).filter(lambda s: not pattern.fullmatch(s))


BAD_IDS = bad(ID_RE, ENTITY_IDS, ["", "1abc", "_x", "-x", "a" * 33, "e 1", "e.1", "é1", "e1\n",
                                  " e1", "E1", "eX"])
BAD_WORDS = bad(WORD_RE, WORDS, ["", "Works_At", "WORKS", "works at", "works-at", "1st",
                                 "a" * 65, "member_of\n", "knows!"])


class Raw(str):
    """Rendered verbatim: a token json.dumps would not write (a float spelling, ...)."""


# Values of each JSON type (a float is spelled so that it stays a JSON float).
WRONG: dict[str, st.SearchStrategy[Any]] = {
    "str": st.text(max_size=10),
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False).map(lambda x: Raw(repr(x))),
    "bool": BOOL,
    "null": st.none(),
    "array": st.lists(st.integers(-9, 9) | st.text(max_size=4), max_size=3),
    "object": st.dictionaries(st.text(max_size=5), st.integers(-9, 9), max_size=3),
}
#: The JSON types a field of each expected type accepts (a JSON integer is a number).
ACCEPTS = {"str": {"str"}, "int": {"int"}, "float": {"int", "float"}, "array": {"array"},
           "object": {"object"}}
JSON_VALUES = st.one_of(*WRONG.values())
UNKNOWN_KEYS = st.one_of(st.text(max_size=20), st.sampled_from(FIELDS))

# --------------------------------------------------------------------------------------------
# Rendering JSON text by hand

WS = ("", "", " ", "  ", "\n", "\t", "\r\n", "\n    ")


def _string(text: str, r: random.Random) -> str:
    mode = r.getrandbits(2)
    if mode <= 1:
        return json.dumps(text, ensure_ascii=not mode)
    if not text:
        return '""'
    hexed = text.encode("utf-16-be", "surrogatepass").hex("|", 2)
    return '"\\u' + hexed.replace("|", "\\u") + '"'  # every code unit as \uXXXX


def _number(value: float, r: random.Random) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return json.dumps(value)  # NaN / Infinity: not JSON
    return r.choice((repr(value), f"{value:.17g}", f"{value:.17e}", f"{value:.17E}"))


def render(value: Any, r: random.Random, dupes: dict[int, tuple[str, Any]] | None = None) -> str:
    """JSON text for ``value`` with random whitespace, key order and spellings.

    ``dupes`` maps ``id(obj)`` of a dict inside ``value`` to an extra ``(key, value)`` pair that
    is written into that object too: a duplicate key, which no json.dumps can produce.
    """
    bits = r.getrandbits

    def ws() -> str:
        return WS[bits(3)]

    out: list[str] = [ws()]

    def emit(v: Any) -> None:
        if isinstance(v, Raw):
            out.append(str(v))
        elif isinstance(v, dict):
            items = list(v.items())
            r.shuffle(items)
            if dupes and id(v) in dupes:
                items.insert(r.randrange(len(items) + 1), dupes[id(v)])
            out.append("{")
            for n, (k, item) in enumerate(items):
                out.append(("," if n else "") + ws() + _string(k, r) + ws() + ":" + ws())
                emit(item)
                out.append(ws())
            out.append("}")
        elif isinstance(v, list):
            out.append("[")
            for n, item in enumerate(v):
                out.append(("," if n else "") + ws())
                emit(item)
                out.append(ws())
            out.append("]")
        elif isinstance(v, str):
            out.append(_string(v, r))
        elif isinstance(v, bool) or v is None:
            out.append(json.dumps(v))
        elif isinstance(v, int):
            out.append(str(v))
        elif isinstance(v, float):
            out.append(_number(v, r))
        else:  # pragma: no cover - a bug in a strategy
            raise TypeError(type(v))

    emit(value)
    out.append(ws())
    return "".join(out)


def utf16_units(text: str) -> int:
    """UTF-16 code units (JavaScript characters): two bytes each in UTF-16."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --------------------------------------------------------------------------------------------
# Scenarios (a valid output plus the parser's other arguments) and cases (one mutation)


@dataclass
class Scenario:
    contract: str  # "extraction" | "review" | "reconcile"
    value: Any
    r: random.Random
    count: int = 0
    allowed: list[set[str]] | None = None
    targets: Any = None
    dupes: dict[int, tuple[str, Any]] = field(default_factory=dict)

    def render(self) -> str:
        return render(self.value, self.r, self.dupes)

    def parse(self, raw: Any) -> Any:
        if self.contract == "extraction":
            return parse_extraction(raw)
        if self.contract == "review":
            return parse_review(raw, self.count, allowed=self.allowed)
        return parse_reconcile(raw, self.count, self.targets)

    def arguments(self) -> Any:
        return copy.deepcopy((self.count, self.allowed, self.targets))


@dataclass(frozen=True)
class Case:
    raw: Any
    expected: str
    secrets: tuple[str, ...] = ()


Mutator = Callable[[Draw, Scenario], Case]

KIND_ST = st.sampled_from(MEMORY_KINDS)
SOURCE_ST = st.sampled_from(SOURCES)
LABEL_SETS = st.lists(st.sampled_from(LABELS), unique=True, max_size=MAX_LABELS)
MEMORY_ROW = st.tuples(KIND_ST, LABEL_SETS, SOURCE_ST, SALIENCE)
MEMORY_ROWS = st.lists(MEMORY_ROW, max_size=MAX_MEMORIES)
IDS = st.lists(ENTITY_IDS, unique=True, max_size=MAX_ENTITIES)
RELATION_COUNTS = st.one_of(st.integers(0, 4), st.integers(0, MAX_RELATIONS))
# Each output draws a few texts, names and words and spreads them over its fields with its
# seeded random: far fewer hypothesis draws than one per field, the same variety of values.
TEXT_POOLS = st.lists(TEXTS, min_size=1, max_size=4)
NAME_POOLS = st.lists(NAMES, min_size=1, max_size=4)
WORD_POOLS = st.lists(WORDS, min_size=1, max_size=4)


def memory_from(row: tuple[Any, ...], text: str, ids: list[str],
                r: random.Random) -> dict[str, Any]:
    kind, labels, source, salience = row
    refs = r.sample(ids, r.randint(0, min(MAX_REFS, len(ids))))
    return {"text": text, "kind": kind, "labels": labels, "source": source,
            "salience": salience, "entities": refs}


def relation_from(word: str, ids: list[str], r: random.Random) -> dict[str, Any]:
    return {"from": r.choice(ids), "to": r.choice(ids), "relation": word}


@st.composite
def extraction_scenarios(draw: st.DrawFn) -> Scenario:
    r = draw(RANDOMS)
    texts, names, words = draw(TEXT_POOLS), draw(NAME_POOLS), draw(WORD_POOLS)
    ids = draw(IDS)
    plan = {
        "memories": [memory_from(row, r.choice(texts), ids, r) for row in draw(MEMORY_ROWS)],
        "entities": [{"id": i, "name": r.choice(names), "type": r.choice(words)} for i in ids],
        "relations": [relation_from(r.choice(words), ids, r)
                      for _ in range(draw(RELATION_COUNTS))] if ids else [],
    }
    return Scenario("extraction", plan, r)


DECISION_ROWS = st.lists(st.sampled_from(DECISIONS), max_size=24)


@st.composite
def review_scenarios(draw: st.DrawFn) -> Scenario:
    r = draw(RANDOMS)
    chosen = draw(DECISION_ROWS)
    count = len(chosen)
    order = list(range(count))
    r.shuffle(order)
    decisions = [{"index": i, "decision": chosen[i]} for i in order]
    allowed = None
    if draw(BOOL):
        allowed = [{chosen[i]} | {d for d in DECISIONS if r.getrandbits(1)}
                   for i in range(count)]
    return Scenario("review", {"decisions": decisions}, r, count, allowed=allowed)


def offered(targets: Any, index: int) -> set[str]:
    return set(targets.get(index, ()) if isinstance(targets, dict) else targets)


CANDIDATE_COUNTS = st.integers(0, 12)
UNIVERSES = st.lists(TARGETS, unique=True, max_size=8)
CONTAINERS = st.sampled_from([set, frozenset, list, tuple])


@st.composite
def reconcile_scenarios(draw: st.DrawFn) -> Scenario:
    r = draw(RANDOMS)
    count = draw(CANDIDATE_COUNTS)
    texts = draw(TEXT_POOLS)
    universe = draw(UNIVERSES)
    targets: Any
    per_index = draw(BOOL)
    if universe and per_index:  # offers per index (some indices get none)
        targets = {i: {t for t in universe if r.getrandbits(1)}
                   for i in range(count) if r.getrandbits(2)}
    else:
        targets = draw(CONTAINERS)(universe)
    order = list(range(count))
    r.shuffle(order)
    named: set[str] = set()
    changed: set[str] = set()
    decisions: list[dict[str, Any]] = []
    for index in order:
        action = r.choice(ACTIONS)
        # no ambiguous collision: a changed target is named by nothing else
        pool = sorted(offered(targets, index) - (named if action in REWRITES else changed))
        if action == "ADD" or not pool:
            decisions.append({"index": index, "action": "ADD"})
            continue
        target = r.choice(pool)
        named.add(target)
        if action == "NOOP":
            decisions.append({"index": index, "action": "NOOP", "target": target})
        else:
            changed.add(target)
            decisions.append({"index": index, "action": action, "target": target,
                              "text": r.choice(texts)})
    return Scenario("reconcile", {"decisions": decisions}, r, count, targets=targets)


EXTRACTIONS = extraction_scenarios()
REVIEWS = review_scenarios()
RECONCILES = reconcile_scenarios()

# --------------------------------------------------------------------------------------------
# Where the objects and arrays of each contract are

MEMORY_TYPES = {"text": "str", "kind": "str", "labels": "array", "source": "str",
                "salience": "float", "entities": "array"}
ENTITY_TYPES = {"id": "str", "name": "str", "type": "str"}
RELATION_TYPES = {"from": "str", "to": "str", "relation": "str"}
REVIEW_TYPES = {"index": "int", "decision": "str"}
DECISION_TYPES = {"ADD": {"index": "int", "action": "tag"},
                  "NOOP": {"index": "int", "action": "tag", "target": "str"},
                  "UPDATE": {"index": "int", "action": "tag", "target": "str", "text": "str"},
                  "SUPERSEDE": {"index": "int", "action": "tag", "target": "str", "text": "str"}}


def objects(s: Scenario) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(path, object, expected JSON type per field) for every object of the output."""
    v = s.value
    if s.contract == "extraction":
        out = [("", v, {"memories": "array", "entities": "array", "relations": "array"})]
        out += [(f"memories[{i}]", m, MEMORY_TYPES) for i, m in enumerate(v["memories"])]
        out += [(f"entities[{i}]", e, ENTITY_TYPES) for i, e in enumerate(v["entities"])]
        out += [(f"relations[{i}]", x, RELATION_TYPES) for i, x in enumerate(v["relations"])]
        return out
    out = [("", v, {"decisions": "array"})]
    for i, d in enumerate(v["decisions"]):
        types = REVIEW_TYPES if s.contract == "review" else DECISION_TYPES[d["action"]]
        out.append((f"decisions[{i}]", d, types))
    return out


def arrays(s: Scenario) -> list[tuple[str, list[Any], str]]:
    """(path, array, expected JSON type of its items) for every array of the output."""
    v = s.value
    if s.contract != "extraction":
        return [("decisions", v["decisions"], "object")]
    out = [(k, v[k], "object") for k in ("memories", "entities", "relations")]
    for i, m in enumerate(v["memories"]):
        out += [(f"memories[{i}].labels", m["labels"], "str"),
                (f"memories[{i}].entities", m["entities"], "str")]
    return out


def ids_of(s: Scenario) -> list[str]:
    return [e["id"] for e in s.value["entities"]]


def fresh_id(draw: Draw, s: Scenario) -> str:
    taken = set(ids_of(s))
    return str(draw(ENTITY_IDS.filter(lambda i: i not in taken)))


def some_entity(draw: Draw, s: Scenario) -> int:
    entities = s.value["entities"]
    if not entities:
        entities.append({"id": fresh_id(draw, s), "name": draw(NAMES), "type": draw(WORDS)})
    return s.r.randrange(len(entities))


def some_memory(draw: Draw, s: Scenario) -> int:
    memories = s.value["memories"]
    if not memories:
        memories.append(memory_from(draw(MEMORY_ROW), draw(TEXTS), ids_of(s), s.r))
    return s.r.randrange(len(memories))


def some_relation(draw: Draw, s: Scenario) -> int:
    some_entity(draw, s)
    relations = s.value["relations"]
    if not relations:
        relations.append(relation_from(draw(WORDS), ids_of(s), s.r))
    return s.r.randrange(len(relations))


# --------------------------------------------------------------------------------------------
# Mutations every contract shares (E6, E9)


def m_missing_field(draw: Draw, s: Scenario) -> Case:
    path, obj, _ = s.r.choice(objects(s))
    key = s.r.choice(sorted(obj))
    del obj[key]
    return Case(s.render(), f"{path or '$'}: missing required field `{key}`")


def m_unknown_field(draw: Draw, s: Scenario) -> Case:
    path, obj, types = s.r.choice(objects(s))
    key = draw(UNKNOWN_KEYS.filter(lambda k: k not in types))
    obj[key] = draw(JSON_VALUES)
    return Case(s.render(), f"{path or '$'}: unknown field", (key,))


def m_duplicate_key(draw: Draw, s: Scenario) -> Case:
    path, obj, _ = s.r.choice(objects(s))
    key = s.r.choice(sorted(obj))
    again = copy.deepcopy(obj[key]) if draw(BOOL) else draw(JSON_VALUES)
    s.dupes[id(obj)] = (key, again)
    return Case(s.render(), f"{path or '$'}: duplicate key '{key}'")


def m_wrong_type(draw: Draw, s: Scenario) -> Case:
    path, obj, types = s.r.choice(objects(s))
    key = s.r.choice(sorted(k for k in obj if types[k] != "tag"))
    want = types[key]
    got = s.r.choice(sorted(set(WRONG) - ACCEPTS[want]))
    obj[key] = draw(WRONG[got])
    return Case(s.render(), f"{at(path, key)}: Expected `{want}`, got `{got}`")


def m_wrong_item_type(draw: Draw, s: Scenario) -> Case:
    path, items, want = s.r.choice(arrays(s))
    got = s.r.choice(sorted(set(WRONG) - {want}))
    where = s.r.randrange(len(items) + 1)
    items.insert(where, draw(WRONG[got]))
    return Case(s.render(), f"{path}[{where}]: Expected `{want}`, got `{got}`")


def m_top_level_not_object(draw: Draw, s: Scenario) -> Case:
    got = s.r.choice(sorted(set(WRONG) - {"object"}))
    return Case(render(draw(WRONG[got]), s.r), f"$: Expected `object`, got `{got}`")


def m_truncated(draw: Draw, s: Scenario) -> Case:
    raw = s.render()
    return Case(raw[:s.r.randrange(raw.rindex("}") + 1)], NOT_JSON)


def m_trailing_garbage(draw: Draw, s: Scenario) -> Case:
    tail = s.r.choice(["x", "{}", "[]", "0", ",", "}", "]", '"x"', "null", "```"])
    return Case(s.render() + s.r.choice(WS) + tail, NOT_JSON)


def m_trailing_comma(draw: Draw, s: Scenario) -> Case:
    raw = s.render()
    end = raw.rindex("}")
    return Case(raw[:end] + "," + raw[end:], NOT_JSON)


def m_oversize_completion(draw: Draw, s: Scenario) -> Case:
    """Over 262,144 UTF-16 code units (E9): rejected before parsing, though the JSON is valid."""
    raw = s.render()
    total = max(CAP, utf16_units(raw)) + 1 + s.r.randrange(4_096)
    pad = s.r.choice(" \n\t\r") * (total - utf16_units(raw))
    where = s.r.randrange(3)
    if where == 0:
        raw = pad + raw
    elif where == 1:
        raw = raw + pad
    else:
        start = raw.index("{") + 1
        raw = raw[:start] + pad + raw[start:]
    return Case(raw, f"$: completion is {total} UTF-16 code units, more than {CAP}")


def m_not_text(draw: Draw, s: Scenario) -> Case:
    raw = s.render().encode("utf-8", "surrogatepass")
    value: Any = s.r.choice([bytes, bytearray, memoryview])(raw)
    return Case(value, f"$: completion must be text, got {type(value).__name__}")


COMMON: dict[str, Mutator] = {
    "missing_field": m_missing_field,
    "unknown_field": m_unknown_field,
    "duplicate_key": m_duplicate_key,
    "wrong_type": m_wrong_type,
    "wrong_item_type": m_wrong_item_type,
    "top_level_not_object": m_top_level_not_object,
    "truncated": m_truncated,
    "trailing_garbage": m_trailing_garbage,
    "trailing_comma": m_trailing_comma,
    "oversize_completion": m_oversize_completion,
    "not_text": m_not_text,
}

# --------------------------------------------------------------------------------------------
# Extraction mutations (E2, E6, E9-E11, E26, E39-E40)

OUT_OF_RANGE = st.one_of(
    st.floats(min_value=1.0, exclude_min=True, allow_infinity=False),
    st.floats(max_value=0.0, exclude_max=True, allow_infinity=False),
    st.integers(2, 10**15), st.integers(-(10**15), -1),
    st.sampled_from([1.0000000000000002, -5e-324, 1.3, 2, -0.0001, 1e308]),
).filter(lambda x: x != 0)
BAD_KINDS = st.one_of(st.text(max_size=12), st.sampled_from(
    ["Note", "EVENT", "task ", "reminder", "todo"])).filter(lambda x: x not in MEMORY_KINDS)
BAD_SOURCES = st.one_of(st.text(max_size=12), st.sampled_from(
    ["User", "system", "human", "assistant ", "docs"])).filter(lambda x: x not in SOURCES)
BAD_LABELS = st.one_of(st.text(max_size=12), st.sampled_from(
    ["Fact", "opinion", "preferences", "fact, lesson", "LESSON"])).filter(
    lambda x: x not in LABELS)
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
MANY_LABELS = st.lists(st.sampled_from(LABELS), min_size=MAX_LABELS + 1, max_size=6)
MANY_REFS = st.lists(ENTITY_IDS, min_size=MAX_REFS + 1, max_size=12)


def e_string_for_number(draw: Draw, s: Scenario) -> Case:
    i = some_memory(draw, s)
    memory = s.value["memories"][i]
    memory["salience"] = s.r.choice([json.dumps(memory["salience"]), "0.5", "1", "", "0,5"])
    return Case(s.render(), f"memories[{i}].salience: Expected `float`, got `str`")


def e_salience_out_of_range(draw: Draw, s: Scenario) -> Case:
    """E10: never clamped; the message names the parsed number, never rescaled."""
    i = some_memory(draw, s)
    value = draw(OUT_OF_RANGE)
    s.value["memories"][i]["salience"] = value
    return Case(s.render(), f"memories[{i}].salience: {float(value)!r} is outside 0..1")


def e_non_finite(draw: Draw, s: Scenario) -> Case:
    i = some_memory(draw, s)
    s.value["memories"][i]["salience"] = s.r.choice([float("nan"), float("inf"),
                                                       float("-inf")])
    return Case(s.render(), NOT_JSON)


def e_too_many(draw: Draw, s: Scenario) -> Case:
    v = s.value
    where = s.r.randrange(5)
    if where < 3:
        key, limit, some = (("memories", MAX_MEMORIES, some_memory),
                            ("entities", MAX_ENTITIES, some_entity),
                            ("relations", MAX_RELATIONS, some_relation))[where]
        template = v[key][some(draw, s)]
        n = limit + 1 + s.r.randrange(4)
        v[key] += [copy.deepcopy(template) for _ in range(n - len(v[key]))]
        return Case(s.render(), f"{key}: has {n} items, more than {limit}")
    i = some_memory(draw, s)
    if where == 3:
        labels = draw(MANY_LABELS)
        v["memories"][i]["labels"] = labels
        return Case(s.render(),
                    f"memories[{i}].labels: has {len(labels)} items, more than {MAX_LABELS}")
    refs = draw(MANY_REFS)
    v["memories"][i]["entities"] = refs
    return Case(s.render(), f"memories[{i}].entities: has {len(refs)} items, more than {MAX_REFS}")


def e_bad_entity_id(draw: Draw, s: Scenario) -> Case:
    bad_id = draw(BAD_IDS)
    where = s.r.choice(["entity", "ref", "from", "to"])
    if where == "entity":
        i = some_entity(draw, s)
        s.value["entities"][i]["id"] = bad_id
        return Case(s.render(), f"entities[{i}].id: {ID_RULE}", (bad_id,))
    if where == "ref":
        i = some_memory(draw, s)
        refs = s.value["memories"][i]["entities"]
        j = s.r.randrange(min(len(refs), MAX_REFS - 1) + 1)
        refs[j:j + 1] = [bad_id]
        return Case(s.render(), f"memories[{i}].entities[{j}]: {ID_RULE}", (bad_id,))
    i = some_relation(draw, s)
    s.value["relations"][i][where] = bad_id
    return Case(s.render(), f"relations[{i}].{where}: {ID_RULE}", (bad_id,))


def e_bad_word(draw: Draw, s: Scenario) -> Case:
    """E11: relations (and entity types) are lowercase words."""
    word = draw(BAD_WORDS)
    if draw(BOOL):
        i = some_relation(draw, s)
        s.value["relations"][i]["relation"] = word
        return Case(s.render(), f"relations[{i}].relation: {WORD_RULE}", (word,))
    i = some_entity(draw, s)
    s.value["entities"][i]["type"] = word
    return Case(s.render(), f"entities[{i}].type: {WORD_RULE}", (word,))


def e_unsafe_text(draw: Draw, s: Scenario) -> Case:
    """E6, DESIGN 9.11: unsafe text rejects the whole value; it is never cleaned."""
    text, token, rule = unsafe_text(draw, s.r)
    if draw(BOOL):
        i = some_memory(draw, s)
        s.value["memories"][i]["text"] = text
        return Case(s.render(), f"memories[{i}].text: {rule}", (text, token))
    i = some_entity(draw, s)
    s.value["entities"][i]["name"] = text
    return Case(s.render(), f"entities[{i}].name: {rule}", (text, token))


def e_lone_surrogate(draw: Draw, s: Scenario) -> Case:
    """A lone surrogate is not UTF-8 and not a JSON string: the output is not valid JSON."""
    i = some_memory(draw, s)
    s.value["memories"][i]["text"] = f"bad {draw(SURROGATES)} half"
    return Case(s.render(), NOT_JSON)


def e_blank_text(draw: Draw, s: Scenario) -> Case:
    blank = draw(BLANKS)
    if draw(BOOL):
        i = some_memory(draw, s)
        s.value["memories"][i]["text"] = blank
        return Case(s.render(), f"memories[{i}].text: must not be blank")
    i = some_entity(draw, s)
    s.value["entities"][i]["name"] = blank
    return Case(s.render(), f"entities[{i}].name: must not be blank")


def e_oversize_text(draw: Draw, s: Scenario) -> Case:
    if draw(BOOL):
        text, size = oversize_text(draw, s.r, TEXT_BYTES)
        i = some_memory(draw, s)
        s.value["memories"][i]["text"] = text
        return Case(s.render(),
                    f"memories[{i}].text: is {size} UTF-8 bytes, more than {TEXT_BYTES}", (text,))
    text, size = oversize_text(draw, s.r, NAME_BYTES)
    i = some_entity(draw, s)
    s.value["entities"][i]["name"] = text
    return Case(s.render(),
                f"entities[{i}].name: is {size} UTF-8 bytes, more than {NAME_BYTES}", (text,))


def e_oversize_astral(draw: Draw, s: Scenario) -> Case:
    """E9 counts UTF-16 code units: about half as many code points is already too long."""
    i = some_memory(draw, s)
    emoji = CAP // 2 + 1 + s.r.randrange(2_000)
    s.value["memories"][i]["text"] = Raw('"' + "😀" * emoji + '"')
    raw = s.render()
    units = utf16_units(raw)
    assert units > CAP
    return Case(raw, f"$: completion is {units} UTF-16 code units, more than {CAP}")


def e_dangling_ref(draw: Draw, s: Scenario) -> Case:
    """E26: a memory's entity ids and a relation's ends name entities of the plan."""
    v = s.value
    where = s.r.choice(["ref", "from", "to", "drop_entity"])
    if where == "drop_entity":
        referenced = sorted({r for m in v["memories"] for r in m["entities"]}
                            | {x[k] for x in v["relations"] for k in ("from", "to")})
        if referenced:
            gone = s.r.choice(referenced)
            v["entities"] = [e for e in v["entities"] if e["id"] != gone]
            first = [f"memories[{i}].entities[{m['entities'].index(gone)}]"
                     for i, m in enumerate(v["memories"]) if gone in m["entities"]]
            first += [f"relations[{i}].{k}" for i, x in enumerate(v["relations"])
                      for k in ("from", "to") if x[k] == gone]
            return Case(s.render(), f"{first[0]}: names no entity of the plan")
        where = "ref"
    if where == "ref":
        i = some_memory(draw, s)
        missing = fresh_id(draw, s)
        refs = v["memories"][i]["entities"]
        j = s.r.randrange(min(len(refs), MAX_REFS - 1) + 1)
        refs[j:j + 1] = [missing]
        return Case(s.render(), f"memories[{i}].entities[{j}]: names no entity of the plan",
                    (missing,))
    i = some_relation(draw, s)
    missing = fresh_id(draw, s)
    v["relations"][i][where] = missing
    return Case(s.render(), f"relations[{i}].{where}: names no entity of the plan", (missing,))


def e_duplicate_entity_id(draw: Draw, s: Scenario) -> Case:
    entities = s.value["entities"]
    some_entity(draw, s)
    if len(entities) < 2:
        entities.append({"id": fresh_id(draw, s), "name": draw(NAMES), "type": draw(WORDS)})
    a = s.r.randrange(len(entities))
    b = (a + 1 + s.r.randrange(len(entities) - 1)) % len(entities)
    entities[b]["id"] = entities[a]["id"]
    return Case(s.render(), f"entities[{max(a, b)}].id: repeats another entity's id")


def e_repeated_value(draw: Draw, s: Scenario) -> Case:
    i = some_memory(draw, s)
    if draw(BOOL):
        labels = [s.r.choice(LABELS) for _ in range(1 + s.r.randrange(MAX_LABELS - 1))]
        labels.insert(s.r.randrange(len(labels) + 1), s.r.choice(labels))
        s.value["memories"][i]["labels"] = labels
        return Case(s.render(), f"memories[{i}].labels: repeats a value")
    ids = ids_of(s) or [fresh_id(draw, s)]
    refs = [s.r.choice(ids) for _ in range(1 + s.r.randrange(MAX_REFS - 1))]
    refs.insert(s.r.randrange(len(refs) + 1), s.r.choice(refs))
    s.value["memories"][i]["entities"] = refs
    return Case(s.render(), f"memories[{i}].entities: repeats a value")


def e_bad_enum(draw: Draw, s: Scenario) -> Case:
    """E39-E40 and the memory kinds: a value outside the enum, never echoed."""
    i = some_memory(draw, s)
    memory = s.value["memories"][i]
    key = s.r.choice(["kind", "source", "labels"])
    if key != "labels":
        value = draw(BAD_KINDS if key == "kind" else BAD_SOURCES)
        memory[key] = value
        return Case(s.render(), f"memories[{i}].{key}: {ENUM_RULE}", (value,))
    value = draw(BAD_LABELS)
    labels = list(memory["labels"])[: MAX_LABELS - 1]
    j = s.r.randrange(len(labels) + 1)
    labels.insert(j, value)
    memory["labels"] = labels
    return Case(s.render(), f"memories[{i}].labels[{j}]: {ENUM_RULE}", (value,))


EXTRACTION_MUTATORS: dict[str, Mutator] = {
    **COMMON,
    "string_for_number": e_string_for_number,
    "salience_out_of_range": e_salience_out_of_range,
    "non_finite_number": e_non_finite,
    "too_many_items": e_too_many,
    "bad_entity_id": e_bad_entity_id,
    "uppercase_relation_or_type": e_bad_word,
    "unsafe_text": e_unsafe_text,
    "lone_surrogate": e_lone_surrogate,
    "blank_text": e_blank_text,
    "oversize_text": e_oversize_text,
    "oversize_astral_completion": e_oversize_astral,
    "dangling_ref": e_dangling_ref,
    "duplicate_entity_id": e_duplicate_entity_id,
    "repeated_value": e_repeated_value,
    "bad_enum": e_bad_enum,
}

# --------------------------------------------------------------------------------------------
# Decision-list mutations shared by review (E24) and reconcile (E4, E7)

HUGE_INDEX = st.one_of(st.integers(0, 3), st.integers(0, 2**70))
NEGATIVE = st.one_of(st.integers(-3, -1), st.integers(-(2**70), -1))


def new_decision(s: Scenario, index: int) -> dict[str, Any]:
    if s.contract == "review":
        return {"index": index, "decision": "keep"}
    return {"index": index, "action": "ADD"}


def ensure_count(draw: Draw, s: Scenario, least: int) -> None:
    """At least ``least`` listed lines / candidates, each with a valid decision."""
    decisions = s.value["decisions"]
    while s.count < least:
        decisions.insert(s.r.randrange(len(decisions) + 1), new_decision(s, s.count))
        if s.allowed is not None:
            s.allowed.append(set(DECISIONS))
        s.count += 1


def some_decision(draw: Draw, s: Scenario) -> int:
    ensure_count(draw, s, 1)
    return s.r.randrange(len(s.value["decisions"]))


def d_missing_decision(draw: Draw, s: Scenario) -> Case:
    gone = s.value["decisions"].pop(some_decision(draw, s))
    return Case(s.render(), f"decisions: no decision for index {gone['index']}")


def d_extra_decision(draw: Draw, s: Scenario) -> Case:
    decisions = s.value["decisions"]
    index = s.count + draw(HUGE_INDEX)
    where = s.r.randrange(len(decisions) + 1)
    decisions.insert(where, new_decision(s, index))
    listed = f"0..{s.count - 1}" if s.count else "none (nothing is listed)"
    return Case(s.render(),
                f"decisions[{where}].index: {index} is not a listed index: {listed}")


def d_repeated_index(draw: Draw, s: Scenario) -> Case:
    decisions = s.value["decisions"]
    original = some_decision(draw, s)
    index = decisions[original]["index"]
    where = s.r.randrange(len(decisions) + 1)
    decisions.insert(where, new_decision(s, index))
    later = max(where, original + (1 if where <= original else 0))
    return Case(s.render(), f"decisions[{later}].index: {index} has another decision")


def d_negative_index(draw: Draw, s: Scenario) -> Case:
    where = some_decision(draw, s)
    index = draw(NEGATIVE)
    s.value["decisions"][where]["index"] = index
    return Case(s.render(), f"decisions[{where}].index: {index} is negative")


DECISION_LIST: dict[str, Mutator] = {
    "missing_decision": d_missing_decision,
    "extra_decision": d_extra_decision,
    "repeated_index": d_repeated_index,
    "negative_index": d_negative_index,
}

# --------------------------------------------------------------------------------------------
# Review mutations (E20-E24)

BAD_DECISIONS = st.one_of(st.text(max_size=12), st.sampled_from(
    ["Keep", "DROP", "edit", "add-preference", "keep ", "delete", "none"])).filter(
    lambda x: x not in DECISIONS)


def r_bad_decision(draw: Draw, s: Scenario) -> Case:
    where = some_decision(draw, s)
    value = draw(BAD_DECISIONS)
    s.value["decisions"][where]["decision"] = value
    return Case(s.render(), f"decisions[{where}].decision: {ENUM_RULE}", (value,))


def r_disallowed_decision(draw: Draw, s: Scenario) -> Case:
    """E21-E22, E24: a decision outside the line's allowed set rejects the whole review."""
    where = some_decision(draw, s)
    if s.allowed is None:
        s.allowed = [set(DECISIONS) for _ in range(s.count)]
    decision = s.value["decisions"][where]
    index = decision["index"]
    s.allowed[index] = {d for d in DECISIONS if draw(BOOL)} - {decision["decision"]}
    return Case(s.render(), f"decisions[{where}].decision: not allowed for line {index}")


REVIEW_MUTATORS: dict[str, Mutator] = {
    **COMMON,
    **DECISION_LIST,
    "bad_decision": r_bad_decision,
    "disallowed_decision": r_disallowed_decision,
}

# --------------------------------------------------------------------------------------------
# Reconcile mutations (E4, E6, E7)

BAD_ACTIONS = st.one_of(st.text(max_size=12), st.sampled_from(
    ["add", "Noop", "update", "MERGE", "DELETE", "ADD ", "SUPERSEDES"])).filter(
    lambda x: x not in ACTIONS)


def unoffered(draw: Draw, s: Scenario, index: int) -> str:
    taken = offered(s.targets, index)
    return str(draw(TARGETS.filter(lambda t: t not in taken)))


def c_add_with_target(draw: Draw, s: Scenario) -> Case:
    """E7: ADD has index and action only."""
    p = some_decision(draw, s)
    decision: dict[str, Any] = {"index": s.value["decisions"][p]["index"], "action": "ADD"}
    extra = s.r.randrange(3)
    if extra != 1:
        decision["target"] = draw(TARGETS)
    if extra != 0:
        decision["text"] = draw(TEXTS)
    s.value["decisions"][p] = decision
    return Case(s.render(), f"decisions[{p}]: unknown field")


def c_noop_without_target(draw: Draw, s: Scenario) -> Case:
    """E7: NOOP requires a supplied target id."""
    p = some_decision(draw, s)
    s.value["decisions"][p] = {"index": s.value["decisions"][p]["index"], "action": "NOOP"}
    return Case(s.render(), f"decisions[{p}]: missing required field `target`")


def c_noop_with_text(draw: Draw, s: Scenario) -> Case:
    p = some_decision(draw, s)
    s.value["decisions"][p] = {"index": s.value["decisions"][p]["index"], "action": "NOOP",
                               "target": draw(TARGETS), "text": draw(TEXTS)}
    return Case(s.render(), f"decisions[{p}]: unknown field")


def c_rewrite_incomplete(draw: Draw, s: Scenario) -> Case:
    """E7: UPDATE and SUPERSEDE require the target plus complete replacement text."""
    p = some_decision(draw, s)
    decision = {"index": s.value["decisions"][p]["index"], "action": s.r.choice(REWRITES)}
    missing = s.r.choice(["target", "text"])
    if missing == "text":
        decision["target"] = draw(TARGETS)
    else:
        decision["text"] = draw(TEXTS)
    s.value["decisions"][p] = decision
    return Case(s.render(), f"decisions[{p}]: missing required field `{missing}`")


def c_bad_action(draw: Draw, s: Scenario) -> Case:
    p = some_decision(draw, s)
    value = draw(BAD_ACTIONS)
    s.value["decisions"][p]["action"] = value
    return Case(s.render(), f"decisions[{p}].action: {ENUM_RULE}", (value,))


def c_action_not_text(draw: Draw, s: Scenario) -> Case:
    """The tag must be a string (msgspec names no "got" type for a tag)."""
    p = some_decision(draw, s)
    s.value["decisions"][p]["action"] = draw(WRONG[s.r.choice(sorted(set(WRONG) - {"str"}))])
    return Case(s.render(), f"decisions[{p}].action: Expected `str`")


def c_untargeted(draw: Draw, s: Scenario) -> Case:
    """A NOOP, UPDATE or SUPERSEDE must name an id that was offered for its index."""
    p = some_decision(draw, s)
    decision = s.value["decisions"][p]
    index = decision["index"]
    if decision["action"] == "ADD":
        decision["action"] = s.r.choice(TARGETED)
        if decision["action"] != "NOOP":
            decision["text"] = draw(TEXTS)
    target = unoffered(draw, s, index)
    decision["target"] = target
    return Case(s.render(), f"decisions[{p}].target: is not an id offered for index {index}",
                (target,))


COLLIDING = [(x, y) for x in TARGETED for y in TARGETED if (x, y) != ("NOOP", "NOOP")]


def c_collision(draw: Draw, s: Scenario) -> Case:
    """E6: a target an UPDATE or SUPERSEDE changes is named by another decision as well (two
    NOOPs on one target are no collision, and are valid outputs above)."""
    ensure_count(draw, s, 2)
    decisions = s.value["decisions"]
    a = s.r.randrange(len(decisions))
    b = (a + 1 + s.r.randrange(len(decisions) - 1)) % len(decisions)
    a, b = min(a, b), max(a, b)
    target = draw(TARGETS)
    first, second = s.r.choice(COLLIDING)
    for p, d in enumerate(decisions):  # nothing else names the target
        if d.get("target") == target:
            decisions[p] = {"index": d["index"], "action": "ADD"}
    for p, action in ((a, first), (b, second)):
        decisions[p] = {"index": decisions[p]["index"], "action": action, "target": target}
        if action != "NOOP":
            decisions[p]["text"] = draw(TEXTS)
    # the target is offered to both indices
    if isinstance(s.targets, dict):
        s.targets = {k: set(v) for k, v in s.targets.items()}
        for p in (a, b):
            s.targets.setdefault(decisions[p]["index"], set()).add(target)
    else:
        s.targets = set(s.targets) | {target}
    return Case(s.render(),
                f"decisions[{b}].target: collides with decisions[{a}] on the same target")


def c_unsafe(draw: Draw, s: Scenario) -> Case:
    p = some_decision(draw, s)
    text, token, rule = unsafe_text(draw, s.r)
    action = s.r.choice(TARGETED)
    key = "target" if action == "NOOP" else s.r.choice(["target", "text"])
    decision: dict[str, Any] = {"index": s.value["decisions"][p]["index"], "action": action,
                                "target": draw(TARGETS)}  # unsafe text fails before offers
    if action != "NOOP":
        decision["text"] = draw(TEXTS)
    decision[key] = text
    s.value["decisions"][p] = decision
    return Case(s.render(), f"decisions[{p}].{key}: {rule}", (text, token))


def c_bad_text(draw: Draw, s: Scenario) -> Case:
    p = some_decision(draw, s)
    action = s.r.choice(TARGETED)
    key = "target" if action == "NOOP" else s.r.choice(["target", "text"])
    limit = NAME_BYTES if key == "target" else TEXT_BYTES
    if draw(BOOL):
        value, size = oversize_text(draw, s.r, limit)
        rule = f"is {size} UTF-8 bytes, more than {limit}"
    else:
        value, rule = draw(BLANKS), "must not be blank"
    decision: dict[str, Any] = {"index": s.value["decisions"][p]["index"], "action": action,
                                "target": draw(TARGETS)}
    if action != "NOOP":
        decision["text"] = draw(TEXTS)
    decision[key] = value
    s.value["decisions"][p] = decision
    return Case(s.render(), f"decisions[{p}].{key}: {rule}")


RECONCILE_MUTATORS: dict[str, Mutator] = {
    **COMMON,
    **DECISION_LIST,
    "add_with_target_or_text": c_add_with_target,
    "noop_without_target": c_noop_without_target,
    "noop_with_text": c_noop_with_text,
    "rewrite_without_target_or_text": c_rewrite_incomplete,
    "bad_action": c_bad_action,
    "action_not_text": c_action_not_text,
    "untargeted_id": c_untargeted,
    "ambiguous_target_collision": c_collision,
    "unsafe_text": c_unsafe,
    "blank_or_oversize_text": c_bad_text,
}

# --------------------------------------------------------------------------------------------
# The checks


def check_rejected(scenario: Scenario, mutators: dict[str, Mutator], draw: Draw) -> None:
    """Mutate ``scenario`` once and check the rejection (E6, E8: never a partial effect)."""
    valid_raw = scenario.render()
    baseline = scenario.parse(valid_raw)
    base_args = scenario.arguments()
    kind = scenario.r.choice(sorted(mutators))  # every kind equally often
    event(kind)
    mutated = copy.deepcopy(scenario)
    case = mutators[kind](draw, mutated)
    args = mutated.arguments()

    with pytest.raises(ModelError) as info:
        mutated.parse(case.raw)
    err = info.value
    assert err.code == "model_invalid_output"
    assert err.category == "model_invalid_output"
    message = str(err)
    for secret in case.secrets:  # content-free: no model text in the message
        if secret not in case.expected:
            assert secret not in message, (kind, message)
    assert MESSAGE.fullmatch(message), (kind, message)
    assert message == case.expected, kind

    # no partial effect: the same failure again, arguments untouched, the valid output intact
    with pytest.raises(ModelError) as again:
        mutated.parse(case.raw)
    assert str(again.value) == message
    assert mutated.arguments() == args
    assert scenario.parse(valid_raw) == baseline
    assert scenario.arguments() == base_args


@fuzz(VALID_RUNS)
@given(EXTRACTIONS)
def test_valid_extraction_round_trips(s: Scenario) -> None:
    """E6, E10, E11: a valid plan parses exactly (never clamped or coerced) and round-trips."""
    got = parse_extraction(s.render())
    assert isinstance(got, ExtractionPlan)
    assert msgspec.to_builtins(got) == s.value
    assert all(type(m.salience) is float for m in got.memories)
    assert [m.salience for m in got.memories] == [m["salience"] for m in s.value["memories"]]
    assert parse_extraction(msgspec.json.encode(got).decode()) == got


@fuzz(MALFORMED_RUNS)
@given(st.data())
def test_malformed_extraction_rejected(data: st.DataObject) -> None:
    """E6-E11, E26: every malformed plan fails with its exact, content-free reason."""
    check_rejected(data.draw(EXTRACTIONS), EXTRACTION_MUTATORS, data.draw)


@fuzz(VALID_RUNS)
@given(REVIEWS)
def test_valid_review_round_trips(s: Scenario) -> None:
    """E24: exactly one allowed decision per listed line parses and round-trips."""
    args = s.arguments()
    got = parse_review(s.render(), s.count, allowed=s.allowed)
    assert isinstance(got, ReviewPlan)
    assert msgspec.to_builtins(got) == s.value
    chosen = {d["index"]: d["decision"] for d in s.value["decisions"]}
    assert [got.decision_for(i) for i in range(s.count)] == [chosen[i] for i in range(s.count)]
    assert parse_review(msgspec.json.encode(got).decode(), s.count, allowed=s.allowed) == got
    assert s.arguments() == args


@fuzz(MALFORMED_RUNS)
@given(st.data())
def test_malformed_review_rejected(data: st.DataObject) -> None:
    """E6, E9, E24: a missing, extra, repeated or disallowed decision rejects the review."""
    check_rejected(data.draw(REVIEWS), REVIEW_MUTATORS, data.draw)


@fuzz(VALID_RUNS)
@given(RECONCILES)
def test_valid_reconcile_round_trips(s: Scenario) -> None:
    """E4, E7: the exact shape per action parses and round-trips."""
    args = s.arguments()
    got = parse_reconcile(s.render(), s.count, s.targets)
    assert isinstance(got, ReconcilePlan)
    assert msgspec.to_builtins(got) == s.value
    assert [isinstance(d, ReconcileAdd) for d in got.decisions] == [
        d["action"] == "ADD" for d in s.value["decisions"]]
    assert parse_reconcile(msgspec.json.encode(got).decode(), s.count, s.targets) == got
    assert s.arguments() == args


@fuzz(MALFORMED_RUNS)
@given(st.data())
def test_malformed_reconcile_rejected(data: st.DataObject) -> None:
    """E6, E7, E9: wrong shapes, untargeted ids and ambiguous collisions are rejected."""
    check_rejected(data.draw(RECONCILES), RECONCILE_MUTATORS, data.draw)


def test_message_grammar_is_closed() -> None:
    """The grammar that makes messages content-free does reject model text."""
    assert MESSAGE.fullmatch("memories[0].text: looks like a credential")
    assert MESSAGE.fullmatch("$: completion is 262145 UTF-16 code units, more than 262144")
    for leaked in ("memories[0].text: looks like a credential sk-abc",
                   "Morgan: unknown field", "$: duplicate key 'Morgan'",
                   "memories[0]: unknown field\nsecond line"):
        assert not MESSAGE.fullmatch(leaked)


def test_every_control_and_bidi_character_is_rejected() -> None:
    """DESIGN 9.11, exhaustively: each C0/C1 control but tab and each bidi embedding, override
    and isolate rejects memory text, an entity name and replacement text, escaped or raw."""
    for char in C0 + C1 + list(BIDI):
        text = f"Morgan {char} joined"
        for escaped in (True, False):
            plan = {"memories": [{"text": text, "kind": "note", "labels": [], "source": "user",
                                  "salience": 0.5, "entities": []}],
                    "entities": [{"id": "e1", "name": text, "type": "person"}],
                    "relations": []}
            with pytest.raises(ModelError, match=rf"^memories\[0\]\.text: {CONTROL_RULE}$"):
                parse_extraction(json.dumps(plan, ensure_ascii=escaped))
            plan["memories"] = []
            with pytest.raises(ModelError, match=rf"^entities\[0\]\.name: {CONTROL_RULE}$"):
                parse_extraction(json.dumps(plan, ensure_ascii=escaped))
            update = {"decisions": [{"index": 0, "action": "UPDATE", "target": "m1",
                                     "text": text}]}
            with pytest.raises(ModelError, match=rf"^decisions\[0\]\.text: {CONTROL_RULE}$"):
                parse_reconcile(json.dumps(update, ensure_ascii=escaped), 1, {"m1"})
    assert parse_extraction(json.dumps({"memories": [], "relations": [], "entities": [
        {"id": "e1", "name": "Morgan\tjoined", "type": "person"}]})).entities[0].name


# --------------------------------------------------------------------------------------------
# Model-chosen keys never reach a message (duplicate keys, a forged path): E8, N12-style
# content-free errors.


def test_duplicate_key_message_does_not_echo_model_keys() -> None:
    base = '{"memories": [], "entities": [], "relations": []'
    for raw in (base + ', "Morgan_loves_jazz": 1, "Morgan_loves_jazz": 2}',
                base + ', "secret_plan": {"a": 1, "a": 2}}'):
        with pytest.raises(ModelError) as info:
            parse_extraction(raw)
        assert "Morgan" not in str(info.value) and "secret" not in str(info.value)


def test_unknown_key_cannot_forge_the_message_path() -> None:
    raw = json.dumps({"memories": [], "entities": [], "relations": [],
                      "x` - at `$Morgan loves\njazz": 1})
    with pytest.raises(ModelError) as info:
        parse_extraction(raw)
    assert str(info.value) == "$: unknown field"
