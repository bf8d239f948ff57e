# mariadb-lib.sh - run MariaDB servers beside Lockstep for benchmarks
# (source it, do not run it). Every server listens on 127.0.0.1 only, runs
# as root (--user=root) outside any service manager, and is stopped by pid.
#
# One server in $MDIR (bench/tls.sh):
#   mstart PORT [mariadbd options]  fresh datadir, durable settings (binlog on,
#                                   sync_binlog=1, innodb_flush_log_at_trx_commit=1),
#                                   user sbtest/sbtest, database sbtest
#   mstop                           SIGTERM, wait (SIGKILL after 120 s)
#   mq SQL                          run SQL as root over the socket (no headers)
#
# Named servers (primary, replicas), each in $BASE/NAME; BASE defaults to
# /var/tmp/lockstep-bench, RAW (raw outputs) to $BASE/raw; the caller
# creates both:
#   write_cnf NAME PORT SERVER_ID LINES  write $BASE/NAME/my.cnf: port, socket,
#                                   datadir, 512M buffer pool and redo log,
#                                   plus LINES (more my.cnf lines)
#   iinit NAME                      stop it, empty its directory (my.cnf stays),
#                                   mariadb-install-db (root, no password)
#   istart NAME [mariadbd options]  start from my.cnf, wait until it answers
#   istop NAME                      SIGTERM, wait (SIGKILL after 120 s)
#   idir NAME / ipid NAME           its directory / its pid (empty if down)
#   q NAME SQL                      SQL as root over the socket, tab-separated,
#                                   no headers
#   qv NAME SQL                     the same, one field a line (\G)
#   gvar NAME VAR / gstat NAME VAR  a global variable / a global status value
#   mkusers NAME                    sbtest/sbtest (all privileges), repl/repl
#                                   (replication), database sbtest
#   snap NAME FILE                  global status as NAME<TAB>VALUE, names in
#                                   upper case (the format of lsnap in
#                                   bench/lockstep-lib.sh)
#
# A three-node Galera cluster g1..g3 (Debian's galera-4; state transfer
# by mariabackup and socat), SQL on ports GPORT[0..2] (23421..23423),
# group communication on GCOMM (24621..), IST on GIST, SST on GSST:
#   galera_up [SETUP]               g1 bootstraps, gets the users, runs the
#                                   shell command SETUP (e.g. sb_prepare
#                                   23421), then g2 and g3 join and sync;
#                                   durable: binlog on, sync_binlog=1,
#                                   innodb_flush_log_at_trx_commit=1
#
# Replication by MariaDB GTID:
#   repl_connect REPLICA PORT       CHANGE MASTER to 127.0.0.1:PORT as repl,
#                                   MASTER_USE_GTID=slave_pos (no START SLAVE)
#   slave_field NAME FIELD          one field of SHOW SLAVE STATUS
#   wait_caught_up NAME GTID [SECS] MASTER_GTID_WAIT (default 600 s): prints
#                                   0, or -1 on timeout
#   seqno GTID_LIST                 sequence number of its last GTID
#                                   ("0-1-42" -> 42; 0 when empty)
#
# sysbench as sbtest/sbtest on database sbtest, SB_TABLES tables (4) x
# SB_SIZE rows (100000), --rand-type=$SB_RAND (uniform),
# --db-ps-mode=$SB_PS (disable):
#   sb_prepare PORT                 create and fill the tables (log in $RAW)
#   sb_run PORT WL THREADS SECS OUT [sysbench options]   timed run into OUT
#   sb_parse OUT                    prints "tps qps p95_ms avg_ms errors"
#
# Measuring:
#   cpu_ticks PID                   its utime+stime in clock ticks (0 if gone)
#   sdelta BEFORE AFTER VAR         VAR in AFTER minus VAR in BEFORE (snapshots
#                                   of snap or lsnap)
#   measure_run NAME PORT WL THREADS SECS TAG [sysbench options]
#                                   sb_run against NAME, status snapshots and
#                                   sysbench output in $RAW/TAG.*; prints
#                                   "TAG tps qps p95_ms avg_ms errors
#                                   binlog_commits binlog_group_commits
#                                   avg_group trigger_count trigger_timeout
#                                   trigger_lock_wait innodb_data_fsyncs
#                                   server_cpu_s" (deltas over the run)
#   live_run PRIMARY PORT REPLICA WL THREADS SECS TAG
#                                   measure_run on the primary while REPLICA
#                                   follows (lag every 2 s in $RAW/TAG.lag.txt),
#                                   then time the replica's catch-up; prints
#                                   "<measure_run line> | lag_trx sbm
#                                   catchup_s total_trx trx/s_overall
#                                   trx/s_in_catchup retried_trx replica_cpu_s"
#   apply_timed REPLICA GTID CAP TAG
#                                   start the SQL thread of a replica that has
#                                   fetched its relay log, time it up to GTID
#                                   (at most CAP s); prints "TAG applied_trx
#                                   secs trx/s reached(0, -1 at CAP)
#                                   retried_trx replica_cpu_s innodb_fsyncs"
#   locked CMD...                   run CMD holding the benchmark lock
#                                   (flock $BENCH_LOCK, default /tmp/bench.lock)
#   log MSG                         MSG on stderr with the time
#
# A slow disk: with FSYNC_DELAY_US=N (N > 0) every server these helpers and
# bench/lockstep-lib.sh start runs under strace, which makes each fsync and
# fdatasync return N microseconds late (strace's syscall fault injection:
# --seccomp-bpf stops the process only at those two calls, so the others
# run at full speed). Both servers get the same delay on every sync call
# they make; the cost of each stop itself is in docs/BENCHMARKS.md.
#   slow_prefix                     the command words to put before a server
#                                   (none when FSYNC_DELAY_US is 0 or unset)
#   traced_pid PID                  the server's pid given the pid of what
#                                   was started (strace's child, or PID)
#
# Needs mariadbd, mariadb-install-db and the mariadb client (Debian's
# mariadb-server and mariadb-client packages), sysbench, flock.

