# The two commands: `make run` and `make test`. Everything else is a helper for them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/memoryadmin
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: setup run test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

run: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py runserver 127.0.0.1:8000

test: setup
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	TEST_BROKER_URL=$${TEST_BROKER_URL:-$(TEST_BROKER_URL)} \
	$(BIN)/pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .

bench: setup
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/python bench/store_bench.py
	$(BIN)/python bench/extraction_eval.py

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache .ruff_cache
