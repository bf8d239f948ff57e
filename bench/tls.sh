#!/usr/bin/env bash
# tls.sh - the cost of TLS, Lockstep beside MariaDB on the same box, in one
# run: sysbench oltp_point_select and durable oltp_update_non_index, each
# with and without TLS (--mysql-ssl), on both servers with durable
# settings. Both servers use certificates Lockstep generated (one CA, one
# ECDSA P-256 server key), so the key type is the same.
#
#   bench/tls.sh                # THREADS=16 SECS=20 TABLES=4 ROWS=20000
#
# Prints TPS per run and the ratios: each server's TLS/plain and
# Lockstep/MariaDB with TLS. The box is noisy: compare ratios within a run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREADS=${THREADS:-16} SECS=${SECS:-20} TABLES=${TABLES:-4} ROWS=${ROWS:-20000}
KEEP=${WORK:-} # a directory given is kept; one made here goes at the end
WORK=${WORK:-$(mktemp -d /tmp/lockstep-tls.XXXXXX)}
LPORT=${LPORT:-23406} MPORT=${MPORT:-23306} LDIR=$WORK/lockstep MDIR=$WORK/mariadb
source "$ROOT/bench/lockstep-lib.sh"
source "$ROOT/bench/mariadb-lib.sh"
trap 'lstop; mstop; if [ -z "$KEEP" ]; then rm -rf "$WORK"; fi' EXIT

lstart
mstart "$MPORT" --ssl-cert="$LDIR/data/server-cert.pem" --ssl-key="$LDIR/data/server-key.pem" --ssl-ca="$LDIR/data/ca.pem"
[ "$(mq "SELECT @@have_ssl")" = YES ] || { echo "MariaDB did not enable TLS"; tail "$MDIR/error.log"; exit 1; }

# sysbench 1.0 reads its TLS files from the working directory, under
# fixed names: the generated client certificate, key and CA.
SB=$WORK/sysbench; mkdir -p "$SB"
cp "$LDIR/data/client-cert.pem" "$SB/client-cert.pem"
cp "$LDIR/data/client-key.pem" "$SB/client-key.pem"
cp "$LDIR/data/ca.pem" "$SB/cacert.pem"
sb() { # PORT WORKLOAD SSL prepare|run
  cd "$SB" && sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$1" --mysql-user=sbtest --mysql-password=sbtest \
    --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS" --threads="$THREADS" --time="$SECS" \
    --mysql-ssl="$3" --report-interval=0 "$2" "$4"
}
tps() { awk '/transactions:/ {gsub(/\(/, "", $3); print $3}'; }
sb "$LPORT" oltp_point_select off prepare > /dev/null
sb "$MPORT" oltp_point_select off prepare > /dev/null

declare -A R
for w in oltp_point_select oltp_update_non_index; do
  for ssl in off on; do
    for side in mariadb lockstep; do
      port=$MPORT; [ "$side" = lockstep ] && port=$LPORT
      before=$( [ "$side" = lockstep ] && lq "SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'" | cut -f2 || mq "SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'" | cut -f2)
      R[$side,$w,$ssl]=$(sb "$port" "$w" "$ssl" run | tps)
      after=$( [ "$side" = lockstep ] && lq "SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'" | cut -f2 || mq "SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'" | cut -f2)
      if [ "$ssl" = on ] && [ "$after" = "$before" ]; then echo "$side: TLS was not used"; exit 1; fi
      printf '%-9s %-22s TLS %-3s %10s TPS\n' "$side" "$w" "$ssl" "${R[$side,$w,$ssl]}"
    done
  done
done
echo
for w in oltp_point_select oltp_update_non_index; do
  awk -v w="$w" -v lp="${R[lockstep,$w,off]}" -v lt="${R[lockstep,$w,on]}" -v mp="${R[mariadb,$w,off]}" -v mt="${R[mariadb,$w,on]}" \
    'BEGIN { printf "%-22s Lockstep TLS/plain %.2f  MariaDB TLS/plain %.2f  Lockstep/MariaDB with TLS %.2f (plain %.2f)\n", w, lt/lp, mt/mp, lt/mt, lp/mp }'
done
