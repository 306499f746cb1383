# The two commands: `make run` and `make test`. `make serve`, `make worker` and `make beat` run the
# production pieces (README, "Deploying"). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_DATABASE_URL ?=
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

# A fresh random key per test run: the development key is refused whenever DEBUG is off.
RANDOM_KEY = $$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))')

.PHONY: setup run portal-link demo-code test check unit lint screenshots bench bench-large bench-scale bench-peers clean serve worker beat

# The agent client (client/) first: the server depends on memoryadmin-client, which must come
# from ./client (editable), not from a registry.
$(BIN)/.installed: pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e './client[mcp]'
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The OpenID provider the single sign-on tests start (npm `oidc-provider`, run by node).
OIDC_MODULES := tests/oidc/node_modules/.package-lock.json
$(OIDC_MODULES): tests/oidc/package.json tests/oidc/package-lock.json
	cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error

setup: $(BIN)/.installed $(OIDC_MODULES)

# Every command that needs a database runs under the embedded PostgreSQL (memoryadmin/embedded_db.py:
# a server installed by pip, its data in .pgdata/, stopped when the command ends) unless
# DATABASE_URL is given, which always wins.
EMBEDDED = $(BIN)/python -m memoryadmin.embedded_db run --

# `make run RUN_PORT=8765` serves elsewhere; every address and hint it prints follows.
RUN_PORT ?= 8000
# The demo traveller `make portal-link` opens the portal of (FF-100232: the same in Chinese).
SUBJECT ?= FF-100231

# The development server (serve_dev: runserver, plus beat's webhook sweep in-process: with no
# broker, tasks run in this one process), on the demo data: its webhooks go to the demo's
# receiver that this server serves, and are acknowledged.
run: $(BIN)/.installed
	export DEBUG=$${DEBUG:-true} TIME_ZONE=$${TIME_ZONE:-Asia/Taipei}; \
	$(EMBEDDED) sh -c '$(BIN)/python manage.py migrate --noinput -v 0 && \
	$(BIN)/python manage.py seed_demo --base-url http://127.0.0.1:$(RUN_PORT) && \
	echo "Traveller privacy portal for demo traveller FF-100231 (the link works once, for 15 minutes;" && \
	echo "get another with: make portal-link RUN_PORT=$(RUN_PORT), in Chinese: make portal-link RUN_PORT=$(RUN_PORT) SUBJECT=FF-100232):" && \
	$(BIN)/python manage.py portal_link FF-100231 --base-url http://127.0.0.1:$(RUN_PORT) && \
	exec $(BIN)/python manage.py serve_dev 127.0.0.1:$(RUN_PORT)'

portal-link: $(BIN)/.installed
	DEBUG=$${DEBUG:-true} $(EMBEDDED) $(BIN)/python manage.py portal_link $(SUBJECT) --base-url http://127.0.0.1:$(RUN_PORT)

demo-code: $(BIN)/.installed
	DEBUG=$${DEBUG:-true} $(EMBEDDED) $(BIN)/python manage.py demo_totp_code privacy

# Production web: gunicorn (WEB_CONCURRENCY workers, default 2) + WhiteNoise, DEBUG off.
# Needs SECRET_KEY, DATABASE_URL and usually CELERY_BROKER_URL (README, "Deploying").
serve: $(BIN)/.installed
	export DEBUG=false; \
	$(BIN)/python manage.py migrate --noinput && \
	$(BIN)/python manage.py collectstatic --noinput -v 0 && \
	$(BIN)/gunicorn memoryadmin.wsgi -c gunicorn.conf.py

# With LOG_FORMAT=json, --quiet drops Celery's start-up banner (not a log line, not JSON).
CELERY_QUIET = $$([ "$${LOG_FORMAT:-text}" = json ] && echo --quiet)

worker: $(BIN)/.installed
	DEBUG=false $(BIN)/celery -A memoryadmin $(CELERY_QUIET) worker --loglevel=INFO

beat: $(BIN)/.installed
	DEBUG=false $(BIN)/celery -A memoryadmin $(CELERY_QUIET) beat --loglevel=INFO

