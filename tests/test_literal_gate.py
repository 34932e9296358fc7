"""Literal gates (J5's screen, made cheap): a gate never turns away a text its pattern matches.

The credential screen runs forty-odd expressions over every remembered text and every model
value. Each is gated by the literals every match of it must contain (memory_es.literal_gate);
these tests hold the gates to the patterns themselves: texts hypothesis draws from each pattern
are admitted, the case-insensitive fold is re's own, and the screen's verdicts are the ungated
ones."""

from __future__ import annotations

import re
import string
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_es import credentials
from memory_es.credentials import _detect_secrets, _load, credential_kind
from memory_es.literal_gate import GateSet, fold, gate


def screened_patterns() -> list[re.Pattern[str]]:
    """Every expression the screen gates: ours, and each detect-secrets detector's."""
    from detect_secrets.plugins import keyword

    detectors, _ = _load()
    theirs = [p for d in detectors for p in getattr(d, "denylist", ())]
    terms = [re.compile(t, re.IGNORECASE) for t in keyword.DENYLIST]
    return [*credentials._TARGETED, credentials._PROSE, *theirs, *terms]


PATTERNS = screened_patterns()


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=10, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_text_a_pattern_matches_passes_its_gate(pattern: re.Pattern[str],
                                                      data: Any) -> None:
    """Drawn from the pattern (with text around it, any case hypothesis picks): the pattern
    finds it, so its gate must admit it, and a set of gates must name it."""
    text = data.draw(st.from_regex(pattern))
    assert pattern.search(text)
    g = gate(pattern)
    assert g is None or g.admits(text, fold(text)), (pattern.pattern, text, g)
    assert 0 in GateSet([(g,)]).admitted(text, fold(text))


def test_the_fold_is_re_ignorecase_on_every_code_point() -> None:
    """A case-insensitive literal is checked against the folded text: every character re
    matches to an ASCII letter, found letter by letter over all of Unicode, folds to that
    letter (the Kelvin sign, dotless ı, long ſ, dotted İ besides the two cases), and every
    other character stays as it is."""
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    expected = list(everything)
    twins = 0
    for letter in string.ascii_lowercase:
        for m in re.finditer(letter, everything, re.IGNORECASE):
            assert expected[m.start()] == m.group(), hex(m.start())  # one letter each
            expected[m.start()] = letter
            twins += not m.group().isascii()
    assert fold(everything) == "".join(expected)
    assert twins >= 4  # K (U+212A), ı, ſ, İ at least: a plain lower() would miss them
    assert fold("Zoë İstanbul \u212aelvin ſtraße ı") == "zoë istanbul kelvin straße i"


def test_gates_keep_only_what_every_match_contains() -> None:
    sk = gate(re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"))
    assert sk is not None and sk.clauses == (("sk-",),) and not sk.folded
    either = gate(re.compile(r"(?i)(?:Pass(?:word)?|token)\s*[=:]"))
    assert either is not None and either.folded
    assert set(either.clauses) == {("token", "pass"), (":", "=")}
    assert gate(re.compile(r"(?:abc)?\d+")) is None  # nothing is required
    assert gate(re.compile(r"x*(?=secret)")) is None  # a look-ahead is not followed
    repeated = gate(re.compile(r"(?:ab){2,}c?"))
    assert repeated is not None and repeated.clauses == (("ab",),)


def test_a_dotless_i_does_not_slip_past_the_screen() -> None:
    """re.IGNORECASE matches ``ı`` (which NFKC keeps) to ``i``: the gate must fold it the same
    way, or ``apı_key=...`` would skip the pattern that refuses it."""
    for text in ("the apı_key=9f8e7d6c5b4a for the shop", "my_prıvate_key: 'Zm9vYmFyYmF6'"):
        assert credential_kind(text) is not None, text
        assert _detect_secrets(text) == _detect_secrets(text, gated=False), text
    assert credential_kind("the apı key was rotated on Monday") is None


def test_only_a_detector_that_fires_by_its_own_expressions_is_gated() -> None:
    """A detector is gated by its ``denylist`` only when that is all it can fire on: every
    shipped format detector (JWT filters its matches), never one that scans otherwise."""
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.keyword import KeywordDetector

    from memory_es.credentials import _fires_by_denylist_only

    detectors, _ = _load()
    assert all(_fires_by_denylist_only(d) for d in detectors
               if not isinstance(d, KeywordDetector))

    class Contextual(RegexBasedDetector):  # fires on more than its expressions match
        secret_type = "contextual"
        denylist = (re.compile("never-in-text"),)

        def analyze_string(self, string: str) -> Any:
            yield from (["whole line"] if "db" in string else [])

    assert not _fires_by_denylist_only(Contextual())
    assert _fires_by_denylist_only(type("Plain", (RegexBasedDetector,), {
        "secret_type": "plain", "denylist": (re.compile("x"),)})())


CORPUS = (
    "Morgan moved to Lisbon in March and started a new job at the bakery.",
    "AKIAIOSFODNN7EXAMPLE is the key in the AWS docs",
    "ghp_" + "a" * 36, "xoxb-123456789012-abcdefghij", "glpat-" + "x" * 20,
    "SG." + "a" * 22 + "." + "b" * 43, "sq0csp-" + "c" * 43, "AccountKey=" + "d" * 88,
    "https://user:hunter22@example.com/db", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefgh",
    "-----BEGIN OPENSSH PRIVATE KEY-----", "123456789:" + "A" * 35, "ab" * 16 + "-us12",
    "AC" + "a" * 32, "SK" + "0" * 32, "rk_live_" + "Z" * 24, "//registry/:_authToken=npm_x",
    "cloudant_password='abcdefghijkl'", "SOFTLAYER_API_KEY = 'z' * 64",
    "Zoë moved to Łódź → Kraków", "A" * 3000, "password: \"hunter22hunter\"",
)


def test_the_gated_screen_says_what_the_ungated_one_says() -> None:
    """Over keys of every detector's format, ordinary memories and long text, in every case:
    the same verdict with the gates as without them, and the formats are found."""
    found = 0
    for base in CORPUS:
        for text in (base, base.upper(), base.lower(), f"note: {base} (old)"):
            verdict = _detect_secrets(text)
            assert verdict == _detect_secrets(text, gated=False), text
            found += verdict is not None
    assert found >= 40
