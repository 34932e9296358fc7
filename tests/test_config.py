"""memory_es.config: keys, defaults, validation (SPEC O1-O9, A1, A5, A12, A15-A17, DESIGN 9.13)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memory_es.config import (
    FOCUS_MAX_BYTES,
    CaptureConfig,
    ConfigError,
    EmbeddingsConfig,
    LlmConfig,
    MemoryConfig,
    load_config,
    parse_config,
    validate_file,
)
from memory_es.errors import MemoryEsError

EMB: dict[str, Any] = {"dim": 768}
OLLAMA_LLM: dict[str, Any] = {"provider": "ollama", "model": "qwen3:8b"}
AGENT_LLM: dict[str, Any] = {"provider": "agent-host", "model": "openai-codex:gpt-5.6-terra"}


def bujo_capture(**extra: Any) -> dict[str, Any]:
    """A minimal valid BuJo capture block, with overrides."""
    block: dict[str, Any] = {
        "mode": "bujo",
        "writeMode": "capture",
        "embeddings": dict(EMB),
        "llm": dict(OLLAMA_LLM),
    }
    block.update(extra)
    return block


def errors_of(obj: object) -> list[str]:
    """The ConfigError lines parse_config raises for obj (fails the test if it accepts obj)."""
    with pytest.raises(ConfigError) as info:
        parse_config(obj)
    return info.value.errors


def write(tmp_path: Path, text: str, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- defaults (O1, DESIGN 9.13) ----------------------------------------------------------------


def test_o1_design_9_13_defaults_when_no_file() -> None:
    cfg = load_config(None)
    assert cfg.mode == "lite"
    assert cfg.tier == "lite"
    assert cfg.write_mode == "append-host-summary"
    assert cfg.path == "./.memory"
    assert cfg.llm is None
    assert cfg.embeddings is None
    assert cfg.recall_tool.enabled is True
    assert cfg.remember_tool.enabled is True
    assert cfg.capture.cron is True
    assert cfg.capture.webhook is True
    assert cfg.capture.focus is None
    assert cfg.capture.only is None
    assert cfg.capture.reconcile_model is None
    assert cfg.capture.intent_lifecycle is False
    assert cfg.recall.intent_expiry is False
    assert cfg.recall.recency is False
    assert cfg.profile.enabled is False
    assert cfg.max_bytes is None
    assert cfg.is_capture is False


@pytest.mark.parametrize("obj", [{}, {"memory": {}}])
def test_o1_empty_block_and_empty_wrapper_equal_defaults(obj: object) -> None:
    assert parse_config(obj) == MemoryConfig()


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("ollama", "nomic-embed-text:v1.5"),
        ("lmstudio", "text-embedding-nomic-embed-text-v1.5"),
        ("openai", None),
    ],
)
def test_o1_embeddings_model_default_per_provider(provider: str, model: str | None) -> None:
    cfg = parse_config({"mode": "journal", "embeddings": {"provider": provider}})
    assert cfg.embeddings is not None
    assert cfg.embeddings.provider == provider
    assert cfg.embeddings.model == model
    assert cfg.embeddings.dim == 768


def test_o3_dim_alone_is_valid_and_other_fields_default() -> None:
    cfg = parse_config({"mode": "journal", "embeddings": {"dim": 384}})
    assert cfg.embeddings == EmbeddingsConfig(
        provider="ollama", model="nomic-embed-text:v1.5", dim=384
    )


def test_o1_explicit_embeddings_model_is_kept() -> None:
    cfg = parse_config({"mode": "journal", "embeddings": {"provider": "openai", "model": "m-3"}})
    assert cfg.embeddings is not None
    assert cfg.embeddings.model == "m-3"


def test_o1_llm_endpoint_and_timeout_defaults() -> None:
    cfg = parse_config(bujo_capture())
    assert cfg.llm == LlmConfig(provider="ollama", model="qwen3:8b")
    assert cfg.llm is not None
    assert cfg.llm.endpoint == "http://localhost:11434"
    assert cfg.llm.timeout_ms == 60000


def test_o1_camelcase_keys_map_to_snake_case_attributes() -> None:
    cfg = parse_config(
        bujo_capture(
            path="./.mono-agent/memory",
            llm={**AGENT_LLM, "timeoutMs": 120000},
            recallTool={"enabled": False},
            rememberTool={"enabled": False},
            capture={
                "reconcileModel": "openai-codex:gpt-6-sol",
                "intentLifecycle": True,
                "cron": False,
                "webhook": False,
            },
            recall={"intentExpiry": True, "recency": True},
            profile={"enabled": True},
            maxBytes=4096,
        )
    )
    assert cfg.write_mode == "capture"
    assert cfg.is_capture is True
    assert cfg.path == "./.mono-agent/memory"
    assert cfg.llm is not None
    assert cfg.llm.timeout_ms == 120000
    assert cfg.recall_tool.enabled is False
    assert cfg.remember_tool.enabled is False
    assert cfg.capture.reconcile_model == "openai-codex:gpt-6-sol"
    assert cfg.capture.intent_lifecycle is True
    assert cfg.recall.intent_expiry is True
    assert cfg.recall.recency is True
    assert cfg.profile.enabled is True
    assert cfg.max_bytes == 4096


def test_o1_tool_toggle_empty_block_keeps_enabled() -> None:
    cfg = parse_config({"recallTool": {}, "rememberTool": {}})
    assert cfg.recall_tool.enabled is True
    assert cfg.remember_tool.enabled is True


def test_a12_cron_and_webhook_false_in_bujo_capture() -> None:
    cfg = parse_config(bujo_capture(capture={"cron": False, "webhook": True}))
    assert cfg.capture.cron is False
    assert cfg.capture.webhook is True


def test_o1_snake_case_keys_are_unknown_in_files() -> None:
    assert errors_of({"write_mode": "disabled"}) == ["memory.write_mode: unknown key"]


def test_python_construction_by_field_name() -> None:
    cfg = MemoryConfig(
        mode="bujo",
        write_mode="capture",
        llm=LlmConfig(provider="agent-host", model="openai-codex:gpt-5.6-terra"),
        embeddings=EmbeddingsConfig(dim=1024),
        capture=CaptureConfig(only=("fact",)),
        max_bytes=100,
    )
    assert cfg.is_capture
    assert cfg.capture.only == ("fact",)
    assert cfg.max_bytes == 100


def test_python_construction_enforces_cross_field_rules() -> None:
    """A5 holds for configs built in code too, not only for files."""
    with pytest.raises(ValidationError, match=r'memory\.writeMode: "capture" requires'):
        MemoryConfig(write_mode="capture")


def test_models_are_frozen() -> None:
    cfg = MemoryConfig()
    for target, attr, value in ((cfg, "mode", "bujo"), (cfg.capture, "cron", False)):
        with pytest.raises(ValidationError):
            setattr(target, attr, value)
    assert cfg.mode == "lite"
    assert cfg.capture.cron is True


# --- A1, O2, A5, O9: write modes and tiers -----------------------------------------------------


@pytest.mark.parametrize("write_mode", ["disabled", "append-host-summary"])
@pytest.mark.parametrize("mode", ["lite", "journal", "bujo"])
def test_a1_non_capture_write_modes_valid_on_every_tier(mode: str, write_mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "writeMode": write_mode}
    if mode != "lite":
        block["embeddings"] = dict(EMB)
    if mode == "bujo":
        block["llm"] = dict(OLLAMA_LLM)
    cfg = parse_config(block)
    assert (cfg.mode, cfg.write_mode) == (mode, write_mode)


def test_a1_unknown_write_mode_lists_the_three_values() -> None:
    assert errors_of({"writeMode": "append"}) == [
        'memory.writeMode: "append" is not one of disabled, append-host-summary, capture'
    ]


@pytest.mark.parametrize("mode", ["lite", "journal"])
def test_o2_a5_capture_requires_bujo(mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "writeMode": "capture", "embeddings": dict(EMB)}
    assert errors_of(block) == ['memory.writeMode: "capture" requires memory.mode "bujo"']


def test_o2_a5_capture_on_default_tier_is_an_error_not_a_downshift() -> None:
    assert errors_of({"writeMode": "capture"}) == [
        'memory.writeMode: "capture" requires memory.mode "bujo"'
    ]


def test_o9_unknown_embeddings_provider_never_falls_back() -> None:
    assert errors_of({"mode": "journal", "embeddings": {"provider": "ollama2"}}) == [
        'memory.embeddings.provider: "ollama2" is not one of ollama, lmstudio, openai, local'
    ]


def test_o9_openai_without_model_stays_openai() -> None:
    cfg = parse_config({"mode": "journal", "embeddings": {"provider": "openai", "dim": 1536}})
    assert cfg.embeddings is not None
    assert (cfg.embeddings.provider, cfg.embeddings.model, cfg.embeddings.dim) == (
        "openai",
        None,
        1536,
    )


def test_o9_unknown_mode_is_an_error() -> None:
    assert errors_of({"mode": "bullet"}) == [
        'memory.mode: "bullet" is not one of lite, journal, bujo'
    ]


# --- O3: embeddings block ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["journal", "bujo"])
def test_o3_missing_embeddings_block(mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "llm": dict(OLLAMA_LLM)}
    assert errors_of(block) == [
        f'memory.embeddings: memory.mode "{mode}" requires an explicit, non-empty block'
    ]


@pytest.mark.parametrize("mode", ["journal", "bujo"])
def test_o3_empty_embeddings_block(mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "llm": dict(OLLAMA_LLM), "embeddings": {}}
    assert errors_of(block) == [
        f'memory.embeddings: {{}} is empty; memory.mode "{mode}" requires an explicit, '
        "non-empty block"
    ]


def test_o3_lite_may_omit_embeddings() -> None:
    assert parse_config({"mode": "lite"}).embeddings is None


def test_o3_non_positive_dim() -> None:
    assert errors_of({"mode": "journal", "embeddings": {"dim": 0}}) == [
        "memory.embeddings.dim: must be a positive integer"
    ]


# --- memory.embeddings.calibration (DESIGN 9.4 override) ---------------------------------------

CALIBRATION: dict[str, Any] = {"noEvidenceCosine": 0.25, "recallFloor": 0.408,
                               "recallTail": 0.094, "autoFloor": 0.62, "autoWindow": 0.04}


def with_calibration(calibration: object) -> dict[str, Any]:
    return {"mode": "journal", "embeddings": {"provider": "local", "calibration": calibration}}


def test_calibration_override_is_optional_and_parsed() -> None:
    assert EmbeddingsConfig().calibration is None
    cfg = parse_config(with_calibration(CALIBRATION))
    assert cfg.embeddings is not None and cfg.embeddings.calibration is not None
    cal = cfg.embeddings.calibration
    assert (cal.no_evidence_cosine, cal.recall_floor, cal.recall_tail, cal.auto_floor,
            cal.auto_window) == (0.25, 0.408, 0.094, 0.62, 0.04)
    # The bounds are inclusive and integers are numbers.
    edges = parse_config(with_calibration({**CALIBRATION, "recallFloor": 1, "autoWindow": 0}))
    assert edges.embeddings is not None and edges.embeddings.calibration is not None
    assert edges.embeddings.calibration.recall_floor == 1.0


def test_calibration_override_needs_all_five_numbers() -> None:
    partial = {k: v for k, v in CALIBRATION.items() if k not in ("recallTail", "autoWindow")}
    assert errors_of(with_calibration(partial)) == [
        "memory.embeddings.calibration.recallTail: required key is missing",
        "memory.embeddings.calibration.autoWindow: required key is missing",
    ]
    assert errors_of(with_calibration({})) == [
        f"memory.embeddings.calibration.{key}: required key is missing" for key in CALIBRATION
    ]


def test_calibration_override_values_are_numbers_in_0_1() -> None:
    bad = {**CALIBRATION, "recallFloor": 1.5, "autoFloor": -0.1, "recallTail": True,
           "autoWindow": "0.04"}
    assert errors_of(with_calibration(bad)) == [
        "memory.embeddings.calibration.recallFloor: must be a number from 0 to 1 (got 1.5)",
        "memory.embeddings.calibration.recallTail: expected number, got boolean",
        "memory.embeddings.calibration.autoFloor: must be a number from 0 to 1 (got -0.1)",
        "memory.embeddings.calibration.autoWindow: expected number, got string",
    ]
    assert errors_of(with_calibration(None)) == [
        "memory.embeddings.calibration: expected object, got null"
    ]
    assert errors_of(with_calibration([0.5])) == [
        "memory.embeddings.calibration: expected object, got array"
    ]


def test_calibration_override_unknown_key() -> None:
    assert errors_of(with_calibration({**CALIBRATION, "floor": 0.5, "recall_floor": 0.5})) == [
        "memory.embeddings.calibration.floor: unknown key",
        "memory.embeddings.calibration.recall_floor: unknown key",
    ]


def test_calibration_override_in_a_file(tmp_path: Path) -> None:
    doc = {"memory": with_calibration({**CALIBRATION, "recallFloor": 2})}
    assert validate_file(write(tmp_path, json.dumps(doc))) == [
        "memory.embeddings.calibration.recallFloor: must be a number from 0 to 1 (got 2.0)"
    ]


# --- O4: llm block -----------------------------------------------------------------------------


@pytest.mark.parametrize("write_mode", ["capture", "append-host-summary", "disabled"])
def test_o4_bujo_requires_llm(write_mode: str) -> None:
    block: dict[str, Any] = {"mode": "bujo", "writeMode": write_mode, "embeddings": dict(EMB)}
    assert errors_of(block) == ['memory.llm: memory.mode "bujo" requires a memory.llm block']


def test_o4_llm_provider_and_model_are_required_in_the_block() -> None:
    assert errors_of(bujo_capture(llm={})) == [
        "memory.llm.provider: required key is missing",
        "memory.llm.model: required key is missing",
    ]


def test_o4_agent_host_llm_needs_runtime_model_ref() -> None:
    assert errors_of(bujo_capture(llm={"provider": "agent-host", "model": "gpt-5"})) == [
        'memory.llm.model: provider "agent-host" requires a runtime model ref '
        '"provider:model" (got "gpt-5")'
    ]


@pytest.mark.parametrize("model", ["llama3", "qwen3:8b"])
def test_o4_ollama_llm_takes_plain_model_names(model: str) -> None:
    cfg = parse_config(bujo_capture(llm={"provider": "ollama", "model": model}))
    assert cfg.llm is not None
    assert cfg.llm.model == model


def test_o4_llm_provider_is_closed_set() -> None:
    assert errors_of(bujo_capture(llm={"provider": "lmstudio", "model": "x"})) == [
        'memory.llm.provider: "lmstudio" is not one of ollama, agent-host, openai'
    ]


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (0, "memory.llm.timeoutMs: must be a positive integer"),
        (-5, "memory.llm.timeoutMs: must be a positive integer"),
        ("60000", "memory.llm.timeoutMs: expected integer, got string"),
        (1.5, "memory.llm.timeoutMs: expected integer, got number"),
        (True, "memory.llm.timeoutMs: expected integer, got boolean"),
    ],
)
def test_o1_timeout_ms_positive_strict_integer(value: object, line: str) -> None:
    assert errors_of(bujo_capture(llm={**OLLAMA_LLM, "timeoutMs": value})) == [line]


def test_o1_llm_endpoint_must_be_http_url() -> None:
    assert errors_of(bujo_capture(llm={**OLLAMA_LLM, "endpoint": "localhost:11434"})) == [
        'memory.llm.endpoint: must be an http(s) URL (got "localhost:11434")'
    ]


# --- O5: profile -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["lite", "journal"])
def test_o5_profile_requires_bujo(mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "embeddings": dict(EMB), "profile": {"enabled": True}}
    assert errors_of(block) == ['memory.profile.enabled: true requires memory.mode "bujo"']


def test_o5_profile_disabled_is_fine_on_lite_and_enabled_on_bujo() -> None:
    assert parse_config({"profile": {"enabled": False}}).profile.enabled is False
    assert parse_config(bujo_capture(profile={"enabled": True})).profile.enabled is True


def test_o5_profile_on_bujo_without_capture_write_mode() -> None:
    cfg = parse_config(bujo_capture(writeMode="append-host-summary", profile={"enabled": True}))
    assert cfg.profile.enabled is True


# --- O6, A12, A17: capture-mode-only and BuJo-only keys ----------------------------------------

CAPTURE_MODE_VALUES: dict[str, Any] = {
    "focus": "Keep coding preferences.",
    "only": ["fact"],
    "cron": False,
    "webhook": False,
    "reconcileModel": "openai-codex:gpt-6-sol",
}


@pytest.mark.parametrize("key", sorted(CAPTURE_MODE_VALUES))
@pytest.mark.parametrize(
    "outside",
    [
        {"mode": "lite"},
        {"mode": "journal", "embeddings": EMB},
        {"mode": "bujo", "writeMode": "append-host-summary", "embeddings": EMB, "llm": OLLAMA_LLM},
        {"mode": "bujo", "writeMode": "disabled", "embeddings": EMB, "llm": OLLAMA_LLM},
    ],
)
def test_o6_a17_capture_keys_outside_bujo_capture(key: str, outside: dict[str, Any]) -> None:
    block = {**outside, "capture": {key: CAPTURE_MODE_VALUES[key]}}
    assert errors_of(block) == [
        f'memory.capture.{key}: requires memory.mode "bujo" with memory.writeMode "capture"'
    ]


def test_o6_a12_explicit_default_value_still_counts_as_set() -> None:
    """O6: "set" means present in the input, even when it equals the default."""
    assert errors_of({"capture": {"cron": True}}) == [
        'memory.capture.cron: requires memory.mode "bujo" with memory.writeMode "capture"'
    ]


def test_o6_capture_keys_valid_in_bujo_capture() -> None:
    cfg = parse_config(bujo_capture(capture=dict(CAPTURE_MODE_VALUES)))
    assert cfg.capture.focus == "Keep coding preferences."
    assert cfg.capture.only == ("fact",)
    assert cfg.capture.cron is False
    assert cfg.capture.webhook is False
    assert cfg.capture.reconcile_model == "openai-codex:gpt-6-sol"


@pytest.mark.parametrize(
    ("section", "key"),
    [("capture", "intentLifecycle"), ("recall", "intentExpiry"), ("recall", "recency")],
)
@pytest.mark.parametrize("mode", ["lite", "journal"])
def test_o6_bujo_only_switches(section: str, key: str, mode: str) -> None:
    block: dict[str, Any] = {"mode": mode, "embeddings": dict(EMB), section: {key: True}}
    assert errors_of(block) == [f'memory.{section}.{key}: BuJo-only; requires memory.mode "bujo"']


@pytest.mark.parametrize(
    ("section", "key"),
    [("capture", "intentLifecycle"), ("recall", "intentExpiry"), ("recall", "recency")],
)
def test_o6_bujo_only_switches_false_outside_bujo_are_inert(section: str, key: str) -> None:
    parse_config({"mode": "lite", section: {key: False}})


def test_o6_bujo_only_switches_on_bujo_without_capture() -> None:
    """The read policies work on any BuJo root; intentLifecycle changes capture only, so
    without writeMode capture it would validate and do nothing: an error (M13)."""
    cfg = parse_config(
        bujo_capture(
            writeMode="append-host-summary",
            recall={"intentExpiry": True, "recency": True},
        )
    )
    assert cfg.recall.intent_expiry is True and cfg.recall.recency is True
    with pytest.raises(ConfigError, match=re.escape(
            'memory.capture.intentLifecycle: requires memory.writeMode "capture"')):
        parse_config(bujo_capture(writeMode="append-host-summary",
                                  capture={"intentLifecycle": True}))


# --- O7, A15, A16: focus, only, reconcileModel, unknown keys -----------------------------------


def test_a15_o7_focus_exactly_2048_bytes_multibyte_is_valid() -> None:
    focus = "é" * 1024
    assert len(focus.encode("utf-8")) == FOCUS_MAX_BYTES == 2048
    assert parse_config(bujo_capture(capture={"focus": focus})).capture.focus == focus


def test_a15_o7_focus_exactly_2048_ascii_bytes_is_valid() -> None:
    parse_config(bujo_capture(capture={"focus": "a" * 2048}))


def test_a15_o7_focus_2049_bytes_is_an_error() -> None:
    focus = "é" * 1024 + "a"  # 1,025 characters, 2,049 bytes
    assert errors_of(bujo_capture(capture={"focus": focus})) == [
        "memory.capture.focus: must be at most 2048 UTF-8 bytes (got 2049)"
    ]


def test_a15_o7_focus_counts_bytes_not_characters() -> None:
    focus = "é" * 1025  # only 1,025 characters but 2,050 bytes
    assert errors_of(bujo_capture(capture={"focus": focus})) == [
        "memory.capture.focus: must be at most 2048 UTF-8 bytes (got 2050)"
    ]


def test_a16_o7_only_entry_outside_the_kinds() -> None:
    assert errors_of(bujo_capture(capture={"only": ["fact", "preference", "mood"]})) == [
        'memory.capture.only[2]: "mood" is not one of fact, preference, lesson'
    ]


def test_a16_o7_only_duplicates() -> None:
    assert errors_of(bujo_capture(capture={"only": ["lesson", "fact", "lesson"]})) == [
        'memory.capture.only[2]: duplicate "lesson"'
    ]


def test_a16_only_must_be_an_array() -> None:
    assert errors_of(bujo_capture(capture={"only": "fact"})) == [
        "memory.capture.only: expected array, got string"
    ]


def test_a16_empty_only_is_valid_in_bujo_capture() -> None:
    """An empty list suppresses all automatic capture; it is not the same as unset."""
    cfg = parse_config(bujo_capture(capture={"only": []}))
    assert cfg.capture.only == ()
    assert cfg.capture.only is not None


def test_a16_all_kinds_accepted() -> None:
    cfg = parse_config(bujo_capture(capture={"only": ["fact", "preference", "lesson"]}))
    assert cfg.capture.only == ("fact", "preference", "lesson")


@pytest.mark.parametrize("ref", ["gpt-6-sol", ":gpt", "openai-codex:", "open ai:gpt", "a:b c", ""])
def test_o7_invalid_reconcile_model(ref: str) -> None:
    assert errors_of(bujo_capture(capture={"reconcileModel": ref})) == [
        "memory.capture.reconcileModel: must be an agent-host runtime model ref "
        f'"provider:model" (got {json.dumps(ref)})'
    ]


def test_o7_reconcile_model_with_ollama_capture_llm_is_valid() -> None:
    cfg = parse_config(bujo_capture(capture={"reconcileModel": "openai-codex:gpt-6-sol"}))
    assert cfg.llm is not None
    assert cfg.llm.provider == "ollama"
    assert cfg.capture.reconcile_model == "openai-codex:gpt-6-sol"


def test_o7_classifier_effort_key_is_unknown() -> None:
    block = bujo_capture(capture={"reconcileModel": "openai-codex:gpt-6-sol", "reconcileEffort": 1})
    assert errors_of(block) == ["memory.capture.reconcileEffort: unknown key"]


@pytest.mark.parametrize(
    ("block", "line"),
    [
        ({"mode": "lite", "colour": "blue"}, "memory.colour: unknown key"),
        (
            {"mode": "journal", "embeddings": {"dim": 768, "colour": "blue"}},
            "memory.embeddings.colour: unknown key",
        ),
        ({"recallTool": {"enabled": True, "name": "x"}}, "memory.recallTool.name: unknown key"),
        ({"profile": {"maxBytes": 10}}, "memory.profile.maxBytes: unknown key"),
        (
            bujo_capture(llm={**OLLAMA_LLM, "temperature": 0}),
            "memory.llm.temperature: unknown key",
        ),
        (
            {"mode": "journal", "embeddings": {"apiToken": "x"}},
            "memory.embeddings.apiToken: unknown key",
        ),
    ],
)
def test_o7_unknown_keys_top_level_and_nested(block: dict[str, Any], line: str) -> None:
    assert line in errors_of(block)


# --- strict types (O1) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "line"),
    [
        (
            {"recallTool": {"enabled": "true"}},
            "memory.recallTool.enabled: expected boolean, got string",
        ),
        (
            {"recallTool": {"enabled": 1}},
            "memory.recallTool.enabled: expected boolean, got integer",
        ),
        ({"profile": {"enabled": "false"}}, "memory.profile.enabled: expected boolean, got string"),
        ({"maxBytes": "5"}, "memory.maxBytes: expected integer, got string"),
        ({"maxBytes": 5.0}, "memory.maxBytes: expected integer, got number"),
        ({"maxBytes": 0}, "memory.maxBytes: must be a positive integer"),
        ({"mode": 5}, "memory.mode: expected string, got integer"),
        ({"path": 7}, "memory.path: expected string, got integer"),
        ({"path": ""}, "memory.path: must be a non-empty path without NUL characters"),
        ({"capture": []}, "memory.capture: expected object, got array"),
        (
            {"mode": "journal", "embeddings": {"dim": "768"}},
            "memory.embeddings.dim: expected integer, got string",
        ),
    ],
)
def test_o1_strict_types_no_coercion(block: dict[str, Any], line: str) -> None:
    assert line in errors_of(block)


@pytest.mark.parametrize(
    ("block", "line"),
    [
        ({"maxBytes": None}, "memory.maxBytes: expected integer, got null"),
        ({"mode": None}, "memory.mode: expected string, got null"),
        ({"capture": None}, "memory.capture: expected object, got null"),
        (bujo_capture(capture={"focus": None}), "memory.capture.focus: expected string, got null"),
    ],
)
def test_o1_json_null_is_a_type_error_not_unset(block: dict[str, Any], line: str) -> None:
    assert line in errors_of(block)


def test_o1_models_are_strict_outside_parse_config_too() -> None:
    """Strictness lives on the models, so direct model_validate never coerces either."""
    with pytest.raises(ValidationError):
        MemoryConfig.model_validate({"maxBytes": "5"})
    with pytest.raises(ValidationError):
        CaptureConfig.model_validate({"cron": "false"})
    with pytest.raises(ValidationError):
        EmbeddingsConfig.model_validate({"dim": 768.0})


def test_o1_max_bytes_positive_integer_accepted() -> None:
    assert parse_config({"maxBytes": 1}).max_bytes == 1


# --- wrapper vs bare block ---------------------------------------------------------------------


def test_wrapper_and_bare_block_are_equivalent() -> None:
    block = bujo_capture(capture={"only": ["preference", "lesson"]})
    assert parse_config({"memory": block}) == parse_config(block)


def test_wrapper_errors_use_the_same_paths() -> None:
    assert errors_of({"memory": {"writeMode": "capture"}}) == [
        'memory.writeMode: "capture" requires memory.mode "bujo"'
    ]


HOST_FILE: dict[str, Any] = {
    "agent": {"name": "mono", "model": "openai-codex:gpt-5.6-terra"},
    "tools": {"allowedTools": ["read"]},
    "mode": "host's own key",
}


def test_a_host_config_file_reads_its_memory_block() -> None:
    """Issue 13 item 15: a host's whole config file; its other sections are the host's."""
    block = bujo_capture(capture={"only": ["preference"]})
    assert parse_config({**HOST_FILE, "memory": block}) == parse_config(block)
    assert errors_of({**HOST_FILE, "memory": {"writeMode": "capture"}}) == [
        'memory.writeMode: "capture" requires memory.mode "bujo"'
    ]


def test_a_host_config_file_from_disk(tmp_path: Path) -> None:
    text = ('{"agent": {"name": "a", "name": "b"}, "memory": '
            + json.dumps(bujo_capture()) + ', "other": [1, 2]}')
    path = write(tmp_path, text)
    assert load_config(path) == parse_config(bujo_capture())  # the host's duplicate is its own
    bad = write(tmp_path, '{"other": 1, "memory": {"mode": "lite", "mode": "lite"}}', "bad.json")
    assert validate_file(bad) == ["memory.mode: duplicate key"]


@pytest.mark.parametrize(
    "obj",
    [{"agent": {"name": "mono"}}, {"Memory": {"mode": "lite"}}, {"colour": "blue", "tools": []}],
)
def test_neither_a_block_nor_a_host_file_says_so(obj: dict[str, Any]) -> None:
    keys = ", ".join(json.dumps(key) for key in obj)
    assert errors_of(obj) == [
        f"memory: neither a memory block nor a host config with a \"memory\" object "
        f"(top-level keys: {keys})"
    ]


@pytest.mark.parametrize(
    ("obj", "line"),
    [
        ([], "memory: expected object, got array"),
        ("lite", "memory: expected object, got string"),
        ({"memory": 3}, "memory: expected object, got integer"),
        ({"memory": None}, "memory: expected object, got null"),
    ],
)
def test_non_object_config(obj: object, line: str) -> None:
    assert errors_of(obj) == [line]


def test_reference_examples_are_valid() -> None:
    """The complete examples from the reference page validate as written."""
    first = {
        "memory": {
            "mode": "bujo",
            "writeMode": "capture",
            "path": "./.mono-agent/memory",
            "embeddings": {"provider": "ollama", "model": "nomic-embed-text:v1.5", "dim": 768},
            "llm": {"provider": "agent-host", "model": "openai-codex:gpt-5.6-terra"},
        }
    }
    second = {
        "memory": {
            **first["memory"],
            "capture": {
                "focus": "Keep durable coding preferences and lessons; skip PR and CI status.",
                "only": ["preference", "lesson"],
            },
        }
    }
    assert parse_config(first).is_capture
    assert parse_config(second).capture.only == ("preference", "lesson")
    assert parse_config({"memory": {"writeMode": "append-host-summary"}}).mode == "lite"


# --- many errors at once -----------------------------------------------------------------------


def test_all_errors_collected_in_one_config_error() -> None:
    block = {
        "mode": "journal",
        "writeMode": "capture",
        "embeddings": {},
        "llm": {"provider": "ollama", "model": "x", "timeoutMs": -1},
        "capture": {"focus": "x", "only": ["mood"], "reconcileEffort": "high"},
        "profile": {"enabled": True},
        "recall": {"recency": "yes"},
    }
    with pytest.raises(ConfigError) as info:
        parse_config(block)
    err = info.value
    expected = {
        'memory.writeMode: "capture" requires memory.mode "bujo"',
        'memory.embeddings: {} is empty; memory.mode "journal" requires an explicit, '
        "non-empty block",
        "memory.llm.timeoutMs: must be a positive integer",
        'memory.capture.only[0]: "mood" is not one of fact, preference, lesson',
        "memory.capture.reconcileEffort: unknown key",
        'memory.capture.focus: requires memory.mode "bujo" with memory.writeMode "capture"',
        'memory.capture.only: requires memory.mode "bujo" with memory.writeMode "capture"',
        'memory.profile.enabled: true requires memory.mode "bujo"',
        "memory.recall.recency: expected boolean, got string",
    }
    assert set(err.errors) == expected
    assert len(err.errors) == len(expected)
    assert str(err) == "\n".join(err.errors)
    assert isinstance(err, ValueError)
    assert isinstance(err, MemoryEsError)
    assert all("\n" not in line and line.startswith("memory") for line in err.errors)


def test_error_lines_stay_single_line_for_odd_keys() -> None:
    errors = errors_of({"mode": "lite", "bad\nkey": 1})
    assert errors == ['memory["bad\\nkey"]: unknown key']
    (line,) = errors_of({"bad\nkey": 1})
    assert "\n" not in line and '"bad\\nkey"' in line


# --- files -------------------------------------------------------------------------------------


def test_load_wrapper_file(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"memory": bujo_capture()}))
    assert load_config(path) == parse_config(bujo_capture())
    assert load_config(str(path)).is_capture


def test_load_bare_block_file(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"mode": "journal", "embeddings": {"dim": 384}}))
    cfg = load_config(path)
    assert cfg.mode == "journal"
    assert cfg.embeddings is not None
    assert cfg.embeddings.dim == 384


def test_duplicate_json_keys_are_errors(tmp_path: Path) -> None:
    text = '{"memory": {"mode": "lite", "mode": "bujo", "llm": {"model": "a", "model": "b"}}}'
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert "memory.mode: duplicate key" in info.value.errors
    assert "memory.llm.model: duplicate key" in info.value.errors


def test_duplicate_json_keys_in_bare_block(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mode": "lite", "mode": "lite"}')
    assert validate_file(path) == ["memory.mode: duplicate key"]


def test_duplicate_wrapper_key(tmp_path: Path) -> None:
    path = write(tmp_path, '{"memory": {}, "memory": {}}')
    assert validate_file(path) == ["memory: duplicate key"]


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [f"{path}: config file not found"]


def test_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "mode": "lite",\n}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (line,) = info.value.errors
    assert line.startswith(f"{path}: invalid JSON: ")
    assert "line 3 column 1" in line


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path: Path, constant: str) -> None:
    path = write(tmp_path, '{"maxBytes": ' + constant + "}")
    assert validate_file(path) == [f"{path}: invalid JSON: {constant} is not a JSON value"]


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"path": "caf\xe9"}')
    (line,) = validate_file(path)
    assert line.startswith(f"{path}: config file is not valid UTF-8")


def test_directory_is_not_a_config_file(tmp_path: Path) -> None:
    (line,) = validate_file(tmp_path)
    assert line.startswith(f"{tmp_path}: cannot read config file")


def test_validate_file_valid_and_invalid(tmp_path: Path) -> None:
    good = write(tmp_path, json.dumps({"memory": bujo_capture()}), "good.json")
    bad = write(tmp_path, json.dumps({"memory": {"writeMode": "capture"}}), "bad.json")
    assert validate_file(good) == []
    assert validate_file(bad) == ['memory.writeMode: "capture" requires memory.mode "bujo"']
    assert validate_file(None) == []


# --- O1: no environment variables --------------------------------------------------------------

ENV = {
    "MEMORY_MODE": "bujo",
    "MEMORY_WRITEMODE": "capture",
    "MEMORY_WRITE_MODE": "capture",
    "MEMORY_PATH": "/tmp/elsewhere",
    "MEMORY_EMBEDDINGS_PROVIDER": "openai",
    "MEMORY_EMBEDDINGS_DIM": "1536",
    "MEMORY_LLM_TIMEOUTMS": "1",
    "MEMORY_LLM_ENDPOINT": "http://example.invalid:1",
    "MEMORY_RECALLTOOL_ENABLED": "false",
    "MEMORY_MAXBYTES": "10",
}


def test_o1_env_vars_do_not_change_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    assert load_config(None) == MemoryConfig()
    cfg = parse_config({})
    assert (cfg.mode, cfg.write_mode, cfg.path) == ("lite", "append-host-summary", "./.memory")
    assert cfg.recall_tool.enabled is True
    assert cfg.max_bytes is None


def test_o1_env_vars_do_not_change_file_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    path = write(tmp_path, json.dumps({"mode": "journal", "embeddings": {"dim": 384}}))
    cfg = load_config(path)
    assert cfg.mode == "journal"
    assert cfg.write_mode == "append-host-summary"
    assert cfg.embeddings == EmbeddingsConfig(provider="ollama", dim=384)


def test_o9_local_provider_defaults_and_its_shipped_models() -> None:
    """The offline provider: USE multilingual v3 and 512 dimensions by default (issue 12: the
    best shipped model that embeds 200 texts/s here), or MiniLM with its 384 by name; any other
    model or dimension is an error, never a silent change (O9)."""
    config = parse_config({"mode": "journal", "embeddings": {"provider": "local"}})
    assert config.embeddings is not None
    assert (config.embeddings.model, config.embeddings.dim) == ("use-multilingual-v3", 512)
    minilm = parse_config({"mode": "journal", "embeddings": {
        "provider": "local", "model": "all-MiniLM-L6-v2-onnx-int8"}})
    assert minilm.embeddings is not None and minilm.embeddings.dim == 384
    with pytest.raises(ConfigError) as err:
        parse_config({"mode": "journal", "embeddings": {"provider": "local", "dim": 768}})
    assert err.value.errors == [
        "memory.embeddings: dim: provider \"local\" model 'use-multilingual-v3' is "
        "512-dimensional, not 768"]
    with pytest.raises(ConfigError) as err:
        parse_config({"mode": "journal", "embeddings": {"provider": "local", "model": "x"}})
    assert err.value.errors == [
        "memory.embeddings: model: provider \"local\" ships 'use-multilingual-v3', "
        "'all-MiniLM-L6-v2-onnx-int8' and 'multilingual-e5-small-q4', not 'x'"]
    assert parse_config({"mode": "journal", "embeddings": {"dim": 384}}).embeddings.dim == 384  # type: ignore[union-attr]


# --- provider endpoint, API key and timeout (issue 13 item 15) ---------------------------------

SECRET = "sk-live-0123456789abcdef"


def journal_with(**embeddings: Any) -> dict[str, Any]:
    return {"mode": "journal", "embeddings": {"provider": "openai",
                                              "model": "text-embedding-3-small",
                                              "dim": 1536, **embeddings}}


def test_embeddings_endpoint_timeout_and_key_env() -> None:
    cfg = parse_config(journal_with(endpoint="https://example.test/v1", timeoutMs=1500,
                                    apiKeyEnv="OPENAI_API_KEY"))
    assert cfg.embeddings is not None
    assert cfg.embeddings.endpoint == "https://example.test/v1"
    assert cfg.embeddings.timeout_ms == 1500
    assert cfg.embeddings.api_key_env == "OPENAI_API_KEY"
    assert cfg.embeddings.api_key is None
    default = parse_config(journal_with()).embeddings
    assert default is not None
    assert (default.endpoint, default.timeout_ms, default.api_key_env) == (None, 30000, None)


def test_llm_openai_provider_with_key_env() -> None:
    cfg = parse_config(bujo_capture(llm={"provider": "openai", "model": "gpt-4o-mini",
                                         "apiKeyEnv": "OPENAI_API_KEY", "timeoutMs": 20000}))
    assert cfg.llm is not None
    assert cfg.llm.provider == "openai"
    assert cfg.llm.endpoint == "https://api.openai.com"
    assert cfg.llm.api_key_env == "OPENAI_API_KEY"
    assert parse_config(bujo_capture()).llm == LlmConfig(provider="ollama", model="qwen3:8b")
    assert LlmConfig(provider="ollama", model="m").endpoint == "http://localhost:11434"


@pytest.mark.parametrize(
    ("block", "line"),
    [
        (journal_with(apiKeyEnv="1BAD"),
         'memory.embeddings.apiKeyEnv: must be an environment variable name '
         '([A-Za-z_][A-Za-z0-9_]*), got "1BAD"'),
        (journal_with(apiKeyEnv=""),
         'memory.embeddings.apiKeyEnv: must be an environment variable name '
         '([A-Za-z_][A-Za-z0-9_]*), got ""'),
        (journal_with(apiKeyEnv="K", apiKey=SECRET),
         "memory.embeddings.apiKey: set apiKey or apiKeyEnv, not both"),
        (journal_with(timeoutMs=0), "memory.embeddings.timeoutMs: must be a positive integer"),
        (journal_with(endpoint="ftp://x"),
         'memory.embeddings.endpoint: must be an http(s) URL (got "ftp://x")'),
        (journal_with(endpoint="https://h/v1?x=1"),
         "memory.embeddings.endpoint: must not carry a query or fragment"),
        (journal_with(endpoint=f"https://user:{SECRET}@h"),
         "memory.embeddings.endpoint: must not carry credentials (user:password@); "
         "name an environment variable with apiKeyEnv"),
        ({"mode": "journal", "embeddings": {"provider": "ollama", "apiKeyEnv": "K"}},
         'memory.embeddings.apiKeyEnv: provider "ollama" sends no API key'),
        ({"mode": "journal", "embeddings": {"provider": "local", "endpoint": "http://h"}},
         'memory.embeddings.endpoint: provider "local" runs in-process and takes no endpoint'),
        ({"mode": "journal", "embeddings": {"provider": "local", "timeoutMs": 5}},
         'memory.embeddings.timeoutMs: provider "local" runs in-process and takes no timeoutMs'),
        (bujo_capture(llm={**OLLAMA_LLM, "apiKeyEnv": "K"}),
         'memory.llm.apiKeyEnv: provider "ollama" sends no API key'),
        (bujo_capture(llm={**AGENT_LLM, "apiKey": SECRET}),
         'memory.llm.apiKey: provider "agent-host" sends no API key'),
        (bujo_capture(llm={"provider": "openai", "model": "m", "apiKey": 5}),
         "memory.llm.apiKey: expected string, got integer"),
        (bujo_capture(llm={"provider": "openai", "model": "m", "apiKey": " sk x "}),
         "memory.llm.apiKey: must be a non-empty string without spaces or control characters"),
    ],
)
def test_provider_key_rules(block: dict[str, Any], line: str) -> None:
    errors = errors_of(block)
    assert line in errors
    assert not any(SECRET in error for error in errors)


def test_a_literal_key_is_never_shown(tmp_path: Path) -> None:
    cfg = parse_config(journal_with(apiKey=SECRET))
    assert cfg.embeddings is not None and cfg.embeddings.api_key is not None
    assert cfg.embeddings.api_key.get_secret_value() == SECRET
    assert SECRET not in repr(cfg) and SECRET not in str(cfg)
    assert SECRET not in json.dumps(cfg.model_dump(mode="json"))


def test_a_literal_key_needs_an_owner_only_file(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"memory": journal_with(apiKey=SECRET)}))
    path.chmod(0o644)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (line,) = info.value.errors
    assert line == (f"{path}: memory.embeddings.apiKey: a literal API key is read only from an "
                    "owner-only file (mode 0600, owned by you; this one is mode 0644): "
                    "chmod 600 it, or name an environment variable with apiKeyEnv")
    assert SECRET not in line
    path.chmod(0o600)
    cfg = load_config(path)
    assert cfg.embeddings is not None and cfg.embeddings.api_key is not None
    assert cfg.embeddings.api_key.get_secret_value() == SECRET
    path.chmod(0o400)
    assert validate_file(path) == []


def test_a_literal_key_in_a_file_someone_else_owns(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, json.dumps(bujo_capture(llm={"provider": "openai", "model": "m",
                                                        "apiKey": SECRET})))
    path.chmod(0o600)
    monkeypatch.setattr("os.geteuid", lambda: path.stat().st_uid + 1)
    (line,) = validate_file(path)
    assert line.startswith(f"{path}: memory.llm.apiKey: a literal API key is read only from an "
                           "owner-only file")
    assert f"owned by uid {path.stat().st_uid}" in line
    assert SECRET not in line


def test_a_key_env_needs_no_owner_only_file(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"memory": journal_with(apiKeyEnv="OPENAI_API_KEY")}))
    path.chmod(0o644)
    assert validate_file(path) == []


def test_the_readme_config_examples_validate() -> None:
    """Every ```json block of the README's configuration section is a valid config."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    assert blocks
    for block in blocks:
        assert parse_config(json.loads(block)).mode in ("lite", "journal", "bujo")


# -- memory.journal (issue 18) -----------------------------------------------------------------

PG_DSN = "postgresql://mem:s3cret-pw@127.0.0.1:5432/memory"


def test_journal_block_defaults_to_the_roots_own_sqlite_file() -> None:
    cfg = parse_config({})
    assert (cfg.journal.backend, cfg.journal.dsn, cfg.journal.pg_schema) == ("sqlite", None,
                                                                            "public")
    cfg = parse_config({"journal": {"backend": "postgres", "dsn": PG_DSN, "schema": "team_a"}})
    assert cfg.journal.dsn is not None and cfg.journal.dsn.get_secret_value() == PG_DSN
    assert cfg.journal.pg_schema == "team_a" and PG_DSN not in repr(cfg)


@pytest.mark.parametrize("journal, says", [
    ({"backend": "mysql"}, "memory.journal.backend"),
    ({"backend": "sqlite", "dsn": PG_DSN}, 'only the "postgres" backend takes a DSN'),
    ({"backend": "postgres", "dsn": ""}, "non-empty PostgreSQL DSN"),
    ({"backend": "postgres", "schema": "a;drop"}, "plain SQL identifier"),
    ({"backend": "postgres", "host": "db"}, "memory.journal.host"),
])
def test_journal_block_errors_name_the_field(journal: dict[str, Any], says: str) -> None:
    with pytest.raises(MemoryEsError) as info:
        parse_config({"journal": journal})
    assert says in str(info.value) and "s3cret" not in str(info.value)


def test_a_literal_dsn_is_read_only_from_an_owner_only_file(tmp_path: Path) -> None:
    """A DSN may carry a password: like apiKey, a literal one only from a 0600 file."""
    path = write(tmp_path, json.dumps({"memory": {"journal": {"backend": "postgres",
                                                              "dsn": PG_DSN}}}))
    path.chmod(0o644)
    (line,) = validate_file(path)
    assert line == (f"{path}: memory.journal.dsn: a literal PostgreSQL DSN is read only from an "
                    "owner-only file (mode 0600, owned by you; this one is mode 0644): "
                    "chmod 600 it, or set $MEMORY_ES_PG_DSN instead")
    path.chmod(0o600)
    assert validate_file(path) == []
