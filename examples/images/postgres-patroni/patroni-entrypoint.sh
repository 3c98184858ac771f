#!/bin/sh
# The image's entrypoint: Patroni with the file PATRONI_CONFIG_FILE names (the hooks project
# their rendered configuration there); with arguments, those instead (patronictl, psql, a shell).
#
# Patroni quietly falls back to PATRONI_CONFIGURATION, and then to its environment alone, when
# its file is missing: a member would start with half a configuration. So a missing or
# unreadable file stops it here, saying which.
set -eu

if [ "$#" -gt 0 ]; then
	exec "$@"
fi
if [ -z "${PATRONI_CONFIG_FILE:-}" ]; then
	echo "patroni-entrypoint.sh: PATRONI_CONFIG_FILE is not set: name Patroni's configuration file" >&2
	exit 64
fi
if [ ! -r "$PATRONI_CONFIG_FILE" ]; then
	echo "patroni-entrypoint.sh: cannot read $PATRONI_CONFIG_FILE (PATRONI_CONFIG_FILE): is it mounted?" >&2
	exit 66
fi
exec patroni "$PATRONI_CONFIG_FILE"
