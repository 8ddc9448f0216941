# Shared by the CI and topology scripts (scripts/ci/*.sh, scripts/ha/cluster.sh): source it after
# setting LOG_NAME, the prefix of their messages.

log() { echo "$LOG_NAME: $*" >&2; }
die() { echo "$LOG_NAME: error: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else die "need root for: $*"; fi
}

# Runs a server binary as the postgres OS user when root (PostgreSQL, PgBouncer and Patroni refuse root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@")
  else "$@"; fi
}

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
