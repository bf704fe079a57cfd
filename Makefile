# fleetplane: `make demo` runs the main job, `make test` the whole suite, `make bench` the benchmarks.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint venv clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m fleetplane.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .fleetplane .pytest_cache
