#!/usr/bin/env bash
# What semi-synchronous replication costs the primary: Lockstep vs MariaDB
# 10.11, side by side in one run on the same box.
#
#   MariaDB  primary 127.0.0.1:23309 -> MariaDB replica 127.0.0.1:23310
#   Lockstep primary 127.0.0.1:23406 (--mariadb-port 23407) -> MariaDB replica 127.0.0.1:23311
#
# Both replicas are the same MariaDB 10.11 configuration (semi-sync slave
# ON, GTID, single-threaded apply, durable), so the difference is the
# primary's commit path. Modes per primary: async, AFTER_SYNC,
# AFTER_COMMIT; timeout 600 s (never falls back inside a run). Durability
# full (sync_binlog=1, innodb_flush_log_at_trx_commit=1) on both primaries.
# The load is sysbench oltp_update_non_index on the primary; each replica
# is caught up (untimed) before every run, and the two primaries alternate.
#
#   bench/semisync.sh                           # 16 threads, 20 s per run, REPS=2
#   SECS=10 THREADS="4 16" REPS=1 bench/semisync.sh
#
# The table lists every run; the summary at the end gives each primary's
# mean TPS per mode and the share of its async TPS kept.
#
# Needs: mariadb-server mariadb-client sysbench (apt), Go. The MariaDB
# servers are started by bench/mariadb-lib.sh, Lockstep by
# bench/lockstep-lib.sh, all under $BASE (/var/tmp/lockstep-bench); raw
# files go to $RAW. SB_TABLES and SB_SIZE (default 4 x 100000 rows) size
# the tables.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/mariadb-lib.sh"
source "$ROOT/bench/lockstep-lib.sh"
mkdir -p "$BASE" "$RAW"
SECS=${SECS:-20}
THREADS=${THREADS:-16}
MODES=${MODES:-"async after_sync after_commit"}
REPS=${REPS:-2}   # modes run forward then backward (ABC CBA ...) to cancel drift
WL=${WL:-oltp_update_non_index}
OUT=${OUT:-$ROOT/bench/results/semisync-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")"

M=m3; MPORT=23309; R=r3; RPORT=23310      # MariaDB primary and its replica
LR=r4; LRPORT=23311                      # MariaDB replica of Lockstep
LPORT=23406; LMPORT=23407; LDIR=$BASE/lockstep
trap 'istop $R; istop $LR; istop $M; lstop' EXIT

write_cnf $M $MPORT 1 "log-bin=$(idir $M)/binlog
binlog_format=ROW
sync_binlog=1
innodb_flush_log_at_trx_commit=1
binlog_cache_size=1M
max_binlog_size=1G
rpl_semi_sync_master_timeout=600000"
for r in $R:$RPORT:2 $LR:$LRPORT:3; do
  IFS=: read -r name port sid <<< "$r"
  write_cnf "$name" "$port" "$sid" "skip-log-bin
binlog_format=ROW
relay-log=$(idir "$name")/data/relay-bin
skip-slave-start
slave_parallel_threads=0
rpl_semi_sync_slave_enabled=ON
innodb_flush_log_at_trx_commit=1
max_relay_log_size=1G"
  iinit "$name"; istart "$name"
done
iinit $M; istart $M; mkusers $M
lstart --mariadb-port $LMPORT --rpl-semi-sync-source-timeout 600000
repl_connect $R $MPORT; q $R "START SLAVE"
repl_connect $LR $LMPORT; q $LR "START SLAVE"
log "prepare ${SB_TABLES}x${SB_SIZE} on both primaries"
sb_prepare $MPORT
sb_prepare $LPORT

lgtid() { echo "0-1-$(lq 'SELECT @@global.gtid_executed' | sed 's/.*[-:]//')"; }
catch_up() {
  wait_caught_up $R "$(gvar $M gtid_binlog_pos)" 900 >/dev/null
  wait_caught_up $LR "$(lgtid)" 900 >/dev/null
}
set_mode() {  # WHO MODE
  local sql
  case $2 in
    async)        sql="SET GLOBAL rpl_semi_sync_master_enabled=OFF" ;;
    after_sync)   sql="SET GLOBAL rpl_semi_sync_master_wait_point='AFTER_SYNC'; SET GLOBAL rpl_semi_sync_master_enabled=ON" ;;
    after_commit) sql="SET GLOBAL rpl_semi_sync_master_wait_point='AFTER_COMMIT'; SET GLOBAL rpl_semi_sync_master_enabled=ON" ;;
  esac
  if [ "$1" = mariadb ]; then q $M "$sql"; q $R "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD"
  else lq "$sql"; q $LR "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD"; fi
  sleep 1
}

