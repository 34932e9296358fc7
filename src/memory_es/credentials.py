"""The credential screen (J5, DESIGN 9.11): does a text carry a secret?

Remember refuses such text (``remember_credential``) and the capture contracts reject a model
value holding one, so a secret never reaches the journal through either door.

The text is screened in a scan form first: NFKC, then every format character (Unicode
category Cf: zero-width space, joiners, word joiner, soft hyphen, BOM...) removed, so that
``sk_live_4eC3\\u200b9Hq...`` or a full-width ``ｐａｓｓｗｏｒｄ`` is seen as what it spells.
The scan form is only looked at, never stored.

Then two layers:

1. **detect-secrets** (Yelp's scanner, the ``detect-secrets`` package, fully offline): every
   detector it ships for a known credential format (AWS, Stripe, Twilio, SendGrid, Slack,
   GitHub, GitLab, npm, PyPI, Discord, Telegram, Mailchimp, Azure, IBM, Artifactory,
   Cloudant, SoftLayer, Square, OpenAI, JWTs, private keys, basic-auth URLs, and its keyword
   detector reading the text as a ``key: value`` config line). Its entropy detectors are left
   out: they flag ordinary words ("The garage door code changes every March." is "high
   entropy" to them), and so is its IPv4 detector (an address is not a secret). Imported on
   first use: it costs ~120 ms (it imports ``requests``), which a command that never screens
   text does not pay.
2. **Targeted rules** for what detect-secrets (1.5) does not find, each checked against it:

   - ``sk-`` keys (OpenAI project, service-account and admin keys: its OpenAI detector needs
     the legacy ``T3BlbkFJ`` marker);
   - Google API keys ``AIza`` + 35 (it has no Google detector);
   - ``gh[pousr]_`` tokens of any length from 20 (it wants exactly 36 characters), ``xox?-``
     Slack tokens without numeric segments (it wants them), ``-----BEGIN ... PRIVATE KEY-----``
     of every kind (it misses ``ENCRYPTED``), and three-part ``eyJ...`` tokens whose parts do
     not all decode (it decodes them; a cut or forged token still shows its claims);
   - ``password=x``, ``API_KEY: x`` and the like in prose (its keyword detector needs quotes
     or a whole config line);
   - the sentence ``my password is hunter2``: a keyword, then ``is``, then a value that is
     not an ordinary word of a sentence about the password ("The password is on the fridge",
     "... is changed monthly" pass). No scanner reads prose, so this rule is ours; it is
     deliberately narrow (``was``, ``has been`` never match), so "The office WiFi password
     was changed last week" stays a memory.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import Any, Final

from memory_es.literal_gate import GateSet, fold, gate

CREDENTIAL_RULE: Final = "looks like a credential"

_TARGETED: Final = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase|api[_-]?key|secret[_-]?key|client[_-]?secret"
        r"|access[_-]?token|auth[_-]?token)\s*[=:]\s*\S"
    ),
)
_PROSE: Final = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|passcode|pin(?: code)?|api[ _-]?key|secret key"
    r"|access token|auth token|bearer token)\s+is\s*[:=]?\s*[\"'`“‘]?(?P<value>[^\s\"'`”’]+)")
# Words that follow "the password is" in a sentence about the password, not its value.
_ORDINARY: Final = """
    a an the on in at under inside behind by with without for from of to into near next over
    my your his her our their its this that these those same different new old
    not no never still now already also just only always usually case-sensitive
    stored saved kept written written_down noted changed reset set updated rotated expired
    required needed missing wrong correct right known unknown secret private shared long
    short strong weak simple easy hard blank empty somewhere here there
