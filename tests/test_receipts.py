"""Issue 15 item 2: served-line receipts for a retained provider session (M10-M12)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers_capture import Clock, extraction, memory, open_capture, review, script, turn
from memory_es.host.receipts import (
    MAX_CONVERSATIONS,
    MAX_FINGERPRINTS,
    PROFILE_CLEARED,
    ReceiptCache,
)
from memory_es.recall import AUTO_HEADING, BACKGROUND_HEADING, AutoContext
from memory_es.recall.sections.profile import PROFILE_HEADING

PROFILE = f"{PROFILE_HEADING}\n\n- fact: I live in Lisbon (recorded 2026-05-04)"
TEA = "- – I like green tea. (recorded 2026-05-01; current; you said)"
RUN = "- – I run on Sundays. (recorded 2026-05-02; current; you said)"
SEATS = "- preference: I prefer window seats (recorded 2026-05-04; current)"


def context(*lines: str, profile: str = PROFILE, background: tuple[str, ...] = ()
            ) -> AutoContext:
    parts = [profile] if profile else []
    if lines:
        parts.append("\n".join([AUTO_HEADING, "", *lines]))
    if background:
        parts.append("\n".join([BACKGROUND_HEADING, "", *background]))
    return AutoContext("\n\n".join(parts), profile=profile)


def served(cache: ReceiptCache, conversation: str, ctx: AutoContext, *,
           retained: bool = True) -> str:
    """One successful retained invocation: prepare, (invoke), confirm; the text sent."""
    injection = cache.prepare(conversation, ctx, retained=retained)
    cache.confirm(injection)
    return injection.text


# --------------------------------------------------------------------------------------------
# M10


def test_m10_warm_turns_exclude_unchanged_served_lines() -> None:
    cache = ReceiptCache()
    first = context(TEA, background=(SEATS,))
    assert served(cache, "c", first, retained=False) == first.text  # cold: everything
    assert served(cache, "c", first) == ""  # nothing new
    again = served(cache, "c", context(TEA, RUN, background=(SEATS,)))
    assert again == "\n".join([AUTO_HEADING, "", RUN])  # only the new line, under its heading
    changed = TEA.replace("current", "superseded")
    assert served(cache, "c", context(changed)) == "\n".join([AUTO_HEADING, "", changed])
    assert served(cache, "c", context(RUN, changed)) == ""


def test_m10_preparation_alone_establishes_no_receipt() -> None:
    cache = ReceiptCache()
    cold = cache.prepare("c", context(TEA), retained=False)
    assert cold.text and cache.served("c") is None  # not confirmed: the invocation failed
    assert cache.prepare("c", context(TEA), retained=True).suppressed == "receipts_lost"
    served(cache, "c", context(TEA), retained=False)
    warm = cache.prepare("c", context(TEA, RUN), retained=True)
    assert RUN in warm.text
    assert cache.prepare("c", context(TEA, RUN), retained=True).text == warm.text  # unconfirmed
    cache.confirm(warm)
    assert cache.prepare("c", context(TEA, RUN), retained=True).text == ""


def test_m10_isolated_turns_do_not_replace_shared_session_receipts() -> None:
    cache = ReceiptCache()
    served(cache, "c", context(TEA), retained=False)
    isolated = cache.prepare("c", context(TEA, RUN, profile=""), retained=True, isolated=True)
    assert isolated.text == context(TEA, RUN, profile="").text  # its own context: everything
    cache.confirm(isolated)
    assert cache.served("c") == 1  # the shared session still holds only TEA
    assert served(cache, "c", context(TEA, RUN)) == "\n".join([AUTO_HEADING, "", RUN])


def test_m10_profile_enters_on_cold_reseed_or_when_it_changes() -> None:
    cache = ReceiptCache()
    assert served(cache, "c", context(TEA), retained=False).startswith(PROFILE)
    assert PROFILE_HEADING not in served(cache, "c", context(TEA, RUN))  # unchanged: not again
    longer = PROFILE + "\n- preference: I prefer window seats (recorded 2026-05-04)"
    assert served(cache, "c", context(TEA, profile=longer)) == longer  # changed: sent whole
    assert served(cache, "c", context(TEA, profile=longer)) == ""
    assert served(cache, "c", context(TEA, profile=longer), retained=False).startswith(longer)


# --------------------------------------------------------------------------------------------
# M12: an ended profile source sends one replacement, never repeated text


def test_m12_an_emptied_profile_sends_one_empty_replacement() -> None:
    cache = ReceiptCache()
    served(cache, "c", context(TEA), retained=False)
    assert served(cache, "c", context(TEA, profile="")) == PROFILE_CLEARED
    assert served(cache, "c", context(TEA, profile="")) == ""  # once
    assert served(cache, "c", context(TEA)) == PROFILE  # it comes back when it holds again
    fresh = ReceiptCache()
    served(fresh, "d", context(TEA, profile=""), retained=False)
    assert served(fresh, "d", context(TEA, profile="")) == ""  # never served: nothing to clear


def test_m12_replacement_for_an_ended_source_in_a_real_store(tmp_path: Path) -> None:
    plan = extraction([memory("I live in Lisbon"),
                       memory("I prefer window seats", labels=["preference"])])
    store, _ = open_capture(tmp_path / "mem", script(("extract", "r1", plan),
                                                     ("review", "r1", review("keep"))),
                            clock=Clock(datetime(2026, 5, 4, 9, tzinfo=UTC)),
                            profile={"enabled": True})
    cache = ReceiptCache()
    question = "what should I pack for my trip to Porto next week?"
    with store:
        store.persist_completed_turn(turn("r1", "I live in Lisbon; window seats please."))
        store.drain()
        cold = served(cache, "web:t9", store.auto_context(question), retained=False)
        assert cold.startswith(PROFILE_HEADING) and "I live in Lisbon" in cold
        assert served(cache, "web:t9", store.auto_context(question)) == ""
        seats = next(e.id for e in store.profile().entries if e.label == "preference")
        store.set_status(seats, "done")  # its source is no longer an open note
        replaced = served(cache, "web:t9", store.auto_context(question))
        assert replaced == store.profile().text and "window seats" not in replaced
        assert served(cache, "web:t9", store.auto_context(question)) == ""


# --------------------------------------------------------------------------------------------
# M11: bounds, eviction, loss


def test_m11_at_most_256_conversations_the_least_recent_evicted_then_suppressed() -> None:
    assert (MAX_CONVERSATIONS, MAX_FINGERPRINTS) == (256, 256)
    cache = ReceiptCache()
    for n in range(MAX_CONVERSATIONS):
        served(cache, f"c{n}", context(TEA), retained=False)
    served(cache, "c0", context(TEA, RUN))  # c0 is used again: c1 is now the oldest
    served(cache, "new", context(TEA), retained=False)
    assert len(cache) == MAX_CONVERSATIONS
    assert cache.served("c1") is None and cache.served("c0") == 2
    lost = cache.prepare("c1", context(TEA, RUN), retained=True)
    assert (lost.text, lost.suppressed) == ("", "receipts_lost")
    cache.confirm(lost)  # nothing to record
    assert cache.prepare("c1", context(TEA), retained=True).suppressed == "receipts_lost"
    assert served(cache, "c1", context(TEA), retained=False)  # a cold reseed recovers
    assert served(cache, "c1", context(TEA)) == ""


def test_m11_a_full_receipt_set_suppresses_further_warm_lines() -> None:
    cache = ReceiptCache(max_fingerprints=3)
    lines = [f"- – fact {n}. (recorded 2026-05-01; current)" for n in range(5)]
    served(cache, "c", context(*lines[:2]), retained=False)
    partial = cache.prepare("c", context(*lines[:4]), retained=True)
    assert partial.text == "\n".join([AUTO_HEADING, "", lines[2]])  # one slot was left
    assert partial.suppressed == "receipts_full"
    cache.confirm(partial)
    assert cache.served("c") == 3
    full = cache.prepare("c", context(*lines), retained=True)
    assert (full.text, full.suppressed) == ("", "receipts_full")
    # served lines are not forgotten to make room: they stay suppressed
    assert cache.prepare("c", context(lines[0]), retained=True).text == ""
    # the profile keeps its own slot: a change still replaces it
    assert cache.prepare("c", context(profile=""), retained=True).text == PROFILE_CLEARED


def test_m11_reset_dispose_and_restart_lose_receipts_and_suppress_until_reseed() -> None:
    cache = ReceiptCache()
    served(cache, "a", context(TEA), retained=False)
    served(cache, "b", context(TEA), retained=False)
    pending = cache.prepare("a", context(TEA, RUN), retained=True)
    cache.dispose("b")
    assert cache.prepare("b", context(TEA), retained=True).suppressed == "receipts_lost"
    cache.reset()
    cache.confirm(pending)  # prepared before the reset: it records nothing
    assert cache.served("a") is None
    assert cache.prepare("a", context(TEA), retained=True).suppressed == "receipts_lost"
    restarted = ReceiptCache()  # volatile: a new process knows nothing
    assert restarted.prepare("a", context(TEA), retained=True).suppressed == "receipts_lost"


def test_m11_a_warm_turn_prepared_before_a_reseed_records_nothing() -> None:
    cache = ReceiptCache()
    served(cache, "c", context(TEA), retained=False)
    stale = cache.prepare("c", context(TEA, RUN), retained=True)
    served(cache, "c", context(TEA, profile=""), retained=False)  # a reseed in between
    cache.confirm(stale)
    assert cache.served("c") == 1


def test_m11_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ReceiptCache(max_conversations=0)
