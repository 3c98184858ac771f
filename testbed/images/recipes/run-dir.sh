#!/bin/sh
# mmdebstrap customize hook, after finish.sh: run-dir.sh CHROOT NAME OWNER MODE
#
# A folder under /run that the image's recipe makes and keeps (finish.sh empties /run
# of what the build left): /run/NAME owned by OWNER (user and group) with MODE.
set -eu
root=$1 name=$2 owner=$3 mode=$4
chroot "$root" install --directory --owner "$owner" --group "$owner" --mode "$mode" "/run/$name"
