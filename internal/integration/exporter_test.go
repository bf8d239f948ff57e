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
	for i := range 5 {
		mustExec(t, root, "INSERT INTO d.t VALUES (?)", i)
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
	// The default collectors, and SHOW ENGINE INNODB STATUS's.
	cmd := exec.Command(bin, "--config.my-cnf="+cnf, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--collect.engine_innodb_status")
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
}
