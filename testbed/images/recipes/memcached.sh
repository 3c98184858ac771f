#!/bin/sh
# mmdebstrap customize hook: memcached.sh CHROOT RECIPE_DIR
#
# The official memcached image's last steps (its recipe is not in shared/images): the
# entrypoint, RECIPE_DIR's docker-entrypoint.sh (this repository's own). Upstream
# compiles memcached from its source tarball; Debian's memcached 1.6 package gives the
# same program. The image runs as memcache (uid 11211), set in its config.
set -eu
root=$1 recipe=$2
in_root() { chroot "$root" "$@"; }

in_root memcached --version
install -m 0755 "$recipe/docker-entrypoint.sh" "$root/usr/local/bin/"
in_root id memcache
