#!/usr/bin/env bash
# Replica apply: Lockstep vs MariaDB 10.11, side by side in one run on the
# same box. Both replicas are durable (Lockstep: sync_binlog=1; MariaDB:
# innodb_flush_log_at_trx_commit=1, no binlog).
#
# backlog  The same backlog for both: a MariaDB primary (relaxed
#          durability, so it builds a backlog fast) runs sysbench
#          oltp_update_index with 16 threads for LOAD_SECS while the
#          replicas' SQL threads are stopped. Each replica mode then starts
#          from the same snapshot, fetches the relay log (untimed), and the
#          SQL thread is timed until it reaches the primary's last GTID.
#          MariaDB: single-threaded, conservative and optimistic with 16
#          threads. Lockstep (replicating MariaDB by GTID): LOGICAL_CLOCK
#          (MariaDB's commit ids) and WRITESET with 0/4/16 workers.
# serial   A single-threaded Lockstep primary with COMMIT_ORDER tracking (a
#          fully serial last_committed chain) builds a backlog; a Lockstep
#          replica applies it with LOGICAL_CLOCK and with WRITESET, which
#          recomputes dependencies from row keys.
# live     Primary and replica of the same kind (Lockstep -> Lockstep,
#          MariaDB -> MariaDB), both durable; sysbench on the primary for
#          LIVE_SECS per thread count; replica lag (transactions and
#          seconds) at the end and the catch-up time.
# cross    The same with a MariaDB primary and a Lockstep replica (the
#          faster primary on this box), 0 and 4 workers.
#
#   bench/replica.sh                               # all phases
#   PHASES=backlog LOAD_SECS=30 bench/replica.sh
#   PHASES=live LIVE_SECS=20 THREADS="1 4 16 64" bench/replica.sh
#
# Needs: mariadb-server mariadb-client sysbench (apt), Go. The MariaDB
# servers are started by bench/mariadb-lib.sh, the Lockstep ones below, all
# under $BASE (/var/tmp/lockstep-bench); raw files go to $RAW. SB_TABLES and
# SB_SIZE (default 4 x 100000 rows) size the tables.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/mariadb-lib.sh"
mkdir -p "$BASE" "$RAW"
PHASES=${PHASES:-"backlog serial live cross"}
LOAD_SECS=${LOAD_SECS:-60}
SERIAL_SECS=${SERIAL_SECS:-30}
LIVE_SECS=${LIVE_SECS:-20}
THREADS=${THREADS:-"1 16 64"}
WORKLOADS=${WORKLOADS:-"oltp_update_index oltp_write_only"}
APPLY_CAP=${APPLY_CAP:-300}
LMODES=${LMODES:-"LOGICAL_CLOCK:0 LOGICAL_CLOCK:4 LOGICAL_CLOCK:16 WRITESET:4 WRITESET:16"}
MMODES=${MMODES:-"st cons16 opt16"}
OUT=${OUT:-$ROOT/bench/results/replica-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")"
HZ=$(getconf CLK_TCK)

M=m5; MPORT=23330; R=r5; RPORT=23331      # MariaDB primary and replica
LBIN=$BASE/lockstep-bin/lockstep
mkdir -p "$(dirname "$LBIN")"
(cd "$ROOT" && go build -o "$LBIN" ./cmd/lockstep)

# --- Lockstep instances: ls_* NAME PORT ---------------------------------
ldir() { echo "$BASE/$1"; }
lsq() { local port=$1; shift; mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot --skip-ssl -N -B -e "$*"; }
lspid() { [ -s "$(ldir "$1")/lockstep.pid" ] && cat "$(ldir "$1")/lockstep.pid" || true; }
ls_stop() {
  local p; p=$(lspid "$1")
  if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null || true; for _ in $(seq 1 600); do [ -d /proc/$p ] || break; sleep 0.1; done; fi
  rm -f "$(ldir "$1")/lockstep.pid"
}
ls_start() {  # NAME PORT [serve flags]; keeps the data directory
  local n=$1 port=$2; shift 2; local d; d=$(ldir "$n")
  ls_stop "$n"; mkdir -p "$d"
  setsid "$LBIN" serve --port "$port" --datadir "$d/data" --http-port 0 --lockstep-cache-size 512M "$@" \
    >> "$d/server.log" 2>&1 < /dev/null &
  echo $! > "$d/lockstep.pid"
  for _ in $(seq 1 300); do lsq "$port" "SELECT 1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  log "lockstep $n did not start"; tail "$d/server.log"; return 1
}
ls_users() {
  lsq "$1" "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO sbtest@'127.0.0.1';
            CREATE USER IF NOT EXISTS repl@'127.0.0.1' IDENTIFIED BY 'repl'; GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1';
            CREATE DATABASE IF NOT EXISTS sbtest"
}
lstatus() { lsq "$1" "SHOW GLOBAL STATUS LIKE '$2'" | cut -f2; }
lfield() { mariadb --no-defaults -h127.0.0.1 -P"$1" -uroot --skip-ssl -e "SHOW REPLICA STATUS\\G" | awk -v f="$2" -F': ' '$1 ~ "^ *"f"$" {print $2}'; }
lastno() { local g; g=$(tr -d '\n' <<< "$1"); g=${g##*[-:]}; echo "${g:-0}"; }   # "uuid:1-123" -> 123
cleanup() { istop $R; istop $M; for n in lp lr; do ls_stop $n; done; }
trap cleanup EXIT

{
  echo "# Replica apply: Lockstep vs MariaDB 10.11"
  echo
  echo "$(date -u +%FT%TZ), $(nproc) CPUs, commit $(cd "$ROOT" && git rev-parse --short HEAD); tables ${SB_TABLES}x${SB_SIZE}."
  echo "Command: \`PHASES=\"$PHASES\" LOAD_SECS=$LOAD_SECS SERIAL_SECS=$SERIAL_SECS LIVE_SECS=$LIVE_SECS THREADS=\"$THREADS\" bench/replica.sh\`"
  echo
} > "$OUT"

mariadb_replica_cnf() {  # NAME PORT SID
  write_cnf "$1" "$2" "$3" "skip-log-bin
binlog_format=ROW
relay-log=$(idir "$1")/data/relay-bin
skip-slave-start
innodb_flush_log_at_trx_commit=1
slave_parallel_threads=0
max_relay_log_size=1G"
}
mode_args() {
  case $1 in
    st)     echo "--slave-parallel-threads=0" ;;
    cons16) echo "--slave-parallel-threads=16 --slave-parallel-mode=conservative" ;;
    opt16)  echo "--slave-parallel-threads=16 --slave-parallel-mode=optimistic" ;;
  esac
}

