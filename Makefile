# The two commands: `make run` and `make test`. `make serve`, `make worker` and `make beat` run the
# production pieces (README, "Deploying"). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/memoryadmin
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

# A fresh random key per test run: the development key is refused whenever DEBUG is off.
RANDOM_KEY = $$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))')

.PHONY: setup run test test-embedded lint bench bench-large clean serve worker beat

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

run: $(BIN)/.installed
	export DEBUG=$${DEBUG:-true}; \
	$(BIN)/python manage.py migrate --noinput && \
	$(BIN)/python manage.py seed_demo && \
	echo "Traveller privacy portal for demo traveller FF-100231 (the link works once, for 15 minutes;" && \
	echo "get another with: $(BIN)/python manage.py portal_link FF-100231):" && \
	$(BIN)/python manage.py portal_link FF-100231 --base-url http://127.0.0.1:8000 && \
	$(BIN)/python manage.py runserver 127.0.0.1:8000

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
	DEBUG=false $(BIN)/celery -A memoryadmin $(CELERY_QUIET) beat --loglevel=INFO \
		--schedule=$${BEAT_SCHEDULE_FILE:-/tmp/memoryadmin-celerybeat-schedule}

# The embedded default (`make run` serves on SQLite): the tests marked `embedded` (the store
# contract, the services, every page) but not `postgresql`, on a fresh SQLite database in a
# temporary directory. Exit status 5 (PYTEST_ARGS named no embedded test) is not a failure.
TEST_EMBEDDED = tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	DATABASE_URL=sqlite:///$$tmp/test.sqlite3 \
	TEST_BROKER_URL=$${TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	$(BIN)/pytest -m "embedded and not postgresql" $(PYTEST_ARGS) || [ $$? -eq 5 ]

# Migrations match the models, then the whole suite on PostgreSQL, then the embedded subset again
# on SQLite.
test: setup
	$(BIN)/lint-imports --no-cache
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	$(BIN)/python manage.py makemigrations --check --dry-run
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} \
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	TEST_BROKER_URL=$${TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	$(BIN)/pytest $(PYTEST_ARGS)
	$(TEST_EMBEDDED)

test-embedded: $(BIN)/.installed
	$(TEST_EMBEDDED)

lint: setup
	$(BIN)/ruff check .

# Benchmarks use their own database (created if missing, emptied and loaded by bench/generate.py).
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/memoryadmin_bench

$(BIN)/.bench-installed: $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $@

bench: $(BIN)/.installed $(BIN)/.bench-installed
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/run.py --preset small
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} $(BIN)/python bench/extraction_eval.py

bench-large: $(BIN)/.installed $(BIN)/.bench-installed
	SECRET_KEY=$${SECRET_KEY:-$(RANDOM_KEY)} DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/run.py --preset large --n 300

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache .ruff_cache
