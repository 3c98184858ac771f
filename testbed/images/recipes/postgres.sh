#!/bin/sh
# mmdebstrap customize hook: postgres.sh CHROOT RECIPE_DIR PG_MAJOR PACKAGE...
#
# The official postgres recipe's steps after its packages, in its order, with
# Debian's PostgreSQL packages (PACKAGE...) in place of the PostgreSQL apt
# repository's. They are installed here, not with --include, because the recipe
# turns off postgresql-common's main cluster before the server package's postinst
# would create one. RECIPE_DIR holds the recipe's entrypoint scripts, copied as
# they are.
set -eu
root=$1 recipe=$2 major=$3
shift 3
in_root() { chroot "$root" "$@"; }

# make the "en_US.UTF-8" locale so postgres will be utf-8 enabled by default
echo 'en_US.UTF-8 UTF-8' >>"$root/etc/locale.gen"
in_root locale-gen
in_root locale -a | grep -qx 'en_US.utf8'

mkdir "$root/docker-entrypoint-initdb.d"

# no Debian cluster: postgresql-common first, its createcluster.conf changed, then the server
conf="$root/etc/postgresql-common/createcluster.conf"
sed -ri 's/#(create_main_cluster) .*$/\1 = false/' "$conf"
grep -qx 'create_main_cluster = false' "$conf"
APT_CONFIG=$MMDEBSTRAP_APT_CONFIG apt-get --yes --no-install-recommends install -oDPkg::Chroot-Directory="$root" "$@"
in_root "/usr/lib/postgresql/$major/bin/postgres" --version
if [ -n "$(ls -A "$root/etc/postgresql" 2>/dev/null)" ]; then
	echo "postgres.sh: a Debian cluster was created in /etc/postgresql" >&2
	exit 1
fi

# make the sample config easier to munge (and "correct by default")
in_root dpkg-divert --add --rename --divert /usr/share/postgresql/postgresql.conf.sample.dpkg \
	"/usr/share/postgresql/$major/postgresql.conf.sample"
cp "$root/usr/share/postgresql/postgresql.conf.sample.dpkg" "$root/usr/share/postgresql/postgresql.conf.sample"
ln -s ../postgresql.conf.sample "$root/usr/share/postgresql/$major/"
sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" "$root/usr/share/postgresql/postgresql.conf.sample"
grep -qF "listen_addresses = '*'" "$root/usr/share/postgresql/postgresql.conf.sample"

in_root install --directory --owner postgres --group postgres --mode 3777 /var/run/postgresql
# this 1777 will be replaced by 0700 at runtime (allows semi-arbitrary "--user" values)
in_root install --directory --owner postgres --group postgres --mode 1777 /var/lib/postgresql/data

install -m 0755 "$recipe/docker-entrypoint.sh" "$recipe/docker-ensure-initdb.sh" "$root/usr/local/bin/"
ln -sT docker-ensure-initdb.sh "$root/usr/local/bin/docker-enforce-initdb.sh"

in_root gosu --version
in_root gosu nobody true
