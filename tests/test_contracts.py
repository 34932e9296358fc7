"""Strict capture model contracts (SPEC E6-E11, E18-E24, E39-E40; DESIGN 6, 9.11)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from memory_es.capture.contracts import (
    MAX_COMPLETION_UTF16,
    ExtractionPlan,
    ReconcileAdd,
    ReconcileNoop,
    ReconcileSupersede,
    ReconcileUpdate,
    check_safe_text,
    parse_extraction,
    parse_reconcile,
    parse_review,
    utf16_length,
)
from memory_es.capture.models import ModelError


def memory(**over: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "text": "Morgan joined the Maple book club.",
        "kind": "note",
        "labels": ["fact"],
        "source": "user",
        "salience": 0.7,
        "entities": ["e1"],
    }
    m.update(over)
    return m


def plan(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "memories": [memory()],
        "entities": [
            {"id": "e1", "name": "Morgan", "type": "person"},
            {"id": "maple-club", "name": "Maple book club", "type": "organization"},
        ],
        "relations": [{"from": "e1", "to": "maple-club", "relation": "member_of"}],
    }
    p.update(over)
    return p


def rejects(call: Any, *args: Any, match: str) -> ModelError:
    with pytest.raises(ModelError, match=match) as info:
        call(*args)
    assert info.value.code == "model_invalid_output"
    assert info.value.category == "model_invalid_output"
    return info.value


# ---------------------------------------------------------------------------- extraction


def test_valid_extraction_parses_exactly() -> None:
    got = parse_extraction(json.dumps(plan()))
    assert isinstance(got, ExtractionPlan)
    m = got.memories[0]
    assert (m.kind, m.labels, m.source, m.salience, m.entities) == (
        "note", ["fact"], "user", 0.7, ["e1"])
    assert got.relations[0].from_id == "e1"
    assert got.relations[0].to_id == "maple-club"
    assert got.relations[0].relation == "member_of"


def test_empty_plan_is_valid() -> None:
    got = parse_extraction('{"memories": [], "entities": [], "relations": []}')
    assert got.memories == [] and got.entities == [] and got.relations == []


def test_at_most_eight_memories() -> None:
    eight = plan(memories=[memory(text=f"Fact number {i}.") for i in range(8)])
    assert len(parse_extraction(json.dumps(eight)).memories) == 8
    nine = plan(memories=[memory(text=f"Fact number {i}.") for i in range(9)])
    rejects(parse_extraction, json.dumps(nine), match=r"^memories: has 9 items, more than 8$")


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, 0.5])
def test_salience_in_range_is_kept_exactly(value: float) -> None:
    got = parse_extraction(json.dumps(plan(memories=[memory(salience=value)])))
    assert got.memories[0].salience == value


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("1.3", "1.3"), ("1.0000001", "1.0000001"), ("-0.0001", "-0.0001"), ("2", "2.0")],
)
def test_salience_out_of_range_is_rejected_never_clamped(raw: str, shown: str) -> None:
    text = json.dumps(plan(memories=[memory(salience=0.25)])).replace("0.25", raw)
    rejects(parse_extraction, text,
            match=rf"^memories\[0\]\.salience: {re.escape(shown)} is outside 0\.\.1$")


@pytest.mark.parametrize("value", ['"0.5"', "true", "null"])
def test_salience_is_never_coerced(value: str) -> None:
    text = json.dumps(plan(memories=[memory(salience=0.25)])).replace("0.25", value)
    rejects(parse_extraction, text, match=r"^memories\[0\]\.salience: Expected `float`")


def test_nan_is_not_json() -> None:
    text = json.dumps(plan(memories=[memory(salience=0.25)])).replace("0.25", "NaN")
    rejects(parse_extraction, text, match=r"^\$: not one valid JSON value$")


@pytest.mark.parametrize(
    ("field", "value"),
    [("kind", "reminder"), ("source", "system"), ("labels", ["opinion"])],
)
def test_enums_reject_other_values(field: str, value: Any) -> None:
    bad = plan(memories=[memory(**{field: value})])
    err = rejects(parse_extraction, json.dumps(bad), match=r"^memories\[0\]\.")
    assert "not one of the allowed values" in str(err)


@pytest.mark.parametrize("kind", ["note", "event", "task"])
@pytest.mark.parametrize("source", ["user", "assistant", "tool", "document"])
def test_all_kinds_and_sources_are_allowed(kind: str, source: str) -> None:
    got = parse_extraction(json.dumps(plan(memories=[memory(kind=kind, source=source)])))
    assert (got.memories[0].kind, got.memories[0].source) == (kind, source)


def test_labels_all_three_distinct() -> None:
    ok = plan(memories=[memory(labels=["fact", "preference", "lesson"])])
    assert parse_extraction(json.dumps(ok)).memories[0].labels == ["fact", "preference", "lesson"]
    bad = plan(memories=[memory(labels=["fact", "fact"])])
    rejects(parse_extraction, json.dumps(bad), match=r"^memories\[0\]\.labels: repeats a value$")


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ((), r"^\$: unknown field$"),
        (("memories", 0), r"^memories\[0\]: unknown field$"),
        (("entities", 0), r"^entities\[0\]: unknown field$"),
        (("relations", 0), r"^relations\[0\]: unknown field$"),
    ],
)
def test_unknown_field_rejected_at_any_level(where: tuple[Any, ...], expected: str) -> None:
    bad = plan()
    target: Any = bad
    for step in where:
        target = target[step]
    target["extra"] = 1
    rejects(parse_extraction, json.dumps(bad), match=expected)


def test_unknown_field_name_is_not_echoed() -> None:
    bad = plan()
    bad["memories"][0]["Morgan secretly loves jazz"] = 1
    err = rejects(parse_extraction, json.dumps(bad), match=r"^memories\[0\]: unknown field$")
    assert "jazz" not in str(err)


def test_missing_field_rejected() -> None:
    bad = plan()
    del bad["memories"][0]["entities"]
    rejects(parse_extraction, json.dumps(bad),
            match=r"^memories\[0\]: missing required field `entities`$")
    rejects(parse_extraction, '{"memories": [], "entities": []}',
            match=r"^\$: missing required field `relations`$")


def test_top_level_must_be_one_object() -> None:
    rejects(parse_extraction, "[]", match=r"^\$: Expected `object`, got `array`$")
    rejects(parse_extraction, json.dumps(plan()) + " {}", match=r"^\$: not one valid JSON value$")
    rejects(parse_extraction, "", match=r"^\$: not one valid JSON value$")


def test_duplicate_keys_rejected_at_any_depth() -> None:
    good = json.dumps(plan())
    assert parse_extraction(good).memories
    top = good[:-1] + ', "relations": []}'
    rejects(parse_extraction, top, match=r"^\$: duplicate key 'relations'$")
    nested = good.replace('"salience": 0.7', '"salience": 0.7, "salience": 0.7')
    rejects(parse_extraction, nested, match=r"^memories\[0\]: duplicate key 'salience'$")
    deep = good.replace('"type": "organization"', '"type": "organization", "type": "person"')
    rejects(parse_extraction, deep, match=r"^entities\[1\]: duplicate key 'type'$")


def test_relations_must_be_lowercase_words() -> None:
    for ok in ("works_at", "member_of", "knows", "r2"):
        p = plan(relations=[{"from": "e1", "to": "maple-club", "relation": ok}])
        assert parse_extraction(json.dumps(p)).relations[0].relation == ok
    for bad in ("Works_At", "WORKS", "works at", "works-at", "", "1st"):
        p = plan(relations=[{"from": "e1", "to": "maple-club", "relation": bad}])
        rejects(parse_extraction, json.dumps(p),
                match=r"^relations\[0\]\.relation: is not a lowercase word")


def test_entity_references_must_resolve() -> None:
    rejects(parse_extraction, json.dumps(plan(memories=[memory(entities=["e2"])])),
            match=r"^memories\[0\]\.entities\[0\]: names no entity of the plan$")
    rel = plan(relations=[{"from": "e1", "to": "e9", "relation": "knows"}])
    rejects(parse_extraction, json.dumps(rel),
            match=r"^relations\[0\]\.to: names no entity of the plan$")
    rejects(parse_extraction, json.dumps(plan(memories=[memory(entities=["E1"])])),
            match=r"^memories\[0\]\.entities\[0\]: is not an entity id")


def test_entity_ids_unique_and_refs_distinct() -> None:
    dup = plan(entities=[{"id": "e1", "name": "Morgan", "type": "person"},
                         {"id": "e1", "name": "Maple", "type": "place"}],
               relations=[])
    rejects(parse_extraction, json.dumps(dup),
            match=r"^entities\[1\]\.id: repeats another entity's id$")
    rejects(parse_extraction, json.dumps(plan(memories=[memory(entities=["e1", "e1"])])),
            match=r"^memories\[0\]\.entities: repeats a value$")


def test_entity_type_is_a_lowercase_word() -> None:
    bad = plan()
    bad["entities"][0]["type"] = "Person"
    rejects(parse_extraction, json.dumps(bad), match=r"^entities\[0\]\.type: is not a lowercase")


def test_text_bounds() -> None:
    ok = "x" * 2048
    assert parse_extraction(json.dumps(plan(memories=[memory(text=ok)]))).memories[0].text == ok
    rejects(parse_extraction, json.dumps(plan(memories=[memory(text="x" * 2049)])),
            match=r"^memories\[0\]\.text: is 2049 UTF-8 bytes, more than 2048$")
    rejects(parse_extraction, json.dumps(plan(memories=[memory(text="  \t ")])),
            match=r"^memories\[0\]\.text: must not be blank$")


UNSAFE = [
    ("line one\nline two", "control"),
    ("bell\x07", "control"),
    ("c1 \x85 next", "control"),
    ("abc\u202edcba", "bidi"),
    ("isolate \u2066x\u2069", "bidi"),
    ("nice <!-- hidden", "comment"),
    ("close --> it", "comment"),
    ("key sk-abcdefghijklmnopqrstuv", "credential"),
    ("aws AKIAABCDEFGHIJKLMNOP", "credential"),
    ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "credential"),
    ("slack xoxb-1234567890-abcdef", "credential"),
    ("-----BEGIN RSA PRIVATE KEY----- MIIE", "credential"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU", "credential"),
    ("db password=hunter2", "credential"),
    ("API_KEY: abc123", "credential"),
]


@pytest.mark.parametrize(("text", "rule"), UNSAFE)
def test_unsafe_text_rejected(text: str, rule: str) -> None:
    assert check_safe_text(text) is not None
    err = rejects(parse_extraction, json.dumps(plan(memories=[memory(text=text)])),
                  match=r"^memories\[0\]\.text: ")
    assert text not in str(err)
    expected = {"control": "contains a control, bidi or surrogate character",
                "bidi": "contains a control, bidi or surrogate character",
                "comment": "contains an HTML comment marker",
                "credential": "looks like a credential"}[rule]
    assert str(err) == f"memories[0].text: {expected}"


@pytest.mark.parametrize(
    "text",
    ["Uses a\ttab", "Morgan's task-list app", "sk-learn is a library", "The password was reset.",
     "Zoë moved to Łódź → Kraków", "a -> b", "AKIA is an acronym"],
)
def test_safe_text_accepted(text: str) -> None:
    assert check_safe_text(text) is None
    assert parse_extraction(json.dumps(plan(memories=[memory(text=text)]))).memories[0].text == text


def test_unsafe_entity_name_rejected() -> None:
    bad = plan()
    bad["entities"][0]["name"] = "Mor\u202egan"
    rejects(parse_extraction, json.dumps(bad), match=r"^entities\[0\]\.name: contains a control")


def test_lone_surrogate_rejected() -> None:
    assert check_safe_text("bad \ud800 half") is not None
    raw = json.dumps(plan(memories=[memory(text="bad \ud800 half")]))
    assert "\\ud800" in raw
    rejects(parse_extraction, raw, match=r"^\$: not one valid JSON value$")
    assert parse_extraction(raw.replace("\\ud800", "\\ud83d\\ude00")).memories


# ---------------------------------------------------------------------------- size cap (E9)


def test_utf16_length_counts_code_units() -> None:
    assert utf16_length("abc") == 3
    assert utf16_length("é") == 1
    assert utf16_length("😀") == 2  # one code point, two UTF-16 code units


def test_completion_exactly_at_the_cap_parses() -> None:
    base = json.dumps(plan())
    raw = base + " " * (MAX_COMPLETION_UTF16 - len(base))
    assert utf16_length(raw) == MAX_COMPLETION_UTF16
    assert parse_extraction(raw).memories[0].salience == 0.7


def test_completion_over_the_cap_is_rejected_before_parsing() -> None:
    raw = "{not json" + " " * (MAX_COMPLETION_UTF16 - len("{not json") + 1)
    assert utf16_length(raw) == MAX_COMPLETION_UTF16 + 1
    rejects(parse_extraction, raw,
            match=r"^\$: completion is 262145 UTF-16 code units, more than 262144$")
    # the same invalid text under the cap fails as JSON, so the cap really came first
    rejects(parse_extraction, "{not json", match=r"^\$: not one valid JSON value$")


def test_cap_counts_utf16_not_code_points() -> None:
    base = json.dumps(plan())
    emoji = (MAX_COMPLETION_UTF16 - len(base)) // 2 + 1
    raw = base + "😀" * emoji
    assert len(raw) <= MAX_COMPLETION_UTF16 < utf16_length(raw)
    rejects(parse_extraction, raw, match=r"^\$: completion is \d+ UTF-16 code units")


def test_cap_applies_to_every_stage() -> None:
    raw = " " * (MAX_COMPLETION_UTF16 + 1)
    rejects(parse_review, raw, 1, match=r"^\$: completion is ")
    rejects(parse_reconcile, raw, 1, {"a"}, match=r"^\$: completion is ")


# ---------------------------------------------------------------------------- review (E20-E24)


def review(*decisions: tuple[int, str]) -> str:
    return json.dumps({"decisions": [{"index": i, "decision": d} for i, d in decisions]})


def test_review_one_decision_per_line() -> None:
    got = parse_review(review((1, "drop"), (0, "keep"), (2, "add_preference")), 3)
    assert [got.decision_for(i) for i in range(3)] == ["keep", "drop", "add_preference"]
    assert parse_review('{"decisions": []}', 0).decisions == []


def test_review_missing_extra_or_repeated_decision_rejects() -> None:
    rejects(parse_review, review((0, "keep")), 2, match=r"^decisions: no decision for index 1$")
    rejects(parse_review, review((0, "keep"), (1, "keep"), (2, "keep")), 2,
            match=r"^decisions\[2\]\.index: 2 is not a listed index: 0\.\.1$")
    rejects(parse_review, review((0, "keep"), (0, "drop")), 2,
            match=r"^decisions\[1\]\.index: 0 has another decision$")
    rejects(parse_review, review((-1, "keep")), 1, match=r"^decisions\[0\]\.index: -1 is negative")


def test_review_disallowed_decision_rejects() -> None:
    rejects(parse_review, review((0, "edit")), 1,
            match=r"^decisions\[0\]\.decision: value is not one of the allowed values$")
    allowed = [{"keep", "drop"}, {"keep", "add_preference"}]
    assert parse_review(review((0, "drop"), (1, "keep")), 2, allowed=allowed).decisions
    rejects(lambda raw, n: parse_review(raw, n, allowed=allowed),
            review((0, "keep"), (1, "drop")), 2,
            match=r"^decisions\[1\]\.decision: not allowed for line 1$")


def test_review_rejects_unknown_fields_and_coercion() -> None:
    raw = '{"decisions": [{"index": 0, "decision": "keep", "text": "changed"}]}'
    rejects(parse_review, raw, 1, match=r"^decisions\[0\]: unknown field$")
    rejects(parse_review, '{"decisions": [{"index": "0", "decision": "keep"}]}', 1,
            match=r"^decisions\[0\]\.index: Expected `int`, got `str`$")
    rejects(parse_review, '{"decisions": [{"index": 0.0, "decision": "keep"}]}', 1,
            match=r"^decisions\[0\]\.index: Expected `int`, got `float`$")


def test_review_allowed_must_match_line_count() -> None:
    with pytest.raises(ValueError):
        parse_review(review((0, "keep")), 1, allowed=[])


# ---------------------------------------------------------------------------- reconcile (E7)


def reconcile(*decisions: dict[str, Any]) -> str:
    return json.dumps({"decisions": list(decisions)})


ADD = {"index": 0, "action": "ADD"}


def test_reconcile_exact_shapes() -> None:
    raw = reconcile(
        ADD,
        {"index": 1, "action": "NOOP", "target": "m1"},
        {"index": 2, "action": "UPDATE", "target": "m2", "text": "Morgan moved to Kraków."},
        {"index": 3, "action": "SUPERSEDE", "target": "m3", "text": "Morgan finished the game."},
    )
    got = parse_reconcile(raw, 4, {"m1", "m2", "m3"})
    assert [type(d) for d in got.decisions] == [
        ReconcileAdd, ReconcileNoop, ReconcileUpdate, ReconcileSupersede]
    upd = got.decisions[2]
    assert isinstance(upd, ReconcileUpdate)
    assert (upd.target, upd.text) == ("m2", "Morgan moved to Kraków.")


def test_add_with_target_or_text_rejected() -> None:
    rejects(parse_reconcile, reconcile({**ADD, "target": "m1"}), 1, {"m1"},
            match=r"^decisions\[0\]: unknown field$")
    rejects(parse_reconcile, reconcile({**ADD, "text": "x"}), 1, {"m1"},
            match=r"^decisions\[0\]: unknown field$")


def test_noop_requires_target_and_no_text() -> None:
    rejects(parse_reconcile, reconcile({"index": 0, "action": "NOOP"}), 1, {"m1"},
            match=r"^decisions\[0\]: missing required field `target`$")
    rejects(parse_reconcile,
            reconcile({"index": 0, "action": "NOOP", "target": "m1", "text": "x"}), 1, {"m1"},
            match=r"^decisions\[0\]: unknown field$")


@pytest.mark.parametrize("action", ["UPDATE", "SUPERSEDE"])
def test_update_and_supersede_require_target_and_text(action: str) -> None:
    rejects(parse_reconcile, reconcile({"index": 0, "action": action, "target": "m1"}), 1,
            {"m1"}, match=r"^decisions\[0\]: missing required field `text`$")
    rejects(parse_reconcile, reconcile({"index": 0, "action": action, "text": "New."}), 1,
            {"m1"}, match=r"^decisions\[0\]: missing required field `target`$")
    rejects(parse_reconcile,
            reconcile({"index": 0, "action": action, "target": "m1", "text": " "}), 1, {"m1"},
            match=r"^decisions\[0\]\.text: must not be blank$")
    rejects(parse_reconcile,
            reconcile({"index": 0, "action": action, "target": "m1", "text": "a <!-- b"}), 1,
            {"m1"}, match=r"^decisions\[0\]\.text: contains an HTML comment marker$")


def test_unknown_action_rejected_without_echo() -> None:
    err = rejects(parse_reconcile, reconcile({"index": 0, "action": "MERGE secret"}), 1, {"m1"},
                  match=r"^decisions\[0\]\.action: value is not one of the allowed values$")
    assert "secret" not in str(err)
    rejects(parse_reconcile, reconcile({"index": 0, "action": "add"}), 1, {"m1"},
            match=r"^decisions\[0\]\.action: value is not one of the allowed values$")


def test_reconcile_one_decision_per_candidate() -> None:
    rejects(parse_reconcile, reconcile(ADD), 2, {"m1"},
            match=r"^decisions: no decision for index 1$")
    rejects(parse_reconcile, reconcile(ADD, ADD), 2, {"m1"},
            match=r"^decisions\[1\]\.index: 0 has another decision$")
    rejects(parse_reconcile, reconcile(ADD, {"index": 1, "action": "ADD"}), 1, {"m1"},
            match=r"^decisions\[1\]\.index: 1 is not a listed index: 0\.\.0$")


def test_target_must_be_offered() -> None:
    raw = reconcile({"index": 0, "action": "NOOP", "target": "m9"})
    rejects(parse_reconcile, raw, 1, {"m1"},
            match=r"^decisions\[0\]\.target: is not an id offered for index 0$")
    per = {0: {"m1"}, 1: {"m2"}}
    ok = reconcile({"index": 0, "action": "NOOP", "target": "m1"},
                   {"index": 1, "action": "NOOP", "target": "m2"})
    assert len(parse_reconcile(ok, 2, per).decisions) == 2
    crossed = reconcile({"index": 0, "action": "NOOP", "target": "m2"},
                        {"index": 1, "action": "NOOP", "target": "m2"})
    rejects(parse_reconcile, crossed, 2, per,
            match=r"^decisions\[0\]\.target: is not an id offered for index 0$")


def test_ambiguous_target_collisions_rejected() -> None:
    upd = {"index": 0, "action": "UPDATE", "target": "m1", "text": "One."}
    sup = {"index": 1, "action": "SUPERSEDE", "target": "m1", "text": "Two."}
    noop = {"index": 1, "action": "NOOP", "target": "m1"}
    for pair in ((upd, sup), (upd, noop), (noop | {"index": 0}, sup)):
        rejects(parse_reconcile, reconcile(*pair), 2, {"m1"},
                match=r"^decisions\[1\]\.target: collides with decisions\[0\] on the same target$")
    # two NOOPs on one line, or changes to different lines, are not collisions
    two_noops = reconcile(noop | {"index": 0}, noop)
    assert len(parse_reconcile(two_noops, 2, {"m1"}).decisions) == 2
    apart = reconcile(upd, sup | {"target": "m2"})
    assert len(parse_reconcile(apart, 2, {"m1", "m2"}).decisions) == 2


def test_reconcile_duplicate_key_rejected() -> None:
    raw = '{"decisions": [{"index": 0, "action": "ADD", "action": "ADD"}]}'
    rejects(parse_reconcile, raw, 1, {"m1"}, match=r"^decisions\[0\]: duplicate key 'action'$")


def test_plan_is_not_mutated_by_parsing() -> None:
    p = plan()
    before = copy.deepcopy(p)
    parse_extraction(json.dumps(p))
    assert p == before


def test_reconcile_targets_must_not_be_one_string() -> None:
    """A plain string would be checked by substring: "m" would pass for "m1"."""
    with pytest.raises(TypeError, match="not one string"):
        parse_reconcile('{"decisions": [{"index": 0, "action": "NOOP", "target": "m"}]}', 1, "m1")


def test_no_listed_index_is_named_plainly() -> None:
    with pytest.raises(ModelError, match=r"is not a listed index: none \(nothing is listed\)$"):
        parse_review('{"decisions": [{"index": 0, "decision": "keep"}]}', 0)
