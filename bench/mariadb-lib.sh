# mariadb-lib.sh - run a MariaDB server beside Lockstep for benchmarks
# (source it, do not run it). Everything stays under $MDIR, on 127.0.0.1.
#
#   mstart PORT [mariadbd options]  fresh datadir, durable settings (binlog on,
#                                   sync_binlog=1, innodb_flush_log_at_trx_commit=1),
#                                   user sbtest/sbtest, database sbtest
#   mstop                           SIGTERM, wait
#   mq SQL                          run SQL as root over the socket (no headers)
#
# Needs mariadbd, mariadb-install-db and the mariadb client (Debian's
# mariadb-server and mariadb-client packages).

mq() { mariadb --no-defaults -uroot -S "$MDIR/mysqld.sock" -N -B -e "$*"; }
mpid() { [ -s "$MDIR/mariadbd.pid" ] && cat "$MDIR/mariadbd.pid"; }
mstop() {
  local p; p=$(mpid || true)
  [ -n "$p" ] && kill -TERM "$p" 2>/dev/null && for _ in $(seq 1 600); do [ -d /proc/$p ] || break; sleep 0.1; done
  rm -f "$MDIR/mariadbd.pid"
}
mstart() {
  local port=$1; shift
  mstop; rm -rf "$MDIR/data"; mkdir -p "$MDIR/data"
  mariadb-install-db --no-defaults --user=root --datadir="$MDIR/data" \
    --auth-root-authentication-method=normal --skip-test-db > "$MDIR/install.log" 2>&1 \
    || { cat "$MDIR/install.log"; return 1; }
  setsid mariadbd --no-defaults --user=root --datadir="$MDIR/data" --socket="$MDIR/mysqld.sock" \
    --pid-file="$MDIR/mariadbd.pid" --log-error="$MDIR/error.log" --port="$port" \
    --bind-address=127.0.0.1 --skip-name-resolve --server-id=1 --log-bin=binlog \
    --sync-binlog=1 --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=512M \
    --innodb-log-file-size=512M --max-connections=300 --performance-schema=OFF "$@" \
    > "$MDIR/stdout.log" 2>&1 < /dev/null &
  for _ in $(seq 1 600); do
    mariadb-admin --no-defaults -uroot -S "$MDIR/mysqld.sock" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  mq "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest';
      GRANT ALL ON *.* TO sbtest@'127.0.0.1'; CREATE DATABASE IF NOT EXISTS sbtest"
}
