#!/usr/bin/env bash
# cluster.sh - a three-member Lockstep cluster beside a three-node MariaDB
# Galera cluster (Debian's galera-4), both on this machine, in one run:
# sysbench oltp_write_only at THREADS threads with the clients on one
# node, then spread over the three.
#
#   bench/cluster.sh       # THREADS=16 SECS=30 SB_TABLES=4 SB_SIZE=50000
#
# Galera runs durable (binlog on, sync_binlog=1,
# innodb_flush_log_at_trx_commit=1: what Lockstep always is, a commit on
# disk on a majority) with wsrep_slave_threads=1 and 16, and relaxed
# (flush 2, binlog not synced: Galera's usual setting, which can lose
# commits in a coordinated crash) with 16; Lockstep with
# wsrep_slave_threads=1 and 16 (set at run time on every member). Runs
# alternate between the two clusters so that the box's noise falls on
# both; compare ratios.
#
# Reported per run: TPS, p95 latency (ms), errors (1213 conflicts that
# sysbench retries), the fraction of the run flow control held commits
# back (the largest of the members' wsrep_flow_control_paused_ns
# deltas; for Galera, the cluster was paused) and certification
# failures.
#
# Galera's joiners get the first node's data by state transfer with
# mariabackup (Debian's mariadb-backup and socat; .ci/run does not need
# them, this script does).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREADS=${THREADS:-16} SECS=${SECS:-30}
export SB_TABLES=${SB_TABLES:-4} SB_SIZE=${SB_SIZE:-50000}
BASE=${BASE:-$(mktemp -d /tmp/lockstep-cluster.XXXXXX)} RAW=$BASE/raw
mkdir -p "$RAW"
LDIR=$BASE/lockstep LPORT=${LPORT:-23411}
source "$ROOT/bench/lockstep-lib.sh"
source "$ROOT/bench/mariadb-lib.sh"

stop_all() { lcstop; for n in g3 g2 g1; do istop $n; done; }
trap stop_all EXIT

# --- Lockstep -----------------------------------------------------------
log "Lockstep: three members"
lcstart
sb_prepare "$LPORT"

# --- Galera ---------------------------------------------------------------
log "Galera: g1 alone, prepare, then g2 and g3 join by state transfer"
galera_up 'sb_prepare "${GPORT[0]}"'

# --- runs -------------------------------------------------------------------
OUT=$BASE/summary.txt
echo "# cluster.sh $(date -u +%FT%TZ) threads=$THREADS secs=$SECS tables=$SB_TABLES size=$SB_SIZE rand=$SB_RAND" | tee "$OUT"
ports() { # SYSTEM one|spread
  local p; if [ "$1" = lockstep ]; then p=($LPORT $((LPORT + 1)) $((LPORT + 2))); else p=("${GPORT[@]}"); fi
  if [ "$2" = one ]; then echo "${p[0]}"; else (IFS=,; echo "${p[*]}"); fi
}
lockstep_set() { # APPLIERS
  local n; for n in 1 2 3; do lcq $n "SET GLOBAL wsrep_slave_threads=$1"; done
}
lsnapc() { lcq "$1" "SHOW GLOBAL STATUS" | awk -F'\t' -v OFS='\t' '{ print toupper($1), $2 }' > "$2"; }
galera_set() { # durable|relaxed APPLIERS
  local flush=1 sync=1; [ "$1" = relaxed ] && flush=2 sync=0
  for n in g1 g2 g3; do
    q $n "SET GLOBAL innodb_flush_log_at_trx_commit=$flush; SET GLOBAL sync_binlog=$sync; SET GLOBAL wsrep_slave_threads=$2"
  done
  for n in g1 g2 g3; do for _ in $(seq 1 600); do [ "$(gstat $n wsrep_local_recv_queue)" = 0 ] && break; sleep 0.2; done; done
}
run() { # TAG SYSTEM PLACEMENT
  local tag=$1 sys=$2 place=$3 t0 t1 n
  if [ "$sys" = galera ]; then for n in g1 g2 g3; do q $n "FLUSH STATUS"; snap $n "$RAW/$tag.$n.before"; done
  else for n in 1 2 3; do lsnapc $n "$RAW/$tag.l$n.before"; done; fi
  t0=$(date +%s.%N)
  sb_run "$(ports "$sys" "$place")" oltp_write_only "$THREADS" "$SECS" "$RAW/$tag.sysbench.txt"
  t1=$(date +%s.%N)
  read -r tps _ p95 _ err < <(sb_parse "$RAW/$tag.sysbench.txt")
  local paused=0 certf=0 nodes="g1 g2 g3" m
  [ "$sys" = lockstep ] && nodes="l1 l2 l3"
  for m in $nodes; do
    if [ "$sys" = galera ]; then snap $m "$RAW/$tag.$m.after"; else lsnapc "${m#l}" "$RAW/$tag.$m.after"; fi
    paused=$(awk -v a="$paused" -v b="$(sdelta "$RAW/$tag.$m.before" "$RAW/$tag.$m.after" WSREP_FLOW_CONTROL_PAUSED_NS)" 'BEGIN { print (b > a) ? b : a }')
    certf=$((certf + $(sdelta "$RAW/$tag.$m.before" "$RAW/$tag.$m.after" WSREP_LOCAL_CERT_FAILURES)))
  done
  local extra
  extra=$(awk -v p="$paused" -v a="$t0" -v b="$t1" -v c="$certf" 'BEGIN { printf "fc_paused=%.3f cert_failures=%d", p / 1e9 / (b - a), c }')
  printf '%-28s tps=%-9s p95_ms=%-7s errors=%-6s %s\n' "$tag" "$tps" "$p95" "$err" "$extra" | tee -a "$OUT"
  echo "$tag $tps" >> "$RAW/tps"
}
for place in one spread; do
  lockstep_set 1; run "lockstep_st1_$place" lockstep $place
  galera_set durable 1; run "galera_durable_st1_$place" galera $place
  lockstep_set 16; run "lockstep_st16_$place" lockstep $place
  galera_set durable 16; run "galera_durable_st16_$place" galera $place
  galera_set relaxed 16; run "galera_relaxed_st16_$place" galera $place
done
echo | tee -a "$OUT"
awk '{ t[$1] = $2 }
  END {
    for (p = 1; p <= 2; p++) {
      place = p == 1 ? "one" : "spread"
      printf "clients on %-6s Lockstep/Galera durable: st1 %.2f, st16 %.2f; Lockstep st16/Galera relaxed st16 %.2f\n", place,
        t["lockstep_st1_" place] / t["galera_durable_st1_" place], t["lockstep_st16_" place] / t["galera_durable_st16_" place],
        t["lockstep_st16_" place] / t["galera_relaxed_st16_" place]
    }
  }' "$RAW/tps" | tee -a "$OUT"
echo "raw outputs: $RAW"
