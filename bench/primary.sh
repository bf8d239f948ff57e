#!/usr/bin/env bash
# Lockstep vs MariaDB 10.11: the primary alone, side by side in one run on
# the same box, both with the binlog on and the same sysbench command.
#
#   durability full   : sync_binlog=1, innodb_flush_log_at_trx_commit=1 (both)
#   durability relaxed: sync_binlog=0, innodb_flush_log_at_trx_commit=2 (both)
#
# For every workload x threads the two servers run back to back (the order
# alternates), each SECS seconds, after waiting for the benchmark lock
# (flock /tmp/bench.lock). Output: one line per run in $OUT (Markdown
# table) plus raw sysbench files in $RAW.
#
# Needs: mariadb-server mariadb-client sysbench (apt), Go. MariaDB is started
# by bench/mariadb-lib.sh on 127.0.0.1:23306, Lockstep by
# bench/lockstep-lib.sh on :23406, both under $BASE (/var/tmp/lockstep-bench);
# SB_TABLES and SB_SIZE (default 4 x 100000 rows) size the tables.
#
#   bench/primary.sh                       # full matrix (~35 min at SECS=20)
#   SECS=10 THREADS="4 16" WORKLOADS=oltp_update_non_index DURS=full bench/primary.sh
#   LOPTS="--lockstep-gomaxprocs 8" bench/primary.sh   # extra Lockstep serve flags
#   FSYNC_DELAY_US=1000 DURS=full bench/primary.sh     # a slow disk: every fsync
#                                                      # of both servers 1 ms late
#
# For Lockstep the table also says how many transactions were in the
# commit pipeline when each fsync began (how many could have shared it,
# against the average group), the average fsync time, and the run's TPS
# as a share of the physical limit threads / (fsync time + server CPU
# time per transaction): what the clients could do if every fsync carried
# every one of them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/mariadb-lib.sh"
source "$ROOT/bench/lockstep-lib.sh"
mkdir -p "$BASE" "$RAW"
SECS=${SECS:-20}
THREADS=${THREADS:-"1 4 16 64"}
WORKLOADS=${WORKLOADS:-"oltp_update_non_index oltp_update_index oltp_write_only"}
DURS=${DURS:-"full relaxed"}
SB_RAND=uniform
export SB_RAND
OUT=${OUT:-$ROOT/bench/results/primary-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")"

N=p1; PORT=23306          # MariaDB (named instance of mariadb-lib.sh)
LPORT=23406; LDIR=$BASE/lockstep
trap 'istop $N; lstop' EXIT

# ---- MariaDB instance
write_cnf $N $PORT 1 "log-bin=$(idir $N)/binlog
binlog_format=ROW
sync_binlog=1
innodb_flush_log_at_trx_commit=1
binlog_cache_size=1M
max_binlog_size=1G"
iinit $N
istart $N
mkusers $N
# shellcheck disable=SC2086
lstart ${LOPTS:-}
log "prepare ${SB_TABLES}x${SB_SIZE} on both"
sb_prepare $PORT
sb_prepare $LPORT

# measure SERVER WL TH TAG : one Markdown row
measure() {
  local who=$1 wl=$2 th=$3 tag=$4 pid snapfn port
  if [ "$who" = mariadb ]; then pid=$(ipid $N); port=$PORT; snapfn="snap $N"; else pid=$(lpid); port=$LPORT; snapfn=lsnap; fi
  $snapfn "$RAW/$tag.before"; local c0; c0=$(cpu_ticks "$pid")
  sb_run "$port" "$wl" "$th" "$SECS" "$RAW/$tag.sysbench.txt"
  local c1; c1=$(cpu_ticks "$pid"); $snapfn "$RAW/$tag.after"
  read -r tps _ p95 _ err < <(sb_parse "$RAW/$tag.sysbench.txt")
  local commits groups fsyncs incommit=0 fsyncus=0
  commits=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Binlog_commits)
  groups=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Binlog_group_commits)
  if [ "$who" = mariadb ]; then
    # InnoDB's fsyncs plus one binlog fsync per group when sync_binlog=1
    # (MariaDB has no binlog fsync counter).
    fsyncs=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Innodb_data_fsyncs)
    [ "$(q $N 'SELECT @@sync_binlog')" = 1 ] && fsyncs=$((fsyncs + groups))
  else
    fsyncs=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Lockstep_binlog_fsyncs)
    incommit=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Lockstep_binlog_fsync_trx_in_commit)
    fsyncus=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Lockstep_binlog_fsync_microseconds)
  fi
  awk -v who="$who" -v wl="$wl" -v th="$th" -v tps="$tps" -v p95="$p95" -v err="$err" -v c="$commits" -v g="$groups" \
      -v f="$fsyncs" -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" -v secs="$SECS" \
      -v inc="$incommit" -v fus="$fsyncus" 'BEGIN {
    cpu=(c1-c0)/hz; trx=tps*secs; cpt=(trx>0 ? cpu*1e6/trx : 0)
    if (who == "lockstep" && f > 0) {
      fs=fus/f; lim=th*1e6/(fs+cpt)
      extra=sprintf("%.1f | %.2f | %.0f%%", inc/f, fs/1000, (lim>0 ? 100*tps/lim : 0))
    } else extra="- | - | -"
    printf "| %s | %s | %s | %.0f | %s | %s | %.2f | %s | %.2f | %.0f |\n", wl, th, who, tps, p95, err,
      (g>0 ? c/g : 0), extra, (trx>0 ? f/trx : 0), cpt }'
}

{
  echo "# Lockstep vs MariaDB, primary alone ($(date -u +%FT%TZ))"
  echo
  echo "sysbench ${SB_TABLES} tables x ${SB_SIZE} rows, --rand-type=$SB_RAND, --db-ps-mode=$SB_PS, ${SECS} s per run, client on the same $(nproc) cores. MariaDB $(q $N 'SELECT @@version'), Lockstep $(cd "$ROOT" && git rev-parse --short HEAD)${LOPTS:+ with $LOPTS}.${FSYNC_DELAY_US:+ Every fsync and fdatasync of both servers delayed by ${FSYNC_DELAY_US} us (strace).}"
} > "$OUT"
i=0
for dur in $DURS; do
  if [ $dur = full ]; then sb=1; fl=1; else sb=0; fl=2; fi
  q $N "SET GLOBAL sync_binlog=$sb; SET GLOBAL innodb_flush_log_at_trx_commit=$fl"
  lq "SET GLOBAL sync_binlog=$sb; SET GLOBAL innodb_flush_log_at_trx_commit=$fl"
  { echo; echo "## durability $dur (sync_binlog=$sb, innodb_flush_log_at_trx_commit=$fl)"; echo
    echo "| workload | threads | server | TPS | p95 ms | errors | avg group | in commit at fsync | fsync ms | of limit | fsyncs/trx | server CPU us/trx |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"; } >> "$OUT"
  for wl in $WORKLOADS; do
    for th in $THREADS; do
      order="mariadb lockstep"; [ $((i % 2)) = 1 ] && order="lockstep mariadb"; i=$((i + 1))
      for who in $order; do
        log "$dur $wl $th $who"
        locked true
        measure "$who" "$wl" "$th" "primary_${dur}_${wl}_t${th}_${who}" | tee -a "$OUT"
      done
    done
  done
done
log "results in $OUT"
