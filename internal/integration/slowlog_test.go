package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowQueryLog: with slow_query_log ON, statements that take
// long_query_time or more are written in MySQL's format with their
// Query_time, Lock_time (row lock waits), Rows_sent and Rows_examined,
// and mariadb-dumpslow reads the file; faster ones are not. general_log
// ON and log_output TABLE, which nothing would act on, are refused. A
// global-only variable set with SET GLOBAL reads back at once in the
// same session.
func TestSlowQueryLog(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO d.t VALUES (1, 0), (2, 0), (3, 0)")
	c := conn(t, db)
	ctx := context.Background()
	for _, q := range []string{"SET GLOBAL long_query_time = 0.1", "SET GLOBAL slow_query_log_file = 'slow.log'", "SET GLOBAL slow_query_log = ON"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var on int
	if err := c.QueryRowContext(ctx, "SELECT @@slow_query_log").Scan(&on); err != nil || on != 1 {
		t.Fatalf("@@slow_query_log after SET GLOBAL in the same session: %d, %v", on, err)
	}
	mustConnExec(t, c, "SELECT 1")
	mustConnExec(t, c, "SELECT id, SLEEP(0.05) FROM d.t")
	// A row lock wait: another session holds the row for 0.3 s.
	holder := conn(t, s.db(""))
	mustConnExec(t, holder, "BEGIN")
	mustConnExec(t, holder, "SELECT v FROM d.t WHERE id = 1 FOR UPDATE")
	go func() {
		time.Sleep(300 * time.Millisecond)
		holder.ExecContext(ctx, "COMMIT")
	}()
	mustConnExec(t, c, "UPDATE d.t SET v = 1 WHERE id = 1")

	for q, want := range map[string]uint16{"SET GLOBAL general_log = ON": 1235, "SET GLOBAL log_output = 'TABLE'": 1235, "SET GLOBAL log_output = 'FILE,TABLE'": 1235} {
		if _, err := db.Exec(q); errNumber(err) != want || !strings.Contains(err.Error(), "ON") && !strings.Contains(err.Error(), "TABLE") {
			t.Errorf("%s: %v, want %d naming the value", q, err, want)
		}
	}
	// FILE and NONE are taken (NONE wins over TABLE, as in MySQL), and
	// NONE writes nothing.
	mustConnExec(t, c, "SET GLOBAL long_query_time = 0")
	for _, q := range []string{"SET GLOBAL log_output = 'TABLE,NONE'", "SET GLOBAL log_output = 'NONE'"} {
		mustConnExec(t, c, q)
	}
	mustConnExec(t, c, "SELECT 'while the output is NONE'")
	mustConnExec(t, c, "SET GLOBAL log_output = 'FILE'")
	var output string
	if err := c.QueryRowContext(ctx, "SELECT @@global.log_output").Scan(&output); err != nil || output != "FILE" {
		t.Errorf("@@global.log_output: %q, %v", output, err)
	}

	// Every statement is logged from here: passwords are not.
	mustConnExec(t, c, "SET GLOBAL long_query_time = 0")
	mustConnExec(t, c, "CREATE USER sec@'%' IDENTIFIED BY 'hunter2secret'")
	mustConnExec(t, c, "SET PASSWORD FOR sec@'%' = 'another2secret'")

	path := filepath.Join(s.dir, "data", "slow.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if strings.Contains(log, "hunter2secret") || strings.Contains(log, "another2secret") || !strings.Contains(log, "IDENTIFIED BY '<secret>'") {
		t.Errorf("passwords in the slow log:\n%s", log)
	}
	if strings.Contains(log, "while the output is NONE") {
		t.Errorf("a statement run with log_output NONE is in the slow log:\n%s", log)
	}
	if strings.Contains(log, "SELECT 1;") {
		t.Errorf("a fast statement is in the slow log:\n%s", log)
	}
	entry := func(stmt string) map[string]float64 {
		i := strings.Index(log, stmt)
		if i < 0 {
			t.Fatalf("%q is not in the slow log:\n%s", stmt, log)
		}
		head := log[:i]
		head = head[strings.LastIndex(head, "# Query_time:"):]
		f := strings.Fields(strings.SplitN(head, "\n", 2)[0])
		out := map[string]float64{}
		for k := 1; k+1 < len(f); k += 2 {
			out[strings.TrimSuffix(f[k], ":")], _ = strconv.ParseFloat(f[k+1], 64)
		}
		return out
	}
	if e := entry("SELECT id, SLEEP(0.05) FROM d.t;"); e["Query_time"] < 0.1 || e["Rows_sent"] != 3 || e["Rows_examined"] != 3 {
		t.Errorf("the scan's entry: %v", e)
	}
	if e := entry("UPDATE d.t SET v = 1 WHERE id = 1;"); e["Lock_time"] < 0.2 || e["Query_time"] < e["Lock_time"] {
		t.Errorf("the lock wait's entry: %v", e)
	}
	if p, err := exec.LookPath("mariadb-dumpslow"); err == nil {
		out, err := exec.Command(p, path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "UPDATE d.t SET v = N WHERE id = N") || !strings.Contains(string(out), "Count: 1") {
			t.Errorf("mariadb-dumpslow: %v\n%s", err, out)
		}
	}
}

// TestFlushLogs: FLUSH needs RELOAD (1227, as in MySQL); FLUSH LOGS
// rotates the binlog and reopens the slow query log, so a log rotation
// tool can move the file away and flush; options with nothing to do are
// accepted, and those not built are refused.
func TestFlushLogs(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER op@'%' IDENTIFIED BY 'pw'")
	op := s.as(t, "op", "pw")
	for _, q := range []string{"FLUSH LOGS", "FLUSH PRIVILEGES", "FLUSH TABLES", "FLUSH HOSTS", "FLUSH BINARY LOGS", "FLUSH LOCAL SLOW LOGS"} {
		if _, err := op.Exec(q); errNumber(err) != 1227 {
			t.Fatalf("%s without RELOAD: %v, want 1227", q, err)
		}
	}
	mustExec(t, root, "GRANT RELOAD ON *.* TO op@'%'")
	mustExec(t, root, "SET GLOBAL slow_query_log_file = 'slow.log'")
	mustExec(t, root, "SET GLOBAL long_query_time = 0")
	mustExec(t, root, "SET GLOBAL slow_query_log = ON")
	mustExec(t, root, "SELECT 'before the rotation'")
	path := filepath.Join(s.dir, "data", "slow.log")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	binlogs := func() int {
		rows, err := root.Query("SHOW BINARY LOGS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		return n
	}
	before := binlogs()
	for _, q := range []string{"FLUSH LOGS", "FLUSH PRIVILEGES", "FLUSH TABLES", "FLUSH HOSTS, ERROR LOGS, GENERAL LOGS, ENGINE LOGS", "FLUSH NO_WRITE_TO_BINLOG USER_RESOURCES"} {
		if _, err := op.Exec(q); err != nil {
			t.Fatalf("%s with RELOAD: %v", q, err)
		}
	}
	if after := binlogs(); after != before+1 {
		t.Errorf("FLUSH LOGS: %d binary logs, then %d; want one more", before, after)
	}
	mustExec(t, root, "SELECT 'after the rotation'")
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "after the rotation") || strings.Contains(string(b), "before the rotation") {
		t.Fatalf("the slow log after FLUSH LOGS: %v\n%s", err, b)
	}
	if _, err := op.Exec("FLUSH RELAY LOGS"); errNumber(err) != 1235 {
		t.Fatalf("FLUSH RELAY LOGS: %v, want 1235", err)
	}
	mustExec(t, op, "FLUSH STATUS")
}
