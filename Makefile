# Two commands matter: `make run` serves the hooks, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DOCS_VENV ?= .venv-docs
DOCS_BIN := $(DOCS_VENV)/bin
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
HA_RUNS ?= 20
POINT_SHARDS ?= 1,2,4
POINT_RUNS ?= 5

IMAGE ?= localhost/sharddb-hooks:dev

.PHONY: help run render test machine unit e2e data installed patroni soak nodebin images lint docs api-reference bench bench-fleet bench-upgrade bench-latency bench-ha bench-points chaos crd testbin venv image rules promtool clean

# pip's own progress, not silence: the first install downloads about 70 packages (about 2 minutes).
$(BIN)/.installed: requirements.txt requirements-dev.txt
	@echo "venv: creating $(VENV) with the pinned requirements*.txt (first time: about 2 minutes)" >&2
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -r requirements-dev.txt
	touch $@
	@echo "venv: ready" >&2

## Create .venv from the pinned requirements*.txt (the other targets do it when needed).
venv: $(BIN)/.installed

# The docs site's own venv (MkDocs and its theme, pinned), apart from the hooks' one.
$(DOCS_BIN)/.installed: requirements-docs.txt
	@echo "docs: creating $(DOCS_VENV) with the pinned requirements-docs.txt" >&2
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_BIN)/pip install --disable-pip-version-check -r requirements-docs.txt
	touch $@

## Each target with its comment (the `##` lines above it).
help:
	@awk '/^## /{d = d (d ? " " : "") substr($$0, 4); next} /^[A-Z_]+ *[:?]?=/{next} /^[a-z][a-z0-9-]*:/{if (d) {split($$0, t, ":"); printf "  %-15s %s\n", t[1], d}} {d = ""}' $(firstword $(MAKEFILE_LIST))

## Serve the hooks on http://127.0.0.1:$(PORT) (POST /sync, /finalize, /customize).
run: venv
	SHARDDB_PORT=$(PORT) $(BIN)/python -m hooks

## Preview offline what the hooks answer for FILE at STAGE (new, ready, available, deleting), as YAML.
render: venv
	@test -n "$(FILE)" || { echo "usage: make render FILE=examples/sharddb.yaml [STAGE=new|ready|available|deleting]" >&2; exit 2; }
	@$(BIN)/python -m hooks render "$(FILE)" --stage "$(STAGE)"

## Build (once, cached outside the repo) the test stack's seven binaries: etcd, kube-apiserver, kube-controller-manager,
## kube-scheduler, the kubelet, kube-proxy and Metacontroller.
testbin:
	@bash testbed/real/build-binaries.sh >/dev/null

## Regenerate the core/v1 schemas in crds/sharddb.yaml and hooks/corev1.json from the test API server.
crd: venv testbin
	$(BIN)/python -m tools.crd_schema

## Every test: lint, unit, HTTP on loopback, generated worlds, fuzz, real API server, the real stack end to end,
## the data tier on a real node and the installed tier on three (root), the guide and the image; the machine
## checked first, the builds overlapped with the tiers that do not need them, a table of phases at the end.
test: machine venv
	$(BIN)/python -m tools.suite

## The machine's prerequisites for make test (toolchains, Debian packages, root, cgroups, kernel, ../shared), in seconds.
machine:
	@$(PYTHON) -m testbed.real.machine

## Quick tier: no API server, no slow generated tests, nothing from outside the repository but promtool (make promtool).
UNIT := not cluster and not slow and not recorded and not shared and not e2e and not data and not installed and not patroni
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
## running PostgreSQL and Redis, MariaDB and memcached, in namespaces of its own; needs root.
data: venv testbin nodebin images
	$(BIN)/python -m testbed.real.sandbox -- $(BIN)/python -m pytest -m data

## The product as users install it: the README's deploy steps on three real nodes (containerd, kubelet,
## kube-proxy and a NetworkPolicy agent each), the hooks image and Metacontroller's as pods; needs root.
installed: venv testbin nodebin images
	$(BIN)/python -m testbed.real.sandbox -- $(BIN)/python -m pytest -m installed

## Real Patroni in containers (podman on runc) against a real API server, with the hooks' rendered configuration
## and RBAC, on both Patroni images: the recipe in examples/images/postgres-patroni/ and its Debian-made twin.
patroni: venv testbin
	@$(BIN)/python -m tools.image.patroni >/dev/null
	$(BIN)/python -m pytest -m patroni

