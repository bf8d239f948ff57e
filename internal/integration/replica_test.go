package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// sysbench runs one sysbench command against a server on port.
func sysbench(t *testing.T, port int, args ...string) string {
	t.Helper()
	sb := needTool(t, "sysbench")
	all := append([]string{"--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", port),
		"--mysql-user=root", "--mysql-db=sbtest"}, args...)
	out, err := exec.Command(sb, all...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "FATAL") {
		t.Fatalf("sysbench %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// replicaStatus returns SHOW REPLICA STATUS as a map (nil if empty).
func replicaStatus(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("SHOW REPLICA STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return nil
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i, c := range cols {
		if vals[i].Valid {
			m[c] = vals[i].String
		} else {
			m[c] = "NULL"
		}
	}
	return m
}

func gtidExecuted(t *testing.T, db *sql.DB) string {
	t.Helper()
	var g string
	if err := db.QueryRow("SELECT @@global.gtid_executed").Scan(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitCaughtUp waits until the replica has executed every GTID of the
// source, failing with the replica's status if it does not in time.
func waitCaughtUp(t *testing.T, src, rep *sql.DB, timeout time.Duration) {
	t.Helper()
	want := gtidExecuted(t, src)
	deadline := time.Now().Add(timeout)
	for {
		got := gtidExecuted(t, rep)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica did not catch up in %v: source %q, replica %q\nstatus: %v", timeout, want, got, replicaStatus(t, rep))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sameTables(t *testing.T, src, rep *sql.DB, tables ...string) {
	t.Helper()
	for _, tab := range tables {
		h1, n1 := tableHash(t, src, tab)
		h2, n2 := tableHash(t, rep, tab)
		if h1 != h2 || n1 != n2 {
			t.Fatalf("%s differs: source %d rows %s, replica %d rows %s", tab, n1, h1, n2, h2)
		}
	}
}

// TestLockstepReplica: a Lockstep replica started with --source-* options
// follows a Lockstep primary under concurrent sysbench load, in each
// parallel mode, and ends with identical tables and GTIDs.
func TestLockstepReplica(t *testing.T) {
	needTool(t, "sysbench")
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE sbtest")
	sysbench(t, p.port, "--tables=2", "--table-size=1000", "oltp_write_only", "prepare")

	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--replica-parallel-workers=4")
	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	st := replicaStatus(t, rdb)
	if st["Replica_IO_Running"] != "Yes" || st["Replica_SQL_Running"] != "Yes" || st["Seconds_Behind_Source"] != "0" {
		t.Fatalf("status after catching up: %v", st)
	}
	for _, mode := range []string{"LOGICAL_CLOCK", "WRITESET", "DATABASE"} {
		mustExec(t, rdb, "STOP REPLICA")
		mustExec(t, rdb, "SET GLOBAL replica_parallel_type = '"+mode+"'")
		mustExec(t, rdb, "START REPLICA")
		sysbench(t, p.port, "--tables=2", "--table-size=1000", "--threads=8", "--time=3", "oltp_write_only", "run")
		waitCaughtUp(t, pdb, rdb, 60*time.Second)
		sameTables(t, p.db("sbtest"), r.db("sbtest"), "sbtest1", "sbtest2")
		var applied string
		rdb.QueryRow("SHOW GLOBAL STATUS LIKE 'Replica_transactions_applied'").Scan(new(string), &applied)
		t.Logf("%s: in sync, %s transactions applied so far", mode, applied)
	}
	// The replica's binlog carries the source's GTIDs.
	if g := gtidExecuted(t, rdb); g != gtidExecuted(t, pdb) {
		t.Fatalf("gtid_executed differs: %s", g)
	}
}

// TestReplicaKilledUnderLoad kills the replica with SIGKILL at random
// moments while the primary runs sysbench, restarts it each time, and
// checks that it ends identical to the primary: no transaction lost (a
// GTID recorded without its rows) and none applied twice (a second
// Delete_rows or Write_rows would stop the SQL thread with 1032 or 1062).
func TestReplicaKilledUnderLoad(t *testing.T) {
	sb := needTool(t, "sysbench")
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE sbtest")
	sysbench(t, p.port, "--tables=2", "--table-size=1000", "oltp_write_only", "prepare")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--replica-parallel-workers=4", "--replica-parallel-type=WRITESET")
	load := exec.Command(sb, "--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", p.port),
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=1000", "--threads=8", "--time=16",
		"oltp_write_only", "run")
	out := &strings.Builder{}
	load.Stdout, load.Stderr = out, out
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	start := time.Now()
	for time.Since(start) < 13*time.Second {
		time.Sleep(time.Duration(300+rand.IntN(1500)) * time.Millisecond)
		r.kill()
		r.start()
		rounds++
	}
	if err := load.Wait(); err != nil {
		t.Fatalf("sysbench: %v\n%s", err, out)
	}
	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	sameTables(t, p.db("sbtest"), r.db("sbtest"), "sbtest1", "sbtest2")
	st := replicaStatus(t, rdb)
	if st["Last_SQL_Errno"] != "0" {
		t.Fatalf("SQL thread error: %v", st)
	}
	t.Logf("%d kills; replica identical at %s", rounds, gtidExecuted(t, rdb))
}
