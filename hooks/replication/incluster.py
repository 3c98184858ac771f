"""The lines a member's own scripts start with to call the API server as the pod's account.

The role-change callback and the stop order run inside the member, in its image's ``python3``, with
the standard library only: these lines give them ``call(method, path, body)`` against the API
server (the pod's token and CA, the merge-patch type for a body) and who and where the member is.
"""

from __future__ import annotations

# The service account's credentials, where the kubelet mounts them and Patroni's own client reads them.
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The member's pod name and namespace (downward API), in variables Patroni leaves in its environment.
MEMBER_ENV = "SHARDDB_MEMBER"
NAMESPACE_ENV = "SHARDDB_MEMBER_NAMESPACE"

CLIENT = f"""
import json, os, ssl, sys, urllib.parse, urllib.request
ME = os.environ["{MEMBER_ENV}"]
NAMESPACE = os.environ["{NAMESPACE_ENV}"]
host = os.environ["KUBERNETES_SERVICE_HOST"]
host = "[" + host + "]" if ":" in host else host
API = "https://" + host + ":" + os.environ["KUBERNETES_SERVICE_PORT"]
PODS = "/api/v1/namespaces/" + NAMESPACE + "/pods"
context = ssl.create_default_context(cafile="{ACCOUNT_DIR}/ca.crt")
with open("{ACCOUNT_DIR}/token") as file:
    token = file.read().strip()
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    kind = "application/merge-patch+json" if body is not None else "application/json"
    headers = {{"Authorization": "Bearer " + token, "Content-Type": kind}}
    request = urllib.request.Request(API + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, context=context, timeout=5) as response:
        return json.load(response)
"""