BASE=${BASE:-/var/tmp/lockstep-bench}
RAW=${RAW:-$BASE/raw}
SB_TABLES=${SB_TABLES:-4}
SB_SIZE=${SB_SIZE:-100000}
SB_RAND=${SB_RAND:-uniform}
SB_PS=${SB_PS:-disable}
BENCH_LOCK=${BENCH_LOCK:-/tmp/bench.lock}

slow_prefix() {
  local d=${FSYNC_DELAY_US:-0}
  [ "$d" -gt 0 ] || return 0
  command -v strace > /dev/null || { log "FSYNC_DELAY_US needs strace"; return 1; }
  echo strace -f -qq --seccomp-bpf -e trace=fsync,fdatasync \
    -e "inject=fsync,fdatasync:delay_exit=$d" -o /dev/null
}
traced_pid() {
  local c
  if [ "${FSYNC_DELAY_US:-0}" -gt 0 ]; then
    for _ in $(seq 1 100); do c=$(pgrep -P "$1" | head -1); [ -n "$c" ] && { echo "$c"; return 0; }; sleep 0.05; done
  fi
  echo "$1"
}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
locked() { flock "$BENCH_LOCK" "$@"; }

# --- the server process, given its directory (pid file, socket, logs) -----
# _mdb_pid DIR: pid of the mariadbd whose pid file is in DIR, if it runs.
_mdb_pid() {
  local p
  [ -s "$1/mariadbd.pid" ] || return 0
  p=$(cat "$1/mariadbd.pid")
  [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = mariadbd ] && echo "$p"
  return 0
}
# _mdb_down DIR: SIGTERM, wait up to 120 s, then SIGKILL.
_mdb_down() {
  local p; p=$(_mdb_pid "$1")
  if [ -n "$p" ]; then
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 1200); do [ -d "/proc/$p" ] || break; sleep 0.1; done
    if [ -d "/proc/$p" ]; then log "mariadbd $p ignored SIGTERM, killing it"; kill -KILL "$p" 2>/dev/null || true; sleep 1; fi
  fi
  rm -f "$1/mariadbd.pid"
}
# _mdb_install DIR: an empty $DIR/data with the system tables.
_mdb_install() {
  rm -rf "$1/data"; mkdir -p "$1/data"
  mariadb-install-db --no-defaults --user=root --datadir="$1/data" \
    --auth-root-authentication-method=normal --skip-test-db > "$1/install.log" 2>&1 \
    || { cat "$1/install.log" >&2; return 1; }
}
# _mdb_up DIR mariadbd-arguments...: start in the background, wait (up to
# 180 s) until it answers on $DIR/mysqld.sock.
_mdb_up() {
  local d=$1; shift
  local slow; slow=$(slow_prefix) || return 1
  # shellcheck disable=SC2086
  setsid $slow mariadbd "$@" >> "$d/stdout.log" 2>&1 < /dev/null &
  local launched=$!
  for _ in $(seq 1 1800); do
    mariadb-admin --no-defaults -uroot -S "$d/mysqld.sock" ping > /dev/null 2>&1 && return 0
    if ! [ -d "/proc/$launched" ] && [ -z "$(_mdb_pid "$d")" ]; then
      log "mariadbd in $d exited"; tail -20 "$d/error.log" >&2; return 1
    fi
    sleep 0.1
  done
  log "mariadbd in $d did not answer"; tail -20 "$d/error.log" >&2; return 1
}

