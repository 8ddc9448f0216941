#!/usr/bin/env bash
# Throwaway PostgreSQL 15 + pgvector for CI (Debian 12 / bookworm, run as root).
#
#   scripts/ci/postgres.sh [start]   install what is missing, start a cluster on 127.0.0.1:$PGPORT
#   scripts/ci/postgres.sh stop      stop that cluster and delete its data directory
#   scripts/ci/postgres.sh install   only install what is missing (scripts/ha/cluster.sh uses it)
#
# PGPORT defaults to 55432. Idempotent: a second `start` finds everything installed and reuses a
# cluster already answering on the port. Needs network access to deb.debian.org only.
#
# Bookworm ships pgvector 0.4, so pgvector 0.8 is built from trixie's source package
# (a deb-src entry only: no trixie binaries are installed).
set -euo pipefail

PGPORT=${PGPORT:-55432}
PGBIN=/usr/lib/postgresql/15/bin
PG_CONFIG=$PGBIN/pg_config
STATE=${TMPDIR:-/tmp}/persona-ci-postgres-$PGPORT.dir # holds the cluster's temp dir path
TRIXIE_SRC=/etc/apt/sources.list.d/trixie-src.sources
URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"

LOG_NAME=postgres
# shellcheck source=scripts/ci/shell-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/shell-lib.sh"

apt_updated=0
apt_update() {
  if [ "$apt_updated" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
    apt_updated=1
  fi
}

apt_install() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  apt_update
  log "apt-get install ${missing[*]}"
  local out
  out=$(mktemp)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    install "${missing[@]}" >"$out" 2>&1 || { tail -n 60 "$out" >&2; die "apt-get install failed"; }
  rm -f "$out"
}

add_trixie_src() {
  local want
  want=$'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg'
  if [ -f "$TRIXIE_SRC" ] && [ "$(cat "$TRIXIE_SRC")" = "$want" ]; then return 0; fi
  # A bookworm keyring older than 2023.3+deb12u1 lacks the trixie signing keys.
  if [ ! -e /usr/share/keyrings/debian-archive-trixie-automatic.gpg ]; then
    apt_update
    log "upgrading debian-archive-keyring (needs trixie keys)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq -y install debian-archive-keyring >/dev/null
  fi
  log "adding $TRIXIE_SRC"
  printf '%s\n' "$want" | as_root tee "$TRIXIE_SRC" >/dev/null
  apt_updated=0 # the new source needs an index
}

install_postgres() {
  local ext=/usr/share/postgresql/15/extension/vector.control need_vector=0 pkgs=()
  [ -x "$PG_CONFIG" ] && ext="$("$PG_CONFIG" --sharedir)/extension/vector.control"
  [ -f "$ext" ] || need_vector=1
  [ -x "$PGBIN/postgres" ] || pkgs+=(postgresql-15)
  [ "$need_vector" -eq 1 ] && pkgs+=(postgresql-server-dev-15 dpkg-dev build-essential)
  [ "${#pkgs[@]}" -eq 0 ] && return 0

  # Source first, so that a single apt-get update covers both the installs and apt-get source.
  [ "$need_vector" -eq 1 ] && add_trixie_src
  apt_install "${pkgs[@]}"
  [ -x "$PGBIN/postgres" ] || die "$PGBIN/postgres missing after installing postgresql-15"
  [ "$need_vector" -eq 1 ] || return 0
  ext="$("$PG_CONFIG" --sharedir)/extension/vector.control"
  apt_update # no-op if the installs above already updated

  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pgvector-src.XXXXXX")
  log "fetching pgvector source from trixie into $tmp"
  # As root, apt may warn that the download is unsandboxed (user _apt cannot write $tmp): harmless.
  (cd "$tmp" && apt-get -qq source pgvector/trixie >/dev/null 2>"$tmp/apt-source.log") \
    || { cat "$tmp/apt-source.log" >&2; die "apt-get source pgvector failed"; }
  local src
  src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
  [ -n "$src" ] || die "no pgvector source directory in $tmp"
  case "${src##*/pgvector-}" in
    0.8.*) ;;
    *) die "expected pgvector 0.8.x from trixie, got ${src##*/}" ;;
  esac
  log "building ${src##*/}"
  # OPTFLAGS="": no -march=native; with_llvm=no: skip the JIT bitcode (not needed, saves time).
  local mk=(PG_CONFIG="$PG_CONFIG" OPTFLAGS="" with_llvm=no)
  make -s -C "$src" -j"$(nproc)" "${mk[@]}" >"$tmp/build.log" 2>&1 \
    || { tail -n 40 "$tmp/build.log" >&2; die "pgvector build failed"; }
  as_root make -s -C "$src" install "${mk[@]}" >>"$tmp/build.log" 2>&1 \
    || { tail -n 40 "$tmp/build.log" >&2; die "pgvector install failed"; }
  [ -f "$ext" ] || die "pgvector installed but $ext is missing"
  rm -rf "$tmp"
}

isready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres; }

psql_c() { PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c "$1"; }

start_cluster() {
  if isready; then
    log "reusing the server already running on 127.0.0.1:$PGPORT"
  else
    # A state file left by a run whose server is gone: drop its data directory.
    if [ -f "$STATE" ]; then
      local old
      old=$(cat "$STATE")
      case "$old" in "${TMPDIR:-/tmp}"/persona-ci-pg.*) rm -rf "$old" ;; esac
      rm -f "$STATE"
    fi
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/persona-ci-pg.XXXXXX")
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
    echo "$dir" >"$STATE"
    as_pg "$PGBIN/initdb" -D "$dir/data" --auth=trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    as_pg "$PGBIN/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/server.log" \
      -o "-c listen_addresses=127.0.0.1 -p $PGPORT -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -k /tmp" \
      >/dev/null || { tail -n 40 "$dir/server.log" >&2; die "pg_ctl start failed"; }
    log "started cluster in $dir/data"
  fi
  local i
  for i in $(seq 1 60); do
    isready && break
    [ "$i" -eq 60 ] && die "server on 127.0.0.1:$PGPORT not ready after 30s"
    sleep 0.5
  done
  psql_c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
  local v
  v=$(psql_c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
  echo "postgres: ready on $URL (pgvector $v)"
}

stop_cluster() {
  if [ ! -f "$STATE" ]; then
    log "no cluster recorded for port $PGPORT ($STATE missing)"
    return 0
  fi
  local dir
  dir=$(cat "$STATE")
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" stop -w -t 60 -m fast -D "$dir/data" >/dev/null \
      || die "pg_ctl stop failed; $dir kept (see $dir/server.log)"
  fi
  case "$dir" in "${TMPDIR:-/tmp}"/persona-ci-pg.*) rm -rf "$dir" ;; esac
  rm -f "$STATE"
  log "stopped"
}

case "${1:-start}" in
  start) install_postgres; start_cluster ;;
  stop) stop_cluster ;;
  install) install_postgres ;;
  *) die "usage: $0 [start|stop|install]" ;;
esac
