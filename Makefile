# One entry point for people and CI. Every target sets up what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SEEDS  := tests/fixtures/seeds

.PHONY: setup demo replay test lint format bench clean provision-check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

## The main job: the instrumented mcp client against real MCP servers (streamable HTTP on
## 127.0.0.1, in-process, stdio), with the span processor; prints the verdicts on the spans.
demo: $(STAMP)
	@$(BIN)/otel-mcp-health demo

## The offline classifier on the seed fixtures: every verdict plus seed 003's two rates.
replay: $(STAMP)
	@$(BIN)/otel-mcp-health classify $(SEEDS)/seed000_catalog.jsonl \
	  $(SEEDS)/seed002_sessions.jsonl $(SEEDS)/seed003_calls.jsonl --summary; \
	  rc=$$?; [ $$rc -le 1 ] || exit $$rc

## The whole suite: lint, format check, strict typing, then every test.
test: lint provision-check
	$(BIN)/pytest

## Third-party MCP servers for tests/check (idempotent: npm ci + the PyPI server).
provision-check: $(STAMP)
	@PYTHON=$(BIN)/python scripts/provision-check.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

## Benchmarks: ratios against a baseline measured in the same run (results in benchmarks/results/).
bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
