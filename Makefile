# One command to run the demo, one to run the tests; both build .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME := $(VENV)/.installed-runtime
MUTATE := $(VENV)/.installed-mutate
# Test processes (pytest-xdist): most tests wait on git, sockets and timers, so two
# share two cores well; `make test TEST_WORKERS=0` runs them in this one process.
TEST_WORKERS ?= 2

.PHONY: demo test test-slow bench mutate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP) $(RUNTIME)

# The demo needs the package alone, not the test extras.
$(RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/promoter demo $(ARGS)

test: $(STAMP)
	bash .ci/browser
	$(BIN)/ruff check promoter scm_plugins webhooks tests bench
	$(BIN)/ruff format --check promoter scm_plugins webhooks tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not slow" --cov --cov-report= $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/pytest -m slow tests/reliability tests/model $(PYTEST_ARGS)

# Mutation testing of the modules that guard production ([tool.mutmut] in pyproject.toml,
# docs/testing.md): not in CI (about 45 minutes on 2 cores). Prints each module's score and
# the survivors nobody explained; fails below 90 % or on such a survivor.
$(MUTATE): pyproject.toml | $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,mutate]'
	touch $(MUTATE)

mutate: $(MUTATE)
	rm -rf mutants .mutmut-wider
	PATH="$(abspath $(BIN)):$$PATH" HYPOTHESIS_PROFILE=mutation \
		$(BIN)/mutmut run --max-children $$(nproc)
	-$(BIN)/python -m tests.mutation.wider  # its failure shows in the report below
	$(BIN)/python -m tests.mutation

bench: $(STAMP)
	$(BIN)/python bench/webhook_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache mutants .mutmut-wider .coverage
