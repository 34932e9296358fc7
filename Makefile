# Two commands on a fresh machine: `make demo` and `make test` (each builds the venv it needs).
PYTHON ?= python3
VENV ?= .venv
SPEC ?= ../shared/SPEC.md
BIN := $(VENV)/bin

.PHONY: demo test soak lint bench bench-large spec-coverage spec-coverage-check clean

$(BIN)/memory-es: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/memory-es
	$(BIN)/memory-es demo

# --durations: the slowest tests in every CI log, to watch its 15-minute budget.
# compileall: the checkout is installed editable, so where PYTHONDONTWRITEBYTECODE is set no
# import writes a .pyc and every process the suite starts (the CLI, crash helpers, benches)
# would compile each module it imports again: about 150 ms more for a search.
# The collection beside mypy: pytest rewrites each test module's asserts as it imports it and
# caches the result only where bytecode may be written, so with PYTHONDONTWRITEBYTECODE set
# every xdist worker rewrote every module again (about 10 s of CPU each). One collection that
# may write fills that cache first, while mypy uses the other core; its exit status is left to
# the run that follows, which reports any collection error itself.
test: $(BIN)/memory-es
	$(BIN)/ruff check src tests bench replay_fixtures docs
	$(BIN)/python -m compileall -q src tests bench replay_fixtures
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q --collect-only -p no:cacheprovider \
		>/dev/null & $(BIN)/mypy && $(BIN)/mypy --strict docs/spec_coverage.py; \
		status=$$?; wait; exit $$status
	$(BIN)/python -m pytest -q -n auto --durations=15

soak: $(BIN)/memory-es  # the attack suite at length: 1,000 random SIGKILLs per tier
	MEMORY_ES_ATTACK_KILLS=1000 $(BIN)/python -m pytest -q -s tests/test_attacks.py

bench: $(BIN)/memory-es
	$(BIN)/python -m pip install -q -e '.[bench]'  # matplotlib: bench/scale.py's plot
	$(BIN)/python bench/admission.py
	$(BIN)/python bench/rebuild.py
	$(BIN)/python bench/worker.py
	$(BIN)/python bench/recall_quality.py
	$(BIN)/python bench/recall_latency.py
	$(BIN)/python bench/capture.py
	$(BIN)/python bench/remember.py --quick
	$(BIN)/python bench/embedding.py
	$(BIN)/python bench/cli_start.py
	$(BIN)/python bench/mcp.py
	$(BIN)/python bench/scale.py  # 10k and 100k; writes docs/scale.png

bench-large: $(BIN)/memory-es  # bench/scale.py at 10k, 100k and 1M memories (about an hour)
	$(BIN)/python bench/scale.py --large

spec-coverage:  # regenerate docs/SPEC-COVERAGE.md from ../shared/SPEC.md and the test names (stdlib only)
	$(PYTHON) docs/spec_coverage.py $(SPEC)

spec-coverage-check:  # exit 1 (and the differing lines) when docs/SPEC-COVERAGE.md is stale
	$(PYTHON) docs/spec_coverage.py $(SPEC) --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
