#!/usr/bin/env bash
# Build the pinned binaries of the test stack (testbed/real/controlplane.py, testbed/stack.py):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the kubelet, kube-proxy and
# metacontroller.
#
# Everything comes from the Go module proxy (Metacontroller's tree from a verified
# source archive) and is built with the machine's Go into a cache outside the
# repository, so a second run with the binaries present is a no-op. Progress goes
# to stderr, one line per step with its time; the directory holding all five
# binaries is printed on the last line of stdout.
set -euo pipefail

KUBE_VERSION="${SHARDDB_KUBE_VERSION:-1.34.4}"
ETCD_VERSION="${SHARDDB_ETCD_VERSION:-3.6.16}"
MC_VERSION="4.17.2"
# sha256 of Metacontroller's uncompressed source tar at the tag (git archive --prefix=metacontroller-4.17.2/).
MC_TAR_SHA256="a74f91374b700dc21fc0052d3afd2509ddb5038c50d6f3ac59867c0c74e9d39c"
MC_URL="${SHARDDB_METACONTROLLER_SRC_URL:-https://github.com/metacontroller/metacontroller/archive/refs/tags/v$MC_VERSION.tar.gz}"
CACHE_ROOT="${SHARDDB_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sharddb/testbin}"
OUT="$CACHE_ROOT/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-mc-$MC_VERSION"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SHARED_SRC="$HERE/../../../shared/metacontroller/metacontroller-v$MC_VERSION.tar.gz"
KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
MC_CRDS="metacontroller-crds-v$MC_VERSION.yaml"

NAME="build-binaries"
LOCK="$CACHE_ROOT/.build.lock"
# shellcheck source=testbed/real/build-lib.sh
source "$HERE/build-lib.sh"
# The Kubernetes binaries carry their version (what the kubelet reports for its Node, what
# /version says); a build without it predates this stamp and is built again.
KUBE_STAMP="$OUT/.kubernetes-version"
kube_missing() {
  local binary
  for binary in "${KUBE_BINARIES[@]}"; do
    if [[ ! -x "$OUT/$binary" || "$(cat "$KUBE_STAMP" 2>/dev/null)" != "v$KUBE_VERSION" ]]; then echo "$binary"; fi
  done
}
have_all() {
  [[ -x "$OUT/etcd" && -x "$OUT/metacontroller" && -f "$OUT/$MC_CRDS" && -z "$(kube_missing)" ]]
}

# One build at a time per cache: a second caller waits for the first and reuses its work.
reuse_or_lock "all seven binaries"

command -v go >/dev/null 2>&1 || die "Go is required to build the test binaries (install Go >= 1.26.4, e.g. from https://go.dev/dl or your distribution's golang package)"

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go_build_env
say "building into $OUT (first build: module downloads and compiles take several minutes on 2 cores)"

# etcd: the server module's own replace directives point at sibling folders and
# are ignored for a dependency, so a throwaway module that requires it is enough.
if [[ ! -x "$OUT/etcd" ]]; then
  mkdir -p "$work/etcd"
  (
    cd "$work/etcd"
    go mod init sharddb.test/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null 2>&1 \
      || die "could not fetch go.etcd.io/etcd/server/v3@v$ETCD_VERSION from the Go module proxy ($(go env GOPROXY))"
    go build -trimpath -ldflags='-s -w' -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3 \
      || die "building etcd v$ETCD_VERSION failed"
    mv "$OUT/etcd.tmp" "$OUT/etcd"
  )
  step "etcd v$ETCD_VERSION built"
fi

