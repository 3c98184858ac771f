#!/bin/sh
# mmdebstrap essential hook: account.sh CHROOT NAME ID HOME SHELL [HOME_MODE]
#
# Adds the system group and user NAME (uid = gid = ID) before the image's packages
# are installed, as the official recipes' `groupadd -r` / `useradd -r` lines do
# first, so a package's postinst finds the account and never picks another id.
# `passwd` (useradd) is not Essential and so not installed yet: the lines are
# written directly. With HOME_MODE, HOME is created owned by NAME with that mode.
set -eu
root=$1 name=$2 id=$3 home=$4 shell=$5 mode=${6:-}

for file in passwd group; do
	if cut -d: -f1 "$root/etc/$file" | grep -qx "$name" || cut -d: -f3 "$root/etc/$file" | grep -qx "$id"; then
		echo "account.sh: $name or id $id is already in /etc/$file" >&2
		exit 1
	fi
done
printf '%s:x:%s:\n' "$name" "$id" >>"$root/etc/group"
printf '%s:x:%s:%s::%s:%s\n' "$name" "$id" "$id" "$home" "$shell" >>"$root/etc/passwd"
# Without shadow files yet, passwd's postinst (shadowconfig on) adds the entries.
if [ -e "$root/etc/gshadow" ]; then printf '%s:!::\n' "$name" >>"$root/etc/gshadow"; fi
if [ -e "$root/etc/shadow" ]; then printf '%s:!::::::\n' "$name" >>"$root/etc/shadow"; fi

if [ -n "$mode" ]; then
	install -d -o "$id" -g "$id" -m "$mode" "$root$home"
fi
