"""TLS between members, and to them: each member's own key and certificate, made as its pod starts.

An init container of the member's own image writes a fresh key (never leaving the pod's memory-backed
``emptyDir``) and a self-signed certificate for it; PostgreSQL then takes sessions over TLS only, and
Patroni's REST API serves HTTPS only. No CA is shared, so no peer's certificate is verified: what keeps
a member's calls to another safe is what rides inside the encryption, a password (SCRAM, bound to the
TLS session when both ends are on TLS), and the REST API's credentials from a member's address only.

A member asks for TLS when it logs in to another (replication, ``pg_rewind``) but does not insist on
it: while a shard made before this release rolls to it, a new standby must still stream from the old
primary, which serves no TLS. Once every member runs this template, every member session is TLS (the
servers take nothing else). What stays open, written down in the replication guide: a man in the
middle of pod traffic (on a node's network) could pose as a primary that offers no TLS to a member and
so read its stream, and could read the REST API's credentials; a CA of the user's would close both.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

VOLUME = "tls"
DIRECTORY = "/run/sharddb/tls"
CERTIFICATE = f"{DIRECTORY}/tls.crt"
KEY = f"{DIRECTORY}/tls.key"
# The init container's name, and what the key lives on: memory, as small as a key and a certificate.
INIT_CONTAINER = "tls"
SIZE_LIMIT = "1Mi"
# Ten years: a member's certificate lives as long as its pod, and nothing checks its dates.
DAYS = 3650
MEMBER_ENV = "SHARDDB_TLS_MEMBER"

# The key is made readable by its owner alone (PostgreSQL refuses a key others may read), on the
# ECDSA P-256 curve every TLS 1.2+ client speaks; the certificate names the member it was made for.
MAKE = (
    'umask 077 && exec openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$1" '
    '-subj "/CN=$2" -keyout "$3" -out "$4" 2>&1'
)


def command() -> list[str]:
    """The init container's command: ``openssl``, which every PostgreSQL image built on Debian's packages holds."""
    return ["sh", "-c", MAKE, "tls", str(DAYS), f"$({MEMBER_ENV})", KEY, CERTIFICATE]


def init_container(db: Obj) -> Obj:
    """Made from the member's own container (``db``): its image, pull policy, resources and security context, so a
    restricted namespace admits it and no other image is pulled."""
    container: Obj = {
        "name": INIT_CONTAINER,
        "image": db["image"],
        "command": command(),
        "env": [{"name": MEMBER_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
        "volumeMounts": [{"name": VOLUME, "mountPath": DIRECTORY}],
    }
    for field in ("imagePullPolicy", "resources", "securityContext"):
        if field in db:
            container[field] = db[field]
    return container


def volume() -> Obj:
    return {"name": VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": SIZE_LIMIT}}


def mount() -> Obj:
    """The member's container reads the key and certificate; only the init container writes them."""
    return {"name": VOLUME, "mountPath": DIRECTORY, "readOnly": True}


def server_parameters() -> Obj:
    """PostgreSQL's own TLS: on, with the member's key and certificate (TLS 1.2 at least, PostgreSQL's default)."""
    return {"ssl": "on", "ssl_cert_file": CERTIFICATE, "ssl_key_file": KEY}


def client() -> Obj:
    """How a member logs in to another (replication, ``pg_rewind``) and to its own PostgreSQL: TLS and SCRAM bound to
    it wherever the server offers TLS, which every member of this release does (see above why not insisted on)."""
    return {"sslmode": "prefer", "channel_binding": "prefer"}


def restapi() -> Obj:
    """Patroni's REST API over HTTPS with the member's certificate."""
    return {"certfile": CERTIFICATE, "keyfile": KEY}
