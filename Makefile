# `make demo` and `make test` each create .venv if missing and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ppdp-installed

.PHONY: demo test typecheck bench-smoke install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ppdp run examples/census_demo.yaml

# on two worker processes (the machine's two cores; each its own Prefect home and config folder: tests/conftest.py)
test: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not slow' -n 2

# mypy over the package as installed (build/typecheck/ppdp/ mirrors the package-dir mapping; see .ci/typecheck.py)
typecheck: $(STAMP)
	$(BIN)/python .ci/typecheck.py

# every benchmarks/*.py script with --smoke (tiny input, nothing written into benchmarks/results/)
bench-smoke: $(STAMP)
	$(BIN)/python -m benchmarks.smoke --jobs 2

clean:
	rm -rf $(VENV) examples/releases