## Build (once, cached outside the repo) CoreDNS, local-path-provisioner and kube-router for the real node.
nodebin:
	@bash testbed/real/build-node-binaries.sh >/dev/null

## Build (once, cached outside the repo) the postgres, redis, mariadb, memcached and pause test images from Debian
## packages, and the product's: the hooks image (`make image`'s build, saved under the overlays' names) and
## Metacontroller's, from its source.
images: venv
	@$(BIN)/python -m testbed.images.workloads >/dev/null
	@$(BIN)/python -m testbed.images.product >/dev/null

## Build the guide (docs/) into site/, strictly: a broken link or anchor, or a field reference
## that differs from crds/sharddb.yaml, fails.
docs: venv $(DOCS_BIN)/.installed
	$(BIN)/python -m tools.api_reference --check
	NO_MKDOCS_2_WARNING=1 $(DOCS_BIN)/mkdocs build --strict

## Regenerate docs/api/reference.md from crds/sharddb.yaml.
api-reference: venv
	$(BIN)/python -m tools.api_reference

## ruff's checks and format, and mypy --strict, over every Python folder.
lint: venv
	$(BIN)/ruff check hooks tests bench tools testbed
	$(BIN)/ruff format --check hooks tests bench tools testbed
	$(BIN)/mypy

## Build the Dockerfile with docker, podman or buildah, run it, and check it serves /healthz and /sync
## as a non-root user on a read-only root (PYTHON_IMAGE=… for another base; SAVE=FILE writes it as a
## docker archive for docker load or ctr images import; see docs/development/image.md).
image: venv
	$(BIN)/python -m tools.image --tag "$(IMAGE)" $(if $(PYTHON_IMAGE),--base "$(PYTHON_IMAGE)") $(if $(SAVE),--save "$(SAVE)")

## The hook benchmark: POST /sync against a floor of the same framework, by shard count (docs/reliability/performance.md).
bench: venv
	$(BIN)/python -m bench

## A fleet of ShardDBs on the real Metacontroller: $(BASELINE) vs the working tree (FLEET=1,20,100 for more).
bench-fleet: venv testbin
	$(BIN)/python -m bench.fleet --fleet $(FLEET) --baseline $(BASELINE) --partitions $(PARTITIONS)

## N ShardDBs brought up by $(BASELINE), then the working tree's hooks: what the upgrade restarts (UPGRADE=100).
bench-upgrade: venv testbin
	$(BIN)/python -m bench.fleet --upgrade $(UPGRADE) --baseline $(BASELINE)

## A change to one ShardDB beside idle fleets of IDLE ShardDBs: the baseline's and the current manifests'
## resync period and client budget side by side (docs/operating/change-latency.md; about 40 minutes).
bench-latency: venv testbin
	$(BIN)/python -m bench.latency --idle $(IDLE) --baseline $(BASELINE_SETTINGS)

## HA_RUNS runs (20) of the installed tier's replication steps (tests/installed/test_production_members/), each a
## stack of its own (about 8-10 minutes each on 2 cores): the client-visible outage of each fault step, p50 and max
## over the runs; needs root.
bench-ha: venv testbin nodebin images
	$(BIN)/python -m bench.ha --runs $(HA_RUNS)

## A restore point on every shard (the restore points' Job) beside the same points with nothing paused, under a
## client writing across the shards: the pause, and the longest insert wait during each (POINT_SHARDS, POINT_RUNS).
bench-points: venv testbin
	$(BIN)/python -m bench.points --shards $(POINT_SHARDS) --runs $(POINT_RUNS)

## The fault campaign: CHAOS_FLEET ShardDBs on two partitions through their whole life, without and then
## with every component failing at random moments; fails when an invariant breaks (docs/reliability/faults.md).
chaos: venv testbin
	$(BIN)/python -m bench.chaos --fleet $(CHAOS_FLEET)

## Regenerate the monitoring-operator component's PrometheusRule from its plain rules file (the one source of the alerts).
rules: venv
	$(BIN)/python -m tools.monitoring

## Take promtool and prometheus (once, cached outside the repo) from Debian's prometheus package, without installing
## it; the unit tier runs them on the alert rules, and fetches them so itself when missing.
promtool:
	@$(PYTHON) -m testbed.real.promtool

## Remove the venvs, the built guide and the caches of the tools (not the test stack cached outside the repo).
clean:
	rm -rf $(VENV) $(DOCS_VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis
