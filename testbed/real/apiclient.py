"""Real stack: the one HTTP client of the test API server, as one identity, trusting only the server's own CA.

Everything in the testbed, the tests, the benchmarks and the tools that talks REST to the
kube-apiserver ``controlplane.py`` starts does it through ``ApiClient``: a bearer token (the
admin's or a declared identity's, so the audit log says whose write is whose) and TLS verified
against the CA file the control plane names, never switched off. It is an ``httpx.Client``, so a
caller keeps httpx's requests, streams and errors (``httpx.HTTPError``) and decides itself which
answers it tolerates; what the client adds is only what every caller would otherwise repeat: the
credentials, a default timeout, reading one object, and the lines of a watch.
``tests/tree/test_imports.py`` holds every other module to it.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

Obj = dict[str, Any]
# A request that hangs longer than this is the API server or etcd gone, not a slow answer.
DEFAULT_TIMEOUT = 30.0


class ApiClient(httpx.Client):
    """REST to one API server at ``url`` as the identity whose token is ``token``; ``close()`` when done."""

    def __init__(
        self, url: str, token: str, ca_file: Path, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(
            base_url=url,
            headers={"Authorization": f"Bearer {token}"},
            verify=ssl.create_default_context(cafile=str(ca_file)),
            timeout=timeout,
        )

    def read(self, path: str) -> Obj | None:
        """The object at ``path``, or None when the API server says 404; any other refusal raises.

        What a poll for an object that may not exist yet wants: absence is an answer, not an error.
        """
        response = self.get(path)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        found: Obj = response.json()
        return found


def events(response: httpx.Response) -> Iterator[Obj]:
    """The events of a watch's streamed ``response``, one JSON object a line, as the API server sends them.

    The caller reads the status code first (a 410 means its revision is gone) and decides what an
    ``ERROR`` or ``BOOKMARK`` event means to it; a line that is not JSON raises ``ValueError``.
    """
    for line in response.iter_lines():
        if line:
            event: Obj = json.loads(line)
            yield event
