package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/child"
)

// TestMysqldExporter: Prometheus' mysqld_exporter (Debian's package, what
// PMM runs) scrapes Lockstep with its default collectors and SHOW ENGINE
// INNODB STATUS's, and no error,
// and the status it reports moves: bytes, queries, prepared statements.
// SHOW GLOBAL STATUS lists only variables something maintains (the
// exporter refused the whole scrape when two of the never-kept ones
// differed only by a dot).
func TestMysqldExporter(t *testing.T) {
	bin := needTool(t, "prometheus-mysqld-exporter")
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER exporter@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO exporter@'%'")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT PRIMARY KEY)")
	// Prepared statements (the driver prepares a statement with
	// arguments), so the Com_stmt_ counters move.
	// In the database: the exporter leaves out statements run with none.
	dd := s.db("d")
	for i := range 5 {
		mustExec(t, dd, "INSERT INTO t VALUES (?)", i)
	}
	for _, name := range []string{"Innodb_buffer_pool_reads", "Handler_read_key", "validate_password.dictionary_file_words_count"} {
		rows, err := root.Query("SHOW GLOBAL STATUS LIKE '" + name + "'")
		if err != nil {
			t.Fatal(err)
		}
		if rows.Next() {
			t.Errorf("SHOW GLOBAL STATUS lists %s, which nothing keeps", name)
		}
		rows.Close()
	}

	// SHOW ENGINE: InnoDB's shape and Lockstep's own figures, 1286 for
	// another engine, PROCESS needed.
	var typ, name, status string
	if err := root.QueryRow("SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status); err != nil || typ != "InnoDB" || !strings.Contains(status, "Row lock waits") {
		t.Errorf("SHOW ENGINE INNODB STATUS: %q %q %v", typ, status, err)
	}
	if _, err := root.Exec("SHOW ENGINE TOKUDB STATUS"); errNumber(err) != 1286 {
		t.Errorf("SHOW ENGINE TOKUDB STATUS: %v, want 1286", err)
	}
	mustExec(t, root, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	if _, err := s.as(t, "plain", "pw").Exec("SHOW ENGINE INNODB STATUS"); errNumber(err) != 1227 {
		t.Errorf("SHOW ENGINE INNODB STATUS without PROCESS: %v, want 1227", err)
	}

	dir := t.TempDir()
	cnf := filepath.Join(dir, "exporter.cnf")
	if err := os.WriteFile(cnf, fmt.Appendf(nil, "[client]\nuser=exporter\npassword=pw\nhost=127.0.0.1\nport=%d\n", s.port), 0o600); err != nil {
		t.Fatal(err)
	}
	port := fixedPort(t)
	// The default collectors, SHOW ENGINE INNODB STATUS's, the
	// statement digests' and the table I/O summaries'.
	cmd := exec.Command(bin, "--config.my-cnf="+cnf, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--collect.engine_innodb_status",
		"--collect.perf_schema.eventsstatements", "--collect.perf_schema.eventsstatementssum",
		"--collect.perf_schema.tableiowaits", "--collect.perf_schema.indexiowaits", "--collect.perf_schema.tablelocks",
		"--collect.perf_schema.eventswaits", "--collect.perf_schema.file_events", "--collect.perf_schema.file_instances",
		"--collect.perf_schema.memory_events", "--collect.info_schema.innodb_metrics")
	logf, err := os.Create(filepath.Join(dir, "exporter.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := child.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })

	var body string
	var code int
	waitFor(t, "the exporter to answer", 20*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body, code = string(b), resp.StatusCode
		return true
	})
	if code != http.StatusOK {
		t.Fatalf("scrape: HTTP %d:\n%s", code, body)
	}
	value := func(metric string) string {
		for _, line := range strings.Split(body, "\n") {
			if rest, ok := strings.CutPrefix(line, metric+" "); ok {
				return rest
			}
		}
		return ""
	}
	for metric, want := range map[string]string{"mysql_up": "1", "mysql_exporter_last_scrape_error": "0"} {
		if got := value(metric); got != want {
			t.Errorf("%s = %q, want %s", metric, got, want)
		}
	}
	for _, metric := range []string{
		"mysql_global_status_bytes_received", "mysql_global_status_bytes_sent", "mysql_global_status_queries",
		`mysql_global_status_commands_total{command="stmt_execute"}`, `mysql_global_status_commands_total{command="insert"}`,
	} {
		if v := value(metric); v == "" || v == "0" {
			t.Errorf("%s = %q, want a count above 0", metric, v)
		}
	}
	if strings.Contains(body, "mysql_global_status_validate_password") {
		t.Error("the scrape still carries validate_password status variables")
	}
	// The prepared INSERT ran five times: its digest says so.
	insert := ""
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "mysql_perf_schema_events_statements_total{") && strings.Contains(line, "INSERT INTO `t` VALUES (?)") {
			insert = line
		}
	}
	if !strings.HasSuffix(insert, " 5") || !strings.Contains(insert, `schema="d"`) {
		t.Errorf("the INSERT's digest in the scrape: %q", insert)
	}
	// The five rows inserted into d.t, counted per table and under no
	// index.
	for _, metric := range []string{
		`mysql_perf_schema_table_io_waits_total{name="t",operation="insert",schema="d"}`,
		`mysql_perf_schema_index_io_waits_total{index="NONE",name="t",operation="insert",schema="d"}`,
		`mysql_perf_schema_external_lock_waits_total{name="t",operation="write",schema="d"}`,
	} {
		if v := value(metric); v != "5" {
			t.Errorf("%s = %q, want 5", metric, v)
		}
	}
	// The binlog's writes and syncs, timed.
	for _, metric := range []string{
		`mysql_perf_schema_file_events_bytes_total{event_name="wait/io/file/sql/binlog",mode="write"}`,
		`mysql_perf_schema_file_events_total{event_name="wait/io/file/sql/binlog",mode="misc"}`,
		`mysql_perf_schema_events_waits_total{event_name="wait/io/file/sql/binlog"}`,
	} {
		if v := value(metric); v == "" || v == "0" {
			t.Errorf("%s = %q, want a count above 0", metric, v)
		}
	}
	// The Go heap: allocated, freed, in use.
	for _, metric := range []string{
		`mysql_perf_schema_memory_events_alloc_bytes_total{event_name="lockstep/go_heap"}`,
		`mysql_perf_schema_memory_events_used_bytes{event_name="lockstep/go_heap"}`,
	} {
		if v := value(metric); v == "" || v == "0" {
			t.Errorf("%s = %q, want bytes above 0", metric, v)
		}
	}
	if v := value("mysql_perf_schema_events_statements_sum_total"); v == "" || v == "0" {
		t.Errorf("mysql_perf_schema_events_statements_sum_total = %q, want a count above 0", v)
	}
}

