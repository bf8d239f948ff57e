#!/usr/bin/env bash
# Runs go-mysql-server's engine test suite against Lockstep's backend
# (internal/sqlengine/enginetest_test.go, build tag enginetest) and counts
# what passes, fails and is skipped in each family of tests. The raw
# go test -json output is kept in $OUT (default /tmp/lockstep-enginetest.json).
#
#   bench/enginetest.sh
#   FAMILY=Queries bench/enginetest.sh     # one family
#   bench/enginetest.sh --check            # fail if a family passes fewer
#                                          # tests than its baseline
#
# The baseline (internal/sqlengine/testdata/enginetest-baseline) holds each
# family's passing count; raise it when more pass.
#
# Needs Go. The suite was written against go-mysql-server's in-memory
# backend; a failure here is not always a MySQL incompatibility.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/lockstep-enginetest.json}
RUN='TestEngineSuite'
[ -n "${FAMILY:-}" ] && RUN="TestEngineSuite/${FAMILY}\$"
(cd "$ROOT" && go test -tags enginetest -run "$RUN" -timeout 60m -json ./internal/sqlengine > "$OUT" 2>&1) || true
python3 - "$OUT" "${1:-}" "$ROOT/internal/sqlengine/testdata/enginetest-baseline" <<'PY'
import collections, json, sys
counts = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    t = e.get("Test", "")
    if e.get("Action") in ("pass", "fail", "skip") and t.count("/") >= 2:
        counts[t.split("/")[1]][e["Action"]] += 1
total = collections.Counter()
print("%-20s %7s %7s %7s" % ("family", "pass", "fail", "skip"))
for fam in sorted(counts):
    c = counts[fam]
    total.update(c)
    print("%-20s %7d %7d %7d" % (fam, c["pass"], c["fail"], c["skip"]))
print("%-20s %7d %7d %7d" % ("total", total["pass"], total["fail"], total["skip"]))
if sys.argv[2] == "--check":
    worse = []
    for line in open(sys.argv[3]):
        if line.strip() and not line.startswith("#"):
            fam, want = line.split()
            if counts[fam]["pass"] < int(want):
                worse.append("%s: %d pass, the baseline is %s" % (fam, counts[fam]["pass"], want))
    if worse:
        print("FAIL: fewer engine tests pass than before:\n  " + "\n  ".join(worse))
        sys.exit(1)
PY
