"""What the cluster tests ask of the test API server: paths for the kinds a ShardDB involves, and requests
that hand back the raw response so a test can assert on refusals.

The connection is ``testbed.real.apiclient``'s and kubectl is ``testbed.real.kubectl``'s; this adds
only the tests' vocabulary (kinds to paths, strict field validation, merge patches).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from hooks import kinds
from testbed.real.apiclient import ApiClient
from testbed.real.kubectl import Kubectl

Obj = dict[str, Any]

# kind -> (API path prefix, plural) for every kind the tests create.
RESOURCES: dict[str, tuple[str, str]] = {
    "Namespace": ("/api/v1", "namespaces"),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"),
    "PodTemplate": ("/api/v1", "podtemplates"),
    "HorizontalPodAutoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers"),
    "ShardDB": ("/apis/mygroup.example.com/v1alpha1", "sharddbs"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    **{kind.kind: (kind.api_prefix, kind.plural) for kind in (*kinds.CHILDREN, *kinds.RELATED)},
}
CLUSTER_SCOPED = frozenset({"Namespace", "CustomResourceDefinition"})
STRICT = {"fieldValidation": "Strict"}


def collection(kind: str, namespace: str | None = None) -> str:
    prefix, plural = RESOURCES[kind]
    if kind in CLUSTER_SCOPED or namespace is None:
        return f"{prefix}/{plural}"
    return f"{prefix}/namespaces/{namespace}/{plural}"


def path(kind: str, name: str, namespace: str | None = None) -> str:
    return f"{collection(kind, namespace)}/{name}"


def error_message(response: httpx.Response) -> str:
    """The API server's Status message (what kubectl prints after "error:")."""
    try:
        body = response.json()
    except ValueError:
        return response.text
    return str(body.get("message", response.text))


@dataclass
class Kube:
    """REST and kubectl against one API server, as its admin."""

    url: str
    token: str
    ca_file: Path
    kubeconfig: Path

    def __post_init__(self) -> None:
        self.http = ApiClient(self.url, self.token, self.ca_file, timeout=30.0)
        self._kubectl = Kubectl(self.kubeconfig)

    def close(self) -> None:
        self.http.close()

    # --- REST -------------------------------------------------------------

    def create(self, obj: Obj, namespace: str | None = None) -> httpx.Response:
        """POST with strict field validation, as a careful client would."""
        ns = namespace or obj.get("metadata", {}).get("namespace")
        return self.http.post(collection(obj["kind"], ns), json=obj, params=STRICT)

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        response = self.http.get(path(kind, name, namespace))
        response.raise_for_status()
        result: Obj = response.json()
        return result

    def exists(self, kind: str, name: str, namespace: str | None = None) -> bool:
        return self.http.get(path(kind, name, namespace)).status_code == 200

    def put(self, obj: Obj, subresource: str = "") -> httpx.Response:
        meta = obj["metadata"]
        url = path(obj["kind"], meta["name"], meta.get("namespace")) + (f"/{subresource}" if subresource else "")
        return self.http.put(url, json=obj, params=STRICT)

    def merge_patch(self, kind: str, name: str, namespace: str, patch: Obj, subresource: str = "") -> httpx.Response:
        url = path(kind, name, namespace) + (f"/{subresource}" if subresource else "")
        return self.http.patch(
            url,
            content=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
            params=STRICT,
        )

    # --- kubectl -----------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server; the caller checks ``returncode``."""
        return self._kubectl.run(*args, stdin=stdin)