// TestStatementDigests: performance_schema.events_statements_summary_by_digest
// counts each statement under its digest, with its rows, errors and
// times, for text and prepared statements alike; it needs SELECT on
// performance_schema, and TRUNCATE (which needs DROP) empties it.
func TestStatementDigests(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	root.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE DATABASE d",
		"USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)",
		"UPDATE t SET v = v + 1 WHERE id < 3",
		"UPDATE t SET v = v + 1 WHERE id < 2",
	} {
		mustExec(t, root, q)
	}
	for i := 1; i <= 3; i++ {
		var v int
		if err := root.QueryRow("SELECT v FROM t WHERE id = ?", i).Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	root.Exec("SELECT nosuch FROM t")
	row := func(text string) (n, errs, sent, affected, examined uint64, schema string) {
		t.Helper()
		err := root.QueryRow("SELECT COUNT_STAR, SUM_ERRORS, SUM_ROWS_SENT, SUM_ROWS_AFFECTED, SUM_ROWS_EXAMINED, IFNULL(SCHEMA_NAME, '') "+
			"FROM performance_schema.events_statements_summary_by_digest WHERE DIGEST_TEXT = ?", text).Scan(&n, &errs, &sent, &affected, &examined, &schema)
		if err != nil {
			t.Fatalf("the digest of %s: %v", text, err)
		}
		return
	}
	if n, _, _, affected, _, schema := row("UPDATE `t` SET `v` = `v` + ? WHERE `id` < ?"); n != 2 || affected != 3 || schema != "d" {
		t.Errorf("UPDATE: %d statements, %d rows changed, schema %q; want 2, 3, d", n, affected, schema)
	}
	if n, _, sent, _, examined, _ := row("SELECT `v` FROM `t` WHERE `id` = ?"); n != 3 || sent != 3 || examined < 3 {
		t.Errorf("prepared SELECT: %d statements, %d rows sent, %d examined; want 3, 3, at least 3", n, sent, examined)
	}
	if n, errs, _, _, _, _ := row("SELECT `nosuch` FROM `t`"); n != 1 || errs != 1 {
		t.Errorf("failed SELECT: %d statements, %d errors; want 1, 1", n, errs)
	}
	var ok int
	if err := root.QueryRow("SELECT COUNT(*) FROM performance_schema.events_statements_summary_by_digest " +
		"WHERE SUM_TIMER_WAIT >= MAX_TIMER_WAIT AND MAX_TIMER_WAIT >= MIN_TIMER_WAIT AND MIN_TIMER_WAIT > 0 " +
		"AND QUANTILE_95 <= MAX_TIMER_WAIT AND QUANTILE_95 > 0 AND LENGTH(DIGEST) = 64 AND LAST_SEEN >= FIRST_SEEN").Scan(&ok); err != nil || ok < 5 {
		t.Errorf("rows with consistent times: %d, %v", ok, err)
	}
	mustExec(t, root, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT SELECT ON d.* TO plain@'%'")
	plain := s.as(t, "plain", "pw")
	if _, err := plain.Exec("SELECT * FROM performance_schema.events_statements_summary_by_digest"); errNumber(err) != 1142 {
		t.Errorf("the summary without SELECT on performance_schema: %v, want 1142", err)
	}
	if _, err := plain.Exec("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest"); errNumber(err) != 1142 {
		t.Errorf("TRUNCATE of the summary without DROP: %v, want 1142", err)
	}
	// performance_schema.processlist and threads list the connections
	// as information_schema.PROCESSLIST does.
	var id uint64
	var info, name, typ string
	if err := root.QueryRow("SELECT p.ID, p.INFO, t.NAME, t.TYPE FROM performance_schema.processlist p JOIN performance_schema.threads t "+
		"ON t.PROCESSLIST_ID = p.ID WHERE p.ID = CONNECTION_ID()").Scan(&id, &info, &name, &typ); err != nil ||
		!strings.Contains(info, "performance_schema.processlist") || name != "thread/sql/one_connection" || typ != "FOREGROUND" {
		t.Errorf("this connection in processlist and threads: %d %q %q %q %v", id, info, name, typ, err)
	}
	mustExec(t, root, "TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM performance_schema.events_statements_summary_by_digest WHERE DIGEST_TEXT LIKE 'UPDATE%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("UPDATE digests after TRUNCATE: %d, %v", n, err)
	}
}