"""
_PROSE_WORDS: Final = frozenset(_ORDINARY.split())
_PROSE_UNIT: Final = len(_TARGETED)  # the prose rule's place among the targeted gates

# The detectors, and the literal gates of each one's patterns: a text they do not admit cannot
# make the detector fire (see memory_es.literal_gate).
_detectors: tuple[list[Any], GateSet] | None = None
_loading = threading.Lock()


def scan_form(text: str) -> str:
    """NFKC with every format character (Cf: zero-width, joiners, soft hyphen, BOM) removed:
    what a reader of the text would type back. ASCII text is its own scan form (NFKC leaves
    it as it is and it holds no format character)."""
    if text.isascii():
        return text
    normal = unicodedata.normalize("NFKC", text)
    return "".join(c for c in normal if unicodedata.category(c) != "Cf")


def _load() -> tuple[list[Any], GateSet]:
    """detect-secrets' format detectors, built once (its entropy and IPv4 ones left out), each
    with the literal gates of its patterns: a text none of them admits cannot make it fire.

    The keyword detector's patterns are built per file type around a term of its own
    ``DENYLIST`` (``password``, ``api_?key``, ``secret``...), so it is gated by those terms,
    read case-insensitively as its patterns read them."""
    global _detectors
    with _loading:
        if _detectors is None:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
            from detect_secrets.plugins import keyword

            skipped = {"Base64 High Entropy String", "Hex High Entropy String",
                       "Public IP (ipv4)"}
            terms = tuple(gate(re.compile(term, re.IGNORECASE)) for term in keyword.DENYLIST)
            mapping: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
            detectors = [mapping[kind]() for kind in sorted(mapping) if kind not in skipped]
            _detectors = detectors, GateSet([
                terms if isinstance(d, keyword.KeywordDetector)
                else tuple(gate(p) for p in d.denylist) if _fires_by_denylist_only(d)
                else (None,)
                for d in detectors])
        return _detectors


def _fires_by_denylist_only(detector: Any) -> bool:
    """Whether a detector finds only what its ``denylist`` expressions match: detect-secrets'
    own regex scan, or a scan that only filters those matches (its JWT detector). Any other
    detector a later release brings is run on every text, never gated."""
    from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector

    cls = type(detector)
    return (cls.analyze_line is BasePlugin.analyze_line
            and cls.analyze_string in (RegexBasedDetector.analyze_string,
                                       JwtTokenDetector.analyze_string)
            and bool(getattr(detector, "denylist", ())))


def _detect_secrets(text: str, *, folded: str | None = None, gated: bool = True) -> str | None:
    detectors, gates = _load()
    admitted = gates.admitted(text, fold(text) if folded is None else folded) if gated else None
    for i, detector in enumerate(detectors):
        if admitted is not None and i not in admitted:
            continue
        # a YAML name: its keyword detector reads the line as ``key: value`` config
        if detector.analyze_line(filename="memory.yaml", line=text, line_number=1):
            return str(detector.secret_type)
    return None


@functools.cache
def _targeted_gates() -> GateSet:
    """The targeted rules' gates, built on first use: opening a store imports this module
    whether or not it ever screens a text."""
    return GateSet([(gate(p),) for p in (*_TARGETED, _PROSE)])


def _targeted(text: str, *, folded: str | None = None) -> str | None:
    admitted = _targeted_gates().admitted(text, fold(text) if folded is None else folded)
    if any(i in admitted and p.search(text) for i, p in enumerate(_TARGETED)):
        return "credential format"
    if _PROSE_UNIT not in admitted:
        return None
    for m in _PROSE.finditer(text):
        if m.group("value").strip(".,;:!?()").lower() not in _PROSE_WORDS:
            return "stated password"
    return None


_LAYERS: Final[tuple[Callable[..., str | None], ...]] = (_targeted, _detect_secrets)


def credential_kind(text: str) -> str | None:
    """What kind of credential ``text`` seems to carry (a detect-secrets type such as
    ``Stripe Access Key``, ``credential format`` or ``stated password``), or None. Content-free:
    never the matched text."""
    form = scan_form(text)
    folded = fold(form)
    for layer in _LAYERS:
        kind = layer(form, folded=folded)  # fold(form): what every gate reads
        if kind is not None:
            return kind
    return None


def looks_like_credential(text: str) -> bool:
    return credential_kind(text) is not None
