"""The one client of the API server and the one kubectl wrapper, against the real API server.

Each client is the identity of its own credentials and trusts only the server's CA; an absent
object reads as None and any other refusal raises; a watch's lines come back as its events;
kubectl hands back a refusal, or raises it with its own words, and never outlives its timeout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import certifi
import httpx
import pytest
import yaml

from testbed.real.apiclient import ApiClient, events
from testbed.real.controlplane import ControlPlane
from testbed.real.kubectl import Kubectl, KubectlError

from ..support.kube import Kube

ROOT = Path(__file__).resolve().parents[2]
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def whoami(client: ApiClient) -> str:
    response = client.post(WHOAMI, json=REVIEW)
    response.raise_for_status()
    return str(response.json()["status"]["userInfo"]["username"])


def service_account_token(kube: Kube, namespace: str, name: str) -> str:
    """A second identity on a running server: a service account's token (no RBAC: it may read nothing)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    created = kube.http.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json=account)
    assert created.status_code == 201, created.text
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    response = kube.http.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", json=request)
    assert response.status_code == 201, response.text
    return str(response.json()["status"]["token"])


def test_each_client_acts_as_the_identity_of_its_token(
    control_plane: ControlPlane, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    token = service_account_token(kube, namespace, "reader")
    with control_plane.client() as admin, ApiClient(control_plane.url, token, control_plane.ca_file) as account:
        assert whoami(admin) == "sharddb-admin"
        assert whoami(account) == f"system:serviceaccount:{namespace}:reader"
    config = tmp_path / "kubeconfig"
    config.write_text(control_plane.kubeconfig_text("reader", token))
    assert "sharddb-admin" in control_plane.kubectl().must("auth", "whoami")
    assert f"system:serviceaccount:{namespace}:reader" in Kubectl(config).must("auth", "whoami")


def test_read_gives_the_object_none_when_absent_and_raises_any_other_refusal(
    control_plane: ControlPlane, kube: Kube, namespace: str
) -> None:
    token = service_account_token(kube, namespace, "nobody")
    with control_plane.client() as admin, ApiClient(control_plane.url, token, control_plane.ca_file) as account:
        found = admin.read(f"/api/v1/namespaces/{namespace}")
        assert found is not None
        assert found["metadata"]["name"] == namespace
        assert admin.read(f"/api/v1/namespaces/{namespace}/configmaps/absent") is None
        with pytest.raises(httpx.HTTPStatusError) as refused:
            account.read(f"/api/v1/namespaces/{namespace}")
        assert refused.value.response.status_code == 403
    assert control_plane.get(f"/api/v1/namespaces/{namespace}/configmaps/absent") is None


def test_a_wrong_token_is_refused_and_another_ca_is_not_trusted(control_plane: ControlPlane) -> None:
    with ApiClient(control_plane.url, "not-a-token", control_plane.ca_file) as stranger:
        assert stranger.get("/api/v1/namespaces").status_code == 401
    with (
        ApiClient(control_plane.url, control_plane.token, Path(certifi.where())) as misled,
        pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        misled.get("/readyz")


def test_events_are_a_watchs_lines_as_the_server_sends_them(control_plane: ControlPlane, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    with control_plane.client(timeout=httpx.Timeout(10.0, read=30.0)) as client:
        listed = client.get(collection)
        listed.raise_for_status()
        revision = listed.json()["metadata"]["resourceVersion"]
        made = client.post(collection, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen"}})
        assert made.status_code == 201, made.text
        params = {"watch": "1", "resourceVersion": revision, "timeoutSeconds": "10"}
        with client.stream("GET", collection, params=params) as response:
            assert response.status_code == 200
            seen = next(event for event in events(response) if event["type"] != "BOOKMARK")
    assert (seen["type"], seen["object"]["metadata"]["name"]) == ("ADDED", "seen")


def test_kubectl_hands_back_a_refusal_and_must_raises_it_with_its_words(
    control_plane: ControlPlane, namespace: str
) -> None:
    kubectl = control_plane.kubectl()
    result = kubectl.run("get", "configmap", "absent", "-n", namespace)
    assert result.returncode != 0
    assert "NotFound" in result.stderr
    with pytest.raises(KubectlError, match="not found"):
        kubectl.must("get", "configmap", "absent", "-n", namespace)
    assert kubectl.must("get", "namespace", namespace, "-o", "name").strip() == f"namespace/{namespace}"


def test_kubectl_never_outlives_its_timeout(control_plane: ControlPlane, namespace: str) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        control_plane.kubectl().run("get", "configmaps", "-n", namespace, "--watch", timeout=2)


def test_kubectl_renders_offline_without_a_kubeconfig() -> None:
    rendered = [doc for doc in yaml.safe_load_all(Kubectl().kustomize(ROOT / "crds")) if doc]
    assert [doc["metadata"]["name"] for doc in rendered] == ["sharddbs.mygroup.example.com"]
