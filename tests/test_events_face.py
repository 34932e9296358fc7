"""The events package resolves its aggregates on first use, and every stored topic still
decodes: a reader that imported only the root's events (a cold search) meets any topic through
``memory_es.topics``, which imports the rest when a topic is not registered yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import memory_es.events as events
from ceilings import HANG_S
from memory_es.events import Entity, Intake, Memory, Root


def test_the_spelt_out_topics_are_the_classes_topics() -> None:
    """The topics a reader filters rows by are strings here (a filter loads no class); each
    is the one its class carries."""
    assert events.ADMITTED_TOPIC == Intake.Admitted.TOPIC
    assert events.RESOLVED_TOPIC == Intake.Resolved.TOPIC
    assert events.RECORDED_TOPIC == Memory.Recorded.TOPIC
    assert events.FORGOTTEN_TOPICS == (Memory.Forgotten.TOPIC, Intake.Forgotten.TOPIC)
    assert Entity.Named.TOPIC in events.SEALED_FIELDS and Root.Configured.TOPIC.startswith(
        "memory_es/Root")
    assert sorted(events.__all__) == sorted(set(dir(events)) & set(events.__all__))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        events.Nope  # noqa: B018


PROBE = """
import json, sys
from pathlib import Path
import memory_es.events.root  # what a cold search imports of the events
from memory_es.history import iter_events, open_reader
before = sorted(m for m in sys.modules if m.startswith("memory_es.events."))
with open_reader(Path(sys.argv[1])) as opened:
    topics = [type(event).TOPIC for _position, event in iter_events(opened)]
after = sorted(m for m in sys.modules if m.startswith("memory_es.events."))
print(json.dumps({"before": before, "after": after, "topics": topics}))
"""


def test_a_reader_that_imported_only_the_roots_events_decodes_every_topic(
        tmp_path: Path) -> None:
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config

    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="Ada prefers tea to coffee."))
        store.drain()
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True,
                          text=True, timeout=HANG_S, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "memory_es.events.intake" not in got["before"]
    assert "memory_es.events.memory" not in got["before"]
    assert {"memory_es.events.intake", "memory_es.events.memory"} <= set(got["after"])
    assert {Root.Configured.TOPIC, Intake.Admitted.TOPIC, Intake.Resolved.TOPIC,
            Memory.Recorded.TOPIC} <= set(got["topics"])


def test_a_topic_no_class_carries_still_fails_after_loading_every_class() -> None:
    from eventsourcing.utils import TopicError

    from memory_es.topics import resolve

    assert resolve(Intake.Admitted.TOPIC) is Intake.Admitted
    with pytest.raises(TopicError):
        resolve("memory_es/Intake.NeverWasAnEvent")
