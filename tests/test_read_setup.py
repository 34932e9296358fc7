"""Recall's settings read from what a root recorded, without pydantic (C9, B26).

A reading command without ``--config`` reads the root's recorded configuration as it stands
(``ReadSetup.recorded``) instead of validating it into the pydantic model again: these tests
pin that the two readings agree for every tier and recorded model and that a record the plain
reading cannot serve (a remote provider) still goes through the validated config;
tests/test_cli_startup.py that a cold ``memory-es search`` never imports pydantic and answers
as the validated path does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_es import CompletedTurn, MemoryRoot, MemoryStore
from memory_es.config import MemoryConfig, parse_config
from memory_es.config.defaults import LOCAL_MODELS
from memory_es.recall.rank.policy import OFF
from memory_es.recall.setup import ReadSetup
from memory_es.rootconfig import RootConfig

DENTIST = "Dentist appointment with Dr. Hale on Tuesday at nine."


RECORDS = [("lite", "append-host-summary", None), ("lite", "disabled", None),
           *[(tier, mode, model) for tier, mode in (("journal", "append-host-summary"),
                                                    ("journal", "disabled"),
                                                    ("bujo", "append-host-summary"),
                                                    ("bujo", "capture"))
             for model in LOCAL_MODELS]]


@pytest.mark.parametrize("tier,write_mode,model", RECORDS)
def test_the_plain_reading_of_a_record_equals_the_validated_one(
        tier: str, write_mode: str, model: str | None) -> None:
    """Every default the plain reading assumes is the one the pydantic model gives the same
    record: a default changed in one place only fails here."""
    embeddings = None if model is None else \
        {"provider": "local", "model": model, "dim": LOCAL_MODELS[model]}
    llm = {"provider": "ollama", "model": "qwen3:8b"} if tier == "bujo" else None
    record = RootConfig(tier=tier, write_mode=write_mode, embeddings=embeddings, llm=llm)
    validated = record.config()
    assert ReadSetup.recorded(tier) == ReadSetup.of(validated)
    assert ReadSetup.recorded(tier).policy == OFF


def test_a_config_with_settings_of_its_own_is_read_as_given() -> None:
    """The validated path carries what a record never holds (scoring, read policies, the
    profile, the size cap, a calibration override)."""
    config = parse_config({"mode": "bujo", "writeMode": "append-host-summary",
                           "llm": {"provider": "ollama", "model": "qwen3:8b"},
                           "recall": {"scoring": "reference", "intentExpiry": True},
                           "profile": {"enabled": True}, "maxBytes": 4096,
                           "embeddings": {"provider": "local", "calibration": {
                               "noEvidenceCosine": 0.1, "recallFloor": 0.3, "recallTail": 0.2,
                               "autoFloor": 0.5, "autoWindow": 0.05}}})
    setup = ReadSetup.of(config)
    assert (setup.mode, setup.scoring, setup.profile, setup.max_bytes) == \
        ("bujo", "reference", True, 4096)
    assert setup.policy.intent_expiry and not setup.policy.recency
    assert setup.calibration is not None and setup.calibration.recall_floor == 0.3
    assert ReadSetup.of(MemoryConfig()) == ReadSetup.recorded("lite")


def test_a_record_naming_a_remote_provider_goes_through_the_validated_config(
        tmp_path: Path) -> None:
    """Ollama needs an endpoint and a deadline the record does not hold: the handle builds
    the validated config (its defaults) for it, and recall with the provider down degrades
    instead of failing (G20); the handle's config is still the pydantic model."""
    root = tmp_path / "root"
    block = {"mode": "journal", "embeddings": {"provider": "ollama", "model": "nomic-embed-text",
                                               "dim": 8, "endpoint": "http://127.0.0.1:9"}}
    with MemoryStore.open(root, parse_config(block), background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r", outcome="success",
                                                   answer=DENTIST))
        store.drain()
    handle = MemoryRoot.open(root)
    assert handle._as_recorded() is None
    result = handle.search("dentist", 3)
    assert result.degraded and result.recall.hits[0].text == DENTIST
    assert isinstance(handle.config, MemoryConfig) and handle.config.embeddings is not None
    assert handle.config.embeddings.provider == "ollama"


def test_the_config_package_still_offers_its_submodules() -> None:
    """Names resolve on first use, and the submodules stay attributes of the package."""
    import memory_es.config as config

    assert config.model.MemoryConfig is MemoryConfig
    assert config.defaults.LOCAL_MODELS is LOCAL_MODELS
    assert callable(config.load.parse_config) and config.rules.ROOT == "memory"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        config.nope  # noqa: B018
