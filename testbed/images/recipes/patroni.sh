#!/bin/sh
# mmdebstrap customize hook, after postgres.sh: patroni.sh CHROOT RECIPE_DIR
#
# The Patroni recipe's steps (RECIPE_DIR/Dockerfile) on top of the postgres image's, in its
# order: the virtual environment of Patroni and barman-cloud from the recipe's pinned
# requirements.txt, from PyPI (psycopg2 built from source), the build packages purged, bytecode
# written now, and the recipe's entrypoint. Debian's python3 and python3-venv, and the build
# packages (BUILD_PACKAGES below), come with --include.
#
# pip runs in the chroot under env -i: the build machine's environment (REQUESTS_CA_BUNDLE,
# PIP_FIND_LINKS and the like) would otherwise reach it and override pip's own settings. Only
# the CA bundle (SHARDDB_PIP_CERT, copied in for this step and removed) and the index
# (SHARDDB_PIP_INDEX_URL) go in.
set -eu
root=$1 recipe=$2
cert=
if [ -n "${SHARDDB_PIP_CERT:-}" ]; then
	cp "$SHARDDB_PIP_CERT" "$root/tmp/pip-ca.pem"
	cert=/tmp/pip-ca.pem
fi
index=${SHARDDB_PIP_INDEX_URL:-}
in_root() {
	chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 \
		${cert:+PIP_CERT=$cert} ${index:+PIP_INDEX_URL=$index} "$@"
}

install -d "$root/opt/patroni"
install -m 0644 "$recipe/requirements.txt" "$root/opt/patroni/requirements.txt"
in_root python3 -m venv /opt/patroni
in_root /opt/patroni/bin/pip install --no-cache-dir -r /opt/patroni/requirements.txt
in_root /opt/patroni/bin/pip check
in_root apt-get purge -y --auto-remove gcc libpq-dev python3-dev
in_root python3 -m compileall -q /opt/patroni
rm -f "$root/tmp/pip-ca.pem"
rm -rf "$root/root/.cache"
in_root /opt/patroni/bin/patroni --version
in_root /opt/patroni/bin/barman-cloud-wal-archive --version

install -m 0755 "$recipe/patroni-entrypoint.sh" "$root/usr/local/bin/"
