# The commands of the README: `make demo` (the main job), `make test` (the whole suite) and `make check`
# (the inner loop: lint, types, contracts, unit tiers). Each creates or reuses .venv and installs what it
# needs; only Python 3.11+ and pip are assumed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
# The test stamp adds the gateway extra (a real LiteLLM proxy, ~660 MB) that only the test suite needs.
TEST_STAMP := $(VENV)/.installed-dev-gateway

# Hypothesis tries the same examples on every run and keeps no example database (tests/conftest.py),
# so a fresh clone's `make test` passes or fails the same way each time; CI=1 tries three times as many.
export HYPOTHESIS_PROFILE ?= $(if $(CI),ci,fixed)
# Coverage (floor 97%, pyproject.toml) doubles the suite's CPU time on Python 3.11's tracer, so it is
# measured where it gates a change: in CI (CI=1) or on request (`make test COVERAGE=1`).
COVERAGE ?= $(CI)
COV := $(if $(COVERAGE),--cov --cov-report=term,)
CHECK_PROFILE ?= quick
# pytest-xdist on every core for the unit tiers; `make test` runs two workers a core, since many of its
# tests wait on processes they start, servers and timeouts. The gateway tier stays on one worker (one LiteLLM
# proxy).
WORKERS ?= auto
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(2 * (os.cpu_count() or 1))")
XDIST := -n $(WORKERS) --dist loadgroup
# The unit tiers: fakes only, no server, no subprocess (a test there that needs one is marked slow, and
# left to `make test`).
UNIT := tests/domain tests/application tests/adapters/test_scripted.py

.PHONY: demo test check lint types imports pytest unit bench canary clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,offline,cli,durable]'
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,offline,cli,durable,gateway]'
	touch $@

demo: $(STAMP)
	$(BIN)/meeting-agents summarize examples/standup-transcript.txt --scenario malformed-arguments+ungrounded-citation

test: $(TEST_STAMP) lint types imports pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy --strict

imports:
	$(BIN)/lint-imports

pytest:
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup $(COV)

# The inner loop, under a minute: everything but the adapter, conformance and integration tiers. The
# linters run beside pytest (each target's output kept together), filling the cores its workers leave idle.
check: $(STAMP)
	@$(MAKE) --no-print-directory -j4 --output-sync=target lint types imports unit

# The unit tiers with a quarter of the Hypothesis examples (the quick profile); `make test` runs them all.
unit:
	HYPOTHESIS_PROFILE=$(CHECK_PROFILE) $(BIN)/pytest $(XDIST) -q -m 'not slow' $(UNIT)

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# The newest openai and dbos the index offers (past our upper bounds too), in a scratch virtualenv of their
# own, against the canaries of every private use (tests/canary) and the tiers that drive those libraries.
# docs/sdk-seams.md says how to read a failure.
CANARY_VENV := .venv-canary
CANARY_TESTS ?= tests/canary tests/adapters/responses tests/conformance tests/adapters/durable tests/integration/durable
canary:
	test -x $(CANARY_VENV)/bin/python || $(PYTHON) -m venv $(CANARY_VENV)
	$(CANARY_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CANARY_VENV)/bin/python -m pip install --quiet -e '.[dev,offline,cli,durable]'
	$(CANARY_VENV)/bin/python -m pip install --quiet --upgrade openai 'dbos[otel]'
	$(CANARY_VENV)/bin/python -m pip list 2>/dev/null | grep -i -E '^(openai|dbos) '
	$(CANARY_VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadgroup -p no:cacheprovider $(CANARY_TESTS)

clean:
	rm -rf $(VENV) $(CANARY_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .coverage
