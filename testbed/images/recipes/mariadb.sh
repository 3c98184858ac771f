#!/bin/sh
# mmdebstrap customize hook: mariadb.sh CHROOT RECIPE_DIR
#
# The official mariadb image's steps after its packages, from what that recipe is known to
# do (it is not in shared/images): the server's configuration made to listen on every
# address, to write no log file and to name no user (the entrypoint's gosu switches), with
# no host cache and no name resolution; an empty /var/lib/mysql owned by mysql, which the
# entrypoint initializes on a first start; /docker-entrypoint-initdb.d; and the
# entrypoint, RECIPE_DIR's docker-entrypoint.sh (this repository's own). /run/mysqld is
# made after finish.sh (run-dir.sh), which empties /run.
set -eu
root=$1 recipe=$2
in_root() { chroot "$root" "$@"; }

in_root /usr/sbin/mariadbd --version
in_root mariadb --version

# (files only: my.cnf is a link through /etc/alternatives, absolute, so outside the chroot)
find "$root/etc/mysql" -type f -name '*.cnf' -exec sed -Ei 's/^(bind-address|log|user[[:space:]])/#&/' {} +
if grep -rEq --include='*.cnf' '^(bind-address|log|user[[:space:]])' "$root/etc/mysql"; then
	echo "mariadb.sh: /etc/mysql still binds an address, writes a log or names a user" >&2
	exit 1
fi
printf '[mariadb]\nhost-cache-size=0\nskip-name-resolve\n' >"$root/etc/mysql/mariadb.conf.d/05-skipcache.cnf"

# the Debian package's postinst initialized a data directory: the image starts without one
rm -rf "$root/var/lib/mysql"
in_root install --directory --owner mysql --group mysql --mode 0755 /var/lib/mysql
mkdir "$root/docker-entrypoint-initdb.d"

install -m 0755 "$recipe/docker-entrypoint.sh" "$root/usr/local/bin/"

in_root gosu --version
in_root gosu nobody true
