#!/usr/bin/env bash
# Build the pinned etcd and kube-apiserver of testbed/controlplane.py (cluster tests, fleet benchmark, make crd).
#
# Both come from the Go module proxy and are built with the machine's Go into a
# cache outside the repository, so a second run with the binaries present is a
# no-op. Prints the directory holding the binaries on its last line.
set -euo pipefail

KUBE_VERSION="${SHARDDB_KUBE_VERSION:-1.34.4}"
ETCD_VERSION="${SHARDDB_ETCD_VERSION:-3.6.16}"
CACHE_ROOT="${SHARDDB_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sharddb/testbin}"
OUT="$CACHE_ROOT/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"

die() { echo "build-binaries: $*" >&2; exit 1; }

if [[ -x "$OUT/etcd" && -x "$OUT/kube-apiserver" ]]; then
  echo "build-binaries: cached, nothing to do" >&2
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "Go is required to build the test binaries (install Go >= 1.24, e.g. 'apt-get install golang' or from the Go release)"

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-buildvcs=false -mod=mod"
export CGO_ENABLED=0
start=$(date +%s)

# etcd: the server module's own replace directives point at sibling folders and
# are ignored for a dependency, so a throwaway module that requires it is enough.
mkdir -p "$work/etcd"
(
  cd "$work/etcd"
  go mod init sharddb.test/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null 2>&1 \
    || die "could not fetch go.etcd.io/etcd/server/v3@v$ETCD_VERSION from the Go module proxy"
  go build -trimpath -ldflags='-s -w' -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3 \
    || die "building etcd v$ETCD_VERSION failed"
  mv "$OUT/etcd.tmp" "$OUT/etcd"
)
echo "build-binaries: etcd v$ETCD_VERSION built" >&2

# kube-apiserver: k8s.io/kubernetes replaces its k8s.io/* staging modules with
# folders inside its own tree; pin each one to the matching published v0.x.y.
mkdir -p "$work/kube"
(
  cd "$work/kube"
  modfile="$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  [[ -f "$modfile" ]] || die "could not fetch k8s.io/kubernetes@v$KUBE_VERSION from the Go module proxy"
  staging="v0.${KUBE_VERSION#1.}"
  {
    echo "module sharddb.test/kube"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$modfile"
    echo ")"
  } > go.mod
  go mod tidy >/dev/null 2>&1 || true
  go get "k8s.io/kubernetes/cmd/kube-apiserver@v$KUBE_VERSION" >/dev/null 2>&1 \
    || die "could not resolve k8s.io/kubernetes/cmd/kube-apiserver@v$KUBE_VERSION"
  go build -trimpath -ldflags='-s -w' -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver \
    || die "building kube-apiserver v$KUBE_VERSION failed"
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
)
echo "build-binaries: kube-apiserver v$KUBE_VERSION built in $(( $(date +%s) - start ))s total" >&2
echo "$OUT"
