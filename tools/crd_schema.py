"""The CRD schemas of the Kubernetes fields a ShardDB hands on, from a real API server (``make crd``).

Reads the core/v1 and networking/v1 OpenAPI v3 documents of a kube-apiserver and inlines each field
as a structural CRD schema: references resolved; only keywords a CRD may hold
kept (patch strategies, unions and defaults dropped, except the default of a
list-map key, which a CRD needs); quantities and int-or-strings in the shape
CRDs use; descriptions cut to their first sentence, so the CRD stays small.

The result is written twice: between the ``# >>> make crd`` markers of
crds/sharddb.yaml, and to hooks/corev1.json, which the hook validates with.
Run ``python -m tools.crd_schema`` to start the test API server and regenerate
both; the cluster tests check the committed files against the running server.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

Obj = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
CRD_FILE = ROOT / "crds" / "sharddb.yaml"
HOOK_FILE = ROOT / "hooks" / "corev1.json"
# core/v1 (what a ShardDB hands to its pods), then networking/v1 (who may reach its members).
OPENAPI_PATHS = ("/openapi/v3/api/v1", "/openapi/v3/apis/networking.k8s.io/v1")

POD_SPEC = "io.k8s.api.core.v1.PodSpec"
CONTAINER = "io.k8s.api.core.v1.Container"
INGRESS_RULE = "io.k8s.api.networking.v1.NetworkPolicyIngressRule"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# The pattern the API server's own CRD tooling gives a resource.Quantity.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
INT_OR_STRING_SCHEMA: Obj = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}

# Keywords of the OpenAPI document that a structural CRD schema keeps as they are.
KEPT = (
    "type",
    "format",
    "enum",
    "required",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)
DROPPED_FORMATS = frozenset({"int-or-string"})
# Keys in the order crds/sharddb.yaml writes its own fields: what a value is, then what it holds.
ORDER = (
    "type",
    "anyOf",
    "x-kubernetes-int-or-string",
    "format",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "default",
    "description",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "properties",
    "additionalProperties",
    "items",
)

BEGIN = re.compile(r"^(?P<indent> *)# >>> make crd: (?P<block>spec|pod|replication) fields\b.*$")
END = re.compile(r"^ *# <<< make crd$")


@dataclass(frozen=True)
class Source:
    """Where one of our fields comes from: a property of a Kubernetes type, with our own description."""

    schema: str
    field: str
    description: str
    # Keywords of ours, each at a dotted path into the field's schema ("" is the field itself): rules the API
    # server checks only in the object the field is handed to (a NetworkPolicy's), so a bad value is refused when
    # the ShardDB is applied, and the bounds that keep those rules' cost within the API server's budget.
    ours: tuple[tuple[str, str, Any], ...] = ()


SPEC_FIELDS: dict[str, Source] = {
    "imagePullSecrets": Source(
        POD_SPEC, "imagePullSecrets", "Secrets to pull the images of the shards, the seed Job and the cache with."
    ),
}
POD_FIELDS: dict[str, Source] = {
    "resources": Source(CONTAINER, "resources", "Compute resources of the container."),
    "env": Source(CONTAINER, "env", "Environment variables of the container."),
    "envFrom": Source(CONTAINER, "envFrom", "Sources of environment variables of the container."),
    "nodeSelector": Source(POD_SPEC, "nodeSelector", "Node labels a pod must match to be scheduled."),
    "tolerations": Source(POD_SPEC, "tolerations", "Taints the pods tolerate."),
    "affinity": Source(POD_SPEC, "affinity", "Scheduling constraints of the pods; replaces the default spread."),
    "topologySpreadConstraints": Source(
        POD_SPEC, "topologySpreadConstraints", "How the pods spread over topology domains; replaces the default spread."
    ),
    "podSecurityContext": Source(POD_SPEC, "securityContext", "Security settings of the pods."),
    "securityContext": Source(CONTAINER, "securityContext", "Security settings of the container."),
}
# What a NetworkPolicy's validation refuses in a peer, refused in the ShardDB instead: the API server's
# CIDR functions (Kubernetes 1.31+) check each address block and its exceptions (strictly within it).
PEER_RULES: list[Obj] = [
    {
        "rule": "self.all(p, has(p.ipBlock) != (has(p.podSelector) || has(p.namespaceSelector)))",
        "message": "spec.replication.clients: each peer is an ipBlock, or a podSelector and/or a namespaceSelector",
    },
    {
        "rule": "self.all(p, !has(p.ipBlock) || isCIDR(p.ipBlock.cidr))",
        "message": "spec.replication.clients: each ipBlock.cidr must be a CIDR, such as 10.20.0.0/16 or fd00::/64",
    },
    {
        "rule": (
            "self.all(p, !has(p.ipBlock) || !has(p.ipBlock.except) || !isCIDR(p.ipBlock.cidr) ||"
            " p.ipBlock.except.all(e, isCIDR(e) && cidr(p.ipBlock.cidr).containsCIDR(e) &&"
            " cidr(e).prefixLength() > cidr(p.ipBlock.cidr).prefixLength()))"
        ),
        "message": "spec.replication.clients: each ipBlock.except must be a CIDR strictly within its ipBlock.cidr",
    },
]
# Peers a person writes by hand; the bound also keeps the rules' cost within the API server's budget.
MAX_PEERS = 32
MAX_CIDR = len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128")
REPLICATION_FIELDS: dict[str, Source] = {
    "clients": Source(
        INGRESS_RULE,
        "from",
        "With 2 or 3 members, who may reach their PostgreSQL port besides them, the seed Job and the cache;"
        " unset, every source may",
        (
            ("", "maxItems", MAX_PEERS),
            ("", "x-kubernetes-validations", PEER_RULES),
            ("items.properties.ipBlock.properties.cidr", "maxLength", MAX_CIDR),
            ("items.properties.ipBlock.properties.except", "maxItems", MAX_PEERS),
            ("items.properties.ipBlock.properties.except.items", "maxLength", MAX_CIDR),
        ),
    ),
}
BLOCKS = {"spec": SPEC_FIELDS, "pod": POD_FIELDS, "replication": REPLICATION_FIELDS}


class GenerateError(ValueError):
    """The OpenAPI document or the CRD file is not what the generator expects; the message says how."""


def api_of(schema: str) -> str:
    """``core/v1`` of ``io.k8s.api.core.v1.Container``: the group and version a reader looks the type up by."""
    group, version = schema.split(".")[-3:-1]
    return f"{group}/{version}"


def first_sentence(text: str) -> str:
    """The first sentence of the first paragraph: enough for ``kubectl explain``, a fraction of the bytes."""
    paragraph = text.strip().split("\n", 1)[0].strip()
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)[.!?])(\s|$)", paragraph)
    return match[1] if match else paragraph


def _ref(node: Obj) -> str | None:
    """The schema a node refers to, directly or as the single member of ``allOf``."""
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[1]
    refs = node.get("allOf", [])
    if len(refs) == 1 and "$ref" in refs[0]:
        return str(refs[0]["$ref"]).rsplit("/", 1)[1]
    return None


@dataclass(frozen=True)
class Converter:
    """Turns nodes of one OpenAPI document into structural CRD schemas."""

    schemas: Obj

    def field(self, source: Source) -> Obj:
        try:
            node = self.schemas[source.schema]["properties"][source.field]
        except KeyError:
            raise GenerateError(f"the OpenAPI document has no {source.schema}.{source.field}") from None
        type_name = (_ref(node) or _ref(node.get("items", {})) or "").rsplit(".", 1)[-1]
        converted = self.node({k: v for k, v in node.items() if k != "default"}, ())
        converted.pop("description", None)
        kind = f" ({api_of(source.schema)} {type_name})" if type_name else ""
        out = {"description": source.description.removesuffix(".") + kind + ".", **converted}
        for path, keyword, value in source.ours:
            node = out
            for step in filter(None, path.split(".")):
                node = node[step]
            node[keyword] = value
        return out

    def node(self, node: Obj, stack: tuple[str, ...], map_keys: tuple[str, ...] = ()) -> Obj:
        """One node; ``map_keys`` are the list-map keys when it is the item of such a list."""
        ref = _ref(node)
        if ref is not None:
            return self._referenced(ref, node, stack, map_keys)
        out: Obj = self._described(node)
        out.update({key: node[key] for key in KEPT if key in node})
        if out.get("format") in DROPPED_FORMATS:
            del out["format"]
        if "properties" in node:
            defaulted = set(map_keys) - set(node.get("required", ()))
            out["properties"] = {
                name: self._property(name, child, stack, defaulted) for name, child in node["properties"].items()
            }
        if isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = self.node(node["additionalProperties"], stack)
        if "items" in node:
            out["items"] = self.node(node["items"], stack, tuple(node.get("x-kubernetes-list-map-keys", ())))
        return out

    def _property(self, name: str, node: Obj, stack: tuple[str, ...], defaulted: set[str]) -> Obj:
        """A list-map key that is not required keeps its default: the API server insists on one of the two."""
        out = self.node(node, stack)
        if name in defaulted:
            if "default" not in node:
                raise GenerateError(f"{' -> '.join(stack)}: list-map key {name} is neither required nor defaulted")
            out["default"] = node["default"]
        return out

    def _referenced(self, ref: str, node: Obj, stack: tuple[str, ...], map_keys: tuple[str, ...]) -> Obj:
        own = {k: v for k, v in node.items() if k not in ("$ref", "allOf", "default")}
        if ref == QUANTITY:
            return {**self._described(own), **INT_OR_STRING_SCHEMA, "pattern": QUANTITY_PATTERN}
        if ref == INT_OR_STRING:
            return {**self._described(own), **INT_OR_STRING_SCHEMA}
        if ref in stack:
            raise GenerateError(f"{' -> '.join((*stack, ref))}: a recursive type cannot be inlined")
        if ref not in self.schemas:
            raise GenerateError(f"the OpenAPI document has no {ref}")
        return self.node({**self.schemas[ref], **own}, (*stack, ref), map_keys)

    @staticmethod
    def _described(node: Obj) -> Obj:
        description = first_sentence(node.get("description", ""))
        return {"description": description} if description else {}


@dataclass(frozen=True)
class Generated:
    """Both outputs of one run: the CRD file's text and the hook's schema file's text."""

    crd: str
    hook: str


