#!/usr/bin/env bash
# Installs one Debian package for a test tool, unless its binary is already there (CI, run as root).
#
#   scripts/ci/apt-install.sh <package> <binary>    <binary>: a command name or an absolute path
#
# Idempotent and quiet: does nothing when the binary is there; runs `apt-get update` only when the
# package lists have no candidate for the package, or when an install from stale lists fails.
set -euo pipefail

PKG=${1:?package name}
BIN=${2:?binary to look for}

LOG_NAME=$PKG
# shellcheck source=scripts/ci/shell-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/shell-lib.sh"

command -v "$BIN" >/dev/null && exit 0

apt_update() {
  log "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
}

has_candidate() {
  local c
  c=$(apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install() {
  local out rc=0
  out=$(mktemp)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    install "$PKG" >"$out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || tail -n 40 "$out" >&2
  rm -f "$out"
  return "$rc"
}

updated=0
if ! has_candidate; then apt_update; updated=1; fi
log "apt-get install $PKG"
if ! install; then
  # Stale lists name package versions the mirror no longer has: refresh once and retry.
  [ "$updated" -eq 1 ] && die "apt-get install $PKG failed"
  apt_update
  install || die "apt-get install $PKG failed"
fi
command -v "$BIN" >/dev/null || die "$BIN missing after install"
log "installed"
