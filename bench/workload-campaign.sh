#!/usr/bin/env bash
# workload-campaign.sh - the single-server fault campaign: every workload of
# `lockstep workload` runs against a durable Lockstep server that the
# command started itself and kills with SIGKILL (and restarts, cleanly or
# not) about every INTERVAL, for about ROUNDS faults each. Nothing acknowledged
# may be lost, the bank's total must hold in every read, no locking
# increment may be lost, and list-append must show no anomaly that
# REPEATABLE READ forbids in MySQL-family servers.
#
# Writes a Markdown table to $OUT (with each run's longest time without a
# commit anywhere) and every run's history and report under $WORK (kept
# for inspection). Everything runs on 127.0.0.1 (or, for partitions, in
# network namespaces the command makes).
#
#   bench/workload-campaign.sh                      # ~100 faults per workload, ~4 x 8 min
#   ROUNDS=10 INTERVAL=2 bench/workload-campaign.sh  # a short one
#   FAULTS=kill,pause WORKLOADS="bank register" bench/workload-campaign.sh
#
# With CLUSTER=3 the workloads run against a three-member cluster instead
# (faults hit one member each, judged at snapshot isolation, what the
# members promise together); FAULTS may then include partition, which
# needs root (network namespaces) and is reported as skipped without it,
# and wipe (a member's data directory emptied: it rejoins with a copy).
#
#   sudo CLUSTER=3 FAULTS=kill,pause,restart,partition,wipe bench/workload-campaign.sh
#
# With REPLICAS=3 they run against a primary and two replicas,
# semi-synchronous unless SEMISYNC=0; FAULTS may then include failover
# (the primary killed, a replica promoted as `lockstep failover` does)
# and disconnect (the primary drops its replicas' connections), and every
# run also checks that all servers end with the primary's rows.
#
#   REPLICAS=3 FAULTS=failover,disconnect,kill,pause bench/workload-campaign.sh
#
# A single server's FAULTS may include diskfull (its data directory on a
# tmpfs, filled for half an interval), which needs root.
#
# Then, unless MARIADB=0, the same workloads under the same faults
# against MariaDB (MARIADBD, default the mariadbd on the PATH): a single
# durable server, or with CLUSTER=N a Galera cluster of N nodes (galera-4,
# mariabackup and socat installed), reported beside Lockstep's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-100}
INTERVAL=${INTERVAL:-3}          # seconds between faults, on average
CLIENTS=${CLIENTS:-8}
FAULTS=${FAULTS:-kill,restart}
WORKLOADS=${WORKLOADS:-"acked-writes bank register list-append"}
CLUSTER=${CLUSTER:-}
REPLICAS=${REPLICAS:-}
SEMISYNC=${SEMISYNC:-1}
if [ -n "$CLUSTER" ]; then
  TARGET=(--start-cluster "$CLUSTER" --expect snapshot-isolation)
  WHAT="$CLUSTER-member cluster"
elif [ -n "$REPLICAS" ]; then
  TARGET=(--start-replicas "$REPLICAS")
  WHAT="Primary and $((REPLICAS - 1)) asynchronous replicas"
  if [ "$SEMISYNC" = 1 ]; then
    TARGET+=(--semi-sync)
    WHAT="Primary and $((REPLICAS - 1)) semi-synchronous replicas"
  fi
else
  TARGET=(--start-server)
  WHAT="Single-server"
