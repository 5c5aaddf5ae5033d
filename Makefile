# The README's two commands: `make demo` and `make test`. Both go through `make install`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck contracts pytest bench clean-venv

install: $(STAMP)

# Re-installs only when the project metadata changed, so a second `make install` is instant.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "knowbase needs Python >= 3.11 (found " + sys.version.split()[0] + "); set PYTHON=python3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: install
	$(BIN)/kb index . --gaps 5
	$(BIN)/kb show . --limit 8

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

contracts: install
	$(BIN)/lint-imports

pytest: install
	$(BIN)/python -m pytest -q

test: install lint typecheck contracts pytest

bench: install
	$(BIN)/python bench/run.py

clean-venv:
	rm -rf $(VENV)
