# Two entry points: `make matrix` (the main job) and `make test` (the whole suite).
# Each creates .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Spread the suite over every core; override with `make test PYTEST_ARGS=...`.
PYTEST_ARGS ?= -n auto -q

.PHONY: matrix test lint typecheck format bench docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=68"
	$(PY) -m pip install --quiet -e '.[test,clients,agno,langgraph,pydantic-ai,adk,powerloss,docs]'
	touch $(STAMP)

matrix: $(STAMP)
	$(VENV)/bin/killpoint matrix

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP) typecheck
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over the package as it is installed: `killpoint` is three folders (harness/,
# runtime/, scenarios/), and mypy cannot follow setuptools' editable finder, so it checks a
# tree of links laid out as the installed package (configured in pyproject.toml).
TYPED := $(VENV)/typecheck
typecheck: $(STAMP)
	rm -rf $(TYPED) && mkdir -p $(TYPED)
	cp -rs "$(CURDIR)/harness" $(TYPED)/killpoint
	ln -s "$(CURDIR)/runtime" $(TYPED)/killpoint/runtime
	ln -s "$(CURDIR)/scenarios" $(TYPED)/killpoint/scenarios
	cd $(TYPED) && "$(CURDIR)/$(VENV)/bin/mypy" --config-file "$(CURDIR)/pyproject.toml" \
		--python-executable "$(CURDIR)/$(PY)" -p killpoint

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The documentation site: the reference pages' generated blocks filled from the code, then
# built into site/ by MkDocs, strict (a broken link or anchor fails).
docs: $(STAMP)
	$(PY) docs/generate.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: $(STAMP)
	$(PY) -m tests.benchmarks.checkpoint_cost
