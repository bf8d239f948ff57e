#!/usr/bin/env bash
# one-member.sh - a single server beside a one-member cluster (the same
# binary started with --wsrep-cluster-address naming only itself), one
# after the other on this machine, ROUNDS times alternating: sysbench
# oltp_write_only at THREADS threads. It measures what committing
# through the cluster's raft path instead of the single server's commit
# pipeline costs a server that has no peers.
#
#   bench/one-member.sh    # THREADS=16 SECS=20 ROUNDS=3 SB_TABLES=4 SB_SIZE=20000
#
# Prints TPS and p95 per run and the member/single ratio per round.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREADS=${THREADS:-16} SECS=${SECS:-20} ROUNDS=${ROUNDS:-3}
export SB_TABLES=${SB_TABLES:-4} SB_SIZE=${SB_SIZE:-20000}
BASE=${BASE:-$(mktemp -d /tmp/lockstep-one-member.XXXXXX)} RAW=$BASE/raw
mkdir -p "$RAW"
LDIR=$BASE/lockstep LPORT=${LPORT:-23511}
source "$ROOT/bench/lockstep-lib.sh"
source "$ROOT/bench/mariadb-lib.sh"
trap lstop EXIT

start() { # single|member
  local cport=$((LPORT + 1000))
  if [ "$1" = single ]; then
    lstart
  else
    # lstart's setup statements need the member to lead its cluster of
    # one: wait for wsrep_ready first.
    lstop; rm -rf "$LDIR/data"; mkdir -p "$LDIR"
    (cd "$ROOT" && go build -o "$LDIR/lockstep" ./cmd/lockstep)
    setsid "$LDIR/lockstep" serve --port "$LPORT" --datadir "$LDIR/data" --lockstep-cache-size 512M --http-port 0 \
      --wsrep-cluster-address "gcomm://127.0.0.1:$cport" --wsrep-node-address "127.0.0.1:$cport" \
      > "$LDIR/server.log" 2>&1 < /dev/null &
    echo $! > "$LDIR/lockstep.pid"
    for _ in $(seq 1 300); do [ "$(lq "SHOW STATUS LIKE 'wsrep_ready'" 2>/dev/null | cut -f2)" = ON ] && break; sleep 0.1; done
    lq "CREATE USER IF NOT EXISTS sbtest@'127.0.0.1' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO sbtest@'127.0.0.1';
        CREATE DATABASE IF NOT EXISTS sbtest"
  fi
  sb_prepare "$LPORT"
}

OUT=$BASE/summary.txt
echo "# one-member.sh $(date -u +%FT%TZ) threads=$THREADS secs=$SECS tables=$SB_TABLES size=$SB_SIZE" | tee "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  declare -A tps
  for kind in single member; do
    log "round $r: $kind"
    start "$kind"
    sb_run "$LPORT" oltp_write_only "$THREADS" "$SECS" "$RAW/$kind-$r.txt"
    read -r t _ p95 _ _ < <(sb_parse "$RAW/$kind-$r.txt")
    tps[$kind]=$t
    printf '%s\tround %d\tTPS %s\tp95 %s ms\n' "$kind" "$r" "$t" "$p95" | tee -a "$OUT"
    lstop
  done
  awk -v m="${tps[member]}" -v s="${tps[single]}" -v r="$r" 'BEGIN { printf "round %d\tmember/single %.2f\n", r, m / s }' | tee -a "$OUT"
done
echo "summary: $OUT"
