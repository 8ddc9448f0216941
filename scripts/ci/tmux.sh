#!/usr/bin/env bash
# tmux for the CLI's terminal test (test/cli/chat-tmux.test.ts drives `persona chat` in a tmux
# session with send-keys/capture-pane; without tmux that test is skipped).
#
#   scripts/ci/tmux.sh    install `tmux` with apt-get unless it is already on PATH
#
# Idempotent and quiet: does nothing when tmux is there; runs `apt-get update` only when the
# package lists have no candidate for tmux, or when an install from stale lists fails.
set -euo pipefail

log() { echo "tmux: $*" >&2; }
die() { echo "tmux: error: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root for: $*"; fi
}

command -v tmux >/dev/null && exit 0

apt_update() {
  log "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
}

has_candidate() {
  local c
  c=$(apt-cache policy tmux 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install() {
  local out rc=0
  out=$(mktemp)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    install tmux >"$out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || tail -n 40 "$out" >&2
  rm -f "$out"
  return "$rc"
}

updated=0
if ! has_candidate; then apt_update; updated=1; fi
log "apt-get install tmux"
if ! install; then
  # Stale lists name package versions the mirror no longer has: refresh once and retry.
  [ "$updated" -eq 1 ] && die "apt-get install tmux failed"
  apt_update
  install || die "apt-get install tmux failed"
fi
command -v tmux >/dev/null || die "tmux missing after install"
log "$(tmux -V)"
