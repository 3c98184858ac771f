#!/usr/bin/env bash
# Builds a stand-in for the official python:3.11-slim-bookworm base image from Debian
# packages, for machines that reach Debian's mirrors but no container registry.
# It offers what the Dockerfile needs of the base: `python` 3.11 with `venv` (pip
# included), a POSIX shell and CA certificates, on Debian bookworm.
#
#   tools/python-standin.sh [TAG]      # default localhost/sharddb-python-standin:3.11-bookworm
#
# BUILDER picks docker, podman or buildah (default: the first that works, as in
# `make image`); DEBIAN_MIRROR and DEBIAN_SECURITY_MIRROR name other mirrors.
set -euo pipefail

TAG="${1:-localhost/sharddb-python-standin:3.11-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
PACKAGES="python3,python3-venv,python-is-python3,ca-certificates"

say() { echo "python-standin: $*" >&2; }
die() { say "$*"; exit 1; }

builder="${BUILDER:-}"
if [[ -z "$builder" ]]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then builder=docker
  elif command -v podman >/dev/null; then builder=podman
  elif command -v buildah >/dev/null; then builder=buildah
  else die "no image builder: install docker, podman or buildah (Debian: apt-get install podman)"
  fi
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap is required (Debian: apt-get install mmdebstrap)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

say "Debian bookworm with $PACKAGES, from $MIRROR (about a minute)"
# Documentation, manuals and translations are left out, as in the official slim image.
mmdebstrap --variant=minbase --include="$PACKAGES" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --aptopt='Acquire::Languages "none"' \
  bookworm "$work/rootfs.tar" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" "deb $SECURITY bookworm-security main" \
  </dev/null || die "mmdebstrap failed (are Debian's mirrors reachable? DEBIAN_MIRROR names another)"
say "root filesystem ready ($(( $(date +%s) - start ))s); importing it with $builder as $TAG"

cat >"$work/Containerfile" <<'EOF'
FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8
LABEL org.opencontainers.image.description="Stand-in for python:3.11-slim-bookworm, from Debian packages"
CMD ["python3"]
EOF
case "$builder" in
  buildah) buildah build --layers=false -f "$work/Containerfile" -t "$TAG" "$work" >&2 ;;
  *) "$builder" build -f "$work/Containerfile" -t "$TAG" "$work" >&2 ;;
esac
say "$TAG built ($(( $(date +%s) - start ))s in all)"