# --- one server in $MDIR ------------------------------------------------
mq() { mariadb --no-defaults -uroot -S "$MDIR/mysqld.sock" -N -B -e "$*"; }
mpid() { _mdb_pid "$MDIR"; }
mstop() { _mdb_down "$MDIR"; }
mstart() {
  local port=$1; shift
  mstop; mkdir -p "$MDIR"; _mdb_install "$MDIR" || return 1
  _mdb_up "$MDIR" --no-defaults --user=root --datadir="$MDIR/data" --socket="$MDIR/mysqld.sock" \
    --pid-file="$MDIR/mariadbd.pid" --log-error="$MDIR/error.log" --port="$port" \
    --bind-address=127.0.0.1 --skip-name-resolve --server-id=1 --log-bin=binlog \
    --sync-binlog=1 --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=512M \
    --innodb-log-file-size=512M --max-connections=300 --performance-schema=OFF "$@" || return 1
  mq "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest';
      GRANT ALL ON *.* TO sbtest@'127.0.0.1'; CREATE DATABASE IF NOT EXISTS sbtest"
}

# --- named servers in $BASE/NAME -----------------------------------------
idir() { echo "$BASE/$1"; }
ipid() { _mdb_pid "$(idir "$1")"; }
q() { local n=$1; shift; mariadb --no-defaults -uroot -S "$(idir "$n")/mysqld.sock" -N -B -e "$*"; }
qv() { local n=$1; shift; mariadb --no-defaults -uroot -S "$(idir "$n")/mysqld.sock" -e "$*\\G"; }
gvar() { q "$1" "SELECT @@GLOBAL.$2"; }
gstat() { q "$1" "SHOW GLOBAL STATUS LIKE '$2'" | cut -f2; }

write_cnf() {
  local d; d=$(idir "$1")
  mkdir -p "$d"
  {
    echo "[mariadbd]"
    echo "datadir=$d/data"
    echo "socket=$d/mysqld.sock"
    echo "pid-file=$d/mariadbd.pid"
    echo "log-error=$d/error.log"
    echo "port=$2"
    echo "bind-address=127.0.0.1"
    echo "skip-name-resolve"
    echo "server-id=$3"
    echo "character-set-server=utf8mb4"
    echo "max_connections=300"
    echo "performance_schema=OFF"
    echo "innodb_buffer_pool_size=512M"
    echo "innodb_log_file_size=512M"
    echo "innodb_log_buffer_size=32M"
    echo "innodb_io_capacity=2000"
    echo "$4"
  } > "$d/my.cnf"
}
iinit() {
  local d; d=$(idir "$1")
  istop "$1"
  # binlogs, relay logs, snapshots and logs may live beside data/: all go
  find "$d" -mindepth 1 -maxdepth 1 ! -name my.cnf -exec rm -rf {} +
  _mdb_install "$d"
}
istart() {
  local n=$1; shift; local d; d=$(idir "$n")
  if [ -n "$(ipid "$n")" ]; then log "$n is already running"; return 0; fi
  log "starting $n $*"
  _mdb_up "$d" --defaults-file="$d/my.cnf" --user=root "$@"
}
istop() {
  [ -n "$(ipid "$1")" ] && log "stopping $1"
  _mdb_down "$(idir "$1")"
}
mkusers() {
  q "$1" "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest';
          GRANT ALL ON *.* TO sbtest@'127.0.0.1';
          CREATE USER IF NOT EXISTS repl@'127.0.0.1' IDENTIFIED BY 'repl';
          GRANT REPLICATION SLAVE, REPLICATION SLAVE ADMIN, BINLOG MONITOR ON *.* TO repl@'127.0.0.1';
          CREATE DATABASE IF NOT EXISTS sbtest"
}
snap() { q "$1" "SHOW GLOBAL STATUS" | awk -F'\t' -v OFS='\t' '{ print toupper($1), $2 }' > "$2"; }