mariadb_primary_cnf() {  # SYNC_BINLOG TRX_COMMIT
  write_cnf $M $MPORT 1 "log-bin=$(idir $M)/binlog
binlog_format=ROW
sync_binlog=$1
innodb_flush_log_at_trx_commit=$2
binlog_cache_size=1M
max_binlog_size=1G"
}
# Users and the sbtest database, the users without binlogging: MariaDB's own
# privileges mean nothing to a Lockstep replica.
m_users_unlogged() {
  q $M "SET sql_log_bin=0; CREATE USER sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO sbtest@'127.0.0.1';
        CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'repl'; GRANT ALL ON *.* TO repl@'127.0.0.1'; SET sql_log_bin=1; CREATE DATABASE sbtest"
}

LIVE_HDR="| pair | workload | threads | primary TPS | lag (trx) | Seconds_Behind | catch-up s | replica CPU s |
|---|---|---|---|---|---|---|---|"
# l_live_row LABEL PRIMARY_PORT REPLICA_PORT WL THREADS TAG TARGET_CMD WAIT_FN:
# sysbench on the primary while the Lockstep replica "lr" follows; then its
# lag (last transaction numbers of TARGET_CMD's GTID position and of the
# replica's gtid_executed) and its catch-up time through WAIT_FN.
l_live_row() {
  local label=$1 pport=$2 rport=$3 wl=$4 th=$5 tag=$6 target_cmd=$7 wait=$8
  local rp c0 c1 g rn sbm t0 t1 tps
  rp=$(lspid lr); c0=$(cpu_ticks "$rp")
  sb_run "$pport" "$wl" "$th" "$LIVE_SECS" "$RAW/$tag.txt"
  g=$(eval "$target_cmd" | tr -d '\n')
  rn=$(lastno "$(lsq "$rport" 'SELECT @@gtid_executed')")
  sbm=$(lfield "$rport" Seconds_Behind_Source)
  t0=$(date +%s.%N)
  lsq "$rport" "SELECT $wait('$g', 900)" >/dev/null
  t1=$(date +%s.%N); c1=$(cpu_ticks "$rp")
  tps=$(sb_parse "$RAW/$tag.txt" | cut -d' ' -f1)
  awk -v m="$label" -v wl="$wl" -v th="$th" -v tps="$tps" -v lag=$(( $(lastno "$g") - rn )) -v sbm="$sbm" \
      -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v hz="$HZ" \
      'BEGIN{ printf "| %s | %s | %s | %s | %d | %s | %.2f | %.1f |\n", m, wl, th, tps, lag, sbm, t1-t0, (c1-c0)/hz }' | tee -a "$OUT"
}