def kubernetes_version(version: Obj) -> str:
    """``major.minor`` from /version (a server built from Go modules has no meaningful gitVersion)."""
    return f"{version['major']}.{str(version['minor']).rstrip('+')}"


def _ordered(node: Obj) -> Obj:
    """``node`` with its keys in ``ORDER``, all the way down."""
    out = {key: node[key] for key in ORDER if key in node}
    out.update({key: value for key, value in node.items() if key not in out})
    if "properties" in out:
        out["properties"] = {name: _ordered(child) for name, child in out["properties"].items()}
    for key in ("additionalProperties", "items"):
        if isinstance(out.get(key), dict):
            out[key] = _ordered(out[key])
    return out


def fields(openapi: Obj) -> dict[str, Obj]:
    """Every generated field's schema, by our field name."""
    converter = Converter(openapi["components"]["schemas"])
    return {name: _ordered(converter.field(source)) for block in BLOCKS.values() for name, source in block.items()}


class _Dumper(yaml.SafeDumper):
    """Every node written out in full: a CRD file should not make its reader chase YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002
        return True


def _yaml_block(schemas: Obj, indent: str) -> list[str]:
    text = yaml.dump(schemas, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True)
    return [f"{indent}{line}" if line else line for line in text.splitlines()]


def merge(crd_text: str, schemas: dict[str, Obj], version: str) -> str:
    """``crd_text`` with every marked block replaced by the schemas of its fields."""
    lines = crd_text.splitlines()
    out: list[str] = []
    index = 0
    found: set[str] = set()
    while index < len(lines):
        begin = BEGIN.match(lines[index])
        if begin is None:
            out.append(lines[index])
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if END.match(lines[i])), None)
        if end is None:
            raise GenerateError(f"{CRD_FILE.name}:{index + 1}: '# >>> make crd' without a '# <<< make crd'")
        indent, block = begin["indent"], begin["block"]
        found.add(block)
        out.append(f"{indent}# >>> make crd: {block} fields, from Kubernetes {version}; generated, do not edit")
        out += _yaml_block({name: schemas[name] for name in BLOCKS[block]}, indent)
        out.append(f"{indent}# <<< make crd")
        index = end + 1
    missing = set(BLOCKS) - found
    if missing:
        raise GenerateError(f"{CRD_FILE.name} has no '# >>> make crd: {sorted(missing)[0]} fields' marker")
    return "\n".join(out) + "\n"


def generate(openapi: Obj, version: Obj, crd_text: str) -> Generated:
    """The CRD file and the hook's schema file for this API server's OpenAPI document and version."""
    schemas = fields(openapi)
    release = kubernetes_version(version)
    hook = {"kubernetesVersion": release, "fields": schemas}
    return Generated(crd=merge(crd_text, schemas, release), hook=json.dumps(hook, indent=1) + "\n")


def fetch(client: httpx.Client) -> tuple[Obj, Obj]:
    """The OpenAPI v3 documents (their schemas as one) and /version of the server ``client`` talks to.

    A schema both documents hold (``meta/v1``'s) is the same in each: the API server renders it once.
    """
    schemas: Obj = {}
    for path in OPENAPI_PATHS:
        document = client.get(path)
        document.raise_for_status()
        schemas.update(document.json()["components"]["schemas"])
    version = client.get("/version")
    version.raise_for_status()
    return {"components": {"schemas": schemas}}, version.json()


def main() -> int:
    """Start the pinned test API server, regenerate both files from it, stop it."""
    from testbed.real.controlplane import ControlPlane, ControlPlaneError, build_binaries

    try:
        plane = ControlPlane(build_binaries())
        plane.start()
    except ControlPlaneError as error:
        print(f"crd_schema: {error}", file=sys.stderr)
        return 1
    try:
        with plane.client(timeout=30.0) as client:
            openapi, version = fetch(client)
    finally:
        plane.stop()
    try:
        generated = generate(openapi, version, CRD_FILE.read_text())
    except GenerateError as error:
        print(f"crd_schema: {error}", file=sys.stderr)
        return 1
    CRD_FILE.write_text(generated.crd)
    HOOK_FILE.write_text(generated.hook)
    written = f"{CRD_FILE.relative_to(ROOT)} and {HOOK_FILE.relative_to(ROOT)}"
    print(f"crd_schema: wrote {written} from Kubernetes {kubernetes_version(version)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
