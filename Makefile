# fleetplane: `make demo` runs the main job, `make test` the whole suite, `make bench` the benchmarks.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint venv clean etcd wrk

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
	$(BIN)/mypy

# etcd (Debian's etcd-server) for the etcd backend's tests and benchmarks; installed when missing.
etcd:
	@command -v etcd >/dev/null 2>&1 || { echo "installing etcd-server" >&2; S=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$S env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
	  $$S env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null; }

# wrk (Debian's), the C load generator `make bench` measures the hub's API with; installed when missing.
wrk:
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk" >&2; S=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$S env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
	  $$S env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null; }

test: $(STAMP) etcd wrk
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(STAMP) etcd wrk
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .fleetplane .pytest_cache
