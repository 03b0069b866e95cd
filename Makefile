# `make test` and `make preview` work from a fresh clone: both create .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test lint typecheck pytest preview snapshots docs bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/pyright

pytest: $(STAMP)
	$(BIN)/python -m pytest

test: lint typecheck pytest

preview: $(STAMP)
	$(BIN)/gpuplat preview --stack dev

snapshots: $(STAMP)
	$(BIN)/python -m tests.snapshots

docs: $(STAMP)
	$(BIN)/python -m gpuplat.docs

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
