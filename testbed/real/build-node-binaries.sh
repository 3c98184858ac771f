#!/usr/bin/env bash
# Build the pinned node add-on binaries of the test stack: CoreDNS (cluster DNS),
# rancher's local-path-provisioner (dynamic hostPath PersistentVolumes) and kube-router
# (NetworkPolicy, run per node as a firewall only).
#
# kube-router, not sigs.k8s.io/kube-network-policies: that one hands packets to user space
# through nfqueue, and a kernel without CONFIG_NFT_QUEUE (as here) cannot do it; kube-router's
# network policy controller needs only iptables, ipset and the NFLOG target, and it is the
# one k3s embeds as its own NetworkPolicy enforcement, so it is what a small real cluster runs.
#
# All come from the Go module proxy and are built with the machine's Go into a
# cache outside the repository, so a second run with the binaries present is a
# no-op. Progress goes to stderr, one line per step with its time; the directory
# holding all three binaries is printed on the last line of stdout.
set -euo pipefail

COREDNS_VERSION="${SHARDDB_COREDNS_VERSION:-1.14.7}"
LPP_VERSION="${SHARDDB_LPP_VERSION:-0.0.30}"
# The only version of github.com/cloudnativelabs/kube-router/v2 the Go module proxy serves here
# (go list -m -versions; later tags are refused); security flaws are reported for it, so its
# dependencies with fixes are raised below, and a served newer release is one variable away.
KUBE_ROUTER_VERSION="${SHARDDB_KUBE_ROUTER_VERSION:-2.1.0}"
# Its go.mod's versions of these carry reported flaws that later releases fix (HTTP/2, gRPC and
# protobuf parsing); each is raised to a served release, which kube-router builds and runs with.
# (Its github.com/docker/docker v25 is used only by the service proxy's DSR mode, not run here.)
# Another KUBE_ROUTER_VERSION gets its own go.mod's versions (raising them to these could lower them).
KUBE_ROUTER_RAISE=()
if [[ "$KUBE_ROUTER_VERSION" == 2.1.0 ]]; then
  KUBE_ROUTER_RAISE=(golang.org/x/net@v0.62.0 google.golang.org/grpc@v1.85.0 google.golang.org/protobuf@v1.36.12)
fi
CACHE_ROOT="${SHARDDB_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sharddb/testbin}"
OUT="$CACHE_ROOT/node-coredns-$COREDNS_VERSION-lpp-$LPP_VERSION"
ALL_BINARIES=(coredns local-path-provisioner kube-router)
# kube-router's build carries its version, as its Makefile stamps it; a binary without the
# stamp of KUBE_ROUTER_VERSION and KUBE_ROUTER_RAISE is built again, the other two binaries kept.
KUBE_ROUTER_STAMP="$OUT/.kube-router-version"
# Plugins the test cluster's Corefile uses; a build without one of them is useless.
COREDNS_PLUGINS=(kubernetes forward cache errors health ready loop reload)

NAME="build-node-binaries"
# A lock of its own, so this does not queue behind build-binaries.sh.
LOCK="$CACHE_ROOT/.build-node.lock"
# shellcheck source=testbed/real/build-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/build-lib.sh"
kube_router_built() {
  [[ -x "$OUT/kube-router" && "$(cat "$KUBE_ROUTER_STAMP" 2>/dev/null)" == "v$KUBE_ROUTER_VERSION ${KUBE_ROUTER_RAISE[*]}" ]]
}
have_all() {
  local binary
  for binary in "${ALL_BINARIES[@]}"; do [[ -x "$OUT/$binary" ]] || return 1; done
  kube_router_built
}

# One build at a time per cache: a second caller waits for the first and reuses its work.
reuse_or_lock "all three binaries"

command -v go >/dev/null 2>&1 || die "Go is required to build the node binaries (install Go >= 1.25, e.g. from https://go.dev/dl or your distribution's golang package)"

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go_build_env
say "building into $OUT (first build: module downloads and compiles take several minutes on 2 cores)"

# Write a throwaway module requiring $1@$2 and carry over the dependency's own
# replace directives that name another module (a dependent ignores them; ones
# pointing at local folders cannot apply and are dropped).
throwaway_module() {
  local module="$1" version="$2" name="$3" modfile
  modfile="$(go mod download -json "$module@$version" 2>/dev/null | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')" || true
  [[ -f "$modfile" ]] || die "could not fetch $module@$version from the Go module proxy ($(go env GOPROXY))"
  {
    echo "module sharddb.test/$name"
    echo
    echo "go 1.23.0"
    echo
    echo "require $module $version"
    # Single-line "replace a => b v" and block-form "a => b v" lines whose target is a module, not a path.
    sed -n -e '/^replace[[:space:]]*($/,/^)$/{/=>/p;}' -e 's/^replace[[:space:]]\+\([^(].*=>.*\)/\1/p' "$modfile" \
      | sed -e 's/^[[:space:]]*replace[[:space:]]*//' -e 's/^[[:space:]]*//' \
      | grep -Ev '=>[[:space:]]*\.{0,2}/' \
      | sed 's/^/replace /' || true
  } > go.mod
}