fi
WORK=${WORK:-$(mktemp -d /tmp/lockstep-campaign.XXXXXX)}
OUT=${OUT:-$ROOT/bench/results/workload-campaign-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$OUT")" "$WORK"

BIN=$WORK/lockstep
(cd "$ROOT" && go build -o "$BIN" ./cmd/lockstep)
# A fault takes INTERVAL on average plus the restart (a second or two).
secs=$((ROUNDS * (INTERVAL + 2)))

{
  echo "# $WHAT fault campaign"
  echo
  echo "$(date -u +%FT%TZ), $(nproc) CPUs, commit $(cd "$ROOT" && git rev-parse --short HEAD)."
  echo "Command: \`CLUSTER=$CLUSTER REPLICAS=$REPLICAS SEMISYNC=$SEMISYNC ROUNDS=$ROUNDS INTERVAL=$INTERVAL CLIENTS=$CLIENTS FAULTS=$FAULTS bench/workload-campaign.sh\`"
  echo
  echo "| workload | seconds | faults | ok | fail | info | longest stall (s) | verdict | checks |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$OUT"

# row REPORT_JSON: the report as a row of the table.
row() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
checks = "; ".join(("" if c["ok"] else "FAILED ") + c["name"] + ": " + c["detail"].split("\n")[0] for c in r["checks"])
kinds = {}
for f in r["faults"] or []:
    kinds[f.split(" ")[0]] = kinds.get(f.split(" ")[0], 0) + 1
faults = f'{len(r["faults"] or [])} (' + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ")"
for s in r.get("skipped_faults") or []:
    faults += f"; SKIPPED {s}"
stall = r.get("longest_stall_ns", 0) / 1e9
print(f'| {r["workload"]} | {r["elapsed_ns"]/1e9:.0f} | {faults} | {r["ok"]} | {r["fail"]} | {r["info"]} | {stall:.2f} | {"valid" if r["valid"] else "INVALID"} | {checks} |')
PY
}

status=0
for w in $WORKLOADS; do
  dir=$WORK/$w
  echo "== $w: ${secs}s, faults $FAULTS every ~${INTERVAL}s" >&2
  set +e
  "$BIN" workload "$w" "${TARGET[@]}" --dir "$dir" --duration "${secs}s" --clients "$CLIENTS" \
    --faults "$FAULTS" --fault-interval "${INTERVAL}s" > "$dir.out" 2>/dev/null
  rc=$?
  set -e
  [ "$rc" = 0 ] || status=1
  row "$dir/report.json" >> "$OUT"
  cat "$dir.out" >&2
done

# The same workloads under the same faults against MariaDB (durable
# settings; a cluster is a Galera cluster), which the command starts with
# --mariadbd: what the checkers find there, beside Lockstep's figures.
# Its verdicts do not change this script's exit status. A replica set is
# Lockstep's only (failover promotes with MySQL's statements).
MARIADBD=${MARIADBD:-$(command -v mariadbd || true)}
if [ "${MARIADB:-1}" = 1 ] && [ -n "$MARIADBD" ] && [ -z "$REPLICAS" ]; then
  what="MariaDB $("$MARIADBD" --version | sed -n 's/.*Ver \([^ ]*\).*/\1/p')"
  [ -n "$CLUSTER" ] && what="$what with Galera ($CLUSTER nodes)"
  {
    echo
    echo "$what on the same box, same workloads and faults:"
    echo
    echo "| workload | seconds | faults | ok | fail | info | longest stall (s) | verdict | checks |"
    echo "|---|---|---|---|---|---|---|---|---|"
  } >> "$OUT"
  for w in $WORKLOADS; do
    dir=$WORK/mariadb-$w
    echo "== $w against $what: ${secs}s, faults $FAULTS every ~${INTERVAL}s" >&2
    set +e
    "$BIN" workload "$w" "${TARGET[@]}" --mariadbd "$MARIADBD" --dir "$dir" --duration "${secs}s" \
      --clients "$CLIENTS" --faults "$FAULTS" --fault-interval "${INTERVAL}s" > "$dir.out" 2>"$dir.err"
    set -e
    if [ -s "$dir/report.json" ]; then row "$dir/report.json" >> "$OUT"; else echo "| $w | - | - | - | - | - | - | did not run: $(tail -1 "$dir.err") | |" >> "$OUT"; fi
    cat "$dir.out" >&2
  done
fi

echo >> "$OUT"
echo "Histories and reports: $WORK" >> "$OUT"
cat "$OUT"
exit $status