# kube-apiserver, kube-controller-manager, kube-scheduler: k8s.io/kubernetes replaces
# its k8s.io/* staging modules with folders inside its own tree; pin each one to the
# matching published v0.x.y. One go build shares the common packages.
mapfile -t missing < <(kube_missing)
if (( ${#missing[@]} )); then
  mkdir -p "$work/kube/bin"
  (
    cd "$work/kube"
    modfile="$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    [[ -f "$modfile" ]] || die "could not fetch k8s.io/kubernetes@v$KUBE_VERSION from the Go module proxy ($(go env GOPROXY))"
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
    packages=()
    for binary in "${missing[@]}"; do
      go get "k8s.io/kubernetes/cmd/$binary@v$KUBE_VERSION" >/dev/null 2>&1 \
        || die "could not resolve k8s.io/kubernetes/cmd/$binary@v$KUBE_VERSION"
      packages+=("k8s.io/kubernetes/cmd/$binary")
    done
    step "k8s.io/kubernetes v$KUBE_VERSION modules downloaded"
    minor="${KUBE_VERSION#*.}"
    minor="${minor%%.*}"
    stamp="k8s.io/component-base/version"
    ldflags="-s -w -X $stamp.gitVersion=v$KUBE_VERSION -X $stamp.gitMajor=${KUBE_VERSION%%.*} -X $stamp.gitMinor=$minor"
    ldflags+=" -X $stamp.gitTreeState=clean"
    go build -trimpath -ldflags="$ldflags" -o bin/ "${packages[@]}" \
      || die "building ${missing[*]} v$KUBE_VERSION failed"
    for binary in "${missing[@]}"; do mv "bin/$binary" "$OUT/$binary"; done
    echo "v$KUBE_VERSION" > "$KUBE_STAMP"
  )
  step "${missing[*]} v$KUBE_VERSION built"
fi

# metacontroller: its module path is plain "metacontroller", so the source tree is
# needed. First SHARDDB_METACONTROLLER_SRC, then shared/ beside the repository,
# then GitHub's tag archive; each is checked against the pinned sha256 of the tar.
# Its CRDs (manifests/production) are kept beside the binary, from the same verified tree.
if [[ ! -x "$OUT/metacontroller" || ! -f "$OUT/$MC_CRDS" ]]; then
  archive=""
  for candidate in "${SHARDDB_METACONTROLLER_SRC:-}" "$SHARED_SRC"; do
    if [[ -n "$candidate" && -f "$candidate" ]]; then archive="$candidate"; break; fi
  done
  if [[ -z "$archive" ]]; then
    archive="$work/metacontroller.tar.gz"
    say "fetching Metacontroller v$MC_VERSION source from $MC_URL"
    curl -fsSL --retry 2 --connect-timeout 15 -o "$archive" "$MC_URL" || die "Metacontroller v$MC_VERSION source not found.
  Provide its source archive in one of these ways:
  - set SHARDDB_METACONTROLLER_SRC to metacontroller-v$MC_VERSION.tar.gz (GitHub's tag archive);
  - place shared/metacontroller/metacontroller-v$MC_VERSION.tar.gz beside the repository;
  - let this script download $MC_URL (or set SHARDDB_METACONTROLLER_SRC_URL to a mirror)."
  fi
  actual="$(gzip -dc "$archive" | sha256sum | cut -d' ' -f1)"
  [[ "$actual" == "$MC_TAR_SHA256" ]] \
    || die "$archive is not Metacontroller v$MC_VERSION's source: tar sha256 $actual, expected $MC_TAR_SHA256"
  tar -xzf "$archive" -C "$work"
  cp "$work/metacontroller-$MC_VERSION/manifests/production/metacontroller-crds-v1.yaml" "$OUT/$MC_CRDS.tmp"
  mv "$OUT/$MC_CRDS.tmp" "$OUT/$MC_CRDS"
  [[ -x "$OUT/metacontroller" ]] || (
    cd "$work/metacontroller-$MC_VERSION"
    go mod download >/dev/null 2>&1 || die "could not fetch Metacontroller's dependencies from the Go module proxy ($(go env GOPROXY))"
    step "metacontroller v$MC_VERSION source verified, modules downloaded"
    go build -trimpath -ldflags='-s -w' -o "$OUT/metacontroller.tmp" ./pkg/cmd/metacontroller \
      || die "building metacontroller v$MC_VERSION failed (it needs Go >= 1.26.4; this is $(go version))"
    mv "$OUT/metacontroller.tmp" "$OUT/metacontroller"
  )
  step "metacontroller v$MC_VERSION and its CRDs in place"
fi

have_all || die "some binaries are missing from $OUT after the build"
say "all seven binaries and Metacontroller's CRDs in $OUT, $(( $(date +%s) - start ))s in all"
echo "$OUT"
