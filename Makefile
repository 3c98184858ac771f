# Two commands matter: `make run` serves the hooks, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8080
FLEET ?= 1,20
BASELINE ?= 950cc8a
PARTITIONS ?= 1
STAGE ?= available
UPGRADE ?= 20
IDLE ?= 0,100,300
CHAOS_FLEET ?= 100
BASELINE_SETTINGS ?= f079df8
SOAK ?= 10
SOAK_E2E ?= all
SOAK_DATA ?= all

IMAGE ?= localhost/sharddb-hooks:dev

.PHONY: run render test unit e2e data soak nodebin images lint bench bench-fleet bench-upgrade bench-latency chaos crd testbin venv image clean

# pip's own progress, not silence: the first install downloads about 70 packages (about 2 minutes).
$(BIN)/.installed: requirements.txt requirements-dev.txt
	@echo "venv: creating $(VENV) with the pinned requirements*.txt (first time: about 2 minutes)" >&2
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -r requirements-dev.txt
	touch $@
	@echo "venv: ready" >&2

venv: $(BIN)/.installed

## Serve the hooks on http://127.0.0.1:$(PORT) (POST /sync, /finalize, /customize).
run: venv
	SHARDDB_PORT=$(PORT) $(BIN)/python -m hooks

## Preview offline what the hooks answer for FILE at STAGE (new, ready, available, deleting), as YAML.
render: venv
	@test -n "$(FILE)" || { echo "usage: make render FILE=examples/sharddb.yaml [STAGE=new|ready|available|deleting]" >&2; exit 2; }
	@$(BIN)/python -m hooks render "$(FILE)" --stage "$(STAGE)"

## Build (once, cached outside the repo) etcd, kube-apiserver, kube-controller-manager, kube-scheduler, metacontroller.
testbin:
	@bash testbed/build-binaries.sh >/dev/null

## Regenerate the core/v1 schemas in crds/sharddb.yaml and hooks/corev1.json from the test API server.
crd: venv testbin
	$(BIN)/python -m tools.crd_schema

## Every test: unit, HTTP on loopback, generated worlds, fuzz, real API server, the real stack end to end,
## then the data tier on a real node (needs root).
test: venv testbin lint
	$(BIN)/python -m pytest -m "not data"
	$(MAKE) --no-print-directory data

## Quick tier: no API server, no slow generated tests, nothing from outside the repository.
UNIT := not cluster and not slow and not recorded and not shared and not e2e and not data
unit: venv
	$(BIN)/python -m pytest -m "$(UNIT)"

## The whole life of ShardDBs through the real Metacontroller, controllers and scheduler.
e2e: venv testbin
	$(BIN)/python -m pytest -m e2e

## SOAK runs (10) of the end-to-end and data tiers, to measure flakiness: each run's result and its failures'
## first lines; fails if any run failed. SOAK_E2E= and SOAK_DATA= narrow a tier to some test files (none: skip it).
soak: venv testbin nodebin images
	$(BIN)/python -m tools.soak --runs $(SOAK) --e2e $(SOAK_E2E) --data $(SOAK_DATA)

## ShardDBs on a real node (kubelet, containerd, runc, CNI, kube-proxy, CoreDNS, local-path-provisioner)
## running PostgreSQL and Redis, in namespaces of its own; needs root.
data: venv testbin nodebin images
	$(BIN)/python -m testbed.sandbox -- $(BIN)/python -m pytest -m data

## Build (once, cached outside the repo) CoreDNS and local-path-provisioner for the real node.
nodebin:
	@bash testbed/build-node-binaries.sh >/dev/null

## Build (once, cached outside the repo) the postgres, redis and pause test images from Debian packages.
images: venv
	@$(BIN)/python -m testbed.images >/dev/null

lint: venv
	$(BIN)/ruff check hooks tests bench tools testbed
	$(BIN)/ruff format --check hooks tests bench tools testbed
	$(BIN)/mypy

## Build the Dockerfile with docker, podman or buildah, run it, and check it serves /healthz and /sync
## as a non-root user on a read-only root (PYTHON_IMAGE=… for another base; see README, "The image").
image: venv
	$(BIN)/python -m tools.image --tag "$(IMAGE)" $(if $(PYTHON_IMAGE),--base "$(PYTHON_IMAGE)")

bench: venv
	$(BIN)/python -m bench

## A fleet of ShardDBs on the real Metacontroller: $(BASELINE) vs the working tree (FLEET=1,20,100 for more).
bench-fleet: venv testbin
	$(BIN)/python -m bench.fleet --fleet $(FLEET) --baseline $(BASELINE) --partitions $(PARTITIONS)

## N ShardDBs brought up by $(BASELINE), then the working tree's hooks: what the upgrade restarts (UPGRADE=100).
bench-upgrade: venv testbin
	$(BIN)/python -m bench.fleet --upgrade $(UPGRADE) --baseline $(BASELINE)

## A change to one ShardDB beside idle fleets of IDLE ShardDBs: the baseline's and the current manifests'
## resync period and client budget side by side (README: Metacontroller and write budgets; about 40 minutes).
bench-latency: venv testbin
	$(BIN)/python -m bench.latency --idle $(IDLE) --baseline $(BASELINE_SETTINGS)

## The fault campaign: CHAOS_FLEET ShardDBs on two partitions through their whole life, without and then
## with every component failing at random moments; fails when an invariant breaks (README: Reliability).
chaos: venv testbin
	$(BIN)/python -m bench.chaos --fleet $(CHAOS_FLEET)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
