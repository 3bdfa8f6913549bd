#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster: initdb in a temporary folder, a free
# loopback port, fsync off (nothing in it outlives the run), run by the postgres user when started
# as root (PostgreSQL refuses root), stopped and deleted when the command ends, however it ends.
# The command gets LATCHKEY_TEST_PG_URL naming the cluster and LATCHKEY_REQUIRE_PG=1, so the
# PostgreSQL tests cannot be skipped. Used by `npm run test:pg` and by .ci/run.
#
#   scripts/with-postgres.sh COMMAND [ARGUMENT…]
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGUMENT…]" >&2
  exit 2
fi

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] && command -v initdb >/dev/null 2>&1; then pg_bin=$(dirname "$(command -v initdb)"); fi
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ] || [ ! -x "$pg_bin/pg_ctl" ]; then
  echo "$0: PostgreSQL's server programs (initdb, pg_ctl) were not found: install PostgreSQL (on Debian: apt-get install postgresql)" >&2
  exit 1
fi

pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-pg.XXXXXX")
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$pg_dir"
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi
cleanup() {
  local status=$?
  if [ -f "$pg_dir/data/postmaster.pid" ]; then as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$pg_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

pg_port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U latchkey -E UTF8 --no-sync >/dev/null
if ! as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
  -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null; then
  echo "$0: PostgreSQL did not start; its log:" >&2
  cat "$pg_dir/server.log" >&2 || true
  exit 1
fi

export LATCHKEY_TEST_PG_URL="postgres://latchkey@127.0.0.1:$pg_port/postgres"
export LATCHKEY_REQUIRE_PG=1
# In the background, so that a signal to this script is handled at once (a foreground command
# would have to end first): it is passed on to the command, and the EXIT trap removes the cluster.
"$@" <&0 &
command_pid=$!
trap 'kill -TERM "$command_pid" 2>/dev/null; wait "$command_pid"; exit 130' INT
trap 'kill -TERM "$command_pid" 2>/dev/null; wait "$command_pid"; exit 143' TERM HUP
wait "$command_pid"
