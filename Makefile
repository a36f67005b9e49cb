# One entry point for people and CI. Every target sets up what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SEEDS  := tests/fixtures/seeds

.PHONY: example prerequisites setup demo replay check coverage coverage-floor cost cost-baseline test matrix matrix-newest lint format bench bench-instructions bench-publish clean provision provision-check pipeline

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

## One example agent of examples/ run zero-code, with the verdicts its spans carry:
## make example NAME=plain_session (or langchain_agent, pydantic_ai_agent, openai_agents_agent;
## a framework's example runs in that framework's nox venv, created once when missing;
## EXAMPLE_ARGS=--otlp also sends the spans to the collector at OTEL_EXPORTER_OTLP_ENDPOINT).
NAME ?= plain_session
example: $(STAMP)
	@$(BIN)/python examples/run.py $(NAME) $(EXAMPLE_ARGS)

## The offline classifier on the seed fixtures: every verdict plus seed 003's two rates.
replay: $(STAMP)
	@$(BIN)/otel-mcp-health classify $(SEEDS)/seed000_catalog.jsonl \
	  $(SEEDS)/seed002_sessions.jsonl $(SEEDS)/seed003_calls.jsonl --summary; \
	  rc=$$?; [ $$rc -le 1 ] || exit $$rc

## The fast gate, no provisioning (about 65 s on 2 idle cores, README.md#development): lint, format check, strict typing, then the
## unit, processor and architecture tests but the two 100,000-session ones (marker `slow`).
CHECK_TESTS := tests/unit tests/processor tests/test_architecture.py
check: lint
	$(BIN)/pytest -q -m "not slow" $(CHECK_TESTS)

## Every test under branch coverage of the whole of src/ (the Python subprocesses too), against
## fail_under (pyproject.toml); the pipeline and check tests need make provision / provision-check.
coverage: $(STAMP)
	$(BIN)/pytest --cov --cov-report=term

## After make coverage: its measured total, rounded down to one decimal, becomes fail_under.
coverage-floor: $(STAMP)
	$(BIN)/python scripts/coverage_floor.py

## The cost gate (benchmarks/cost_gate.py, ~10 min under valgrind): instructions per in-process
## tools/call (mcp 2.x and 1.x, processor on), per tools/list page and per cold digest, against
## benchmarks/cost_baseline.json; more than +5 % fails.
## On a fresh checkout it first builds the matrix's mcp 1.x venv (the cell's installs, no tests).
cost: $(STAMP)
	$(BIN)/python benchmarks/cost_gate.py

## Lowers each baseline figure that measured lower; one that measured higher is kept, never raised.
## Accepting a higher cost is `.venv/bin/python benchmarks/cost_gate.py --raise-baseline`, on
## purpose, and the commit that records that baseline says in its message that the flag was used
## and why.
cost-baseline: $(STAMP)
	$(BIN)/python benchmarks/cost_gate.py --write-baseline

## The whole suite: lint, format check, strict typing, then every test once, under the coverage
## gate (the pipeline tests need the provisioned collector, Prometheus, Alertmanager and dashboard
## tooling), the matrix, then the cost gate (its mcp 1.x venv is the matrix's).
test: prerequisites lint provision provision-check
	$(MAKE) --no-print-directory coverage
	$(BIN)/nox
	$(MAKE) --no-print-directory cost

## The version matrix (noxfile.py): the scenario tables on the oldest and latest mcp 1.x (with
## FastMCP and LangChain), the oldest mcp 2.x, wrapt 1.x and the OpenTelemetry floor, then one
## cell per agent framework (its own agent loop, docs/frameworks.md); venvs cached in
## ~/.cache/otel-mcp-health-nox. The newest cell is .venv itself (make test's pytest run).
matrix: $(STAMP)
	$(BIN)/nox

## Every agent-framework cell again on each framework's newest release, asked of the index when
## the cell runs (noxfile.py, sessions *_newest; venvs cached beside the pinned ones). Not part
## of make test: a framework's release must not turn CI red. docs/frameworks.md#re-verifying.
matrix-newest: $(STAMP)
	$(BIN)/nox -t newest

## What make test needs (Python >= 3.11 with venv, Go, root or sudo for apt-get when Prometheus,
## Alertmanager, node or npm are missing, disk): checked first, one clear line when one is missing.
prerequisites:
	@PYTHON=$(PYTHON) scripts/check-prerequisites.sh

## Install/build what the pipeline needs (idempotent; apt-get needs root or sudo): Prometheus,
## Alertmanager, Node.js and npm when missing, the collector builder, the bundled collector
## (cached), the dashboard tooling.
provision:
	scripts/provision-pipeline.sh

## The operator's stack on 127.0.0.1 (collector, Prometheus, Alertmanager, a webhook sink) fed by
## the demo; prints where to look and which alerts fired, then stops it all by PID after
## PIPELINE_SECONDS (default 60). `make pipeline PIPELINE_ARGS=--until-interrupted` runs until Ctrl-C.
PIPELINE_SECONDS ?= 60
pipeline: $(STAMP) provision
	$(BIN)/python tests/pipeline/pipeline_stack.py --seconds $(PIPELINE_SECONDS) $(PIPELINE_ARGS)

## Third-party MCP servers for tests/check (idempotent: npm ci + the PyPI server).
provision-check: $(STAMP)
	@PYTHON=$(BIN)/python scripts/provision-check.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples noxfile.py
	$(BIN)/ruff format --check src tests benchmarks examples noxfile.py
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks examples noxfile.py
	$(BIN)/ruff format src tests benchmarks examples noxfile.py

## Benchmarks: ratios against a baseline measured in the same run (~7 min on 2 cores, plus the
## peer benchmark, bench_peers.py: ~6 min, ~6 more the first time for its venvs, cached in
## ~/.cache/otel-mcp-health-bench, never .venv; BENCH_PEERS_ROUNDS=0 times nothing). Results go
## to benchmarks/.results/ (ignored): the tree stays clean. `make bench-publish` copies the last
## run's results into benchmarks/results/, the published figures, on purpose.
bench: $(STAMP)
	@for script in $(filter-out %/bench_instructions.py,$(wildcard benchmarks/bench_*.py)); do \
	  $(BIN)/python $$script || exit 1; done

## Instructions per in-process call under callgrind (needs valgrind; half an hour or more on two
## shared cores): the per-call work, which the load of a shared machine does not move, with CPU
## time per call beside it, ours against the targets, the instrumentation/processor split, and a
## tools/list page, a 1,000-page traversal and many sessions at once against plain. Results
## beside make bench's.
bench-instructions: $(STAMP)
	$(BIN)/python benchmarks/bench_instructions.py

bench-publish:
	@test -n "$$(ls benchmarks/.results/*.md 2>/dev/null)" || { echo "no results: run make bench first"; exit 1; }
	cp benchmarks/.results/*.md benchmarks/results/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
