#!/usr/bin/env bash
# A PostgreSQL 15 cluster with automatic failover on loopback, for the failover scenario
# (bench/failover.ts, test/scale/failover.e2e.test.ts) and for trying the topology by hand:
# one etcd, three PostgreSQL nodes managed by Patroni with synchronous replication, and HAProxy in
# front with a port for the primary and one for the replicas (Debian 12 / bookworm).
#
#   scripts/ha/cluster.sh start    install what is missing, start everything, print the settings
#   scripts/ha/cluster.sh status   the members as Patroni sees them, and the settings
#   scripts/ha/cluster.sh stop     stop everything and delete the cluster's directory
#
# `start` prints, one per line on stdout, what the service and the scenario need:
#   DATABASE_URL=postgres://postgres@127.0.0.1:<primary port>/persona     (HAProxy → the primary)
#   DATABASE_LISTEN_URL=<the same>                                        (no pooler: the same session)
#   DATABASE_REPLICA_URLS=postgres://postgres@127.0.0.1:<replica port>/persona
#   HA_DIR=<the cluster's directory>   HA_NODES=<name:pg port:REST port,…>
# The same lines are kept in $HA_DIR/cluster.env.
#
# HA_PORT_BASE (default 26400) places every port: etcd base and base+1, HAProxy base+2 (primary),
# base+3 (replicas), base+4 (its statistics page), PostgreSQL base+11..13, Patroni's REST API
# base+21..23. Idempotent: a second `start` finds everything installed and reuses a cluster already
# answering. Authentication is trust, on loopback only. Run as root, every server runs as the
# postgres OS user (PostgreSQL refuses root), as scripts/ci/postgres.sh does.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${HA_PORT_BASE:-26400}
ETCD_PORT=$BASE
ETCD_PEER_PORT=$((BASE + 1))
PRIMARY_PORT=$((BASE + 2))
REPLICA_PORT=$((BASE + 3))
STATS_PORT=$((BASE + 4))
NODES=(node1 node2 node3)
PGBIN=/usr/lib/postgresql/15/bin
SCOPE=persona
DATABASE=persona
STATE=${TMPDIR:-/tmp}/persona-ha-$BASE.dir # holds the cluster's temp dir path

LOG_NAME=ha
# shellcheck source=scripts/ci/shell-lib.sh
. "$HERE/../ci/shell-lib.sh"

# Starts a long-running command as the postgres user in a session of its own (so that nothing
# signalling the caller's process group reaches it), its output in a log file; records its pid.
# In a non-interactive sh the background child leads no process group, so setsid runs it without
# forking again and $! is the server's own pid.
spawn() { # spawn <pidfile> <logfile> <command> [args…]
  local pidfile=$1 logfile=$2
  shift 2
  as_pg sh -c 'pidfile=$1 logfile=$2; shift 2; setsid "$@" >>"$logfile" 2>&1 </dev/null & echo $! >"$pidfile"' sh "$pidfile" "$logfile" "$@"
}


