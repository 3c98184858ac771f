"""The deploy manifests, the image recipe and the examples, as rendered and read.

Every kustomize target is rendered with ``kubectl kustomize`` (no cluster) and
checked against what the hooks need: routes that exist, update strategies that
let finalize scale children down, pods that pass the restricted Pod Security
Standard, and a CRD status schema that keeps every field the hooks write (a
pruned field would make Metacontroller rewrite status on every sync, forever).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import kubernetes_validate
import pytest
import yaml
from fastapi.routing import APIRoute

from hooks import handler, kinds
from hooks.service.app import create_app
from hooks.service.settings import Settings
from hooks.spec import ShardDBSpec
from testbed.models.world import World

from ..support.crds import crd_schema, one, schema_errors, sharddb_crd
from ..support.hook import at
from ..support.manifests import (
    DEPLOY,
    HOOK_NAMESPACE,
    HOOK_SERVICE,
    KUBERNETES_VERSION,
    REPO,
    container,
    pod_spec,
    render,
    webhooks,
)

Obj = dict[str, Any]

BASE = DEPLOY / "base"
OVERLAYS = sorted(path.parent for path in (DEPLOY / "overlays").glob("*/kustomization.yaml"))
TARGETS = [BASE, *OVERLAYS]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
EXPECTED_KINDS = Counter(
    {
        "Namespace": 1,
        "CustomResourceDefinition": 1,
        "ServiceAccount": 1,
        "Deployment": 1,
        "Service": 1,
        "PodDisruptionBudget": 1,
        "NetworkPolicy": 1,
        "ClusterRole": 2,
        "CompositeController": 1,
        "ValidatingAdmissionPolicy": 1,
        "ValidatingAdmissionPolicyBinding": 1,
    }
)
# What each partition adds: its Metacontroller, the account it writes as and that
# account's binding; every partition but p0 adds its CompositeController, and the
# role the instances share comes once.
PER_PARTITION = Counter({"StatefulSet": 1, "ServiceAccount": 1, "ClusterRoleBinding": 1, "CompositeController": 1})
RESTRICTED_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def routes(method: str) -> set[str]:
    """Paths the hook app serves for ``method``."""
    return {r.path for r in create_app(Settings()).routes if isinstance(r, APIRoute) and method in (r.methods or set())}


def _name(path: Path) -> str:
    return path.name if path == BASE else f"overlays/{path.name}"


def partition_count(target: Path) -> int:
    """How many partitions a target's components split it into (0: one Metacontroller installed separately)."""
    components = yaml.safe_load((target / "kustomization.yaml").read_text()).get("components", [])
    found = [int(m.group(1)) for c in components if (m := re.search(r"partitions-(\d+)$", c))]
    assert len(found) <= 1, f"{target}: more than one partitions component"
    return found[0] if found else 0


# --- rendering -------------------------------------------------------------


def env(objs: list[Obj]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container(objs).get("env", [])}


def controllers(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["kind"] == "CompositeController"]


def overlay(name: str) -> list[Obj]:
    return render(DEPLOY / "overlays" / name)


targets = pytest.mark.parametrize("target", TARGETS, ids=_name)


# --- a strict reader of CRD schemas ------------------------------------------


# --- every target ------------------------------------------------------------


@targets
def test_renders_exactly_the_controller_kinds(target: Path) -> None:
    count = partition_count(target)
    expected = EXPECTED_KINDS.copy()
    if count:
        expected.update({kind: n * count for kind, n in PER_PARTITION.items()})
        expected.update({"CompositeController": -1, "ClusterRole": 1})
    assert Counter(o["kind"] for o in render(target)) == expected


def test_an_overlay_splits_into_partitions() -> None:
    assert any(partition_count(path) >= 2 for path in OVERLAYS)


def test_every_overlay_builds_on_the_base() -> None:
    assert {p.name for p in OVERLAYS} >= {"dev", "production"}
    for path in OVERLAYS:
        resources = yaml.safe_load((path / "kustomization.yaml").read_text())["resources"]
        # directly, or through one other overlay that does
        assert "../../base" in resources or {f"../{p.name}" for p in OVERLAYS} & set(resources), path.name