# The tests run on TEST_DATABASE_URL when given (CI: the machine's PostgreSQL 15), else on the
# embedded PostgreSQL 18; in parallel (pytest-xdist, PYTEST_WORKERS processes: each has its own
# test database, Redis database and ports).
PYTEST_WORKERS ?= 2
TEST_ENV = SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	TEST_BROKER_URL=$${TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	$(if $(TEST_DATABASE_URL),DATABASE_URL=$(TEST_DATABASE_URL))
# xdist's default scheduling hands out tests in collection order, so each worker still runs the
# browser tests last (tests/support/browser.py); worksteal would let a worker that finished its
# browser tests take earlier ones, which then meet Playwright's event loop in that thread.
PYTEST = $(TEST_ENV) $(EMBEDDED) $(BIN)/pytest -n $(PYTEST_WORKERS)
# The fast tier: no browser, no server processes (Celery, gunicorn, beat, the OpenID provider),
# no state machine, no virtualenv builds.
FAST = not browser and not integration and not slow and not statemachine

# Formatting, lint, a merge-conflict marker in any tracked file, the layer contract, and
# migrations that match the models.
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@if git grep -nE '^(<{7}|>{7})( |$$)|^={7}$$' -- . ; then \
		echo "merge-conflict markers left in the files above"; exit 1; fi
	$(BIN)/lint-imports --no-cache
	$(TEST_ENV) $(EMBEDDED) $(BIN)/python manage.py makemigrations --check --dry-run -v 0

# The unit tier (tests/unit/): pure code, no database, no Redis, no server; under 30 seconds.
# Not under $(EMBEDDED): DATABASE_URL and the Redis URLs point at closed ports (the settings need
# a database URL), so a unit test that reaches for either fails at once.
UNIT_ENV = SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	DATABASE_URL=postgres://unit-tier@127.0.0.1:1/no_database \
	CELERY_BROKER_URL= CACHE_URL= TEST_BROKER_URL=redis://127.0.0.1:1/0
unit: $(BIN)/.installed
	$(UNIT_ENV) $(BIN)/pytest -n 0 -m unit tests/unit $(UNIT_ARGS)

# The fast tier, for your own loop: lint, the unit tier, then the database tier (no browser, no
# server processes); at most five minutes on two cores. The 15 slowest tests are listed at the end.
check: setup lint unit
	$(PYTEST) -m "$(FAST) and not unit" --durations=15 $(PYTEST_ARGS)

# Everything: what CI runs.
test: setup lint
	$(PYTEST) $(PYTEST_ARGS)

# Browser tests write their screenshots to artifacts/ (git-ignored); this refreshes the ones the
# README shows, on purpose.
screenshots: setup
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(PYTEST) -m browser $(PYTEST_ARGS)

# Benchmarks use their own database (created if missing, emptied and loaded by bench/generate.py).
# BENCH_DATABASE_URL given wins; else the embedded server's own memoryadmin_bench database.
BENCH_DATABASE_URL ?=
BENCH = SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	$(if $(BENCH_DATABASE_URL),DATABASE_URL=$(BENCH_DATABASE_URL)) \
	$(BIN)/python -m memoryadmin.embedded_db run --database memoryadmin_bench --

$(BIN)/.bench-installed: $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $@

bench: $(BIN)/.installed $(BIN)/.bench-installed
	$(BENCH) $(BIN)/python bench/run.py --preset small
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} $(BIN)/python bench/extraction_eval.py

bench-large: $(BIN)/.installed $(BIN)/.bench-installed
	$(BENCH) $(BIN)/python bench/run.py --preset large --n 300

# The peers scenario at three sizes (issue 42): 20k, 1M and 10M facts, each in its own database
# (ma_peers_20k, ma_peers_1m, ma_peers_10m: PEERS_DATABASE_URL is their common prefix; else the
# embedded server's), loaded once (the 10M one server-side, ~6 min) and reused while it holds
# the preset's facts; every read, tier one and search against one raw statement and LangGraph's
# store, 2,000 calls each, interleaved. SECRET_KEY: the load's (default bench-peers).
PEERS_DATABASE_URL ?=
PEERS_N ?= 2000
PEERS_SIZES ?= 20k:20k 1m:large 10m:10m
bench-peers: $(BIN)/.installed $(BIN)/.bench-installed
	@set -e; for pair in $(PEERS_SIZES); do size=$${pair%%:*}; preset=$${pair##*:}; \
	  SECRET_KEY=$${SECRET_KEY:-bench-peers} \
	  $(if $(PEERS_DATABASE_URL),DATABASE_URL=$(PEERS_DATABASE_URL)$$size) \
	  $(BIN)/python -m memoryadmin.embedded_db run --database ma_peers_$$size -- \
	  $(BIN)/python bench/run.py --preset $$preset --only 7 --n $(PEERS_N) --load-if-needed; done

# The scale scenario (issue 31): SCALE=1 is 1,000,000 travellers, 10,000,000 facts and
# 100,000,000 events loaded server-side, then measured (bench/scale.py, bench/RESULTS.md).
SCALE ?= 1
bench-scale: $(BIN)/.installed $(BIN)/.bench-installed
	$(BENCH) $(BIN)/python bench/scale.py --scale $(SCALE)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts
