#!/usr/bin/env bash
# Lockstep vs MariaDB 10.11: statement CPU cost on the OLTP read and write
# paths, side by side in one run on the same box. Both servers run
# with relaxed durability (sync_binlog=0, innodb_flush_log_at_trx_commit=2)
# and the binlog on; for every workload x threads x --db-ps-mode the two
# run back to back (the order alternates), each SECS seconds, after
# waiting for the benchmark lock (flock /tmp/bench.lock).
#
# Reported per run: QPS, TPS, and the server's CPU per query from
# /proc/PID/stat (utime+stime) deltas over the run; for Lockstep also the
# share of statements its fast path ran. Output: a Markdown table in $OUT,
# raw sysbench files in $RAW.
#
# Needs: mariadb-server mariadb-client sysbench (apt), Go. MariaDB is started
# by bench/mariadb-lib.sh on 127.0.0.1:23306, Lockstep by
# bench/lockstep-lib.sh on :23406, both under $BASE (/var/tmp/lockstep-bench);
# SB_TABLES and SB_SIZE (default 4 x 100000 rows) size the tables.
#
#   bench/hotpath.sh                        # full matrix (~25 min at SECS=15)
#   SECS=5 THREADS=4 PSMODES=auto WORKLOADS=oltp_point_select bench/hotpath.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/mariadb-lib.sh"
source "$ROOT/bench/lockstep-lib.sh"
mkdir -p "$BASE" "$RAW"
SECS=${SECS:-15}
THREADS=${THREADS:-"4 16"}
PSMODES=${PSMODES:-"disable auto"}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_only oltp_update_non_index oltp_update_index oltp_read_write"}
SB_RAND=uniform
export SB_RAND
OUT=${OUT:-$ROOT/bench/results/hotpath-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")"

N=p1; PORT=23306          # MariaDB (named instance of mariadb-lib.sh)
LPORT=23406; LDIR=$BASE/lockstep
trap 'istop $N; lstop' EXIT

write_cnf $N $PORT 1 "log-bin=$(idir $N)/binlog
binlog_format=ROW
sync_binlog=0
innodb_flush_log_at_trx_commit=2
binlog_cache_size=1M
max_binlog_size=1G"
iinit $N
istart $N
mkusers $N
lstart --sync-binlog 0 --innodb-flush-log-at-trx-commit 2
log "prepare ${SB_TABLES}x${SB_SIZE} on both"
sb_prepare $PORT
sb_prepare $LPORT

# measure SERVER WL TH PS TAG : one Markdown row
measure() {
  local who=$1 wl=$2 th=$3 ps=$4 tag=$5 pid port fast="" 
  if [ "$who" = mariadb ]; then pid=$(ipid $N); port=$PORT; else pid=$(lpid); port=$LPORT; fi
  [ "$who" = lockstep ] && lsnap "$RAW/$tag.before"
  local c0; c0=$(cpu_ticks "$pid")
  SB_PS=$ps sb_run "$port" "$wl" "$th" "$SECS" "$RAW/$tag.sysbench.txt"
  local c1; c1=$(cpu_ticks "$pid")
  if [ "$who" = lockstep ]; then
    lsnap "$RAW/$tag.after"
    local f b q
    f=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Lockstep_fastpath_statements)
    b=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Lockstep_fastpath_fallbacks)
    q=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Questions)
    fast=$(awk -v f="$f" -v q="$q" 'BEGIN { printf "%.0f%%", (q>0 ? 100*f/q : 0) }')
    [ "${b:-0}" != 0 ] && fast="$fast ($b fallbacks)"
  fi
  read -r tps qps p95 avg err < <(sb_parse "$RAW/$tag.sysbench.txt")
  awk -v who="$who" -v wl="$wl" -v th="$th" -v ps="$ps" -v tps="$tps" -v qps="$qps" -v p95="$p95" -v err="$err" \
      -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" -v secs="$SECS" -v fast="$fast" 'BEGIN {
    cpu=(c1-c0)/hz; n=qps*secs
    printf "| %s | %s | %s | %s | %.0f | %.0f | %s | %s | %.1f | %s |\n", wl, th, ps, who, qps, tps, p95, err,
      (n>0 ? cpu*1e6/n : 0), fast }'
}

{
  echo "# Lockstep vs MariaDB, statement cost ($(date -u +%FT%TZ))"
  echo
  echo "sysbench ${SB_TABLES} tables x ${SB_SIZE} rows, --rand-type=$SB_RAND, ${SECS} s per run, relaxed durability on both (sync_binlog=0, innodb_flush_log_at_trx_commit=2), client on the same $(nproc) cores. MariaDB $(q $N 'SELECT @@version'), Lockstep $(cd "$ROOT" && git rev-parse --short HEAD). CPU is the server process's utime+stime over the run divided by the queries sysbench completed."
  echo
  echo "| workload | threads | ps-mode | server | QPS | TPS | p95 ms | errors | server CPU us/query | fast path |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$OUT"
i=0
for wl in $WORKLOADS; do
  for th in $THREADS; do
    for ps in $PSMODES; do
      order="mariadb lockstep"; [ $((i % 2)) = 1 ] && order="lockstep mariadb"; i=$((i + 1))
      for who in $order; do
        log "$wl $th $ps $who"
        locked true
        measure "$who" "$wl" "$th" "$ps" "hotpath_${wl}_t${th}_${ps}_${who}" | tee -a "$OUT"
      done
    done
  done
done
log "results in $OUT"
