#!/bin/sh
# Records PostgreSQL's file I/O under pgbench's TPC-B-like load as fio iologs (one per
# server process), into this directory: the trace examples/replay-pgbench.toml replays.
#   sudo examples/replay-pgbench/record.sh
# A private cluster in a temporary directory (as the `postgres` user, on a Unix socket
# only), loaded at scale 5 before the recording starts; then pgbench (4 clients, 2
# threads, 3 s) runs while `fslab record` follows the server (through eBPF as root,
# else strace). Needs PostgreSQL, bpftrace or strace, and fslab on PATH (`make setup`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d /var/tmp/fslab-pgrec.XXXXXX)
trap 'runuser -u postgres -- "$bin/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT INT TERM
chown postgres "$tmp"
pg() { runuser -u postgres -- "$@"; }
pg "$bin/initdb" -D "$tmp/data" -A trust >/dev/null
opts="-c listen_addresses='' -c unix_socket_directories=$tmp -c shared_buffers=128MB"
pg "$bin/pg_ctl" -D "$tmp/data" -o "$opts" -w -l "$tmp/log" start >/dev/null
pg "$bin/pgbench" -h "$tmp" -i -s 5 -q postgres 2>/dev/null
pg "$bin/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null
rm -f "$here"/trace.*.log "$here/replay.fio"
# The server is started under the recording, so every backend it forks is followed.
fslab record --dir "$tmp/data" --out "$tmp/trace" -- sh -c "
  runuser -u postgres -- '$bin/pg_ctl' -D '$tmp/data' -o \"$opts\" -w -l '$tmp/log' start >/dev/null &&
  runuser -u postgres -- '$bin/pgbench' -h '$tmp' -c 4 -j 2 -T 3 postgres | grep -E '^(tps|number of transactions actually)' &&
  runuser -u postgres -- '$bin/pg_ctl' -D '$tmp/data' -m fast -w stop >/dev/null"
cp "$tmp"/trace/* "$here"/