# --- replication ---------------------------------------------------------
repl_connect() {
  q "$1" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$2,
          MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1"
}
slave_field() { qv "$1" "SHOW SLAVE STATUS" | sed -n "s/^ *$2: //p"; }
wait_caught_up() { q "$1" "SELECT MASTER_GTID_WAIT('$2', ${3:-600})"; }
seqno() {
  local last; last=$(tr -d ' \n' <<< "$1"); last=${last##*,}; last=${last##*-}
  echo "${last:-0}"
}

# --- sysbench --------------------------------------------------------------
# sb_opts PORT: the connection and table options every run shares.
sb_opts() {
  echo "--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$1 --mysql-user=sbtest --mysql-password=sbtest" \
       "--mysql-db=sbtest --tables=$SB_TABLES --table-size=$SB_SIZE --rand-type=$SB_RAND --db-ps-mode=$SB_PS"
}
sb_prepare() {
  local logf=$RAW/prepare_$1.log
  # shellcheck disable=SC2046
  sysbench oltp_common $(sb_opts "$1") --threads="$SB_TABLES" prepare > "$logf" 2>&1 \
    || { tail "$logf" >&2; return 1; }
}
sb_run() {
  local port=$1 wl=$2 th=$3 secs=$4 out=$5; shift 5
  # shellcheck disable=SC2046
  sysbench "$wl" $(sb_opts "$port") --threads="$th" --time="$secs" --report-interval=10 \
    --percentile=95 "$@" run > "$out" 2>&1
}
sb_parse() {
  awk '$1 == "transactions:" { tps = $3 }
       $1 == "queries:"      { qps = $3 }
       $1 == "ignored" && $2 == "errors:" { err = $3 }
       $1 == "avg:"          { avg = $2 }
       $1 == "95th"          { p95 = $3 }
       END { gsub(/\(/, "", tps); gsub(/\(/, "", qps); print tps, qps, p95, avg, err }' "$1"
}

# --- measuring -------------------------------------------------------------
cpu_ticks() {
  local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  # after "pid (comm) " field 3 comes first: utime and stime are fields 14, 15
  st=${st##*) }
  awk '{ print $12 + $13 }' <<< "$st"
}
sdelta() {
  awk -F'\t' -v v="${3^^}" 'FNR == NR { if ($1 == v) before = $2; next }
                             $1 == v { printf "%s", $2 - before }' "$1" "$2"
}
# _secs T0_TICKS T1_TICKS: CPU seconds between two cpu_ticks readings.
_secs() { awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz }'; }

measure_run() {
  local n=$1 port=$2 wl=$3 th=$4 secs=$5 tag=$6; shift 6
  local pid c0 c1 b=$RAW/$tag.before a=$RAW/$tag.after
  pid=$(ipid "$n")
  snap "$n" "$b"; c0=$(cpu_ticks "$pid")
  sb_run "$port" "$wl" "$th" "$secs" "$RAW/$tag.sysbench.txt" "$@"
  c1=$(cpu_ticks "$pid"); snap "$n" "$a"
  local commits groups avg
  commits=$(sdelta "$b" "$a" Binlog_commits); groups=$(sdelta "$b" "$a" Binlog_group_commits)
  avg=$(awk -v c="$commits" -v g="$groups" 'BEGIN { if (g > 0) printf "%.2f", c / g; else print "-" }')
  echo "$tag $(sb_parse "$RAW/$tag.sysbench.txt") $commits $groups $avg" \
    "$(sdelta "$b" "$a" Binlog_group_commit_trigger_count)" \
    "$(sdelta "$b" "$a" Binlog_group_commit_trigger_timeout)" \
    "$(sdelta "$b" "$a" Binlog_group_commit_trigger_lock_wait)" \
    "$(sdelta "$b" "$a" Innodb_data_fsyncs) $(_secs "$c0" "$c1")"
}

live_run() {
  local m=$1 pport=$2 r=$3 wl=$4 th=$5 secs=$6 tag=$7
  local rpid rc0 rc1 first line target last applied sbm t0 t1 sampler
  rpid=$(ipid "$r")
  snap "$r" "$RAW/$tag.replica.before"; rc0=$(cpu_ticks "$rpid")
  first=$(seqno "$(gvar "$m" gtid_binlog_pos)")
  # every 2 s: time, primary's last seqno, replica's last applied seqno
  while :; do
    echo "$(date +%s.%N) $(seqno "$(gvar "$m" gtid_binlog_pos)") $(seqno "$(gvar "$r" gtid_slave_pos)")"
    sleep 2
  done > "$RAW/$tag.lag.txt" 2> /dev/null &
  sampler=$!
  line=$(measure_run "$m" "$pport" "$wl" "$th" "$secs" "$tag")
  target=$(gvar "$m" gtid_binlog_pos)
  last=$(seqno "$target"); applied=$(seqno "$(gvar "$r" gtid_slave_pos)")
  sbm=$(slave_field "$r" Seconds_Behind_Master)
  t0=$(date +%s.%N)
  wait_caught_up "$r" "$target" 600 > /dev/null
  t1=$(date +%s.%N)
  kill "$sampler" 2> /dev/null; wait "$sampler" 2> /dev/null || true
  rc1=$(cpu_ticks "$rpid"); snap "$r" "$RAW/$tag.replica.after"
  awk -v line="$line" -v lag=$((last - applied)) -v sbm="$sbm" -v t0="$t0" -v t1="$t1" \
      -v total=$((last - first)) -v secs="$secs" -v cpu="$(_secs "$rc0" "$rc1")" \
      -v retried="$(sdelta "$RAW/$tag.replica.before" "$RAW/$tag.replica.after" Slave_retried_transactions)" 'BEGIN {
    cu = t1 - t0
    printf "%s | %d %s %.2f %d %.0f %.0f %s %s\n", line, lag, sbm, cu, total, total / (secs + cu),
      (cu > 0.05 ? lag / cu : 0), retried, cpu }'
}

apply_timed() {
  local r=$1 target=$2 cap=$3 tag=$4
  local rpid s0 c0 c1 out b=$RAW/$tag.before a=$RAW/$tag.after
  rpid=$(ipid "$r")
  s0=$(seqno "$(gvar "$r" gtid_slave_pos)")
  snap "$r" "$b"; c0=$(cpu_ticks "$rpid")
  # one session: the timestamps come from the server, around the wait
  out=$(q "$r" "SELECT UNIX_TIMESTAMP(NOW(6)); START SLAVE SQL_THREAD;
                SELECT MASTER_GTID_WAIT('$target', $cap);
                SELECT UNIX_TIMESTAMP(NOW(6)), @@gtid_slave_pos")
  c1=$(cpu_ticks "$rpid"); snap "$r" "$a"
  echo "$out" > "$RAW/$tag.apply.txt"
  local t0 res t1 pos
  { read -r t0; read -r res; IFS=$'\t' read -r t1 pos; } <<< "$out"
  awk -v tag="$tag" -v n=$(( $(seqno "$pos") - s0 )) -v t0="$t0" -v t1="$t1" -v res="$res" \
      -v retried="$(sdelta "$b" "$a" Slave_retried_transactions)" -v cpu="$(_secs "$c0" "$c1")" \
      -v fsyncs="$(sdelta "$b" "$a" Innodb_data_fsyncs)" 'BEGIN {
    d = t1 - t0
    printf "%s %d %.2f %.0f %s %s %s %s\n", tag, n, d, (d > 0 ? n / d : 0), res, retried, cpu, fsyncs }'
}

# --- Galera ---------------------------------------------------------------
GPORT=(23421 23422 23423) GCOMM=(24621 24622 24623) GIST=(24631 24632 24633) GSST=(24641 24642 24643)
galera_up() {
  [ -e /usr/lib/galera/libgalera_smm.so ] || { echo "galera-4 is not installed (apt-get install galera-4)" >&2; return 1; }
  command -v mariabackup > /dev/null && command -v socat > /dev/null \
    || { echo "Galera's state transfer needs mariabackup and socat (apt-get install mariadb-backup socat)" >&2; return 1; }
  local addr i n
  addr=$(printf '127.0.0.1:%s,' "${GCOMM[@]}"); addr=${addr%,}
  for i in 0 1 2; do
    n=g$((i + 1))
    write_cnf $n "${GPORT[$i]}" $((i + 1)) "log-bin=binlog
sync_binlog=1
innodb_flush_log_at_trx_commit=1
binlog_format=ROW
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=bench
wsrep_cluster_address=gcomm://$addr
wsrep_node_name=$n
wsrep_node_address=127.0.0.1:${GCOMM[$i]}
wsrep_provider_options=\"base_host=127.0.0.1;base_port=${GCOMM[$i]};gmcast.listen_addr=tcp://127.0.0.1:${GCOMM[$i]};ist.recv_addr=127.0.0.1:${GIST[$i]};gcache.size=512M\"
wsrep_sst_method=mariabackup
wsrep_sst_auth=root:
wsrep_sst_receive_address=127.0.0.1:${GSST[$i]}
wsrep_slave_threads=1"
  done
  for n in g1 g2 g3; do iinit $n || return 1; done
  istart g1 --wsrep-new-cluster || return 1
  mkusers g1
  [ -z "${1:-}" ] || eval "$1" || return 1
  istart g2 || return 1
  istart g3 || return 1
  for n in g2 g3; do for _ in $(seq 1 600); do [ "$(gstat $n wsrep_local_state_comment)" = Synced ] && break; sleep 0.5; done; done
  [ "$(gstat g1 wsrep_cluster_size)" = 3 ] || { echo "Galera did not form a cluster of 3" >&2; return 1; }
}
