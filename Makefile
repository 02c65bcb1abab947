# Two entry points: `make matrix` (the main job) and `make test` (the whole suite).
# Each creates .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Spread the suite over every core; override with `make test PYTEST_ARGS=...`.
PYTEST_ARGS ?= -n auto -q

.PHONY: matrix test lint format bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=68"
	$(PY) -m pip install --quiet -e '.[test,agno,langgraph,powerloss]'
	touch $(STAMP)

matrix: $(STAMP)
	$(VENV)/bin/killpoint matrix

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)
	$(PY) -m tests.benchmarks.checkpoint_cost
