#!/usr/bin/env bash
# A/B: two builds of Lockstep side by side, to show that a change costs
# nothing (or what it costs). Builds OLD and NEW (git revisions; NEW
# defaults to the working tree) and runs the same sysbench workload
# against each in turn, alternating, ROUNDS times per durability mode, on
# a fresh data directory each run. The box is noisy: read the ratio of the
# means, and the spread of the rounds. Each run also reports the server's
# CPU time per transaction (user + system, from /proc), which varies less
# than throughput when the client and the server share the cores.
#
#   bench/ab.sh HEAD~3                         # HEAD~3 against the working tree
#   MODES=relaxed ROUNDS=6 bench/ab.sh v1 v2
#   WORKLOAD=oltp_write_only THREADS=64 bench/ab.sh HEAD~1
#   SYSBENCH_OPTS=--db-ps-mode=disable bench/ab.sh HEAD~1   # text protocol
#   SB_SIZE=100000 WORKLOAD=oltp_point_select bench/ab.sh HEAD~1   # 4 x 100k rows
#
# Needs sysbench and the mariadb client (apt), Go, git.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=${1:?usage: bench/ab.sh OLD_REV [NEW_REV]}
NEW=${2:-}
MODES=${MODES:-"relaxed durable"}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-15}
THREADS=${THREADS:-16}
WORKLOAD=${WORKLOAD:-oltp_update_non_index}
SYSBENCH_OPTS=${SYSBENCH_OPTS:-}
SB_SIZE=${SB_SIZE:-10000}
PORT=${PORT:-25021}
B=$(mktemp -d /tmp/lockstep-ab.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  for w in old new; do [ -d "$B/$w" ] && git -C "$ROOT" worktree remove --force "$B/$w" 2>/dev/null; done
  rm -rf "$B"
}
trap cleanup EXIT
build() { # name rev
  if [ -z "$2" ]; then
    (cd "$ROOT" && go build -o "$B/lockstep-$1" ./cmd/lockstep)
  else
    git -C "$ROOT" worktree add --detach "$B/$1" "$2" >/dev/null 2>&1
    (cd "$B/$1" && go build -o "$B/lockstep-$1" ./cmd/lockstep)
  fi
}
build old "$OLD"
build new "$NEW"
q() { mariadb --no-defaults -h127.0.0.1 -P"$PORT" -uroot --skip-ssl -N -B -e "$1"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
run() { # name mode -> TPS and server CPU us per transaction
  local flags="--sync-binlog=0 --innodb-flush-log-at-trx-commit=2"
  [ "$2" = durable ] && flags="--sync-binlog=1 --innodb-flush-log-at-trx-commit=1"
  rm -rf "$B/d"
  # shellcheck disable=SC2086
  setsid "$B/lockstep-$1" serve --port "$PORT" --http-port 0 --datadir "$B/d" --lockstep-cache-size 256M $flags > "$B/log" 2>&1 < /dev/null &
  PID=$!
  for _ in $(seq 100); do q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
  q "CREATE DATABASE sbtest"
  local sb="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=$SB_SIZE"
  $sb "$WORKLOAD" prepare > /dev/null
  local t0 t1 out
  t0=$(cpu_ticks "$PID")
  # shellcheck disable=SC2086
  out=$($sb --threads="$THREADS" --time="$SECS" $SYSBENCH_OPTS "$WORKLOAD" run)
  t1=$(cpu_ticks "$PID")
  printf '%s\n' "$out" | awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" \
    '/transactions:/ { n = $2; gsub("[(]", "", $3); tps = $3 } END { printf "%s %.1f\n", tps, t * 1e6 / hz / n }'
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}
echo "$WORKLOAD, $THREADS threads, ${SECS} s runs${SYSBENCH_OPTS:+, $SYSBENCH_OPTS}; old=$OLD new=${NEW:-working tree}"
for mode in $MODES; do
  rows=""
  for r in $(seq "$ROUNDS"); do
    o=$(run old "$mode"); n=$(run new "$mode")
    echo "$mode round $r: old ${o% *} TPS ${o#* } us/trx, new ${n% *} TPS ${n#* } us/trx"
    rows="$rows$o $n"$'\n'
  done
  printf '%s' "$rows" | awk -v m="$mode" '{ o += $1; oc += $2; n += $3; nc += $4 } END {
    printf "%s: old %.0f new %.0f TPS (means of %d), new/old %.3f; server CPU per transaction old %.1f new %.1f us, new/old %.3f\n", m, o/NR, n/NR, NR, n/o, oc/NR, nc/NR, nc/oc }'
done