# CoreDNS: the module root is package main; core/plugin/zplugin.go pulls in the
# standard plugin set (plugin.cfg), which includes everything in COREDNS_PLUGINS.
if [[ ! -x "$OUT/coredns" ]]; then
  mkdir -p "$work/coredns"
  (
    cd "$work/coredns"
    throwaway_module github.com/coredns/coredns "v$COREDNS_VERSION" coredns
    go get "github.com/coredns/coredns@v$COREDNS_VERSION" >/dev/null 2>&1 \
      || die "could not resolve github.com/coredns/coredns@v$COREDNS_VERSION and its dependencies from the Go module proxy ($(go env GOPROXY))"
  )
  step "coredns v$COREDNS_VERSION modules downloaded"
  (
    cd "$work/coredns"
    go build -trimpath -ldflags='-s -w' -o "$OUT/coredns.tmp" github.com/coredns/coredns \
      || die "building coredns v$COREDNS_VERSION failed (it needs Go >= 1.25; this is $(go version))"
    plugins="$("$OUT/coredns.tmp" -plugins)" || die "the built coredns does not run: $OUT/coredns.tmp -plugins failed"
    for plugin in "${COREDNS_PLUGINS[@]}"; do
      grep -qEx "[[:space:]]*(dns\.)?$plugin" <<<"$plugins" \
        || die "the built coredns v$COREDNS_VERSION lacks the $plugin plugin (coredns -plugins: $(tr '\n' ' ' <<<"$plugins"))"
    done
    mv "$OUT/coredns.tmp" "$OUT/coredns"
  )
  step "coredns v$COREDNS_VERSION built (plugins ${COREDNS_PLUGINS[*]} present)"
fi

# local-path-provisioner: the module root is package main.
if [[ ! -x "$OUT/local-path-provisioner" ]]; then
  mkdir -p "$work/lpp"
  (
    cd "$work/lpp"
    throwaway_module github.com/rancher/local-path-provisioner "v$LPP_VERSION" lpp
    go get "github.com/rancher/local-path-provisioner@v$LPP_VERSION" >/dev/null 2>&1 \
      || die "could not resolve github.com/rancher/local-path-provisioner@v$LPP_VERSION and its dependencies from the Go module proxy ($(go env GOPROXY))"
  )
  step "local-path-provisioner v$LPP_VERSION modules downloaded"
  (
    cd "$work/lpp"
    go build -trimpath -ldflags='-s -w' -o "$OUT/local-path-provisioner.tmp" github.com/rancher/local-path-provisioner \
      || die "building local-path-provisioner v$LPP_VERSION failed (this is $(go version))"
    usage="$("$OUT/local-path-provisioner.tmp" start --help 2>&1)" \
      || die "the built local-path-provisioner does not run: $OUT/local-path-provisioner.tmp start --help failed"
    grep -q -- '--provisioner-name' <<<"$usage" \
      || die "the built local-path-provisioner lacks the start --provisioner-name flag: $usage"
    mv "$OUT/local-path-provisioner.tmp" "$OUT/local-path-provisioner"
  )
  step "local-path-provisioner v$LPP_VERSION built"
fi

# kube-router: the main package is cmd/kube-router. Its Makefile builds it with CGO_ENABLED=0
# and the version stamped into pkg/version; the tag stands in for the commit it stamps.
if ! kube_router_built; then
  mkdir -p "$work/kube-router"
  (
    cd "$work/kube-router"
    throwaway_module github.com/cloudnativelabs/kube-router/v2 "v$KUBE_ROUTER_VERSION" kube-router
    go get "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION" >/dev/null 2>&1 \
      || die "could not resolve github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION and its dependencies from the Go module proxy ($(go env GOPROXY))"
    if (( ${#KUBE_ROUTER_RAISE[@]} )); then
      go get "${KUBE_ROUTER_RAISE[@]}" >/dev/null 2>&1 \
        || die "could not raise kube-router's dependencies to ${KUBE_ROUTER_RAISE[*]} (Go module proxy: $(go env GOPROXY))"
    fi
  )
  step "kube-router v$KUBE_ROUTER_VERSION modules downloaded"
  (
    cd "$work/kube-router"
    stamp="github.com/cloudnativelabs/kube-router/v2/pkg/version"
    go build -trimpath -ldflags="-s -w -X $stamp.Version=v$KUBE_ROUTER_VERSION" -o "$OUT/kube-router.tmp" \
      github.com/cloudnativelabs/kube-router/v2/cmd/kube-router \
      || die "building kube-router v$KUBE_ROUTER_VERSION failed (this is $(go version))"
    usage="$("$OUT/kube-router.tmp" --help 2>&1)" || die "the built kube-router does not run: $OUT/kube-router.tmp --help failed"
    for flag in --run-firewall --run-router --run-service-proxy --enable-cni --kubeconfig --hostname-override; do
      grep -q -- "$flag" <<<"$usage" || die "the built kube-router lacks the $flag flag: $usage"
    done
    mv "$OUT/kube-router.tmp" "$OUT/kube-router"
    echo "v$KUBE_ROUTER_VERSION ${KUBE_ROUTER_RAISE[*]}" > "$KUBE_ROUTER_STAMP"
  )
  step "kube-router v$KUBE_ROUTER_VERSION built"
fi

have_all || die "some binaries are missing from $OUT after the build"
say "coredns v$COREDNS_VERSION, local-path-provisioner v$LPP_VERSION and kube-router v$KUBE_ROUTER_VERSION in $OUT, $(( $(date +%s) - start ))s in all"
echo "$OUT"