# l_apply_timed PORT NAME TARGET TAG: start the SQL thread of a Lockstep
# replica whose relay log holds the backlog; time it to TARGET.
l_apply_timed() {
  local port=$1 n=$2 target=$3 wait=$4 tag=$5
  local p; p=$(lspid "$n")
  local a0; a0=$(lstatus "$port" Replica_transactions_applied)
  local c0; c0=$(cpu_ticks "$p")
  local out; out=$(lsq "$port" "SELECT UNIX_TIMESTAMP(NOW(6)); START REPLICA SQL_THREAD; SELECT $wait('$target', $APPLY_CAP); SELECT UNIX_TIMESTAMP(NOW(6))")
  local c1; c1=$(cpu_ticks "$p")
  local a1; a1=$(lstatus "$port" Replica_transactions_applied)
  local t0 res t1
  t0=$(sed -n 1p <<< "$out"); res=$(sed -n 2p <<< "$out"); t1=$(sed -n 3p <<< "$out")
  awk -v tag="$tag" -v n=$((a1-a0)) -v t0="$t0" -v t1="$t1" -v res="$res" -v c0="$c0" -v c1="$c1" -v hz="$HZ" \
      -v dd="$(lstatus "$port" Replica_dependency_distance_avg)" -v par="$(lstatus "$port" Replica_parallelism_avg)" \
      'BEGIN{ d=t1-t0; printf "| %s | %d | %.2f | %.0f | %s | %.1f | %s | %s |\n", tag, n, d, n/d, (res==0?"yes":"no"), (c1-c0)/hz, dd, par }'
}
APPLY_HDR="| replica mode | applied trx | seconds | trx/s | reached target | replica CPU s | dep. distance avg | parallelism avg |
|---|---|---|---|---|---|---|---|"
m_apply_row() {  # apply_timed output -> table row
  awk '{ printf "| %s | %d | %.2f | %.0f | %s | %.1f | - | - |\n", $1, $2, $3, $4, ($5==0?"yes":"no"), $7 }'
}

