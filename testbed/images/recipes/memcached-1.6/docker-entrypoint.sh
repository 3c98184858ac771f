#!/bin/sh
# docker-entrypoint.sh of the memcached:1.6 test image, written for this repository.
#
# The official memcached image's recipe (docker-library/memcached) is not in
# shared/images; its entrypoint does only this: an option first (`-...`) runs memcached
# with it, anything else runs as it is. memcached stops on the kubelet's SIGTERM.
set -e
case ${1:-} in -*) set -- memcached "$@" ;; esac
exec "$@"
