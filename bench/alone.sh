#!/usr/bin/env bash
# Lockstep alone: a quick sweep for tuning (no MariaDB; bench/primary.sh
# compares with it). Starts a fresh server on 127.0.0.1:$PORT, prepares
# sysbench's 4 x 100k rows, warms up with 10 s of oltp_update_non_index,
# then runs each workload x threads for SECS seconds and prints TPS, QPS,
# p95, server CPU per query (/proc/PID/stat) and average commit group.
#
#   bench/alone.sh                                        # defaults below
#   GOMAXPROCS=8 bench/alone.sh                           # the environment reaches the server
#   LOPTS="--binlog-parallel-flush ON" WORKLOADS=oltp_write_only THREADS=64 bench/alone.sh
#
# Needs sysbench and the mariadb client (apt), Go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${SECS:-15}
THREADS=${THREADS:-"16 64"}
WORKLOADS=${WORKLOADS:-"oltp_update_non_index oltp_write_only"}
PORT=${PORT:-25011}
B=$(mktemp -d /tmp/lockstep-alone.XXXXXX)
(cd "$ROOT" && go build -o "$B/lockstep" ./cmd/lockstep)
# shellcheck disable=SC2086
setsid "$B/lockstep" serve --port "$PORT" --http-port 0 --datadir "$B/d" ${LOPTS:-} > "$B/log" 2>&1 < /dev/null &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$B"' EXIT
q() { mariadb --no-defaults -h127.0.0.1 -P"$PORT" -uroot --skip-ssl -N -B -e "$1"; }
status() { q "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
cpu() { awk '{print $14+$15}' "/proc/$PID/stat"; }
for _ in $(seq 100); do q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
q "CREATE DATABASE sbtest"
SB="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=100000 --rand-type=uniform --db-ps-mode=disable"
$SB --threads=4 oltp_common prepare > /dev/null
$SB --threads=16 --time=10 oltp_update_non_index run > /dev/null
echo "| workload | threads | TPS | QPS | p95 ms | server CPU us/query | avg group |"
echo "|---|---|---|---|---|---|---|"
for wl in $WORKLOADS; do
  for th in $THREADS; do
    c0=$(cpu); t0=$(status Binlog_commits); g0=$(status Binlog_group_commits)
    out=$($SB --threads="$th" --time="$SECS" "$wl" run)
    c1=$(cpu); t1=$(status Binlog_commits); g1=$(status Binlog_group_commits)
    echo "$out" | awk -v wl="$wl" -v th="$th" -v secs="$SECS" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" \
        -v n=$((t1 - t0)) -v g=$((g1 - g0)) '
      /transactions:/ { tps = substr($3, 2) }
      /queries:/ { qps = substr($3, 2) }
      /95th percentile:/ { p95 = $3 }
      END { printf "| %s | %s | %.0f | %.0f | %s | %.0f | %.2f |\n", wl, th, tps, qps, p95,
              (qps > 0 ? c / hz / (qps * secs) * 1e6 : 0), (g > 0 ? n / g : 0) }'
  done
done