# measure WHO MODE TH TAG : one Markdown row
measure() {
  local who=$1 mode=$2 th=$3 tag=$4 pid port snapfn
  if [ "$who" = mariadb ]; then pid=$(ipid $M); port=$MPORT; snapfn="snap $M"; else pid=$(lpid); port=$LPORT; snapfn=lsnap; fi
  $snapfn "$RAW/$tag.before"; local c0; c0=$(cpu_ticks "$pid")
  sb_run "$port" "$WL" "$th" "$SECS" "$RAW/$tag.sysbench.txt"
  local c1; c1=$(cpu_ticks "$pid"); $snapfn "$RAW/$tag.after"
  read -r tps _ p95 _ err < <(sb_parse "$RAW/$tag.sysbench.txt")
  local yes no wt wn
  yes=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Rpl_semi_sync_master_yes_tx)
  no=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Rpl_semi_sync_master_no_tx)
  wt=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Rpl_semi_sync_master_tx_wait_time)
  wn=$(sdelta "$RAW/$tag.before" "$RAW/$tag.after" Rpl_semi_sync_master_tx_waits)
  awk -v who="$who" -v mode="$mode" -v th="$th" -v tps="$tps" -v p95="$p95" -v err="$err" -v yes="${yes:-0}" -v no="${no:-0}" \
      -v wt="${wt:-0}" -v wn="${wn:-0}" -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" -v secs="$SECS" 'BEGIN {
    trx=tps*secs
    printf "| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %.0f |\n", th, who, mode, tps, p95, err, yes, no,
      (wn>0 ? sprintf("%.0f", wt/wn) : "-"), (trx>0 ? (c1-c0)/hz*1e6/trx : 0) }'
}

{
  echo "# Semi-sync cost on the primary: Lockstep vs MariaDB ($(date -u +%FT%TZ))"
  echo
  echo "sysbench $WL, ${SB_TABLES} tables x ${SB_SIZE} rows, ${SECS} s per run, durable primaries and replicas, client and all four servers on the same $(nproc) cores. MariaDB $(q $M 'SELECT @@version'), Lockstep $(cd "$ROOT" && git rev-parse --short HEAD). Replicas: MariaDB 10.11, semi-sync slave, single-threaded apply."
  echo
  echo "| threads | primary | mode | TPS | p95 ms | errors | yes_tx | no_tx | avg wait us | primary CPU us/trx |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$OUT"
i=0
rows=$RAW/semisync_rows.txt; : > "$rows"
for th in $THREADS; do
  for rep in $(seq 1 "$REPS"); do
    modes=$MODES; [ $((rep % 2)) = 0 ] && modes=$(echo $MODES | tr ' ' '\n' | tac | tr '\n' ' ')
    for mode in $modes; do
      order="mariadb lockstep"; [ $((i % 2)) = 1 ] && order="lockstep mariadb"; i=$((i + 1))
      for who in $order; do
        set_mode "$who" "$mode"
        catch_up
        log "$who $mode $th threads (rep $rep)"
        measure "$who" "$mode" "$th" "semisync_${who}_${mode}_t${th}_r${rep}" | tee -a "$OUT" | tee -a "$rows"
      done
    done
  done
done
{
  echo
  echo "Mean TPS over $REPS repetitions, and the share of the same primary's async TPS:"
  echo
  echo "| threads | primary | async | AFTER_SYNC | AFTER_COMMIT |"
  echo "|---|---|---|---|---|"
  awk -F'|' '{gsub(/ /,""); th=$2; who=$3; mode=$4; s[th" "who" "mode]+=$5; n[th" "who" "mode]++; ths[th]=1; whos[who]=1}
    END { for (th in ths) for (who in whos) { a=s[th" "who" async"]/n[th" "who" async"]
            as=s[th" "who" after_sync"]/n[th" "who" after_sync"]; ac=s[th" "who" after_commit"]/n[th" "who" after_commit"]
            printf "| %s | %s | %.0f | %.0f (%.1f%%) | %.0f (%.1f%%) |\n", th, who, a, as, 100*as/a, ac, 100*ac/a } }' "$rows" | sort -n -t'|' -k2
} >> "$OUT"
q $M "SET GLOBAL rpl_semi_sync_master_enabled=OFF"; lq "SET GLOBAL rpl_semi_sync_master_enabled=OFF"
log "results in $OUT"
