"""Where the cluster tier gets Metacontroller's own CRDs, so a fresh clone finds them too.

In order: the file named by ``SHARDDB_METACONTROLLER_CRDS``; else
``shared/metacontroller/metacontroller-crds-v1.yaml`` beside the repository (CI);
else the pinned release's manifest, downloaded once, checked against its SHA-256
before it is used or cached, and kept outside the repository (override the
folder with ``SHARDDB_METACONTROLLER_CACHE``, the address with
``SHARDDB_METACONTROLLER_CRDS_URL``, e.g. for a mirror). Nothing unverified is
ever cached.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILE_NAME = "metacontroller-crds-v1.yaml"

PATH_VARIABLE = "SHARDDB_METACONTROLLER_CRDS"
URL_VARIABLE = "SHARDDB_METACONTROLLER_CRDS_URL"
CACHE_VARIABLE = "SHARDDB_METACONTROLLER_CACHE"


@dataclass(frozen=True)
class Release:
    """One published CRD manifest: what to fetch and the only bytes accepted from it."""

    version: str
    url: str
    sha256: str


# The Metacontroller release the project is tested against (its CRDs, as published).
PINNED = Release(
    version="v4.17.2",
    url=f"https://raw.githubusercontent.com/metacontroller/metacontroller/v4.17.2/manifests/production/{FILE_NAME}",
    sha256="58146fd8ad334094786bf87eacc75d6b6c4274ef8111fe99f9de4c878007fab5",
)

MAX_BYTES = 8 * 1024 * 1024  # the manifest is about 130 KB; anything far larger is not it
TIMEOUT_SECONDS = 30.0


class CrdsNotFoundError(Exception):
    """No way to the CRDs worked; the message says each way to provide them."""


def shared_file(root: Path = ROOT) -> Path:
    """Where CI keeps the file: ``shared/`` beside the repository."""
    return root.parent / "shared" / "metacontroller" / FILE_NAME


def cache_file(env: Mapping[str, str], release: Release = PINNED) -> Path:
    """The verified download, outside the repository, one folder per version."""
    base = env.get(CACHE_VARIABLE)
    if base:
        folder = Path(base)
    else:
        xdg = env.get("XDG_CACHE_HOME")
        folder = (Path(xdg) if xdg else Path.home() / ".cache") / "sharddb" / "metacontroller"
    return folder / release.version / FILE_NAME


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _verified(path: Path, sha256: str) -> bool:
    try:
        return sha256_of(path.read_bytes()) == sha256
    except OSError:
        return False


def _opener(url: str) -> urllib.request.OpenerDirector:
    """The environment's proxies for the release; none for a loopback mirror (a proxy cannot reach it)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return urllib.request.build_opener(urllib.request.ProxyHandler({})) if loopback else urllib.request.build_opener()


def download(url: str, sha256: str, target: Path) -> Path:
    """Fetch ``url`` into ``target`` only if its bytes have ``sha256``; raises ``OSError`` otherwise."""
    try:
        with _opener(url).open(url, timeout=TIMEOUT_SECONDS) as response:
            data = response.read(MAX_BYTES + 1)
    except urllib.error.URLError as error:
        raise OSError(f"download of {url} failed: {error.reason}") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise OSError(f"download of {url} failed: {error}") from None
    if len(data) > MAX_BYTES:
        raise OSError(f"download of {url} refused: larger than {MAX_BYTES} bytes")
    got = sha256_of(data)
    if got != sha256:
        raise OSError(f"download of {url} refused: SHA-256 {got}, expected {sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed, so a reader never sees half a file.
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".partial-", delete=False) as partial:
        partial.write(data)
    os.replace(partial.name, target)
    return target


def how_to_provide(release: Release, root: Path, cache: Path, url: str) -> str:
    """The three ways, for a failure message."""
    return (
        f"Provide Metacontroller {release.version}'s {FILE_NAME} one of three ways:\n"
        f"  1. set {PATH_VARIABLE} to its path;\n"
        f"  2. place it at {shared_file(root)} (shared/ beside the repository, as CI does);\n"
        f"  3. let the tests download it once from {url}\n"
        f"     (SHA-256 {release.sha256}) into {cache};\n"
        f"     {URL_VARIABLE} names a mirror, {CACHE_VARIABLE} another cache folder."
    )


def _not_found(problem: str, release: Release, root: Path, cache: Path, url: str) -> CrdsNotFoundError:
    ways = how_to_provide(release, root, cache, url)
    return CrdsNotFoundError(f"Metacontroller's CRDs not found: {problem}.\n{ways}")


def resolve(env: Mapping[str, str] | None = None, root: Path = ROOT, release: Release = PINNED) -> Path:
    """The CRD file to install, or ``CrdsNotFoundError`` saying why and how to provide it."""
    env = os.environ if env is None else env
    cache = cache_file(env, release)
    url = env.get(URL_VARIABLE) or release.url
    named = env.get(PATH_VARIABLE)
    if named:
        if Path(named).is_file():
            return Path(named)
        raise _not_found(f"{PATH_VARIABLE}={named} is not a file", release, root, cache, url)
    if shared_file(root).is_file():
        return shared_file(root)
    if _verified(cache, release.sha256):
        return cache
    try:
        return download(url, release.sha256, cache)
    except OSError as error:
        problem = str(error)
    raise _not_found(problem, release, root, cache, url)
