#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes with Go's fuzzer, FUZZTIME each
# (default 10m). A crasher is written under the
# package's testdata/fuzz/ and becomes a regression test once committed.
#
#   bench/fuzz.sh                  # 10 minutes per target
#   FUZZTIME=30s bench/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10m}
targets=(
  "./internal/binlog FuzzBinlogBytes"     # events and files from a source or the disk
  "./internal/binlog FuzzDecodeGTIDSet"   # GTID sets in dump commands and events
  "./internal/row FuzzDecodeImage"        # row images
  "./internal/server FuzzParseDumpCommand" # COM_BINLOG_DUMP(_GTID) packets
  "./internal/server FuzzWireStream"      # any client bytes, before and after login, TLS offered or not
  "./internal/server FuzzDefaultsFile"    # --defaults-file (my.cnf) contents
  "./internal/sqlengine FuzzPlanCacheSameAsParse" # the fast path's statement recognizer, against the parser
  "./internal/elle FuzzReadHistory"       # histories read back from disk by the checker
)
PARALLEL=${PARALLEL:-$(nproc)}
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "== $name ($pkg, $FUZZTIME)"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel "$PARALLEL" "$pkg"
done