install_packages() {
  # PostgreSQL 15 and pgvector the way the CI installs them.
  if [ ! -x "$PGBIN/postgres" ] || [ ! -f /usr/share/postgresql/15/extension/vector.control ]; then
    bash "$HERE/../ci/postgres.sh" install
  fi
  local missing=() p
  for p in patroni etcd-server haproxy curl; do installed "$p" || missing+=("$p"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install "${missing[@]}" >/dev/null
  # The packages' own services (etcd on 2379, HAProxy's default configuration) are not ours.
  if command -v systemctl >/dev/null; then
    for p in etcd haproxy patroni; do
      systemctl is-active --quiet "$p" 2>/dev/null && { as_root systemctl stop "$p" || true; }
    done
  fi
  return 0
}

answering() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

rest_port() { echo $((BASE + 20 + ${1#node})); }
pg_port() { echo $((BASE + 10 + ${1#node})); }

# psql against a port: -X no psqlrc, -A -t bare values.
sql() { # sql <port> <database> <statement>
  PGCONNECT_TIMEOUT=3 "$PGBIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "$2" -c "$3"
}

env_lines() { # the settings, as printed by start
  local dir=$1 nodes="" n
  for n in "${NODES[@]}"; do nodes+="${nodes:+,}$n:$(pg_port "$n"):$(rest_port "$n")"; done
  echo "DATABASE_URL=postgres://postgres@127.0.0.1:$PRIMARY_PORT/$DATABASE"
  echo "DATABASE_LISTEN_URL=postgres://postgres@127.0.0.1:$PRIMARY_PORT/$DATABASE"
  echo "DATABASE_REPLICA_URLS=postgres://postgres@127.0.0.1:$REPLICA_PORT/$DATABASE"
  echo "HA_DIR=$dir"
  echo "HA_NODES=$nodes"
}

start_etcd() {
  local dir=$1
  spawn "$dir/etcd.pid" "$dir/etcd.log" /usr/bin/etcd --name etcd0 --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "etcd0=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --heartbeat-interval 100 --election-timeout 1000
  local i
  for i in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' && return 0
    sleep 0.2
  done
  tail -n 30 "$dir/etcd.log" >&2
  die "etcd not healthy on 127.0.0.1:$ETCD_PORT after 20s"
}

# The first node's bootstrap makes the `persona` database with pgvector, so that every node,
# cloned from it, has both.
write_post_bootstrap() {
  local dir=$1
  cat >"$dir/post-bootstrap.sh" <<EOF
#!/bin/sh
# Patroni passes the new primary's connection string.
set -e
$PGBIN/psql -X -q -v ON_ERROR_STOP=1 "\$1" -c "CREATE DATABASE $DATABASE" -c '\\c $DATABASE' -c "CREATE EXTENSION IF NOT EXISTS vector"
EOF
  chmod 755 "$dir/post-bootstrap.sh"
}

# Patroni's settings for one node. The `bootstrap.dcs` part is written to etcd by the first node
# and is the cluster's: the failover timing and synchronous replication (docs/operations.md, Failover).
write_patroni() {
  local dir=$1 name=$2
  local pg rest
  pg=$(pg_port "$name")
  rest=$(rest_port "$name")
  mkdir -p "$dir/$name"
  cat >"$dir/$name/patroni.yml" <<EOF
scope: $SCOPE
namespace: /service/
name: $name

log:
  level: INFO

restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest

etcd3:
  hosts: 127.0.0.1:$ETCD_PORT

bootstrap:
  dcs:
    # The leader key lives ttl seconds unless renewed; every loop_wait seconds each node runs its
    # loop; a lost etcd is retried for retry_timeout before the leader demotes itself.
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    # A crashed primary is not restarted in place: its synchronous standby takes over at once.
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    # An acknowledged commit is on the synchronous standby too, and only that standby may be promoted.
    synchronous_mode: true
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 300
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        synchronous_commit: "on"
        # The data is throwaway: no flushes to disk (the commit still waits for the standby).
        fsync: "off"
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  post_bootstrap: $dir/post-bootstrap.sh

postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $dir/$name/data
  bin_dir: $PGBIN
  pgpass: $dir/$name/pgpass
  # A new standby's copy starts at once instead of waiting for a spread checkpoint (minutes).
  basebackup:
    - checkpoint: fast
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: $dir/$name
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust

tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
EOF
}

start_patroni() {
  local dir=$1 name=$2
  spawn "$dir/$name/patroni.pid" "$dir/$name/patroni.log" /usr/bin/patroni "$dir/$name/patroni.yml"
}

# HAProxy routes by Patroni's REST API: /primary answers 200 on the leader only, /replica on a
# running standby only. A server marked down has its connections cut (on-marked-down
# shutdown-sessions), so no client keeps a session on a demoted primary.
write_haproxy() {
  local dir=$1 n
  {
    cat <<EOF
global
    maxconn 2000

defaults
    mode tcp
    timeout connect 2s
    # A connection to a server that went away is tried once more, then given up: the client hears
    # of it within about a second (the service answers 503) instead of waiting out three retries.
    retries 1
    # Long: LISTEN and the job worker's connections are idle for long stretches.
    timeout client 30m
    timeout server 30m
    timeout check 1s

listen stats
    mode http
    bind 127.0.0.1:$STATS_PORT
    stats enable
    stats uri /

listen primary
    bind 127.0.0.1:$PRIMARY_PORT
    option httpchk
    http-check send meth GET uri /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
EOF
    for n in "${NODES[@]}"; do echo "    server $n 127.0.0.1:$(pg_port "$n") maxconn 300 check port $(rest_port "$n")"; done
    cat <<EOF

listen replicas
    bind 127.0.0.1:$REPLICA_PORT
    balance roundrobin
    option httpchk
    http-check send meth GET uri /replica
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
EOF
    for n in "${NODES[@]}"; do echo "    server $n 127.0.0.1:$(pg_port "$n") maxconn 300 check port $(rest_port "$n")"; done
  } >"$dir/haproxy.cfg"
}

start_haproxy() {
  local dir=$1
  spawn "$dir/haproxy.pid" "$dir/haproxy.log" /usr/sbin/haproxy -db -f "$dir/haproxy.cfg"
}

# The members as Patroni's REST API lists them: `name role state` lines.
members() {
  local n
  for n in "${NODES[@]}"; do
    curl -fsS --max-time 2 "http://127.0.0.1:$(rest_port "$n")/cluster" 2>/dev/null && return 0
  done
  return 1
}

healthy() {
  local json
  json=$(members) || return 1
  # A leader, a synchronous standby and a third member running.
  [ "$(echo "$json" | jq '[.members[] | select(.state == "running" or .state == "streaming")] | length')" -eq 3 ] || return 1
  [ "$(echo "$json" | jq '[.members[] | select(.role == "leader")] | length')" -eq 1 ] || return 1
  [ "$(echo "$json" | jq '[.members[] | select(.role == "sync_standby")] | length')" -eq 1 ] || return 1
  [ "$(sql "$PRIMARY_PORT" "$DATABASE" "SELECT count(*) FROM pg_extension WHERE extname = 'vector'" 2>/dev/null)" = 1 ] || return 1
  [ "$(sql "$REPLICA_PORT" "$DATABASE" "SELECT pg_is_in_recovery()" 2>/dev/null)" = t ] || return 1
}

wait_for() { # wait_for <seconds> <what> <command…>
  local seconds=$1 what=$2 i
  shift 2
  for i in $(seq 1 $((seconds * 4))); do
    "$@" && return 0
    sleep 0.25
  done
  die "$what not reached after ${seconds}s (logs in $(cat "$STATE"))"
}

leader_is() { # leader_is <name>
  curl -fsS --max-time 2 "http://127.0.0.1:$(rest_port "$1")/primary" >/dev/null 2>&1
}

start_cluster() {
  if [ -f "$STATE" ] && answering "$PRIMARY_PORT" && healthy; then
    log "reusing the cluster already running ($(cat "$STATE"))"
    env_lines "$(cat "$STATE")"
    return 0
  fi
  [ -f "$STATE" ] && stop_cluster
  local port
  for port in "$ETCD_PORT" "$ETCD_PEER_PORT" "$PRIMARY_PORT" "$REPLICA_PORT" "$STATS_PORT" \
    $((BASE + 11)) $((BASE + 12)) $((BASE + 13)) $((BASE + 21)) $((BASE + 22)) $((BASE + 23)); do
    answering "$port" && die "port $port is taken by another process (set HA_PORT_BASE)"
  done
  local dir started=$SECONDS n
  dir=$(mktemp -d "${TMPDIR:-/tmp}/persona-ha.XXXXXX")
  chmod 755 "$dir"
  echo "$dir" >"$STATE"
  write_post_bootstrap "$dir"
  for n in "${NODES[@]}"; do write_patroni "$dir" "$n"; done
  write_haproxy "$dir"
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"

  start_etcd "$dir"
  # One node bootstraps (initdb) and the others clone it (pg_basebackup): the first alone, so that
  # two machines' worth of work does not compete for the cores at once.
  start_patroni "$dir" node1
  wait_for 90 "node1 leading" leader_is node1
  start_patroni "$dir" node2
  start_patroni "$dir" node3
  start_haproxy "$dir"
  wait_for 120 "three members running, one synchronous standby, HAProxy routing" healthy
  env_lines "$dir" | tee "$dir/cluster.env"
  log "ready in $((SECONDS - started))s ($dir)"
}

# Stops a process by its pid file: SIGTERM, then SIGKILL after <seconds>.
stop_pid() { # stop_pid <pidfile> <seconds>
  local pidfile=$1 seconds=$2 pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 $((seconds * 5))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

stop_cluster() {
  if [ ! -f "$STATE" ]; then
    log "no cluster recorded for HA_PORT_BASE=$BASE ($STATE missing)"
    return 0
  fi
  local dir n
  dir=$(cat "$STATE")
  case "$dir" in "${TMPDIR:-/tmp}"/persona-ha.*) ;; *) die "unexpected directory in $STATE: $dir" ;; esac
  stop_pid "$dir/haproxy.pid" 5
  # Patroni stops its PostgreSQL on SIGTERM; every node at once.
  for n in "${NODES[@]}"; do stop_pid "$dir/$n/patroni.pid" 30 & done
  wait
  # A postmaster left behind (its Patroni killed outright): stopped at once.
  for n in "${NODES[@]}"; do
    if [ -f "$dir/$n/data/postmaster.pid" ]; then
      kill -KILL "$(head -n1 "$dir/$n/data/postmaster.pid")" 2>/dev/null || true
    fi
  done
  stop_pid "$dir/etcd.pid" 10
  rm -rf "$dir"
  rm -f "$STATE"
  log "stopped"
}

status_cluster() {
  [ -f "$STATE" ] || die "no cluster recorded for HA_PORT_BASE=$BASE ($STATE missing)"
  local dir
  dir=$(cat "$STATE")
  as_pg /usr/bin/patronictl -c "$dir/node1/patroni.yml" list >&2 || true
  env_lines "$dir"
}

case "${1:-start}" in
  start) install_packages; start_cluster ;;
  stop) stop_cluster ;;
  status) status_cluster ;;
  *) die "usage: $0 start|stop|status" ;;
esac
