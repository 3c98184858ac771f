#!/usr/bin/env bash
# Build the pinned node add-on binaries of the test stack: CoreDNS (cluster DNS)
# and rancher's local-path-provisioner (dynamic hostPath PersistentVolumes).
#
# Both come from the Go module proxy and are built with the machine's Go into a
# cache outside the repository, so a second run with the binaries present is a
# no-op. Progress goes to stderr, one line per step with its time; the directory
# holding both binaries is printed on the last line of stdout.
set -euo pipefail

COREDNS_VERSION="${SHARDDB_COREDNS_VERSION:-1.14.7}"
LPP_VERSION="${SHARDDB_LPP_VERSION:-0.0.30}"
CACHE_ROOT="${SHARDDB_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sharddb/testbin}"
OUT="$CACHE_ROOT/node-coredns-$COREDNS_VERSION-lpp-$LPP_VERSION"
ALL_BINARIES=(coredns local-path-provisioner)
# Plugins the test cluster's Corefile uses; a build without one of them is useless.
COREDNS_PLUGINS=(kubernetes forward cache errors health ready loop reload)

NAME="build-node-binaries"
# A lock of its own, so this does not queue behind build-binaries.sh.
LOCK="$CACHE_ROOT/.build-node.lock"
# shellcheck source=testbed/build-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/build-lib.sh"
have_all() {
  local binary
  for binary in "${ALL_BINARIES[@]}"; do [[ -x "$OUT/$binary" ]] || return 1; done
}

# One build at a time per cache: a second caller waits for the first and reuses its work.
reuse_or_lock "both binaries"

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

have_all || die "some binaries are missing from $OUT after the build"
say "coredns v$COREDNS_VERSION and local-path-provisioner v$LPP_VERSION in $OUT, $(( $(date +%s) - start ))s in all"
echo "$OUT"
