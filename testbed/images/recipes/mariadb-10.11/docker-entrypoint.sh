#!/bin/bash
# docker-entrypoint.sh of the mariadb:10.11 test image, written for this repository.
#
# The official mariadb image's recipe (docker-library/mariadb) is not in shared/images, so
# this script is not a copy of its entrypoint: it does what that entrypoint is documented
# to do, as far as ShardDB's commands and a first start on an empty volume see it:
#
# - an option first (`-...`) runs mariadbd with it; any other command than mariadbd or
#   mysqld, or a request for help or the version, runs as it is;
# - started as root, it hands the data directory to mysql (uid 999) and runs itself again
#   under gosu; started as another user (ShardDB's default, uid 999), it skips that;
# - on a data directory without mysql/ in it, it needs MARIADB_ROOT_PASSWORD,
#   MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD; it runs
#   mariadb-install-db, then a server on its socket alone, loads the time zones (unless
#   MARIADB_INITDB_SKIP_TZINFO), sets root's password for root@localhost and
#   root@MARIADB_ROOT_HOST (default %), creates MARIADB_DATABASE and MARIADB_USER
#   (MARIADB_PASSWORD; all privileges on that database), runs
#   /docker-entrypoint-initdb.d/*.sh, *.sql, *.sql.gz, *.sql.xz and *.sql.zst in name
#   order, and stops that server;
# - every MARIADB_* variable may be given by its MYSQL_* name, or read from a file named
#   by *_FILE;
# - then it execs the server, which stops on the kubelet's SIGTERM (the image sets no
#   STOPSIGNAL): a normal shutdown.
#
# Left out, as ShardDB uses none of them: the healthcheck user and healthcheck.sh,
# MARIADB_ROOT_PASSWORD_HASH, MARIADB_PASSWORD_HASH, MARIADB_AUTO_UPGRADE and the
# replication variables (MARIADB_MASTER_HOST, MARIADB_REPLICATION_*).
set -eo pipefail
shopt -s nullglob

say() {
	local level=$1
	shift
	printf '%s [%s] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$level" "$*"
}
note() { say Note "$@"; }
fail() {
	say ERROR "$@" >&2
	exit 1
}

# file_env NAME [DEFAULT]: exports NAME from $NAME, else the file $NAME_FILE names, else the
# same from its MYSQL_* name; a variable and its *_FILE together are refused.
file_env() {
	local var=$1 default=${2:-} name file value=
	for name in "$var" "${var/#MARIADB_/MYSQL_}"; do
		file=${name}_FILE
		if [ -n "${!name:-}" ] && [ -n "${!file:-}" ]; then
			fail "both $name and $file are set: give one of them"
		fi
		if [ -n "${!name:-}" ]; then
			value=${!name}
			break
		fi
		if [ -n "${!file:-}" ]; then
			value=$(<"${!file}")
			break
		fi
	done
	export "$var=${value:-$default}"
	unset "${var}_FILE"
}

# The first of these variables that is set, by its MARIADB_* or MYSQL_* name.
either() {
	local name
	for name in "$@"; do
		if [ -n "${!name:-}" ]; then
			printf '%s' "${!name}"
			return
		fi
	done
}

wants_help() {
	local arg
	for arg; do
		case $arg in -'?' | --help | --print-defaults | -V | --version) return 0 ;; esac
	done
	return 1
}

# server_value NAME COMMAND...: the value the server would use for NAME with these options.
server_value() {
	local name=$1
	shift
	"$@" --verbose --help 2>/dev/null | awk -v name="$name" '$1 == name && NF == 2 { print $2; exit }'
}

sql_string() {
	local text=${1//\\/\\\\}
	printf '%s' "${text//\'/\\\'}"
}

sql_name() {
	printf '%s' "${1//\`/\`\`}"
}

# The server started for the first setup: local socket only, no network.
start_setup_server() {
	note "Starting a server on its socket alone for the first setup"
	"$@" --skip-networking --default-time-zone=SYSTEM --socket="$SOCKET" &
	SETUP_PID=$!
	local tries
	for tries in $(seq 120); do
		if as_root_without_password --database=mysql <<<'SELECT 1' >/dev/null 2>&1; then
			return
		fi
		kill -0 "$SETUP_PID" 2>/dev/null || fail "the setup server stopped before it answered (see its log above)"
		sleep 1
	done
	fail "the setup server did not answer on $SOCKET within $tries s"
}

stop_setup_server() {
	kill -TERM "$SETUP_PID"
	wait "$SETUP_PID" || fail "the setup server did not stop cleanly"
	note "The setup server has stopped"
}

as_root_without_password() {
	mariadb --protocol=socket --user=root --host=localhost --socket="$SOCKET" "$@"
}

as_root() {
	MYSQL_PWD=$MARIADB_ROOT_PASSWORD mariadb --protocol=socket --user=root --host=localhost --socket="$SOCKET" "$@"
}

setup_sql() {
	local password host database user user_password
	password=$(sql_string "$MARIADB_ROOT_PASSWORD")
	host=$(sql_string "$MARIADB_ROOT_HOST")
	cat <<-'SQL'
		SET @@SESSION.SQL_LOG_BIN = 0;
		DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
		EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname, '\'');
	SQL
	echo "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('$password');"
	if [ "$MARIADB_ROOT_HOST" != localhost ]; then
		echo "CREATE USER 'root'@'$host' IDENTIFIED BY '$password';"
		echo "GRANT ALL ON *.* TO 'root'@'$host' WITH GRANT OPTION;"
		echo "GRANT PROXY ON ''@'%' TO 'root'@'$host' WITH GRANT OPTION;"
	fi
	if [ -n "$MARIADB_DATABASE" ]; then
		database=$(sql_name "$MARIADB_DATABASE")
		echo "CREATE DATABASE IF NOT EXISTS \`$database\`;"
	fi
	if [ -n "$MARIADB_USER" ]; then
		user=$(sql_string "$MARIADB_USER")
		user_password=$(sql_string "$MARIADB_PASSWORD")
		echo "CREATE USER '$user'@'%' IDENTIFIED BY '$user_password';"
		if [ -n "$MARIADB_DATABASE" ]; then
			echo "GRANT ALL ON \`$database\`.* TO '$user'@'%';"
		fi
	fi
}

