# compute-advisor — `make run` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
WORKERS ?= 1
DEV_API_KEY_FILE ?= .dev-api-key
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: venv serve-env devkey run test check lint typecheck openapi migrate seeds clean bench fuzz loadtest backup-bench sync-bench capacity-bench redis-bench

# serving needs the package alone (`make run`); the dev extras (test, lint and fuzz tools, the generated
# client's generator…) come on top for `make test` and the tools, once, in the same .venv
DEV := $(VENV)/.dev-extras
$(BIN)/compute-advisor: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install $(PIP_FLAGS) -e . 2>&1 | grep -v "^WARNING: Location" || true
	@$(BIN)/python -c "import app, litestar" || { echo "installation failed"; exit 1; }
	@touch $@

$(DEV): $(BIN)/compute-advisor
	@$(BIN)/pip install $(PIP_FLAGS) -e '.[dev]' 2>&1 | grep -v "^WARNING: Location" || true
	@$(BIN)/python -c "import pytest, schemathesis" || { echo "installation of the dev extras failed"; exit 1; }
	@touch $@

serve-env: $(BIN)/compute-advisor

venv: $(DEV)

migrate: serve-env
	$(BIN)/compute-advisor migrate

seeds: migrate
	$(BIN)/compute-advisor seeds load --if-empty

# a local development key with every scope, kept in $(DEV_API_KEY_FILE) (mode 0600; made again when revoked)
devkey: seeds
	@$(BIN)/compute-advisor keys dev --file $(DEV_API_KEY_FILE)

# development: a proxy on this host (127.0.0.1) is trusted unless FORWARDED_ALLOW_IPS says otherwise (deploy/serve
# trusts none by default), and watch events may go to this host unless WATCH_ALLOWED_HOSTS says otherwise (none
# by default); LOG_FORMAT=console (default) or json; metrics of every worker through prometheus-client's multiprocess
# directory, emptied at each start (docs/operations.md, "Metrics")
METRICS_DIR := $(CURDIR)/.run/metrics-$(PORT)
run: devkey
	@mkdir -p $(METRICS_DIR) && rm -f $(METRICS_DIR)/*.db
	@PROMETHEUS_MULTIPROC_DIR=$(METRICS_DIR) FORWARDED_ALLOW_IPS=$${FORWARDED_ALLOW_IPS-127.0.0.1} \
	  WATCH_ALLOWED_HOSTS=$${WATCH_ALLOWED_HOSTS-127.0.0.1,localhost} $(BIN)/python -m app.serve \
	  --host $${HOST:-127.0.0.1} --port $(PORT) --workers $(WORKERS) & \
	server=$$!; trap 'kill $$server 2>/dev/null; wait $$server' INT TERM; \
	deploy/dev-announce "http://$${HOST:-127.0.0.1}:$(PORT)" $(DEV_API_KEY_FILE) $(BIN)/python; wait $$server

# pytest-xdist workers: most tests wait on served instances, subprocesses and databases, so one more
# worker than the machine's 2 cores (4 overloads them: CPU-heavy requests then outlast their timeouts);
# worksteal balances the long tests, which run first (tests/conftest.py). PYTEST_WORKERS=0: one process
PYTEST_WORKERS ?= 3
test: venv lint typecheck
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check app plugins tests migrations bench
	$(BIN)/ruff format --check app plugins tests migrations bench

typecheck: venv
	$(BIN)/mypy

check: lint typecheck

openapi: venv
	$(BIN)/python -m app.openapi_examples openapi/examples.json
	$(BIN)/python -m app.openapi_export openapi/v1.json

# the serving targets against a bare Litestar app on the same server, in one run, rate limits on (memory and
# Redis counters) beside off: req/s share of bare, server CPU per request, p50/p99 at 32 connections; one-client
# median/p99 latency ÷ bare (recommendation, 10,000-profile batch, 10,000-draw uncertainty; the bare app
# answering the service's captured bytes); /health/live under heavy requests, the batch and its RSS, then
# bench/model.py; PASS/MISS per target of issue 39 and issue 23's earlier ones (a tool, not a test: exit 0 with
# MISS). DURATION=8 WARMUP=2 CONNECTIONS=32 SERVER=uvicorn|granian LIMITS=memory,redis,off
# ONLY=row,row (bench/run.py's docstring names the rows)
bench: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/run.py

# schemathesis CLI, every check and phase, against a served instance (2 workers) on a fresh PostgreSQL
# database that it creates and drops; then tests/test_header_fuzz.py at depth (FUZZ_EXAMPLES × 10
# generated header values); FUZZ_EXAMPLES=100 FUZZ_SEED=20250101
fuzz: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/fuzz.py

# 20,000 mixed requests over 64 connections against 2 workers on a fresh PostgreSQL database;
# REQUESTS=20000 CONNECTIONS=64
loadtest: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/loadtest.py

# backup and restore sizes and durations with 10,000 stored recommendations, on SQLite and on a fresh
# PostgreSQL database that it creates and drops; RECOMMENDATIONS=10000 BACKENDS=sqlite,postgresql
backup-bench: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/backup_restore.py

# what SQLite synchronous=FULL costs stored recommendations against NORMAL (commit latency, rows/s)
sync-bench: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/sqlite_sync.py

# what a hung Redis (accepts, never answers) costs a rate-limit charge, before and after the deadlines and
# the circuit (in process, 64 concurrent callers); CONNECTIONS=64 CHARGES=5
redis-bench: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/hung_redis.py

# the capacity-plan optimiser's time on three demand shapes (36 monthly phases among them); REPEAT=3
capacity-bench: venv
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/python bench/capacity.py

clean:
	rm -rf $(VENV) compute-advisor.db
