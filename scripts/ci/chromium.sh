#!/usr/bin/env bash
# Debian's Chromium for the browser test (test/auth/oauth-browser.test.ts drives /usr/bin/chromium
# through playwright-core; Playwright's own browser download cannot be reached from CI).
#
#   scripts/ci/chromium.sh    install `chromium` with apt-get unless /usr/bin/chromium exists
#
# Idempotent and quiet: does nothing when the binary is there; runs `apt-get update` only when the
# package lists have no candidate for chromium, or when an install from stale lists fails.
set -euo pipefail

BIN=/usr/bin/chromium

log() { echo "chromium: $*" >&2; }
die() { echo "chromium: error: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root for: $*"; fi
}

[ -x "$BIN" ] && exit 0

apt_update() {
  log "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
}

has_candidate() {
  local c
  c=$(apt-cache policy chromium 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install() {
  local out rc=0
  out=$(mktemp)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    install chromium >"$out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || tail -n 40 "$out" >&2
  rm -f "$out"
  return "$rc"
}

updated=0
if ! has_candidate; then apt_update; updated=1; fi
log "apt-get install chromium"
if ! install; then
  # Stale lists name package versions the mirror no longer has: refresh once and retry.
  [ "$updated" -eq 1 ] && die "apt-get install chromium failed"
  apt_update
  install || die "apt-get install chromium failed"
fi
[ -x "$BIN" ] || die "$BIN missing after install"
log "$("$BIN" --version 2>/dev/null || echo installed)"