if [[ " $PHASES " == *" backlog "* ]]; then
  log "backlog: MariaDB primary, MariaDB and Lockstep replicas"
  mariadb_primary_cnf 0 2
  mariadb_replica_cnf $R $RPORT 2
  iinit $M; iinit $R; istart $M; istart $R
  m_users_unlogged
  rm -rf "$(ldir lr)"
  ls_start lr 23430 --server-id 3 --skip-replica-start
  lsq 23430 "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=$MPORT, SOURCE_USER='repl', SOURCE_PASSWORD='repl', SOURCE_CONNECT_RETRY=1; START REPLICA"
  repl_connect $R $MPORT; q $R "START SLAVE"
  log "prepare ${SB_TABLES}x${SB_SIZE}"
  sb_prepare $MPORT
  T0=$(gvar $M gtid_binlog_pos)
  wait_caught_up $R "$T0" 900 >/dev/null
  lsq 23430 "SELECT MASTER_GTID_WAIT('$T0', 900)" >/dev/null
  # snapshots
  q $R "STOP SLAVE; RESET SLAVE"; istop $R
  rm -rf "$(idir $R)/base"; cp -a "$(idir $R)/data" "$(idir $R)/base"
  lsq 23430 "STOP REPLICA"; ls_stop lr
  rm -rf "$(ldir lr)/base"; cp -a "$(ldir lr)/data" "$(ldir lr)/base"
  log "backlog load ${LOAD_SECS}s"
  LOADLINE=$(measure_run $M $MPORT oltp_update_index 16 "$LOAD_SECS" replica_backlog_load)
  TARGET=$(gvar $M gtid_binlog_pos)
  {
    echo "## Backlog: the same MariaDB-produced backlog for both"
    echo
    echo "MariaDB primary (sync_binlog=0, innodb_flush_log_at_trx_commit=2), sysbench oltp_update_index, 16 threads, ${LOAD_SECS} s: $(awk '{print $2}' <<< "$LOADLINE") TPS; backlog up to \`$TARGET\`. Replicas durable, timed from START SLAVE/REPLICA SQL_THREAD until MASTER_GTID_WAIT returns."
    echo
    echo "$APPLY_HDR"
  } >> "$OUT"
  for mode in $MMODES; do
    istop $R; rm -rf "$(idir $R)/data"; cp -a "$(idir $R)/base" "$(idir $R)/data"
    # shellcheck disable=SC2046  # mode_args prints several options
    istart $R $(mode_args $mode)
    repl_connect $R $MPORT; q $R "START SLAVE IO_THREAD"
    for _ in $(seq 1 1200); do [ "$(slave_field $R Gtid_IO_Pos)" = "$TARGET" ] && break; sleep 0.2; done
    sync; log "MariaDB apply $mode"
    apply_timed $R "$TARGET" "$APPLY_CAP" "MariaDB_$mode" | m_apply_row | tee -a "$OUT"
  done
  istop $R
  for lm in $LMODES; do
    typ=${lm%%:*}; w=${lm##*:}
    ls_stop lr; rm -rf "$(ldir lr)/data"; cp -a "$(ldir lr)/base" "$(ldir lr)/data"
    ls_start lr 23430 --server-id 3 --skip-replica-start --replica-parallel-type "$typ" --replica-parallel-workers "$w"
    lsq 23430 "START REPLICA IO_THREAD"
    want=$(seqno "$TARGET")
    for _ in $(seq 1 1200); do [ "$(lastno "$(lfield 23430 Retrieved_Gtid_Set)")" = "$want" ] && break; sleep 0.2; done
    sync; log "Lockstep apply $typ $w"
    l_apply_timed 23430 lr "$TARGET" MASTER_GTID_WAIT "Lockstep_${typ}_w$w" | tee -a "$OUT"
  done
  ls_stop lr; istop $M
  echo >> "$OUT"
fi

if [[ " $PHASES " == *" serial "* ]]; then
  log "serial: single-threaded Lockstep primary, COMMIT_ORDER"
  rm -rf "$(ldir lp)" "$(ldir lr)"
  ls_start lp 23431 --binlog-transaction-dependency-tracking COMMIT_ORDER --sync-binlog 0 --innodb-flush-log-at-trx-commit 2
  ls_users 23431
  ls_start lr 23432 --server-id 2 --skip-replica-start
  lsq 23432 "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=23431, SOURCE_USER='root', SOURCE_CONNECT_RETRY=1; START REPLICA"
  sb_prepare 23431
  lsq 23432 "SELECT WAIT_FOR_EXECUTED_GTID_SET('$(lsq 23431 'SELECT @@gtid_executed')', 900)" >/dev/null
  lsq 23432 "STOP REPLICA"; ls_stop lr
  rm -rf "$(ldir lr)/base"; cp -a "$(ldir lr)/data" "$(ldir lr)/base"
  sb_run 23431 oltp_update_index 1 "$SERIAL_SECS" "$RAW/replica_serial_load.txt"
  TARGET=$(lsq 23431 "SELECT @@gtid_executed" | tr -d '\n')
  {
    echo "## A single-threaded primary's stream"
    echo
    echo "Lockstep primary, binlog_transaction_dependency_tracking=COMMIT_ORDER, sysbench oltp_update_index, 1 thread, ${SERIAL_SECS} s: $(sb_parse "$RAW/replica_serial_load.txt" | cut -d' ' -f1) TPS (every transaction's last_committed is its predecessor). Lockstep replica durable."
    echo
    echo "$APPLY_HDR"
  } >> "$OUT"
  for lm in LOGICAL_CLOCK:4 WRITESET:4 WRITESET:16; do
    typ=${lm%%:*}; w=${lm##*:}
    ls_stop lr; rm -rf "$(ldir lr)/data"; cp -a "$(ldir lr)/base" "$(ldir lr)/data"
    ls_start lr 23432 --server-id 2 --skip-replica-start --replica-parallel-type "$typ" --replica-parallel-workers "$w"
    lsq 23432 "START REPLICA IO_THREAD"
    want=$(lastno "$TARGET")
    for _ in $(seq 1 1200); do [ "$(lastno "$(lfield 23432 Retrieved_Gtid_Set)")" = "$want" ] && break; sleep 0.2; done
    sync; log "Lockstep serial apply $typ $w"
    l_apply_timed 23432 lr "$TARGET" WAIT_FOR_EXECUTED_GTID_SET "Lockstep_${typ}_w$w" | tee -a "$OUT"
  done
  ls_stop lr; ls_stop lp
  echo >> "$OUT"
fi

if [[ " $PHASES " == *" live "* ]]; then
  log "live"
  {
    echo "## Live: replica lag at the end of each run"
    echo
    echo "Primary and replica both durable (sync_binlog=1, innodb_flush_log_at_trx_commit=1). ${LIVE_SECS} s per run. Lag = transactions the replica is behind when the load stops, and Seconds_Behind at that moment; catch-up = time until it has everything."
    echo
    echo "$LIVE_HDR"
  } >> "$OUT"
  mariadb_primary_cnf 1 1
  mariadb_replica_cnf $R $RPORT 2
  iinit $M; iinit $R; istart $M; istart $R; mkusers $M
  repl_connect $R $MPORT; q $R "START SLAVE"
  sb_prepare $MPORT
  wait_caught_up $R "$(gvar $M gtid_binlog_pos)" 900 >/dev/null
  rm -rf "$(ldir lp)" "$(ldir lr)"
  ls_start lp 23431; ls_users 23431
  ls_start lr 23432 --server-id 2 --skip-replica-start
  lsq 23432 "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=23431, SOURCE_USER='root', SOURCE_CONNECT_RETRY=1; START REPLICA"
  sb_prepare 23431
  lsq 23432 "SELECT WAIT_FOR_EXECUTED_GTID_SET('$(lsq 23431 'SELECT @@gtid_executed')', 900)" >/dev/null
  for wl in $WORKLOADS; do
    for th in $THREADS; do
      for mode in $MMODES; do
        q $R "STOP SLAVE"; q $R "SET GLOBAL slave_parallel_threads=$( [ $mode = st ] && echo 0 || echo 16)"
        [ $mode != st ] && q $R "SET GLOBAL slave_parallel_mode='$( [ $mode = cons16 ] && echo conservative || echo optimistic)'"
        q $R "START SLAVE"; wait_caught_up $R "$(gvar $M gtid_binlog_pos)" 900 >/dev/null
        log "live MariaDB $mode $wl $th"
        line=$(live_run $M $MPORT $R "$wl" "$th" "$LIVE_SECS" "replica_live_m_${mode}_${wl}_$th")
        awk -v m="MariaDB→MariaDB $mode" -v wl="$wl" -v th="$th" -F' [|] ' '{ split($1,a," "); split($2,b," ");
          printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", m, wl, th, a[2], b[1], b[2], b[3], b[8] }' <<< "$line" | tee -a "$OUT"
      done
      for lm in $LMODES; do
        typ=${lm%%:*}; w=${lm##*:}
        [ "$typ" = LOGICAL_CLOCK ] || continue
        lsq 23432 "STOP REPLICA; SET GLOBAL replica_parallel_workers=$w; SET GLOBAL replica_parallel_type='$typ'; START REPLICA"
        lsq 23432 "SELECT WAIT_FOR_EXECUTED_GTID_SET('$(lsq 23431 'SELECT @@gtid_executed')', 900)" >/dev/null
        log "live Lockstep $typ $w $wl $th"
        l_live_row "Lockstep→Lockstep w$w" 23431 23432 "$wl" "$th" "replica_live_l_${w}_${wl}_$th" \
          "lsq 23431 'SELECT @@gtid_executed'" WAIT_FOR_EXECUTED_GTID_SET
      done
    done
  done
  # stop all four here: the cross phase removes lr's directory, pid file
  # included, and would leave this lr running
  ls_stop lr; ls_stop lp; istop $R; istop $M
  echo >> "$OUT"
fi
if [[ " $PHASES " == *" cross "* ]]; then
  log "cross: MariaDB primary -> Lockstep replica"
  {
    echo "## Live: a Lockstep replica of a MariaDB primary"
    echo
    echo "MariaDB primary durable (sync_binlog=1, innodb_flush_log_at_trx_commit=1), Lockstep replica durable, replicating by MariaDB GTID. ${LIVE_SECS} s per run."
    echo
    echo "$LIVE_HDR"
  } >> "$OUT"
  mariadb_primary_cnf 1 1
  iinit $M; istart $M
  m_users_unlogged
  rm -rf "$(ldir lr)"
  ls_start lr 23430 --server-id 3 --skip-replica-start
  lsq 23430 "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=$MPORT, SOURCE_USER='repl', SOURCE_PASSWORD='repl', SOURCE_CONNECT_RETRY=1; START REPLICA"
  sb_prepare $MPORT
  lsq 23430 "SELECT MASTER_GTID_WAIT('$(gvar $M gtid_binlog_pos)', 900)" >/dev/null
  for wl in $WORKLOADS; do
    for th in $THREADS; do
      for w in 0 4; do
        lsq 23430 "STOP REPLICA; SET GLOBAL replica_parallel_workers=$w; START REPLICA"
        lsq 23430 "SELECT MASTER_GTID_WAIT('$(gvar $M gtid_binlog_pos)', 900)" >/dev/null
        log "cross w$w $wl $th"
        l_live_row "MariaDB→Lockstep w$w" $MPORT 23430 "$wl" "$th" "replica_cross_${w}_${wl}_$th" \
          "gvar $M gtid_binlog_pos" MASTER_GTID_WAIT
      done
    done
  done
  ls_stop lr; istop $M
  echo >> "$OUT"
fi
log "results in $OUT"
