"""The golden-fixture script ``replay_fixtures/regenerate.py``, loaded as a module for tests
(``regen``); not a test module.

It holds what the fixture tests and the projection-equivalence contract share: the fixture
specs and :func:`run_spec` (build a root live, checking every step), the canonical
:func:`index_dump` and :func:`projection_tree` (daily/, audit/, graph.jsonl, the sidecar and
the index dump, by path) and :func:`tree_diff`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).resolve().parent.parent / "replay_fixtures"
_NAME = "replay_fixtures_regenerate"


def _load_regenerate() -> ModuleType:
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    spec = importlib.util.spec_from_file_location(_NAME, FIXTURES / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


regen = _load_regenerate()
