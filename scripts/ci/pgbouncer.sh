#!/usr/bin/env bash
# Throwaway PgBouncer in transaction mode in front of the CI PostgreSQL (scripts/ci/postgres.sh),
# on loopback, for the tests of the service behind a pooler (Debian 12 / bookworm, run as root).
#
#   scripts/ci/pgbouncer.sh [start]   install pgbouncer if missing, start it on 127.0.0.1:$PGBOUNCER_PORT
#   scripts/ci/pgbouncer.sh stop      stop it and delete its directory
#
# PGPORT (default 55432) is the PostgreSQL it pools; PGBOUNCER_PORT defaults to 26432 (below the
# kernel's ephemeral range, where a client socket of the test run could hold the port). Every
# database name is passed through (`*`), so the tests' databases, created directly on PostgreSQL, are
# reachable as postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/<name>. Authentication is trust, as on
# the CI cluster (loopback only). Bookworm's PgBouncer is 1.18: no protocol-level prepared
# statements (1.21+), so the service runs with DATABASE_POOLER=transaction (prepared statements off).
set -euo pipefail

PGPORT=${PGPORT:-55432}
PGBOUNCER_PORT=${PGBOUNCER_PORT:-26432}
STATE=${TMPDIR:-/tmp}/persona-ci-pgbouncer-$PGBOUNCER_PORT.dir # holds the pooler's temp dir path
URL="postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/postgres"

LOG_NAME=pgbouncer
# shellcheck source=scripts/ci/shell-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/shell-lib.sh"


install_pgbouncer() {
  installed pgbouncer && return 0
  log "apt-get install pgbouncer"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install pgbouncer >/dev/null
  # The package's own service (port 6432) is not the one the tests use.
  if command -v systemctl >/dev/null && systemctl is-active --quiet pgbouncer 2>/dev/null; then
    as_root systemctl stop pgbouncer || true
  fi
}

answering() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_pooler() {
  answering "$PGPORT" || die "no PostgreSQL on 127.0.0.1:$PGPORT: run PGPORT=$PGPORT scripts/ci/postgres.sh start first"
  if [ -f "$STATE" ] && answering "$PGBOUNCER_PORT"; then
    log "reusing the pooler already running on 127.0.0.1:$PGBOUNCER_PORT"
    echo "pgbouncer: ready on $URL (transaction mode, PostgreSQL on port $PGPORT)"
    return 0
  fi
  answering "$PGBOUNCER_PORT" && die "port $PGBOUNCER_PORT is taken by another process"
  if [ -f "$STATE" ]; then
    local old
    old=$(cat "$STATE")
    case "$old" in "${TMPDIR:-/tmp}"/persona-ci-pgbouncer.*) rm -rf "$old" ;; esac
    rm -f "$STATE"
  fi
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/persona-ci-pgbouncer.XXXXXX")
  chmod 755 "$dir"
  echo '"postgres" ""' >"$dir/userlist.txt"
  # Pools are per database and user: default_pool_size server connections each (the service's own
  # pool asks for DATABASE_POOL_MAX). Transaction mode never runs server_reset_query.
  cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$PGPORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 10
reserve_pool_size = 2
server_idle_timeout = 60
# After a failed server login (the primary gone in a failover) PgBouncer waits this long before the
# next, 15 s by default: the whole failover window behind it (docs/operations.md, Failover).
server_login_retry = 1
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"
  echo "$dir" >"$STATE"
  as_pg /usr/sbin/pgbouncer -d "$dir/pgbouncer.ini" || { cat "$dir/pgbouncer.log" >&2 2>/dev/null; die "pgbouncer did not start"; }
  local i
  for i in $(seq 1 50); do
    answering "$PGBOUNCER_PORT" && break
    [ "$i" -eq 50 ] && { tail -n 40 "$dir/pgbouncer.log" >&2; die "pgbouncer not answering on 127.0.0.1:$PGBOUNCER_PORT after 10s"; }
    sleep 0.2
  done
  echo "pgbouncer: ready on $URL ($(/usr/sbin/pgbouncer --version | head -n1), transaction mode, PostgreSQL on port $PGPORT)"
}

stop_pooler() {
  if [ ! -f "$STATE" ]; then
    log "no pooler recorded for port $PGBOUNCER_PORT ($STATE missing)"
    return 0
  fi
  local dir pid i
  dir=$(cat "$STATE")
  if [ -f "$dir/pgbouncer.pid" ]; then
    pid=$(cat "$dir/pgbouncer.pid")
    kill -INT "$pid" 2>/dev/null || true # SIGINT: shut down at once, closing client connections
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      [ "$i" -eq 50 ] && kill -KILL "$pid" 2>/dev/null
      sleep 0.2
    done
  fi
  case "$dir" in "${TMPDIR:-/tmp}"/persona-ci-pgbouncer.*) rm -rf "$dir" ;; esac
  rm -f "$STATE"
  log "stopped"
}

case "${1:-start}" in
  start) install_pgbouncer; start_pooler ;;
  stop) stop_pooler ;;
  *) die "usage: $0 [start|stop]" ;;
esac
