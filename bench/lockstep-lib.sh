# lockstep-lib.sh - helpers to run a Lockstep server for benchmarks (source
# it, do not run it; bench/mariadb-lib.sh runs the MariaDB beside it). Set
# ROOT (the repo), LPORT and LDIR before calling.
#
#   lstart [extra serve flags]   build, start on 127.0.0.1:$LPORT with an empty
#                                datadir, create sbtest/repl users, sbtest db
#   lstop                        SIGTERM, wait
#   lq SQL                       run SQL (tab-separated, no headers)
#   lpid                         pid of the server
#   lsnap FILE                   SHOW GLOBAL STATUS as NAME<TAB>VALUE (upper case)
#
# With FSYNC_DELAY_US set, the server runs under strace (slow_prefix in
# bench/mariadb-lib.sh) and lockstep.pid names the server, not strace.
#
# A three-member cluster on 127.0.0.1:$LPORT, +1, +2 (cluster ports
# $LCPORT, +1, +2; LCPORT defaults to LPORT+1000), data in $LDIR/n1..n3:
#   lcstart [extra serve flags]  build, start three members with empty
#                                datadirs, wait until each is ready, create
#                                sbtest/repl users and the sbtest db
#   lcstop                       SIGTERM every member, wait
#   lcq N SQL                    run SQL on member N (1..3)

lq() { mariadb --no-defaults -h127.0.0.1 -P"$LPORT" -uroot --skip-ssl -N -B -e "$*"; }
lpid() { [ -s "$LDIR/lockstep.pid" ] && cat "$LDIR/lockstep.pid"; }
lstop() {
  local p; p=$(lpid || true)
  [ -n "$p" ] && kill -TERM "$p" 2>/dev/null && for _ in $(seq 1 300); do [ -d /proc/$p ] || break; sleep 0.1; done
  rm -f "$LDIR/lockstep.pid"
}
lstart() {
  lstop; rm -rf "$LDIR/data"; mkdir -p "$LDIR"
  (cd "$ROOT" && go build -o "$LDIR/lockstep" ./cmd/lockstep)
  local slow; slow=$(slow_prefix) || return 1
  # shellcheck disable=SC2086
  setsid $slow "$LDIR/lockstep" serve --port "$LPORT" --datadir "$LDIR/data" --lockstep-cache-size 512M --http-port 0 "$@" \
    > "$LDIR/server.log" 2>&1 < /dev/null &
  traced_pid $! > "$LDIR/lockstep.pid"
  for _ in $(seq 1 200); do lq "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
  lq "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO sbtest@'127.0.0.1';
      CREATE USER IF NOT EXISTS repl@'127.0.0.1' IDENTIFIED BY 'repl'; GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1';
      CREATE DATABASE IF NOT EXISTS sbtest"
}
lsnap() { lq "SHOW GLOBAL STATUS" | awk '{print toupper($1) "\t" $2}' > "$1"; }

lcq() { local n=$1; shift; mariadb --no-defaults -h127.0.0.1 -P"$((LPORT + n - 1))" -uroot --skip-ssl -N -B -e "$*"; }
lcstop() {
  local n p
  for n in 1 2 3; do
    p=$(cat "$LDIR/n$n.pid" 2>/dev/null || true)
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
  done
  for n in 1 2 3; do
    p=$(cat "$LDIR/n$n.pid" 2>/dev/null || true)
    [ -n "$p" ] && for _ in $(seq 1 300); do [ -d /proc/$p ] || break; sleep 0.1; done
    rm -f "$LDIR/n$n.pid"
  done
}
lcstart() {
  lcstop; mkdir -p "$LDIR"
  (cd "$ROOT" && go build -o "$LDIR/lockstep" ./cmd/lockstep)
  local cport=${LCPORT:-$((LPORT + 1000))} n addr=gcomm://
  for n in 1 2 3; do addr+="127.0.0.1:$((cport + n - 1)),"; done
  addr=${addr%,}
  for n in 1 2 3; do
    rm -rf "$LDIR/n$n"
    setsid "$LDIR/lockstep" serve --port "$((LPORT + n - 1))" --datadir "$LDIR/n$n" --server-id "$n" \
      --lockstep-cache-size 512M --http-port 0 --wsrep-cluster-address "$addr" \
      --wsrep-node-address "127.0.0.1:$((cport + n - 1))" "$@" > "$LDIR/n$n.log" 2>&1 < /dev/null &
    echo $! > "$LDIR/n$n.pid"
  done
  for n in 1 2 3; do
    for _ in $(seq 1 300); do [ "$(lcq $n "SHOW STATUS LIKE 'wsrep_ready'" 2>/dev/null | cut -f2)" = ON ] && break; sleep 0.1; done
  done
  lcq 1 "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO sbtest@'127.0.0.1';
      CREATE USER IF NOT EXISTS repl@'127.0.0.1' IDENTIFIED BY 'repl'; GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1';
      CREATE DATABASE IF NOT EXISTS sbtest"
}
