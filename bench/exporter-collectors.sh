#!/usr/bin/env bash
# exporter-collectors.sh - which of prometheus-mysqld-exporter's collectors
# scrape without an error, on Lockstep and on MariaDB, beside each other
# in one run. Every collector the exporter has is switched on except
# heartbeat (it reads a pt-heartbeat table the servers do not have) and
# engine_tokudb_status (no TokuDB anywhere); the exporter logs in as a
# monitoring account with PMM's grants (SELECT, PROCESS, REPLICATION
# CLIENT, RELOAD on *.*), after some writes so that the summaries have
# rows.
#
#   bench/exporter-collectors.sh        # needs prometheus-mysqld-exporter,
#                                       # mariadbd and mariadb-install-db
#
# Prints one line per collector: ok or FAIL on each server, and the
# counts.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/lockstep-exporter.XXXXXX)}
LPORT=${LPORT:-23416} MPORT=${MPORT:-23316} EPORT=${EPORT:-23516}
LDIR=$WORK/lockstep MDIR=$WORK/mariadb
source "$ROOT/bench/lockstep-lib.sh"
source "$ROOT/bench/mariadb-lib.sh"
EXPORTER_PID=
# The servers' data (some 600 MB) goes when the run ends; the scrapes and
# the exporter's logs stay in $WORK. KEEP_DATA=1 keeps the data too.
trap '[ -n "$EXPORTER_PID" ] && kill "$EXPORTER_PID" 2>/dev/null; lstop; mstop; if [ -z "${KEEP_DATA:-}" ]; then rm -rf "$LDIR" "$MDIR"; fi' EXIT

COLLECTORS=(
  global_status global_variables slave_status binlog_size slave_hosts
  info_schema.processlist info_schema.tables info_schema.tablestats info_schema.schemastats
  info_schema.innodb_metrics info_schema.innodb_tablespaces info_schema.innodb_cmp info_schema.innodb_cmpmem
  info_schema.query_response_time info_schema.userstats info_schema.clientstats info_schema.replica_host
  auto_increment.columns engine_innodb_status mysql.user
  perf_schema.eventsstatements perf_schema.eventsstatementssum perf_schema.eventswaits
  perf_schema.tableiowaits perf_schema.indexiowaits perf_schema.tablelocks
  perf_schema.file_events perf_schema.file_instances perf_schema.memory_events
  perf_schema.replication_group_members perf_schema.replication_group_member_stats
  perf_schema.replication_applier_status_by_worker
)
SETUP="CREATE USER IF NOT EXISTS pmm@'%' IDENTIFIED BY 'pmm';
GRANT SELECT, PROCESS, REPLICATION CLIENT, RELOAD ON *.* TO pmm@'%';
CREATE DATABASE IF NOT EXISTS watched;
CREATE TABLE IF NOT EXISTS watched.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20), KEY (v));
INSERT INTO watched.t (v) VALUES ('a'), ('b'), ('c');
UPDATE watched.t SET v = 'd' WHERE id = 2;
SELECT COUNT(*) FROM watched.t WHERE v = 'a';"

# scrape PORT: "collector errors" for each collector that ran against the
# server on PORT (mysqld_exporter 0.14 counts a scrape's errors per
# collector, mysql_exporter_scrape_errors_total; no line is no error).
scrape() {
  local cnf=$WORK/exporter-$1.cnf flags=()
  printf '[client]\nuser=pmm\npassword=pmm\nhost=127.0.0.1\nport=%s\n' "$1" > "$cnf"
  for c in "${COLLECTORS[@]}"; do flags+=("--collect.$c"); done
  prometheus-mysqld-exporter --config.my-cnf="$cnf" --web.listen-address="127.0.0.1:$EPORT" "${flags[@]}" \
    > "$WORK/exporter-$1.log" 2>&1 &
  EXPORTER_PID=$!
  local body=
  for _ in $(seq 1 100); do
    body=$(curl -fsS "http://127.0.0.1:$EPORT/metrics" 2>/dev/null) && break
    sleep 0.2
  done
  kill "$EXPORTER_PID"; wait "$EXPORTER_PID" 2>/dev/null || true; EXPORTER_PID=
  [ -n "$body" ] || { echo "the exporter did not answer (port $1)" >&2; cat "$WORK/exporter-$1.log" >&2; exit 1; }
  awk '/^mysql_exporter_collector_duration_seconds\{/ { match($0, /collector="[^"]*"/); c = substr($0, RSTART + 11, RLENGTH - 12); ran[c] = 1 }
       /^mysql_exporter_scrape_errors_total\{/ { match($0, /collector="[^"]*"/); c = substr($0, RSTART + 11, RLENGTH - 12); errs[c] = $2 }
       END { for (c in ran) print c, (c in errs ? errs[c] : 0) }' <<< "$body"
}

lstart
mstart "$MPORT"
lq "$SETUP" > /dev/null
mq "$SETUP" > /dev/null
scrape "$LPORT" > "$WORK/lockstep.txt"
scrape "$MPORT" > "$WORK/mariadb.txt"

printf '%-50s %-8s %s\n' collector Lockstep MariaDB
lfail=0 mfail=0
for c in "${COLLECTORS[@]}"; do
  l=$(awk -v c="collect.$c" '$1 == c {print ($2 == 0 ? "ok" : "FAIL")}' "$WORK/lockstep.txt")
  m=$(awk -v c="collect.$c" '$1 == c {print ($2 == 0 ? "ok" : "FAIL")}' "$WORK/mariadb.txt")
  [ "$l" = ok ] || lfail=$((lfail + 1))
  [ "$m" = ok ] || mfail=$((mfail + 1))
  printf '%-50s %-8s %s\n' "$c" "${l:-absent}" "${m:-absent}"
done
echo "failed: Lockstep $lfail of ${#COLLECTORS[@]}, MariaDB $mfail of ${#COLLECTORS[@]} (logs: $WORK/exporter-*.log)"
