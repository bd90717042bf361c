#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the store tests (docs/store.md, "Testing with PostgreSQL").
#
#   scripts/throwaway_postgres.sh start DIR   initdb into DIR, serve 127.0.0.1:$PORT, create the
#                                             database; prints the URL for VERDRYX_TEST_POSTGRES_URL
#   scripts/throwaway_postgres.sh stop DIR    stop that server and delete DIR
#
# PORT is $VERDRYX_TEST_POSTGRES_PORT, default 54329. Trust auth on loopback only: the cluster
# holds nothing but test data and lives as long as one test run. As root, the server runs as
# the `postgres` user (PostgreSQL refuses to run as root).
set -euo pipefail
action="${1:?start or stop}"
dir="${2:?a directory}"
port="${VERDRYX_TEST_POSTGRES_PORT:-54329}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$bin" ]; then
  bin="$(dirname "$(command -v pg_ctl)")"
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$action" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U verdryx -A trust -E UTF8 --no-locale >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" \
      start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U verdryx verdryx_test
    echo "postgresql://verdryx@127.0.0.1:$port/verdryx_test"
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