run_initdb_files() {
	local file database=()
	if [ -n "$MARIADB_DATABASE" ]; then database=(--database="$MARIADB_DATABASE"); fi
	for file in /docker-entrypoint-initdb.d/*; do
		case $file in
		*.sh)
			note "$0: running $file"
			if [ -x "$file" ]; then "$file"; else . "$file"; fi
			;;
		*.sql) note "$0: running $file" && as_root "${database[@]}" <"$file" ;;
		*.sql.gz) note "$0: running $file" && gunzip -c "$file" | as_root "${database[@]}" ;;
		*.sql.xz) note "$0: running $file" && xzcat "$file" | as_root "${database[@]}" ;;
		*.sql.zst) note "$0: running $file" && zstd -dc "$file" | as_root "${database[@]}" ;;
		*) note "$0: ignoring $file" ;;
		esac
	done
}

initialize() {
	file_env MARIADB_ROOT_PASSWORD
	file_env MARIADB_ROOT_HOST %
	file_env MARIADB_DATABASE
	file_env MARIADB_USER
	file_env MARIADB_PASSWORD
	local allow_empty random skip_tzinfo
	allow_empty=$(either MARIADB_ALLOW_EMPTY_ROOT_PASSWORD MYSQL_ALLOW_EMPTY_PASSWORD)
	random=$(either MARIADB_RANDOM_ROOT_PASSWORD MYSQL_RANDOM_ROOT_PASSWORD)
	skip_tzinfo=$(either MARIADB_INITDB_SKIP_TZINFO MYSQL_INITDB_SKIP_TZINFO)
	if [ -z "$MARIADB_ROOT_PASSWORD" ] && [ -z "$allow_empty" ] && [ -z "$random" ]; then
		fail "Database is uninitialized and password option is not specified:" \
			"set one of MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD"
	fi
	if [ "$MARIADB_USER" = root ]; then
		fail "MARIADB_USER=root: root is set up by MARIADB_ROOT_PASSWORD; name another user"
	fi
	if [ -n "$MARIADB_USER" ] && [ -z "$MARIADB_PASSWORD" ]; then
		fail "MARIADB_USER is set without MARIADB_PASSWORD"
	fi
	if [ -z "$MARIADB_ROOT_PASSWORD" ] && [ -n "$random" ]; then
		MARIADB_ROOT_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
		note "GENERATED ROOT PASSWORD: $MARIADB_ROOT_PASSWORD"
	fi

	note "Initializing database files in $DATADIR"
	mariadb-install-db "${@:2}" --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal \
		--skip-test-db --disable-log-bin
	note "Database files initialized"

	start_setup_server "$@"
	if [ -z "$skip_tzinfo" ]; then
		note "Loading the time zones"
		mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null |
			as_root_without_password --database=mysql
	fi
	note "Securing system users and creating the database and user asked for"
	setup_sql | as_root_without_password --database=mysql
	run_initdb_files
	stop_setup_server
	note "MariaDB init process done. Ready for start up."
}

main() {
	case ${1:-} in -*) set -- mariadbd "$@" ;; esac
	if { [ "${1:-}" != mariadbd ] && [ "${1:-}" != mysqld ]; } || wants_help "$@"; then
		exec "$@"
	fi
	note "Entrypoint script for MariaDB Server $(mariadbd --version | awk '{ print $3 }') started."
	DATADIR=$(server_value datadir "$@")
	SOCKET=$(server_value socket "$@")
	if [ -z "$DATADIR" ] || [ -z "$SOCKET" ]; then
		fail "cannot read the data directory and socket from: $* --verbose --help"
	fi
	if [ "$(id -u)" = 0 ]; then
		mkdir -p "$DATADIR"
		find "$DATADIR" \! -user mysql -exec chown mysql: '{}' +
		note "Switching to dedicated user 'mysql'"
		exec gosu mysql "${BASH_SOURCE[0]}" "$@"
	fi
	if [ ! -d "$DATADIR/mysql" ]; then
		initialize "$@"
	fi
	exec "$@"
}

main "$@"
