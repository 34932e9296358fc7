"""Served-line receipts for a retained provider session (M10-M12): a host-side helper.

A provider session that keeps its context (a retained conversation) already holds every
automatic line it was sent; sending an unchanged line again only repeats it. The host asks a
:class:`ReceiptCache` what to inject for a turn (:meth:`ReceiptCache.prepare`), invokes the
provider, and only when that retained invocation succeeded records what it served
(:meth:`ReceiptCache.confirm`): preparation alone establishes nothing (M10).

The rules, for one conversation:

- **cold** (``retained=False``: a new provider session, or a reseed): the whole context; its
  confirmation replaces every receipt of the conversation;
- **warm** (``retained=True``): only lines not served before (a line is its section heading
  and its text: a changed line, "superseded" where it said "current", is a new line); the
  profile only when its contents changed, and when a served profile has no entries left, one
  empty replacement (:data:`PROFILE_CLEARED`), never the old text again (M12);
- **lost** (warm, but the cache holds nothing for the conversation: evicted, reset, disposed
  or a restart, since the cache is volatile): nothing, until a cold reseed. The provider may
  hold lines this cache cannot name, so suppressing is the conservative answer (M11);
  deliberate tools (recall, the journal) stay available;
- **full** (256 served lines): no further warm lines rather than forgetting served ones; a
  changed profile still replaces the old one (it holds one receipt slot of its own);
- **isolated** (``isolated=True``: a turn outside the shared session): the whole context, and
  its confirmation never touches the shared session's receipts.

Bounds: at most 256 conversations (the least recently confirmed is evicted) and 256
served-line fingerprints each (M11). Remember writes do not touch the cache (J13): they change
what a search finds, not what a provider already holds. Host continuations load no memory, so
they never call :meth:`prepare`.
"""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import count
from typing import Final, Literal

from memory_es.recall.sections.profile import PROFILE_HEADING
from memory_es.recall.sections.result import AutoContext

MAX_CONVERSATIONS: Final = 256  # M11
MAX_FINGERPRINTS: Final = 256  # M11: per conversation
PROFILE_CLEARED: Final = PROFILE_HEADING + "\n\n- (no current entries; the earlier profile no " \
                                           "longer holds)"
_NO_PROFILE: Final = ""  # the receipt of "no profile held" (never served, or cleared)

Suppressed = Literal["receipts_lost", "receipts_full"]


