#!/usr/bin/env bash
# Lockstep replica apply rate and CPU on a backlog, with an optional CPU
# profile or execution trace of the replica while it applies. Lockstep
# alone (bench/replica.sh compares with MariaDB).
#
# A Lockstep primary (relaxed durability, so it builds the backlog fast)
# and a Lockstep replica start on loopback; sysbench prepares 4 x 100k rows,
# the replica catches up, its SQL thread stops, the primary runs
# oltp_update_index with 16 threads for LOAD seconds, and once the replica
# has fetched all of it, START REPLICA SQL_THREAD is timed until
# WAIT_FOR_EXECUTED_GTID_SET returns. Reported: transactions applied, trx/s,
# replica CPU per transaction (/proc/PID/stat), commit groups.
#
#   bench/replica-profile.sh                              # durable replica, 0 workers
#   WORKERS=4 TYPE=WRITESET bench/replica-profile.sh
#   ROPTS="--sync-binlog 0 --innodb-flush-log-at-trx-commit 2" bench/replica-profile.sh
#   PROF=5 bench/replica-profile.sh    # CPU profile: $B/cpu.pprof (go tool pprof)
#   TRACE=2 bench/replica-profile.sh   # execution trace: $B/trace.out (go tool trace)
#
# Needs sysbench and the mariadb client (apt), Go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-/tmp/lockstep-replica-profile}
LOAD=${LOAD:-30}
WORKERS=${WORKERS:-0}
TYPE=${TYPE:-LOGICAL_CLOCK}
ROPTS=${ROPTS:-}
PPORT=${PPORT:-24001}; RPORT=${RPORT:-24002}
rm -rf "$B"; mkdir -p "$B"
(cd "$ROOT" && go build -o "$B/lockstep" ./cmd/lockstep)
q() { mariadb --no-defaults -h127.0.0.1 -P"$1" -uroot --skip-ssl -N -B -e "$2"; }
stop() { kill "$(cat "$B/p.pid")" "$(cat "$B/r.pid")" 2>/dev/null || true; }
trap stop EXIT
setsid "$B/lockstep" serve --port $PPORT --http-port 0 --datadir "$B/p" --lockstep-cache-size 512M \
  --sync-binlog 0 --innodb-flush-log-at-trx-commit 2 > "$B/p.log" 2>&1 < /dev/null & echo $! > "$B/p.pid"
# shellcheck disable=SC2086
setsid "$B/lockstep" serve --port $RPORT --server-id 2 --http-port $((RPORT + 80)) --lockstep-http-pprof=ON --datadir "$B/r" --lockstep-cache-size 512M \
  --skip-replica-start --replica-parallel-workers "$WORKERS" --replica-parallel-type "$TYPE" $ROPTS > "$B/r.log" 2>&1 < /dev/null & echo $! > "$B/r.pid"
for _ in $(seq 100); do q $PPORT "SELECT 1" >/dev/null 2>&1 && q $RPORT "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
q $PPORT "CREATE DATABASE sbtest"
SB="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PPORT --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=100000 --rand-type=uniform --db-ps-mode=disable"
$SB --threads=4 oltp_common prepare > /dev/null
q $RPORT "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=$PPORT, SOURCE_USER='root', SOURCE_AUTO_POSITION=1; START REPLICA"
q $RPORT "SELECT WAIT_FOR_EXECUTED_GTID_SET('$(q $PPORT 'SELECT @@gtid_executed')', 900)" > /dev/null
q $RPORT "STOP REPLICA SQL_THREAD"
$SB --threads=16 --time="$LOAD" oltp_update_index run | grep -E "transactions:"
target=$(q $PPORT "SELECT @@gtid_executed" | tr -d '\n')
for _ in $(seq 1200); do
  got=$(mariadb --no-defaults -h127.0.0.1 -P$RPORT -uroot --skip-ssl -e "SHOW REPLICA STATUS\G" | awk '/Retrieved_Gtid_Set/{print $2}')
  [ "$got" = "$target" ] && break; sleep 0.5
done
status() { q $RPORT "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
cpu() { awk '{print $14+$15}' "/proc/$(cat "$B/r.pid")/stat"; }
c0=$(status Binlog_commits); g0=$(status Binlog_group_commits); cpu0=$(cpu); t0=$(date +%s.%N)
q $RPORT "START REPLICA SQL_THREAD"
bg=""
if [ -n "${PROF:-}" ]; then curl -s -o "$B/cpu.pprof" "http://127.0.0.1:$((RPORT + 80))/debug/pprof/profile?seconds=$PROF" & bg=$!; fi
if [ -n "${TRACE:-}" ]; then sleep 1; curl -s -o "$B/trace.out" "http://127.0.0.1:$((RPORT + 80))/debug/pprof/trace?seconds=$TRACE" & bg=$!; fi
q $RPORT "SELECT WAIT_FOR_EXECUTED_GTID_SET('$target', 900)" > /dev/null
t1=$(date +%s.%N); cpu1=$(cpu); c1=$(status Binlog_commits); g1=$(status Binlog_group_commits)
[ -n "$bg" ] && wait "$bg"
hz=$(getconf CLK_TCK)
awk -v n=$((c1 - c0)) -v g=$((g1 - g0)) -v s="$(echo "$t1 - $t0" | bc)" -v c=$((cpu1 - cpu0)) -v hz="$hz" 'BEGIN {
  printf "applied %d transactions in %.2f s: %.0f trx/s, replica CPU %.1f s (%.0f us/trx), %d commit groups (%.1f trx/group)\n",
    n, s, n / s, c / hz, c / hz / n * 1e6, g, (g > 0 ? n / g : 0) }'
echo "row checks from the read-ahead: $(status Replica_prefetch_used) used, $(status Replica_prefetch_stale) read again"
