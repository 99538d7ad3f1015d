# `make demo` and `make test` each create .venv if missing and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ppdp-installed

.PHONY: demo test install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ppdp run examples/census_demo.yaml

test: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not slow'

clean:
	rm -rf $(VENV) examples/releases
