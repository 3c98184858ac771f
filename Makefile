# Two commands matter: `make run` serves the hooks, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8080
FLEET ?= 1,20
BASELINE ?= 086dd9c
STAGE ?= available

.PHONY: run render test unit lint bench bench-fleet crd testbin venv clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(BIN)/.installed

## Serve the hooks on http://127.0.0.1:$(PORT) (POST /sync, /finalize, /customize).
run: venv
	SHARDDB_PORT=$(PORT) $(BIN)/python -m hooks

## Preview offline what the hooks answer for FILE at STAGE (new, ready, available, deleting), as YAML.
render: venv
	@test -n "$(FILE)" || { echo "usage: make render FILE=examples/sharddb.yaml [STAGE=new|ready|available|deleting]" >&2; exit 2; }
	@$(BIN)/python -m hooks render "$(FILE)" --stage "$(STAGE)"

## Build (once, cached outside the repo) the etcd and kube-apiserver the cluster tests start.
testbin:
	@bash testbed/build-binaries.sh >/dev/null

## Regenerate the core/v1 schemas in crds/sharddb.yaml and hooks/corev1.json from the test API server.
crd: venv testbin
	$(BIN)/python -m tools.crd_schema

## Every test: unit, HTTP on loopback, generated worlds, fuzz, real API server, bench smoke.
test: venv testbin lint
	$(BIN)/python -m pytest

## Quick tier: no API server, no slow generated tests, nothing from outside the repository.
unit: venv
	$(BIN)/python -m pytest -m "not cluster and not slow and not recorded"

lint: venv
	$(BIN)/ruff check hooks tests bench tools testbed
	$(BIN)/ruff format --check hooks tests bench tools testbed
	$(BIN)/mypy

bench: venv
	$(BIN)/python -m bench

## A fleet of ShardDBs on Metacontroller's write budget: $(BASELINE) vs the working tree (FLEET=1,20,100 for more).
bench-fleet: venv testbin
	$(BIN)/python -m bench.fleet --fleet $(FLEET) --baseline $(BASELINE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
