# shellcheck shell=bash
# Sourced by the build scripts beside it: their messages, the cache's lock, the Go settings, timed steps.
# The script sets NAME (its name in messages), OUT (its cache directory) and LOCK (its lock file),
# and defines have_all (true when everything it builds is in OUT).

say() { echo "$NAME: $*" >&2; }
die() { say "$*"; exit 1; }

# Print OUT and exit when all is built; else hold the lock (after another build, if one runs) and check again.
reuse_or_lock() {
  local what="$1"
  if have_all; then
    say "$what cached in $OUT"
    echo "$OUT"
    exit 0
  fi
  command -v flock >/dev/null 2>&1 || die "flock is required (Debian's util-linux package)"
  mkdir -p "$(dirname "$LOCK")"
  exec 9>"$LOCK"
  if ! flock -n 9; then
    say "another build is running in $(dirname "$LOCK"); waiting for it"
    flock 9
  fi
  if have_all; then
    say "$what cached in $OUT"
    echo "$OUT"
    exit 0
  fi
}

# Every build: no VCS stamp, modules from the proxy, static binaries, the machine's own Go; starts the clock.
go_build_env() {
  export GOFLAGS="-buildvcs=false -mod=mod"
  export CGO_ENABLED=0
  export GOTOOLCHAIN=local
  start=$(date +%s)
  step_start=$start
}

# One progress line: what was done, its time and the time so far. Call it in the script's own shell.
step() {
  say "$1 ($(( $(date +%s) - step_start ))s; $(( $(date +%s) - start ))s in all)"
  step_start=$(date +%s)
}
