#!/usr/bin/env bash
# What an online physical backup costs a server under write load: Lockstep's
# CLONE LOCAL DATA DIRECTORY against mariadb-backup --backup on MariaDB
# 10.11, one after the other on the same box.
#
#   Lockstep 127.0.0.1:23416, MariaDB 127.0.0.1:23317
#
# Each server (durable settings) gets sysbench oltp_write_only, THREADS
# threads for SECS seconds, TPS reported every second; the backup starts
# AT seconds into the run. Reported: the backup's duration, mean TPS in
# the 10 s before it, while it runs (at least the second it started in),
# and from its end to the end of the run; then the copy is restored (a
# server started on it; MariaDB's after mariadb-backup --prepare) and its
# rows of sbtest1 counted against the GTID position it holds.
#
#   bench/backup.sh                          # 16 threads, 40 s, backup at 15 s
#   SB_SIZE=20000 SECS=30 AT=10 bench/backup.sh
#
# Needs: mariadb-server mariadb-client mariadb-backup sysbench (apt), Go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/mariadb-lib.sh"
source "$ROOT/bench/lockstep-lib.sh"
mkdir -p "$BASE" "$RAW"
SECS=${SECS:-40}
AT=${AT:-15}
THREADS=${THREADS:-16}
OUT=${OUT:-$ROOT/bench/results/backup-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")"
LPORT=23416; LDIR=$BASE/lockstep-backup
MDIR=$BASE/mariadb-backup-src; MPORT=23317
RPORT=23417 # the restored copy of either
trap 'lstop; mstop; [ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null || true' EXIT

# windows FILE START DUR: mean TPS before, during, after the backup from
# sysbench's per-second lines ("[ 12s ] thds: 16 tps: 1234.56 ...").
windows() {
  awk -v at="$2" -v dur="$3" -v end="$SECS" '
    $1 == "[" && $3 == "]" {
      s = $2; sub(/s$/, "", s); s += 0
      for (i = 1; i <= NF; i++) if ($i == "tps:") tps = $(i + 1)
      if (s > at - 10 && s <= at) { b += tps; nb++ }
      else if (s > at && s <= at + (dur < 1 ? 1 : dur)) { d += tps; nd++ }
      else if (s > at + dur + 1 && s <= end) { a += tps; na++ }
    }
    END { printf "%.0f %.0f %.0f", (nb ? b / nb : 0), (nd ? d / nd : 0), (na ? a / na : 0) }' "$1"
}

# backup_under_load NAME PORT BACKUP_CMD: sysbench on PORT, BACKUP_CMD at
# AT s; prints "secs before during after".
backup_under_load() {
  local name=$1 port=$2 cmd=$3 out=$RAW/backup-$1.sysbench.txt
  # shellcheck disable=SC2046
  sysbench oltp_write_only $(sb_opts "$port") --threads="$THREADS" --time="$SECS" \
    --report-interval=1 run > "$out" 2>&1 &
  local sb=$!
  sleep "$AT"
  local t0 t1
  t0=$(date +%s.%N)
  bash -c "$cmd" > "$RAW/backup-$name.log" 2>&1
  t1=$(date +%s.%N)
  wait "$sb"
  local dur
  dur=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  echo "$dur $(windows "$out" "$AT" "$dur")"
}

log "Lockstep: $SB_TABLES x $SB_SIZE rows"
lstart
sb_prepare "$LPORT"
rm -rf "$BASE/lockstep-copy"
lres=$(backup_under_load lockstep "$LPORT" \
  "mariadb --no-defaults -h127.0.0.1 -P$LPORT -uroot --skip-ssl -e \"CLONE LOCAL DATA DIRECTORY '$BASE/lockstep-copy'\"")
lstop
# Restore: a server on the copy.
setsid "$LDIR/lockstep" serve --port "$RPORT" --datadir "$BASE/lockstep-copy" --http-port 0 \
  > "$RAW/backup-lockstep-restore.log" 2>&1 < /dev/null &
rpid=$!
for _ in $(seq 1 300); do mariadb --no-defaults -h127.0.0.1 -P$RPORT -uroot --skip-ssl -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
lrows=$(mariadb --no-defaults -h127.0.0.1 -P$RPORT -uroot --skip-ssl -N -e "SELECT COUNT(*) FROM sbtest.sbtest1")
lgtid=$(mariadb --no-defaults -h127.0.0.1 -P$RPORT -uroot --skip-ssl -N -e "SELECT @@gtid_executed")
kill "$rpid"; wait "$rpid" 2>/dev/null || true; rpid=
lsize=$(du -sh "$BASE/lockstep-copy" | cut -f1)

log "MariaDB: $SB_TABLES x $SB_SIZE rows"
mstart "$MPORT"
sb_prepare "$MPORT"
rm -rf "$BASE/mariadb-copy"
mres=$(backup_under_load mariadb "$MPORT" \
  "mariadb-backup --backup --target-dir='$BASE/mariadb-copy' --user=root --socket='$MDIR/mysqld.sock'")
mstop
p0=$(date +%s.%N)
mariadb-backup --prepare --target-dir="$BASE/mariadb-copy" > "$RAW/backup-mariadb-prepare.log" 2>&1
p1=$(date +%s.%N)
mprep=$(awk -v a="$p0" -v b="$p1" 'BEGIN { printf "%.2f", b - a }')
msize=$(du -sh "$BASE/mariadb-copy" | cut -f1)
mbinlog=$(sed -n "s/.*MySQL binlog position: //p" "$RAW/backup-mariadb.log" | head -1)

read -r ldur lb ld la <<< "$lres"
read -r mdur mb md ma <<< "$mres"
{
  echo "# Online backup under oltp_write_only ($(date -u +%F\ %H:%M) UTC)"
  echo
  echo "$THREADS threads, $SECS s, backup started at $AT s; $SB_TABLES x $SB_SIZE rows; durable settings on both."
  echo
  echo "| | backup s | TPS before | TPS during | TPS after | copy size | restore |"
  echo "|---|---|---|---|---|---|---|"
  echo "| Lockstep CLONE LOCAL | $ldur | $lb | $ld | $la | $lsize | started on the copy: $lrows rows in sbtest1, $lgtid |"
  echo "| MariaDB mariadb-backup | $mdur | $mb | $md | $ma | $msize | --prepare $mprep s; $mbinlog |"
  echo
  echo "TPS during is the mean of the seconds the backup ran (at least the one it started in)."
  echo "Raw sysbench outputs: \$RAW/backup-*.sysbench.txt."
} | tee "$OUT"
rm -rf "$BASE/lockstep-copy" "$BASE/mariadb-copy" "$LDIR/data" "$MDIR"
