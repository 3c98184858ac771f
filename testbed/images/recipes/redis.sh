#!/bin/sh
# mmdebstrap customize hook: redis.sh CHROOT RECIPE_DIR
#
# The official redis recipe's steps after its packages: /data owned by redis and
# the recipe's entrypoint, copied as it is. The redis-server beside this script
# goes first on PATH, to keep protected mode off by default as upstream's build
# does (Debian's binary keeps Redis's compiled-in default: on).
set -eu
root=$1 recipe=$2
wrapper="$(dirname "$0")/redis-server"
in_root() { chroot "$root" "$@"; }

in_root redis-cli --version
in_root redis-server --version

mkdir "$root/data"
in_root chown redis:redis /data

install -m 0755 "$recipe/docker-entrypoint.sh" "$root/usr/local/bin/"
install -m 0755 "$wrapper" "$root/usr/local/bin/redis-server"
in_root redis-server --version

in_root gosu --version
in_root gosu nobody true