@targets
def test_every_object_is_labelled_part_of_sharddb(target: Path) -> None:
    for obj in render(target):
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "sharddb", obj["metadata"]["name"]


@targets
def test_namespaced_objects_live_in_the_hook_namespace(target: Path) -> None:
    cluster_scoped = {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "CompositeController",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for obj in render(target):
        expected = None if obj["kind"] in cluster_scoped else HOOK_NAMESPACE
        assert obj["metadata"].get("namespace") == expected, f"{obj['kind']} {obj['metadata']['name']}"


@targets
def test_builtin_objects_pass_the_kubernetes_schema_strictly(target: Path) -> None:
    for obj in render(target):
        if obj["kind"] != "CompositeController":
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


@targets
def test_hook_pods_meet_the_restricted_pod_security_standard(target: Path) -> None:
    objs = render(target)
    pod = pod_spec(objs)
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(field)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert {key for volume in pod.get("volumes", []) for key in volume if key != "name"} <= RESTRICTED_VOLUME_TYPES
    for each in pod["containers"] + pod.get("initContainers", []):
        context = each["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"]
        assert not context["capabilities"].get("add")
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == 65532
        assert context["readOnlyRootFilesystem"] is True
        assert context["seccompProfile"]["type"] == "RuntimeDefault"
        assert not context.get("privileged")
        assert not any("hostPort" in port for port in each.get("ports", []))


@targets
def test_hook_pods_hold_no_kubernetes_api_token(target: Path) -> None:
    objs = render(target)
    assert pod_spec(objs)["automountServiceAccountToken"] is False
    assert one(objs, "ServiceAccount", HOOK_SERVICE)["automountServiceAccountToken"] is False


@targets
def test_hook_namespace_enforces_restricted_pod_security(target: Path) -> None:
    labels = one(render(target), "Namespace", HOOK_NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


@targets
def test_hook_container_runs_python_m_hooks_on_all_interfaces(target: Path) -> None:
    objs = render(target)
    assert container(objs)["command"] == ["python", "-m", "hooks"]
    assert env(objs)["SHARDDB_HOST"] == "0.0.0.0"
    ports = {port["name"]: port["containerPort"] for port in container(objs)["ports"]}
    assert ports == {"hooks": int(env(objs)["SHARDDB_PORT"])}


@targets
def test_hook_settings_are_ones_the_service_starts_with(target: Path) -> None:
    settings = Settings.from_env(env(render(target)))
    assert (settings.host, settings.port) == ("0.0.0.0", 8080)


@targets
def test_grace_period_outlasts_the_services_own_drain(target: Path) -> None:
    objs = render(target)
    settings = Settings.from_env(env(objs))
    drain = settings.shutdown_delay_seconds + settings.graceful_timeout_seconds
    assert pod_spec(objs)["terminationGracePeriodSeconds"] > drain


@targets
def test_probes_use_the_apps_health_routes(target: Path) -> None:
    each = container(render(target))
    assert each["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert each["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert each["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"/healthz", "/readyz"} <= routes("GET")


@targets
def test_hook_container_has_bounded_resources(target: Path) -> None:
    resources = container(render(target))["resources"]
    for kind in ("cpu", "memory"):
        assert kind in resources["requests"]
        assert kind in resources["limits"]


@targets
def test_child_resources_are_the_kind_table(target: Path) -> None:
    for controller in controllers(render(target)):
        children = controller["spec"]["childResources"]
        strategies = {(c["apiVersion"], c["resource"]): c["updateStrategy"]["method"] for c in children}
        assert strategies == {(kind.api_version, kind.plural): kind.update for kind in kinds.CHILDREN}


@targets
def test_composite_controllers_watch_sharddbs_with_a_generated_selector(target: Path) -> None:
    for controller in controllers(render(target)):
        spec = controller["spec"]
        parent = {key: spec["parentResource"][key] for key in ("apiVersion", "resource")}
        assert parent == {"apiVersion": "mygroup.example.com/v1alpha1", "resource": "sharddbs"}
        assert spec["generateSelector"] is True
        assert spec["resyncPeriodSeconds"] > 0


def test_a_single_metacontroller_install_serves_every_sharddb() -> None:
    for target in TARGETS:
        if not partition_count(target):
            parent = one(render(target), "CompositeController", "sharddb")["spec"]["parentResource"]
            assert "labelSelector" not in parent


@targets
def test_hook_paths_are_post_routes_of_the_app(target: Path) -> None:
    for name, webhook in webhooks(render(target)).items():
        assert urlparse(webhook["url"]).path == f"/{name}"
        assert f"/{name}" in routes("POST")


@targets
def test_hook_urls_reach_the_hook_service_port(target: Path) -> None:
    objs = render(target)
    service = one(objs, "Service", HOOK_SERVICE)
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "hooks"
    assert service["spec"]["selector"].items() <= pod_template_labels(objs).items()
    for webhook in webhooks(objs).values():
        url = urlparse(webhook["url"])
        assert url.hostname in {f"{HOOK_SERVICE}.{HOOK_NAMESPACE}", f"{HOOK_SERVICE}.{HOOK_NAMESPACE}.svc"}
        assert (url.port or {"http": 80, "https": 443}[url.scheme]) == port["port"]


def pod_template_labels(objs: list[Obj]) -> dict[str, str]:
    labels: dict[str, str] = one(objs, "Deployment", HOOK_SERVICE)["spec"]["template"]["metadata"]["labels"]
    return labels


@targets
def test_every_hook_has_a_timeout_and_etag_caching(target: Path) -> None:
    for webhook in webhooks(render(target)).values():
        assert re.fullmatch(r"\d+s", webhook["timeout"])
        assert webhook["etag"]["enabled"] is True
        assert webhook["etag"]["cacheTimeoutSeconds"] > 0
        assert webhook["etag"]["cacheCleanupSeconds"] > 0


@targets
def test_network_policy_admits_only_metacontroller_to_the_hook_port(target: Path) -> None:
    objs = render(target)
    policy = one(objs, "NetworkPolicy", HOOK_SERVICE)["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_template_labels(objs).items()
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    (rule,) = policy["ingress"]
    release, *partitioned = rule["from"]
    assert release == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "metacontroller"}}}
    instances = [o for o in objs if o["kind"] == "StatefulSet"]
    assert len(partitioned) == (1 if instances else 0)
    for source in partitioned:
        assert list(source) == ["podSelector"]
        for instance in instances:
            pod_labels = instance["spec"]["template"]["metadata"]["labels"]
            assert source["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert rule["ports"] == [{"port": "hooks", "protocol": "TCP"}]
    assert policy["egress"] == []


@targets
def test_disruption_budget_keeps_a_replica_yet_lets_a_drain_proceed(target: Path) -> None:
    objs = render(target)
    replicas = one(objs, "Deployment", HOOK_SERVICE)["spec"]["replicas"]
    budget = one(objs, "PodDisruptionBudget", HOOK_SERVICE)["spec"]
    assert budget["selector"]["matchLabels"].items() <= pod_template_labels(objs).items()
    allowed = budget["maxUnavailable"] if "maxUnavailable" in budget else replicas - budget["minAvailable"]
    assert allowed >= 1
    if replicas > 1:
        assert budget["minAvailable"] >= 1


@targets
def test_builtin_roles_aggregate_sharddb_access(target: Path) -> None:
    objs = render(target)
    view = one(objs, "ClusterRole", "sharddb-view")
    edit = one(objs, "ClusterRole", "sharddb-edit")
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert {verb for rule in view["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert {"create", "update", "patch", "delete"} <= set(edit["rules"][0]["verbs"])
    assert all(rule["apiGroups"] == ["mygroup.example.com"] for rule in view["rules"] + edit["rules"])


# --- the two environments ----------------------------------------------------


def test_dev_speaks_plain_http_without_credentials() -> None:
    objs = overlay("dev")
    for webhook in webhooks(objs).values():
        assert urlparse(webhook["url"]).scheme == "http"
        assert "caBundle" not in webhook
        assert "authorization" not in webhook
    assert not any(key.startswith(("SHARDDB_TLS_", "SHARDDB_AUTH_")) for key in env(objs))


def test_dev_runs_one_debug_replica_of_the_dev_image() -> None:
    objs = overlay("dev")
    assert one(objs, "Deployment", HOOK_SERVICE)["spec"]["replicas"] == 1
    assert env(objs)["SHARDDB_LOG_LEVEL"] == "DEBUG"
    assert container(objs)["image"].endswith(":dev")


def test_production_calls_the_hooks_over_https_with_a_bearer_token() -> None:
    for webhook in webhooks(overlay("production")).values():
        assert urlparse(webhook["url"]).scheme == "https"
        assert webhook["caBundle"]["secretRef"] == {
            "name": "sharddb-hooks-tls",
            "namespace": HOOK_NAMESPACE,
            "key": "ca.crt",
        }
        assert webhook["authorization"]["type"] == "Bearer"
        assert webhook["authorization"]["secretRef"] == {
            "name": "sharddb-hooks-token",
            "namespace": HOOK_NAMESPACE,
            "key": "token",
        }


def mounted_secret(objs: list[Obj], path: str) -> tuple[str, str, bool]:
    """The (Secret name, key, optional) a file path in the hook container comes from, checking it is read-only."""
    volumes = {v["name"]: v for v in pod_spec(objs)["volumes"]}
    for mount in container(objs)["volumeMounts"]:
        prefix = mount["mountPath"].rstrip("/") + "/"
        if path.startswith(prefix):
            assert mount["readOnly"] is True, f"{mount['mountPath']} must be read-only"
            volume = volumes[mount["name"]]
            sources = [s["secret"] for s in volume["projected"]["sources"]] if "projected" in volume else []
            for secret in sources or [{**volume["secret"], "name": volume["secret"]["secretName"]}]:
                for item in secret["items"]:
                    if item["path"] == path.removeprefix(prefix):
                        return secret["name"], item["key"], bool(secret.get("optional"))
    raise AssertionError(f"{path} is not mounted")


def mounted_file(objs: list[Obj], path: str) -> tuple[str, str]:
    """The (Secret name, key) a required file comes from."""
    name, key, optional = mounted_secret(objs, path)
    assert not optional, f"{path} must be required: without it the hooks must not start"
    return name, key


def test_production_hooks_read_the_same_token_metacontroller_sends() -> None:
    objs = overlay("production")
    sent = webhooks(objs)["sync"]["authorization"]["secretRef"]
    assert mounted_file(objs, env(objs)["SHARDDB_AUTH_TOKEN_FILE"]) == (sent["name"], sent["key"])
    assert env(objs)["SHARDDB_METRICS_AUTH"] == "true"


def test_production_hooks_accept_the_previous_token_from_an_optional_key_of_the_same_secret() -> None:
    """A rotation puts the old token under previous-token until every Metacontroller sends the new one."""
    objs = overlay("production")
    sent = webhooks(objs)["sync"]["authorization"]["secretRef"]
    previous = env(objs)["SHARDDB_AUTH_PREVIOUS_TOKEN_FILE"]
    assert mounted_secret(objs, previous) == (sent["name"], "previous-token", True)


def test_production_hooks_serve_the_certificate_metacontroller_trusts() -> None:
    objs = overlay("production")
    trusted = webhooks(objs)["sync"]["caBundle"]["secretRef"]["name"]
    assert mounted_file(objs, env(objs)["SHARDDB_TLS_CERT_FILE"]) == (trusted, "tls.crt")
    assert mounted_file(objs, env(objs)["SHARDDB_TLS_KEY_FILE"]) == (trusted, "tls.key")
    each = container(objs)
    assert {each[p]["httpGet"].get("scheme") for p in ("startupProbe", "livenessProbe", "readinessProbe")} == {"HTTPS"}


def test_production_secrets_are_mounted_whole_so_rotation_reaches_the_pod() -> None:
    mounts = container(overlay("production"))["volumeMounts"]
    assert all("subPath" not in mount for mount in mounts)


def test_production_spreads_replicas_across_nodes() -> None:
    objs = overlay("production")
    deployment = one(objs, "Deployment", HOOK_SERVICE)
    assert deployment["spec"]["replicas"] >= 2
    (term,) = pod_spec(objs)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= pod_template_labels(objs).items()
    # Required anti-affinity leaves no node for a surge pod, so a rollout must not need one.
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0


def test_production_runs_a_pinned_image_with_info_logs() -> None:
    objs = overlay("production")
    image = container(objs)["image"]
    assert re.search(r":\d+\.\d+\.\d+$|@sha256:[0-9a-f]{64}$", image), image
    assert env(objs)["SHARDDB_LOG_LEVEL"] == "INFO"


def test_production_asks_for_more_than_dev() -> None:
    def memory_mi(objs: list[Obj]) -> int:
        return int(container(objs)["resources"]["requests"]["memory"].removesuffix("Mi"))

    assert memory_mi(overlay("production")) > memory_mi(overlay("dev"))


def test_cert_manager_component_issues_what_production_mounts(tmp_path: Path) -> None:
    relative = Path(os.path.relpath(DEPLOY, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "overlays" / "production")],
                "components": [str(relative / "components" / "cert-manager")],
            }
        )
    )
    objs = render(tmp_path)
    serving = one(objs, "Certificate", HOOK_SERVICE)["spec"]
    assert serving["secretName"] == webhooks(objs)["sync"]["caBundle"]["secretRef"]["name"]
    assert {urlparse(w["url"]).hostname for w in webhooks(objs).values()} <= set(serving["dnsNames"])
    issuer = one(objs, "Issuer", serving["issuerRef"]["name"])
    assert one(objs, "Certificate", "sharddb-hooks-ca")["spec"]["secretName"] == issuer["spec"]["ca"]["secretName"]


# --- the CRD against what the hooks write -----------------------------------------


def statuses_through_a_lifetime() -> Iterator[Obj]:
    """Every status the sync and finalize hooks write while one ShardDB is born, grows and is deleted."""
    world = World()

    def step(finalize: bool = False) -> Obj:
        body = json.dumps(world.request()).encode()
        answer = handler.sync(body, finalize=finalize, now=at("2026-01-01T00:00:00Z")).body
        world.apply(answer)
        status: Obj = world.parent["status"]  # as stored, with Metacontroller's observedGeneration
        return status

    yield step()
    world.run_statefulset(ready=1)
    yield step()
    world.run_statefulset()
    yield step()
    world.finish_job(3)
    yield step()
    world.run_cache()
    yield step()
    world.delete()
    yield step(finalize=True)
    world.remove_pods("cache")
    world.run_cache()
    yield step(finalize=True)
    world.run_statefulset()  # scaled to zero: the shard pods drain and go
    yield step(finalize=True)


def test_crd_status_schema_keeps_every_field_the_hooks_write() -> None:
    schema = crd_schema(sharddb_crd(), "v1alpha1")["properties"]["status"]
    statuses = list(statuses_through_a_lifetime())
    assert {s["phase"] for s in statuses} >= {"Provisioning", "Seeding", "Available", "Finalized"}
    assert all(s["conditions"] for s in statuses)
    for status in statuses:
        assert schema_errors(status, schema, ".status") == [], status["phase"]


def test_crd_serves_the_version_the_controller_watches() -> None:
    crd = sharddb_crd()
    assert crd["spec"]["group"] == "mygroup.example.com"
    assert crd["spec"]["names"]["plural"] == "sharddbs"
    served = [v for v in crd["spec"]["versions"] if v["served"]]
    assert [v["name"] for v in served if v["storage"]] == ["v1alpha1"]
    assert served[0]["subresources"]["status"] == {}


# --- examples ----------------------------------------------------------------------


def examples() -> list[Obj]:
    """The ShardDBs in ``examples/`` (the files also ship the Secrets they reference)."""
    docs = [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]
    return [doc for doc in docs if doc.get("kind") == "ShardDB"]


def test_examples_ship_only_sharddbs_and_their_secrets() -> None:
    docs = [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert {doc["kind"] for doc in docs} == {"ShardDB", "Secret"}


def test_examples_are_sharddbs_the_hooks_accept() -> None:
    assert len(examples()) >= 2
    for sample in examples():
        assert (sample["apiVersion"], sample["kind"]) == ("mygroup.example.com/v1alpha1", "ShardDB")
        ShardDBSpec.model_validate(sample["spec"])


def test_examples_pass_the_crd_schema() -> None:
    schema = crd_schema(sharddb_crd(), "v1alpha1")
    for sample in examples():
        assert schema_errors(sample, schema) == [], sample["metadata"]["name"]


def test_demo_sample_is_three_postgres_shards_behind_two_redis_caches() -> None:
    demo = one(examples(), "ShardDB", "demo")
    spec = ShardDBSpec.model_validate(demo["spec"])
    assert (spec.shards, spec.db_image, spec.cache.image, spec.cache.replicas) == (3, "postgres:16", "redis:7", 2)


def test_demo_sample_explains_every_optional_field() -> None:
    text = (REPO / "examples" / "sharddb.yaml").read_text()
    optional = [
        "replicas",
        "flushCommand",
        "flushGracePeriodSeconds",
        "storage",
        "size",
        "storageClassName",
        "seedCommand",
        "drainCommand",
        "drainGracePeriodSeconds",
        "podStartGraceSeconds",
    ]
    for field in optional:
        line = next(n for n, row in enumerate(text.splitlines()) if re.match(rf"\s*#?\s*{field}:", row))
        assert text.splitlines()[line - 1].strip().startswith("#"), f"{field} has no comment above it"


# --- the image recipe ------------------------------------------------------------------


def dockerfile() -> list[str]:
    """Instructions, with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def instructions(keyword: str) -> list[str]:
    return [line.split(None, 1)[1] for line in dockerfile() if line.split(None, 1)[0] == keyword]


def test_image_base_is_pinned_to_a_python_311_patch_release() -> None:
    (default,) = [arg for arg in instructions("ARG") if arg.startswith("PYTHON_IMAGE=")]
    pinned = r"PYTHON_IMAGE=docker\.io/library/python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?"
    assert re.fullmatch(pinned, default)
    assert [line.split()[0] for line in instructions("FROM")] == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]


def test_image_runs_python_m_hooks_as_the_unprivileged_user() -> None:
    assert instructions("USER") == ["65532:65532"]
    assert json.loads(instructions("ENTRYPOINT")[-1]) == ["python", "-m", "hooks"]
    user_at = dockerfile().index("USER 65532:65532")
    assert all(not line.startswith(("RUN", "COPY")) for line in dockerfile()[user_at:])


def test_image_listens_on_all_interfaces_at_8080() -> None:
    settings = " ".join(instructions("ENV"))
    assert "SHARDDB_HOST=0.0.0.0" in settings
    assert "SHARDDB_PORT=8080" in settings
    assert "PYTHONUNBUFFERED=1" in settings
    assert "PYTHONDONTWRITEBYTECODE=1" in settings
    assert instructions("EXPOSE") == ["8080"]


def test_image_installs_pinned_requirements_without_a_cache() -> None:
    (install,) = [run for run in instructions("RUN") if "pip install" in run]
    assert "--no-cache-dir" in install
    assert "-r /tmp/requirements.txt" in install
    assert all(re.fullmatch(r"[\w\[\].-]+==[\w.]+", line) for line in requirements())


def test_image_build_trusts_a_ca_bundle_only_as_a_secret_of_its_pip_step() -> None:
    (install,) = [run for run in instructions("RUN") if "pip install" in run]
    assert install.startswith("--mount=type=secret,id=pip-ca,required=false ")
    assert "PIP_CERT=/run/secrets/pip-ca" in install
    assert not [run for run in instructions("RUN") if "pip-ca" in run and run != install]
    assert all("pip-ca" not in line for line in instructions("COPY") + instructions("ENV") + instructions("ARG"))


def test_image_recipe_needs_no_frontend_image_from_a_registry() -> None:
    assert not (REPO / "Dockerfile").read_text().startswith("# syntax="), "the builder's own frontend parses it"


def requirements() -> list[str]:
    text = (REPO / "requirements.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_image_copies_only_the_hooks_package_and_requirements() -> None:
    sources = {line.split()[-2] for line in instructions("COPY") if not line.startswith("--from")}
    assert sources == {"requirements.txt", "hooks/"}
    lines = (REPO / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert patterns[:3] == ["*", "!requirements.txt", "!hooks/"]


def test_image_healthcheck_asks_healthz_with_python() -> None:
    (check,) = instructions("HEALTHCHECK")
    command = json.loads(check.split("CMD", 1)[1])
    assert command[:2] == ["python", "-c"]
    assert "urllib.request" in command[2]
    assert "/healthz" in command[2]
