#!/bin/sh
# mmdebstrap customize hook, last: finish.sh CHROOT
#
# Leaves out what belongs to the build machine, not the image: the host's
# resolv.conf and hostname (a container runtime mounts its own) and runtime state
# in /run, except what the image's packages or recipe made there on purpose
# (mmdebstrap's own /run cleanup is skipped so that /run/postgresql stays).
set -eu
root=$1
rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
find "$root/run" -mindepth 1 -maxdepth 1 ! -name lock ! -name postgresql ! -name redis -exec rm -rf {} +
