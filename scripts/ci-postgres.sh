#!/usr/bin/env bash
# A throwaway PostgreSQL server for the ledger store tests (GPULEDGER_TEST_POSTGRES).
#
#   scripts/ci-postgres.sh start DIR    initdb + start a cluster in DIR (created; must not exist
#                                       or be empty) on a free 127.0.0.1 port, create a role and
#                                       a database, print the connection URL on stdout
#   scripts/ci-postgres.sh stop DIR     stop that cluster and remove DIR
#   scripts/ci-postgres.sh run CMD...   run CMD with GPULEDGER_TEST_POSTGRES set: to the value
#                                       already in the environment, else to a cluster started
#                                       for CMD and stopped after it. GPULEDGER_TEST_POSTGRES=off
#                                       runs CMD without PostgreSQL (its tests then skip).
#
# PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` user (the
# Debian package creates it). Nothing here touches the system's own clusters. Any failure to
# start is an error with the server log, never a silent skip: CI is meant to run these tests.
set -euo pipefail

die() { echo "ci-postgres: $*" >&2; exit 1; }

pg_bindir() {
  local d
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir 2>/dev/null || true)"
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  fi
  # Debian keeps the server binaries per major version, off PATH.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  d="$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")"
  [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  die "no PostgreSQL server binaries (initdb, pg_ctl) found; install the Debian package \
'postgresql' (scripts/install-deps.sh does)"
}

# Runs a command as the cluster's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root but there is no 'postgres' user to run \
the server as (install the Debian package 'postgresql')"
    if command -v runuser >/dev/null 2>&1; then
      runuser -u postgres -- "$@"
    else
      su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
  else
    "$@"
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local dir="$1"
  [ -n "$dir" ] || die "start: give a directory"
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then die "start: $dir is not empty"; fi
  local bin; bin="$(pg_bindir)"
  mkdir -p "$dir"
  chmod 700 "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  local data="$dir/data" log="$dir/server.log"
  local password; password="$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  printf '%s\n' "$password" > "$dir/superuser-password"
  chmod 600 "$dir/superuser-password"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/superuser-password"

  if ! as_owner "$bin/initdb" -D "$data" -U postgres -E UTF8 --no-locale \
      --auth-local=trust --auth-host=scram-sha-256 --pwfile="$dir/superuser-password" \
      >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    die "initdb in $data failed"
  fi

  # A free port: a random one nobody listens on; pg_ctl failing to bind (a race) tries another.
  local port="" attempt
  for attempt in $(seq 1 20); do
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    port_in_use "$port" && continue
    if as_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir \
         -c fsync=off -c full_page_writes=off -c max_connections=200" >/dev/null 2>&1; then
      break
    fi
    port=""
  done
  if [ -z "$port" ]; then
    [ -f "$log" ] && tail -n 40 "$log" >&2
    die "could not start PostgreSQL from $bin in $data (log above: $log)"
  fi
  echo "$port" > "$dir/port"

  local user=gpuledger db=gpuledger_test
  local upass; upass="$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres \
      -c "CREATE ROLE $user LOGIN PASSWORD '$upass'" \
      -c "CREATE DATABASE $db OWNER $user" >/dev/null \
    || die "could not create role $user and database $db (log: $log)"
  echo "postgres://$user:$upass@127.0.0.1:$port/$db"
}

stop() {
  local dir="$1"
  [ -n "$dir" ] && [ -d "$dir/data" ] || die "stop: $dir holds no cluster"
  local bin; bin="$(pg_bindir)"
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

run() {
  [ $# -gt 0 ] || die "run: give a command"
  if [ "${GPULEDGER_TEST_POSTGRES:-}" = "off" ]; then
    echo "ci-postgres: GPULEDGER_TEST_POSTGRES=off: the PostgreSQL store tests will skip" >&2
    unset GPULEDGER_TEST_POSTGRES
    exec "$@"
  fi
  if [ -n "${GPULEDGER_TEST_POSTGRES:-}" ]; then exec "$@"; fi
  # Global, not local: the EXIT trap runs after this function has returned.
  run_dir="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-pg.XXXXXX")"
  rmdir "$run_dir"
  local url
  if ! url="$(start "$run_dir")"; then
    rm -rf "$run_dir"
    die "PostgreSQL did not start; the ledger tests need it (set GPULEDGER_TEST_POSTGRES to a \
server's URL, or to 'off' to skip them knowingly)"
  fi
  echo "ci-postgres: PostgreSQL for the tests at ${url%%:*}://…@${url#*@}" >&2
  trap 'stop "$run_dir"' EXIT
  trap 'exit 130' INT TERM  # so that EXIT runs on Ctrl-C and kill too
  GPULEDGER_TEST_POSTGRES="$url" "$@"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  start) start "${1:-}" ;;
  stop) stop "${1:-}" ;;
  run) run "$@" ;;
  *) die "usage: $0 start DIR | stop DIR | run CMD..." ;;
esac