def fingerprint(heading: str, line: str) -> str:
    """A served line's receipt: SHA-256 of its section heading and text (NFC), 128 bits."""
    data = unicodedata.normalize("NFC", f"{heading}\n{line}").encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:32]


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """The automatic context as (heading, lines) sections: every ``## `` line opens one."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line, []))
        elif line.strip():
            if not sections:
                sections.append(("", []))
            sections[-1][1].append(line)
    return sections


def _render(sections: list[tuple[str, list[str]]]) -> str:
    return "\n\n".join("\n".join([heading, "", *lines]) if heading else "\n".join(lines)
                       for heading, lines in sections if lines)


@dataclass(frozen=True, slots=True)
class Injection:
    """What to inject for one turn and the receipts its confirmation would establish.

    ``text`` is "" when nothing is to be sent; ``suppressed`` says why lines were held back.
    """

    conversation: str
    text: str
    lines: tuple[str, ...] = ()  # fingerprints of the lines in ``text``
    profile: str | None = None  # the profile receipt it establishes; None: unchanged
    cold: bool = False
    isolated: bool = False
    suppressed: Suppressed | None = None
    epoch: int | None = None  # the warm state it was prepared against


@dataclass(slots=True)
class _Conversation:
    epoch: int
    lines: set[str] = field(default_factory=set)
    profile: str = _NO_PROFILE


class ReceiptCache:
    """The volatile receipt cache of one host process (M10-M12; module docstring).

    Thread-safe; nothing is written anywhere, so a restart starts empty (M11).
    """

    def __init__(self, *, max_conversations: int = MAX_CONVERSATIONS,
                 max_fingerprints: int = MAX_FINGERPRINTS) -> None:
        if max_conversations < 1 or max_fingerprints < 1:
            raise ValueError("receipt bounds must be at least 1")
        self.max_conversations = max_conversations
        self.max_fingerprints = max_fingerprints
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self._epochs = count(1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._conversations)

    def served(self, conversation: str) -> int | None:
        """How many line receipts the conversation holds; None when the cache knows nothing
        of it (a warm turn would be suppressed)."""
        with self._lock:
            state = self._conversations.get(conversation)
            return None if state is None else len(state.lines)

    def prepare(self, conversation: str, context: AutoContext | str, *, retained: bool,
                isolated: bool = False) -> Injection:
        """What to inject now for ``context`` (an :class:`AutoContext`, or its text). Changes
        nothing: only :meth:`confirm` records receipts."""
        whole = context if isinstance(context, AutoContext) else AutoContext(context)
        profile = whole.profile
        rest = whole.text
        if profile and rest.startswith(profile):
            rest = rest[len(profile):].lstrip("\n")
        if isolated or not retained:
            sections = _sections(rest)
            return Injection(conversation, "\n\n".join(p for p in (profile, _render(sections))
                                                       if p),
                             lines=tuple(fingerprint(h, ln) for h, lines in sections
                                         for ln in lines),
                             profile=profile and fingerprint(PROFILE_HEADING, profile),
                             cold=not isolated, isolated=isolated)
        with self._lock:
            state = self._conversations.get(conversation)
            if state is None:
                return Injection(conversation, "", suppressed="receipts_lost")
            return self._warm(conversation, state, profile, rest)

    def _warm(self, conversation: str, state: _Conversation, profile: str,
              rest: str) -> Injection:
        room = self.max_fingerprints - len(state.lines)
        held_back = False
        sections: list[tuple[str, list[str]]] = []
        prints: list[str] = []
        for heading, lines in _sections(rest):
            fresh = []
            for line in lines:
                fp = fingerprint(heading, line)
                if fp in state.lines or fp in prints:
                    continue
                if len(prints) >= room:
                    held_back = True
                    continue
                prints.append(fp)
                fresh.append(line)
            sections.append((heading, fresh))
        shown_profile, receipt = "", None
        if profile and fingerprint(PROFILE_HEADING, profile) != state.profile:
            shown_profile, receipt = profile, fingerprint(PROFILE_HEADING, profile)
        elif not profile and state.profile != _NO_PROFILE:
            shown_profile, receipt = PROFILE_CLEARED, _NO_PROFILE  # M12: once, then nothing
        text = "\n\n".join(p for p in (shown_profile, _render(sections)) if p)
        return Injection(conversation, text, lines=tuple(prints), profile=receipt,
                         suppressed="receipts_full" if held_back else None, epoch=state.epoch)

    def confirm(self, injection: Injection) -> None:
        """Record what a successful retained provider invocation served (M10). An isolated
        turn, a suppressed one, or a warm one whose conversation was evicted or reset since
        it was prepared records nothing (the knowledge it built on is gone)."""
        if injection.isolated or injection.suppressed == "receipts_lost":
            return
        with self._lock:
            key = injection.conversation
            if injection.cold:
                state = _Conversation(epoch=next(self._epochs),
                                      lines=set(injection.lines[:self.max_fingerprints]),
                                      profile=injection.profile or _NO_PROFILE)
                self._conversations[key] = state
            else:
                found = self._conversations.get(key)
                if found is None or found.epoch != injection.epoch:
                    return
                room = self.max_fingerprints - len(found.lines)
                found.lines.update(injection.lines[:max(room, 0)])
                if injection.profile is not None:
                    found.profile = injection.profile
            self._conversations.move_to_end(key)
            while len(self._conversations) > self.max_conversations:
                self._conversations.popitem(last=False)  # the least recently confirmed

    def dispose(self, conversation: str) -> None:
        """Forget one conversation's receipts (its session was disposed): a later warm turn
        is suppressed until a cold reseed."""
        with self._lock:
            self._conversations.pop(conversation, None)

    def reset(self) -> None:
        """Forget every receipt, as a restart does (M11)."""
        with self._lock:
            self._conversations.clear()
