# Two entry points on a fresh machine: `make demo` (environment, install, solve a
# shipped instance end to end) and `make test` (the test suite, as CI runs it).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo installs the package alone (no test extra: no Ray, pytest, hypothesis); `make test` adds the extra.
DEMO_STAMP := $(VENV)/.installed-demo
# An editable install leaves the packages uncompiled, and where bytecode is not written
# (PYTHONDONTWRITEBYTECODE) every run compiles ~110 modules again (~0.4 s); compiled once here, they are read.
COMPILE = $(BIN)/python -m compileall -q placement topology costmodels solvers

.PHONY: demo test install bench timings clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(COMPILE)
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	$(COMPILE)
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	mkdir -p out
	$(BIN)/placement solve instances/rubin-lpx-deepseek.yaml --json out/rubin-lpx-deepseek.plan.json
	$(BIN)/placement check instances/rubin-lpx-deepseek.yaml out/rubin-lpx-deepseek.plan.json

test: $(STAMP)
	$(BIN)/python -m pytest -x -n 2 --dist loadfile -p no:cacheprovider --doctest-modules placement topology costmodels solvers tests

bench: $(STAMP)
	$(BIN)/python benchmarks/costmodel_throughput.py

# Whole-operation timings recorded per commit (benchmarks/timings/test_timings.py says how to compare runs).
timings: $(STAMP)
	$(BIN)/python -m pytest benchmarks/timings -p no:xdist -p no:cacheprovider --benchmark-only \
		--benchmark-autosave --benchmark-storage=file://benchmarks/timings/history

clean:
	rm -rf $(VENV) out .pytest_cache
