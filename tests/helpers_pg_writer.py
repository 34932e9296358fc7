"""One writer host of a shared PostgreSQL journal (issue 18); not a test module.

    python helpers_pg_writer.py ROOT PLAN.json RESULTS.json

Opens a ``MemoryStore`` on its own ROOT with the journal on the server ``$MEMORY_ES_PG_DSN``
names, admits every ``[run_id, answer]`` of PLAN from 4 threads (group commit within the
process, other processes racing it in the database), draining (without embedding) after every
500, as the other writers do at the same time, so the pending intakes of the shared journal
stay under its 4,096 active records; writes ``[run_id, answer, status, code]`` per admission
to RESULTS.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory_es.config import parse_config
from memory_es.intake import CompletedTurn
from memory_es.store import MemoryStore

CONFIG = {"mode": "journal", "embeddings": {"provider": "local"},
          "journal": {"backend": "postgres"}}


def main(root: str, plan_file: str, results_file: str) -> None:
    plan = json.loads(Path(plan_file).read_text())
    with MemoryStore.open(root, parse_config(CONFIG), background=False) as store:
        def admit(item: list[str]) -> list[str | None]:
            result = store.persist_completed_turn(CompletedTurn(
                run_id=item[0], outcome="success", answer=item[1]))
            return [item[0], item[1], result.status, result.code]

        results = []
        with ThreadPoolExecutor(4) as pool:
            for start in range(0, len(plan), 500):
                results += list(pool.map(admit, plan[start:start + 500]))
                store.drain(embed=False)
    Path(results_file).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:4])
