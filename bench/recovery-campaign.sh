#!/usr/bin/env bash
# Long randomised recovery campaigns (the short versions run in `make test`):
#
#   1. the crash test of the commit pipeline on Pebble's crashable
#      in-memory filesystem, ROUNDS crash images (LOCKSTEP_CRASH_ROUNDS);
#   2. the real lockstep binary killed with SIGKILL at random moments under
#      load, restarted with a random recoverable damage (a lost binlog
#      index, synced mark or store), KILLS rounds, every acknowledged insert
#      checked (LOCKSTEP_RECOVERY_ROUNDS).
#
# Usage: bench/recovery-campaign.sh            (defaults: 10000 and 100)
#        ROUNDS=2000 KILLS=20 bench/recovery-campaign.sh
# LOCKSTEP_SEED replays a run of part 2. Servers listen on 127.0.0.1 only
# and are stopped by the tests; the data lives in Go's temporary folders.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10000}
KILLS=${KILLS:-100}
echo "== crash images of the commit pipeline: $ROUNDS"
LOCKSTEP_CRASH_ROUNDS=$ROUNDS go test -count=1 -timeout 120m -run 'TestCrashRecovery$' ./internal/commit/
echo "== kill -9 of a loaded server: $KILLS rounds"
LOCKSTEP_RECOVERY_ROUNDS=$KILLS go test -count=1 -timeout 120m -v -run 'TestRecoveryRandomKills$' ./internal/integration/ \
  | grep -E '^(=== RUN|--- |\s+recovery_test.go|ok|FAIL|PASS)'
