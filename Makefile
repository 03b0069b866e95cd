# `make test` and `make preview` work from a fresh clone: both create .venv first, from the lock.
#
# requirements-dev.lock pins the whole dependency tree (runtime + dev extra, with hashes, plus
# pip and the setuptools that builds the editable install). pyproject.toml keeps the ranges; the
# lock picks the versions, so every machine and CI run installs the same SDKs (and the pulumi
# SDK versions choose the provider plugins). `make lock` re-resolves it after a range changes.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements-dev.lock
# Versions resolved for every platform, for the oldest Python pyproject accepts.
# Besides pyproject's own tree: pip, and setuptools (the build backend, used without isolation).
LOCK_ARGS := pyproject.toml - --extra dev --generate-hashes --universal --python-version 3.11 \
	--custom-compile-command 'make lock' -o $(LOCK)
LOCK_EXTRA := printf 'pip>=25\nsetuptools>=69\n'

# Python writes the bytecode of what it imports: the suites start Python processes by the
# thousand (the CLI, the Pulumi programs), and without it each one compiles its modules again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup test lint typecheck pytest actionlint preview snapshots docs bench lock clean e2e-tools e2e dist

# --clear: the venv holds exactly the lock, nothing left over from an earlier one.
$(STAMP): $(LOCK) pyproject.toml
	$(PY) -m venv --clear $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/pip check
	touch $(STAMP)

setup: $(STAMP)

# Re-resolve the lock from pyproject's ranges (newest versions inside them), then reinstall.
lock:
	test -x $(BIN)/uv || { $(PY) -m venv $(VENV) && $(BIN)/pip install --quiet 'uv>=0.9,<1'; }
	$(LOCK_EXTRA) | $(BIN)/uv pip compile --upgrade --quiet $(LOCK_ARGS)
	$(MAKE) setup

lint: $(STAMP)
	$(BIN)/ruff check .

actionlint: $(STAMP)
	$(BIN)/actionlint -no-color

typecheck: $(STAMP)
	$(BIN)/pyright

# One worker per core (pytest-xdist); the tests that build and install the wheel share one worker,
# so its session fixtures (the release, the team's virtualenv) are made once.
pytest: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadgroup

test: lint actionlint typecheck pytest

preview: $(STAMP)
	$(BIN)/gpuplat preview --stack dev

snapshots: $(STAMP)
	$(BIN)/python -m tests.snapshots

docs: $(STAMP)
	$(BIN)/python -m gpuplat.docs

# What a release publishes (.github/workflows/release.yml): the sdist, and the wheel built from it
# (so the sdist is proven complete), both with the lock's setuptools and no download.
DIST ?= dist
dist: $(STAMP)
	rm -rf $(DIST)
	$(BIN)/python -c 'import sys; from setuptools.build_meta import build_sdist; build_sdist(sys.argv[1])' $(DIST) >/dev/null
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation -w $(DIST) $(DIST)/gpuplat-*.tar.gz

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist

# The e2e suite's tools (control plane, Kueue, Karpenter's kwok provider, ...), built from their
# Go modules into ~/.cache/gpuplat/e2e, keyed by the pins in e2e/tools/: only what is missing.
e2e-tools:
	$(PY) e2e/tools/build.py

e2e: $(STAMP) e2e-tools
	$(BIN)/python -m e2e
