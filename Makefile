# `make demo` and `make test` each create .venv if missing and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ppdp-installed

.PHONY: demo test typecheck bench-smoke docs install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# pip shows its progress for `make demo` (a first install takes minutes); quiet for every other target
PIP_QUIET := $(if $(filter demo,$(MAKECMDGOALS)),,--quiet)

$(STAMP): $(BIN)/python pyproject.toml
	@$(if $(PIP_QUIET),,echo "installing ppdp and its dependencies into $(VENV) (a few minutes the first time)")
	$(BIN)/python -m pip install $(PIP_QUIET) -e '.[dev]'
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

# the documentation site (docs/, mkdocs.yml) into site/ (git-ignored), --strict: any warning fails; open site/index.html
DOCS_STAMP := $(VENV)/.ppdp-docs-installed

$(DOCS_STAMP): $(STAMP) pyproject.toml
	@echo "installing the docs tools (mkdocs, its material theme, mkdocstrings) into $(VENV)"
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) examples/releases site build
