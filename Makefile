# Shortcuts for the commands in README.md and CONTRIBUTING.md; each recipe is the
# command you would type by hand.
PY := .venv/bin/python
BIN := .venv/bin

.PHONY: venv test test-fast lint format regen

# The development environment: the project (editable) with every extra, and the hooks.
venv:
	python3 -m venv .venv
	$(PY) -m pip install -e '.[dev]'
	$(BIN)/pre-commit install

# Everything, exactly the README's test command (what .ci/run runs after the linters).
test:
	$(PY) -m pytest

# Everything but the tests marked slow: the edit-run loop.
test-fast:
	$(PY) -m pytest -m "not slow"

lint:
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

format:
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Rewrite the committed generated files after a change to the compiler, a built-in domain
# or the acceptance checks: the environment packages under envs/builtin/ (a test fails
# when they are stale) and the broken-task corpus under tests/data/. The package folder
# is emptied first so that a file the compiler no longer writes does not linger.
regen:
	for name in $$($(PY) -c 'from graphgen.domains import builtin_names; print(*builtin_names())'); do \
		rm -rf envs/builtin/$$name && $(PY) -m graphgen compile $$name -o envs/builtin/$$name || exit 1; \
	done
	$(PY) tests/data/make_broken_tasks.py
	$(PY) tests/data/hostile/make_hostile.py
