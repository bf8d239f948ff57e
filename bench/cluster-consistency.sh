#!/usr/bin/env bash
# cluster-consistency.sh - the same consistency workloads against a
# three-node MariaDB Galera cluster and a three-member Lockstep cluster,
# on this machine, clients spread over the nodes, no faults: register
# (read-modify-write of hot counters, half with plain reads) and
# list-append (Elle), both judged at snapshot isolation, which forbids
# the lost update (Jepsen found it in a healthy Galera cluster, 2026).
#
#   bench/cluster-consistency.sh        # SECS=30 CLIENTS=8
#
# Prints each run's report; the anomaly counts are the result.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${SECS:-30} CLIENTS=${CLIENTS:-8}
BASE=${BASE:-$(mktemp -d /tmp/lockstep-consistency.XXXXXX)} RAW=$BASE/raw
mkdir -p "$RAW"
source "$ROOT/bench/mariadb-lib.sh"
trap 'for n in g3 g2 g1; do istop $n; done' EXIT
(cd "$ROOT" && go build -o "$BASE/lockstep" ./cmd/lockstep)

log "Galera: three nodes"
galera_up
EPS=$(printf '127.0.0.1:%s,' "${GPORT[@]}"); EPS=${EPS%,}
for w in register list-append; do
  log "$w against Galera"
  "$BASE/lockstep" workload $w --endpoints "$EPS" -u sbtest -p sbtest --clients "$CLIENTS" \
    --duration "${SECS}s" --expect snapshot-isolation --check=false --dir "$RAW/galera-$w" | tail -n +1 | grep -v '^\s*$' | tee "$RAW/galera-$w.txt"
  log "$w against Lockstep"
  "$BASE/lockstep" workload $w --start-cluster 3 --clients "$CLIENTS" \
    --duration "${SECS}s" --expect snapshot-isolation --check=false --dir "$RAW/lockstep-$w" | grep -v '^\s*$' | tee "$RAW/lockstep-$w.txt"
done
echo "raw outputs: $RAW"
