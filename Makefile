# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create or reuse .venv and install what they need; only Python 3.11+ and pip are assumed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
# The test stamp adds the gateway extra (a real LiteLLM proxy, ~660 MB) that only the test suite needs.
TEST_STAMP := $(VENV)/.installed-dev-gateway

.PHONY: demo test check lint types imports pytest bench clean

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
	$(BIN)/meeting-agents summarize examples/standup-transcript.txt --scenario malformed-arguments

test: $(TEST_STAMP) lint types imports pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy --strict

imports:
	$(BIN)/lint-imports

pytest:
	$(BIN)/pytest --cov --cov-report=term

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .coverage
