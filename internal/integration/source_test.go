package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// syncer returns a go-mysql BinlogSyncer (the library behind canal and
// many CDC tools) for s.
func syncer(t *testing.T, s *server, serverID uint32, semi bool) *replication.BinlogSyncer {
	t.Helper()
	cfg := replication.BinlogSyncerConfig{
		ServerID: serverID, Flavor: mysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port), User: "root",
		SemiSyncEnabled: semi, HeartbeatPeriod: 200 * time.Millisecond, MaxReconnectAttempts: 1,
		UseDecimal: true,
	}
	cfg.Logger = nil
	b := replication.NewBinlogSyncer(cfg)
	t.Cleanup(b.Close)
	return b
}

// collect reads events until want returns true or the timeout passes.
func collect(t *testing.T, st *replication.BinlogStreamer, timeout time.Duration, want func(*replication.BinlogEvent) bool) []*replication.BinlogEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var evs []*replication.BinlogEvent
	for {
		e, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		evs = append(evs, e)
		if want(e) {
			return evs
		}
	}
}

func rowsOf(evs []*replication.BinlogEvent) [][]any {
	var out [][]any
	for _, e := range evs {
		if r, ok := e.Event.(*replication.RowsEvent); ok {
			out = append(out, r.Rows...)
		}
	}
	return out
}

func gtidsOf(evs []*replication.BinlogEvent) []int64 {
	var out []int64
	for _, e := range evs {
		if g, ok := e.Event.(*replication.GTIDEvent); ok {
			out = append(out, g.GNO)
		}
	}
	return out
}

func xidCount(n int) func(*replication.BinlogEvent) bool {
	seen := 0
	return func(e *replication.BinlogEvent) bool {
		if _, ok := e.Event.(*replication.XIDEvent); ok {
			seen++
		}
		return seen >= n
	}
}

// TestDumpFilePositionAndGTID streams the binlog with COM_BINLOG_DUMP
// (file/position) and COM_BINLOG_DUMP_GTID (auto-positioning) to go-mysql,
// including transactions committed while the stream waits.
func TestDumpFilePositionAndGTID(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE src")
	d := s.db("src")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2))")
	for i := 1; i <= 3; i++ {
		mustExec(t, d, "INSERT INTO t VALUES (?, ?, ?)", i, fmt.Sprintf("row%d", i), fmt.Sprintf("%d.25", i))
	}

	// File/position from the start of the first file.
	b := syncer(t, s, 101, false)
	st, err := b.StartSync(mysql.Position{Name: "binlog.000001", Pos: 4})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st, 10*time.Second, xidCount(3))
	rows := rowsOf(evs)
	if len(rows) != 3 || rows[0][1] != "row1" || fmt.Sprint(rows[2][2]) != "3.25" {
		t.Fatalf("rows = %v", rows)
	}
	if _, ok := evs[0].Event.(*replication.RotateEvent); !ok {
		t.Fatalf("stream starts with %T, want the fake Rotate", evs[0].Event)
	}
	// A transaction committed while the dump waits arrives.
	mustExec(t, d, "UPDATE t SET amount = 9.5 WHERE id = 2")
	evs = collect(t, st, 10*time.Second, xidCount(1))
	if r := rowsOf(evs); len(r) != 2 || fmt.Sprint(r[1][2]) != "9.5" {
		t.Fatalf("update rows = %v", r)
	}
	b.Close()

	// GTID auto-positioning: the replica has the first two transactions
	// (CREATE DATABASE, CREATE TABLE) and the first insert.
	var uuid string
	db.QueryRow("SELECT @@server_uuid").Scan(&uuid)
	set, err := mysql.ParseMysqlGTIDSet(uuid + ":1-3")
	if err != nil {
		t.Fatal(err)
	}
	b = syncer(t, s, 102, false)
	st, err = b.StartSyncGTID(set)
	if err != nil {
		t.Fatal(err)
	}
	evs = collect(t, st, 10*time.Second, xidCount(3))
	if g := gtidsOf(evs); len(g) != 3 || g[0] != 4 || g[2] != 6 {
		t.Fatalf("GTIDs streamed = %v, want 4..6", g)
	}
	// SHOW REPLICAS lists the dump.
	rowsSeen := 0
	r, err := db.Query("SHOW REPLICAS")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id, port, src uint32
		var host, u string
		if err := r.Scan(&id, &host, &port, &src, &u); err != nil {
			t.Fatal(err)
		}
		if id == 102 {
			rowsSeen++
		}
	}
	r.Close()
	if rowsSeen != 1 {
		t.Fatal("SHOW REPLICAS does not list the connected replica")
	}
}

// TestDumpErrors: what a replica asks for that cannot be served gets
// error 1236 with MySQL's reason, and the server stays up.
func TestDumpErrors(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE e")
	var uuid string
	db.QueryRow("SELECT @@server_uuid").Scan(&uuid)

	b := syncer(t, s, 201, false)
	st, err := b.StartSync(mysql.Position{Name: "binlog.000099", Pos: 4})
	if err == nil {
		_, err = st.GetEvent(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "1236") || !strings.Contains(err.Error(), "Could not find first log file") {
		t.Fatalf("unknown file: err = %v", err)
	}

	// The replica claims GTIDs of ours we never executed.
	set, _ := mysql.ParseMysqlGTIDSet(uuid + ":1-1000")
	b = syncer(t, s, 202, false)
	st, err = b.StartSyncGTID(set)
	if err == nil {
		_, err = st.GetEvent(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "more GTIDs than the master") {
		t.Fatalf("replica ahead: err = %v", err)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// follow connects a semi-sync go-mysql replica at pos that reads (and
// acknowledges) everything in the background.
func follow(t *testing.T, s *server, serverID uint32, pos mysql.Position) *replication.BinlogSyncer {
	t.Helper()
	b := syncer(t, s, serverID, true)
	st, err := b.StartSync(pos)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if _, err := st.GetEvent(context.Background()); err != nil {
				return
			}
		}
	}()
	return b
}

// waitStatus waits up to 10 s for a status variable to read want.
func waitStatus(t *testing.T, db *sql.DB, name, want, failure string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for statusOf(t, db, name) != want {
		if time.Now().After(deadline) {
			t.Fatal(failure)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statusOf(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var n, v string
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestSemiSync: with a semi-sync replica commits are acknowledged;
// without one they wait out the timeout, fall back to async, and return
// to semi-sync when a replica catches up.
func TestSemiSync(t *testing.T) {
	s := startServer(t, t.TempDir(), "--rpl-semi-sync-source-enabled", "--rpl-semi-sync-source-timeout=1500")
	db := s.db("")
	// No replica: the first commit waits for the timeout, then the source
	// is asynchronous.
	start := time.Now()
	mustExec(t, db, "CREATE DATABASE semi")
	if w := time.Since(start); w < time.Second {
		t.Fatalf("commit without a replica returned after %v, before the semi-sync timeout", w)
	}
	d := s.db("semi")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	if v := statusOf(t, db, "Rpl_semi_sync_source_status"); v != "OFF" {
		t.Fatalf("status after a timeout = %s", v)
	}
	// An async commit does not wait: with the timeout raised to a minute,
	// one that waited would outlast the bound.
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_source_timeout = 60000")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if _, err := d.ExecContext(ctx, "INSERT INTO t VALUES (2, 1)"); err != nil {
		t.Fatalf("async commit (bounded at 20 s, timeout a minute): %v", err)
	}
	cancel()
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_source_timeout = 1500")

	// A semi-sync replica connects and catches up: back to semi-sync.
	b := follow(t, s, 301, mysql.Position{Name: "binlog.000001", Pos: 4})
	waitStatus(t, db, "Rpl_semi_sync_source_status", "ON", "semi-sync did not switch back on after the replica caught up")
	if v := statusOf(t, db, "Rpl_semi_sync_source_clients"); v != "1" {
		t.Fatalf("clients = %s", v)
	}
	yes0 := statusOf(t, db, "Rpl_semi_sync_source_yes_tx")
	// Each commit is acknowledged (one that timed out would count in
	// no_tx and switch semi-sync off).
	for i := 3; i < 23; i++ {
		mustExec(t, d, "INSERT INTO t VALUES (?, 1)", i)
	}
	if yes := statusOf(t, db, "Rpl_semi_sync_master_yes_tx"); atoi(t, yes)-atoi(t, yes0) != 20 {
		t.Fatalf("yes_tx went from %s to %s over 20 acknowledged commits", yes0, yes)
	}
	if v := statusOf(t, db, "Rpl_semi_sync_source_status"); v != "ON" {
		t.Fatalf("status = %s after acknowledged commits", v)
	}
	// The same as Prometheus metrics, with the replica's positions.
	m := scrape(t, s)
	if value(m, "lockstep_semisync_acknowledged_transactions_total", "") < 20 || value(m, "lockstep_semisync_status", "") != 1 ||
		value(m, "lockstep_semisync_wait_seconds", "") < 1 || value(m, "lockstep_semisync_clients", "") != 1 {
		t.Fatal("semi-sync metrics do not match the status variables")
	}
	if value(m, "lockstep_replica_acknowledged_position", "301") <= 0 || value(m, "lockstep_replica_behind_bytes", "301") != 0 {
		t.Fatal("per-replica metrics missing or wrong")
	}

	// The replica stops: the next commit waits out the timeout, and the
	// source falls back to async.
	b.Close()
	waitStatus(t, db, "Rpl_semi_sync_source_clients", "0", "the stopped replica is still counted")
	no0 := atoi(t, statusOf(t, db, "Rpl_semi_sync_source_no_tx"))
	start = time.Now()
	mustExec(t, d, "INSERT INTO t VALUES (100, 1)")
	if w := time.Since(start); w < time.Second {
		t.Fatalf("with the replica gone the commit returned after %v, before the timeout", w)
	}
	if statusOf(t, db, "Rpl_semi_sync_source_status") != "OFF" || atoi(t, statusOf(t, db, "Rpl_semi_sync_source_no_tx")) != no0+1 {
		t.Fatal("no fallback to async after the timeout")
	}
	// It comes back (from where it stopped) and semi-sync resumes.
	var file string
	var pos uint32
	var x1, x2, x3 string
	db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &x1, &x2, &x3)
	follow(t, s, 301, mysql.Position{Name: file, Pos: pos})
	mustExec(t, d, "INSERT INTO t VALUES (101, 1)") // async; the replica's ACK of it switches semi-sync on
	waitStatus(t, db, "Rpl_semi_sync_source_status", "ON", "semi-sync did not resume when the replica returned")
	yes1 := atoi(t, statusOf(t, db, "Rpl_semi_sync_source_yes_tx"))
	mustExec(t, d, "INSERT INTO t VALUES (102, 1)")
	if atoi(t, statusOf(t, db, "Rpl_semi_sync_source_yes_tx")) != yes1+1 {
		t.Fatal("the commit after the replica's return was not acknowledged")
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// trxTracker follows a stream's transactions: ended reports the GNO of the
// transaction an event completes (an XID, or the statement of a DDL).
type trxTracker struct{ cur int64 }

func (t *trxTracker) ended(e *replication.BinlogEvent) (int64, bool) {
	switch ev := e.Event.(type) {
	case *replication.GTIDEvent:
		t.cur = ev.GNO
	case *replication.XIDEvent, *replication.QueryEvent:
		if q, ok := ev.(*replication.QueryEvent); ok && string(q.Query) == "BEGIN" {
			return 0, false
		}
		if g := t.cur; g != 0 {
			t.cur = 0
			return g, true
		}
	}
	return 0, false
}

// TestReplicaResumesByGTID: a replica killed mid-stream reconnects with
// the GTID set of the transactions it received whole and ends with every
// transaction exactly once.
func TestReplicaResumesByGTID(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE rs")
	d := s.db("rs")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY)")
	var uuid string
	db.QueryRow("SELECT @@server_uuid").Scan(&uuid)

	// Load runs throughout.
	stop := make(chan struct{})
	loadDone := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				loadDone <- n
				return
			default:
			}
			if _, err := d.Exec("INSERT INTO t VALUES (?)", n); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	seen := map[int64]int{} // GNO -> times received whole
	var have mysql.GTIDSet
	have, _ = mysql.ParseMysqlGTIDSet("")
	for round := range 4 {
		b := syncer(t, s, 701, false)
		st, err := b.StartSyncGTID(have.Clone())
		if err != nil {
			t.Fatal(err)
		}
		// Read some transactions, then die in the middle of one.
		var tr trxTracker
		whole := 0
		for whole < 50+round*30 {
			e, err := st.GetEvent(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if gno, ok := tr.ended(e); ok {
				seen[gno]++
				have.Update(fmt.Sprintf("%s:%d", uuid, gno))
				whole++
			}
		}
		// ... and die right after the next transaction's GTID event, with
		// the transaction half received.
		for {
			e, err := st.GetEvent(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := e.Event.(*replication.GTIDEvent); ok {
				break
			}
		}
		b.Close()
	}
	close(stop)
	<-loadDone
	// Catch up to the end, then check every GTID 1..N arrived exactly once.
	var executed string
	db.QueryRow("SELECT @@global.gtid_executed").Scan(&executed)
	last, _ := strconv.ParseInt(executed[strings.LastIndex(executed, "-")+1:], 10, 64)
	b := syncer(t, s, 701, false)
	st, err := b.StartSyncGTID(have.Clone())
	if err != nil {
		t.Fatal(err)
	}
	var tr trxTracker
	for int64(len(seen)) < last {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e, err := st.GetEvent(ctx)
		cancel()
		if err != nil {
			t.Fatalf("catching up: %v (have %d of %d)", err, len(seen), last)
		}
		if gno, ok := tr.ended(e); ok {
			seen[gno]++
		}
	}
	for g := int64(1); g <= last; g++ {
		if seen[g] != 1 {
			t.Fatalf("GTID %d received %d times", g, seen[g])
		}
	}
	t.Logf("%d transactions, each received once across 5 connections", last)
}

// TestPythonMySQLReplication streams every row event with its column names
// to python-mysql-replication, by file/position and by GTID
// (auto_position), both non-blocking (BINLOG_DUMP_NON_BLOCK).
func TestPythonMySQLReplication(t *testing.T) {
	needTool(t, "python3")
	if err := tool(t, time.Minute, "python3", "-c", "import pymysqlreplication").Run(); err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("python-mysql-replication (PyPI mysql-replication) is required")
		}
		t.Skip("python-mysql-replication not installed")
	}
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE py")
	d := s.db("py")
	// JSON values are MySQL's binary JSON in the row events.
	mustExec(t, d, "CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(30), score DECIMAL(6,2), doc JSON)")
	mustExec(t, d, `INSERT INTO people VALUES (1, 'ada', 10.5, '{"tags": ["x", null, true], "n": -1.5, "big": 123456789012}'), (2, 'grace', 20.25, '[]')`)
	mustExec(t, d, "UPDATE people SET score = 99.75 WHERE id = 2")
	mustExec(t, d, "DELETE FROM people WHERE id = 1")

	type rowEvent struct {
		Type, Schema, Table string
		Row                 map[string]string
	}
	run := func(args ...string) []rowEvent {
		t.Helper()
		cmd := tool(t, 2*time.Minute, "python3", append([]string{"testdata/pyrepl.py", fmt.Sprint(s.port)}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pyrepl %v: %v\n%s", args, err, stderr.String())
		}
		var evs []rowEvent
		if err := json.Unmarshal(out, &evs); err != nil {
			t.Fatalf("pyrepl output %q: %v", out, err)
		}
		return evs
	}
	evs := run("file")
	ada := `{"big": 123456789012, "n": -1.5, "tags": ["x", null, true]}`
	want := []string{"WriteRowsEvent 1 ada 10.50 " + ada, "WriteRowsEvent 2 grace 20.25 []", "UpdateRowsEvent 2 grace 99.75 []", "DeleteRowsEvent 1 ada 10.50 " + ada}
	got := func(evs []rowEvent) []string {
		var out []string
		for _, e := range evs {
			if e.Schema != "py" || e.Table != "people" {
				t.Fatalf("event for %s.%s", e.Schema, e.Table)
			}
			out = append(out, fmt.Sprintf("%s %s %s %s %s", e.Type, e.Row["id"], e.Row["name"], e.Row["score"], e.Row["doc"]))
		}
		return out
	}
	if g := got(evs); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("file/position stream:\n got %v\nwant %v", g, want)
	}
	// By GTID: the replica has the DDL and the insert (GTIDs 1-3).
	var uuid string
	db.QueryRow("SELECT @@server_uuid").Scan(&uuid)
	if g := got(run("gtid", uuid+":1-3")); fmt.Sprint(g) != fmt.Sprint(want[2:]) {
		t.Fatalf("auto_position stream:\n got %v\nwant %v", g, want[2:])
	}
}

// gatedReplica is a semi-sync replica (go-mysql) that holds its ACK for
// transaction ends while the gate is closed: go-mysql acknowledges an event
// after its SynchronousEventHandler returns.
type gatedReplica struct {
	gate chan struct{} // receive to let one XID through
	open atomic.Bool
}

func (g *gatedReplica) HandleEvent(e *replication.BinlogEvent) error {
	if _, ok := e.Event.(*replication.XIDEvent); ok && !g.open.Load() {
		<-g.gate
	}
	return nil
}

// TestSemiSyncWaitPoints: under AFTER_SYNC nobody sees a transaction before
// a replica acknowledged it; under AFTER_COMMIT others see it while its own
// client still waits.
func TestSemiSyncWaitPoints(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE wp")
	d := s.db("wp")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_source_enabled = ON")
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_source_timeout = 30000")

	g := &gatedReplica{gate: make(chan struct{})}
	g.open.Store(true)
	cfg := replication.BinlogSyncerConfig{ServerID: 501, Flavor: mysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port),
		User: "root", SemiSyncEnabled: true, SynchronousEventHandler: g}
	b := replication.NewBinlogSyncer(cfg)
	t.Cleanup(b.Close)
	if _, err := b.StartSync(mysql.Position{Name: "binlog.000001", Pos: 4}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, db, "Rpl_semi_sync_source_clients", "1", "the semi-sync replica did not register")
	mustExec(t, d, "INSERT INTO t VALUES (0)") // acknowledged at once (gate open)
	g.open.Store(false)

	count := func() int {
		var n int
		if err := d.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, point := range []string{"AFTER_SYNC", "AFTER_COMMIT"} {
		mustExec(t, db, "SET GLOBAL rpl_semi_sync_source_wait_point = "+point)
		done := make(chan error, 1)
		go func() {
			_, err := d.Exec("INSERT INTO t VALUES (?)", i+1)
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("%s: commit returned before the ACK (err %v)", point, err)
		default:
		}
		visible := count() == i+2
		if point == "AFTER_SYNC" && visible {
			t.Fatal("AFTER_SYNC: another session sees a transaction no replica has acknowledged")
		}
		if point == "AFTER_COMMIT" && !visible {
			t.Fatal("AFTER_COMMIT: the transaction is not visible while its client waits")
		}
		if w := statusOf(t, db, "Rpl_semi_sync_source_wait_sessions"); w != "1" {
			t.Fatalf("%s: wait_sessions = %s during the wait", point, w)
		}
		g.gate <- struct{}{} // the replica acknowledges
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if count() != i+2 {
			t.Fatalf("%s: row missing after the ACK", point)
		}
	}
	g.open.Store(true)
	close(g.gate)
	if v := statusOf(t, db, "Rpl_semi_sync_source_no_tx"); v != "0" {
		t.Fatalf("no_tx = %s: a wait fell back to async", v)
	}
}

// TestConsumerStartupStatements runs what binlog consumers (Debezium,
// python-mysql-replication, go-mysql canal, Maxwell) and replicas ask a
// source before they stream.
func TestConsumerStartupStatements(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE cdc")
	mustExec(t, db, "CREATE TABLE cdc.t (id INT PRIMARY KEY, v VARCHAR(10), KEY kv (v))")
	var uuid string
	db.QueryRow("SELECT @@server_uuid").Scan(&uuid)
	for _, q := range []string{
		"SHOW GLOBAL VARIABLES LIKE 'binlog_format'", "SHOW GLOBAL VARIABLES LIKE 'binlog_row_image'",
		"SHOW GLOBAL VARIABLES LIKE 'binlog_checksum'", "SHOW GLOBAL VARIABLES LIKE 'GTID_MODE'",
		"SHOW VARIABLES WHERE Variable_name IN ('rpl_semi_sync_master_enabled', 'rpl_semi_sync_source_enabled')",
		"SHOW GLOBAL VARIABLES LIKE 'binlog_row_metadata'", "SELECT @@global.binlog_row_value_options",
		"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", "SHOW BINARY LOGS", "SHOW REPLICAS", "SHOW SLAVE HOSTS",
		"SHOW GRANTS FOR CURRENT_USER", "SHOW GRANTS FOR CURRENT_USER()",
		"SELECT @@server_id, @@server_uuid, @@global.gtid_executed, @@global.gtid_purged",
		"SELECT GTID_SUBTRACT('" + uuid + ":1-5', '" + uuid + ":1-2')", "SELECT UNIX_TIMESTAMP()",
		"SELECT @@GLOBAL.gtid_domain_id", "SELECT @@GLOBAL.COLLATION_SERVER", "SELECT @@GLOBAL.TIME_ZONE",
		"SET @master_heartbeat_period = 1000000000", "SET @master_binlog_checksum = @@global.binlog_checksum",
		"SELECT @master_binlog_checksum", "SET @mariadb_slave_capability = 4", "SELECT BINLOG_GTID_POS('binlog.000001', 4)",
		"FLUSH TABLES WITH READ LOCK", "UNLOCK TABLES",
		"SHOW CREATE TABLE cdc.t", "SHOW FULL TABLES FROM cdc WHERE Table_Type = 'BASE TABLE'",
		"SHOW FULL COLUMNS FROM t FROM cdc", "SHOW INDEX FROM cdc.t", "SHOW TABLE STATUS FROM cdc",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
	}
	var sub, mode, meta string
	db.QueryRow("SELECT GTID_SUBTRACT('" + uuid + ":1-5', '" + uuid + ":1-2')").Scan(&sub)
	if sub != uuid+":3-5" {
		t.Fatalf("GTID_SUBTRACT = %q", sub)
	}
	var name string
	db.QueryRow("SHOW GLOBAL VARIABLES LIKE 'gtid_mode'").Scan(&name, &mode)
	db.QueryRow("SHOW GLOBAL VARIABLES LIKE 'binlog_row_metadata'").Scan(&name, &meta)
	if mode != "ON" || meta != "FULL" {
		t.Fatalf("gtid_mode %q binlog_row_metadata %q", mode, meta)
	}
}

type stuckReplica struct{ release chan struct{} }

func (s stuckReplica) HandleEvent(*replication.BinlogEvent) error { <-s.release; return nil }

// TestStuckReplicaDoesNotSlowCommits: an asynchronous replica that stops
// reading (its socket buffers fill) holds nothing the commit path needs.
func TestStuckReplicaDoesNotSlowCommits(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE stuck")
	d := s.db("stuck")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(8000))")
	stuck := stuckReplica{release: make(chan struct{})}
	defer close(stuck.release)
	cfg := replication.BinlogSyncerConfig{ServerID: 601, Flavor: mysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port),
		User: "root", SynchronousEventHandler: stuck}
	b := replication.NewBinlogSyncer(cfg)
	t.Cleanup(b.Close)
	if _, err := b.StartSync(mysql.Position{Name: "binlog.000001", Pos: 4}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 8000)
	// Commits that waited for the stuck replica would never finish; the
	// bound only keeps such a failure from lasting until the package's
	// timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	for i := range 2500 { // ~40 MB of binlog: far more than socket buffers hold
		if _, err := d.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", i, pad); err != nil {
			t.Fatalf("commit %d next to a stuck replica (all 2500 bounded at 5 minutes): %v", i, err)
		}
	}
	elapsed := time.Since(start)
	m := scrape(t, s)
	behind := value(m, "lockstep_replica_behind_bytes", "601")
	t.Logf("2500 commits in %v with a stuck replica %v bytes behind", elapsed, behind)
	if behind < 1e6 {
		t.Fatalf("the replica is only %v bytes behind: it was not stuck", behind)
	}
}

// TestPurgeKeepsFilesConnectedReplicasRead: PURGE BINARY LOGS does not
// remove the file a connected replica is reading, nor any after it; it
// removes the older ones and warns (1867), as MySQL does. The replica,
// slow, then reads everything to the end without a gap.
func TestPurgeKeepsFilesConnectedReplicasRead(t *testing.T) {
	s := startServer(t, t.TempDir(), "--max-binlog-size", "65536")
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE p")
	mustExec(t, db, "CREATE TABLE p.t (id INT PRIMARY KEY, v TEXT)")
	const rows = 6000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < rows; i += 8 {
				if _, err := db.Exec("INSERT INTO p.t VALUES (?, REPEAT('x', 2000))", i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// A replica that reads slowly: its client holds one event at a time,
	// so the server's dump waits on the socket, early in the binlog.
	cfg := replication.BinlogSyncerConfig{ServerID: 301, Flavor: mysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port),
		User: "root", MaxReconnectAttempts: 1, EventCacheCount: 1}
	b := replication.NewBinlogSyncer(cfg)
	t.Cleanup(b.Close)
	st, err := b.StartSync(mysql.Position{Name: "binlog.000001", Pos: 4})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := st.GetEvent(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the dump fills the socket and waits

	last := lastBinlog(t, db)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "PURGE BINARY LOGS TO '"+last+"'"); err != nil {
		t.Fatal(err)
	}
	var level, msg string
	var code int
	if err := conn.QueryRowContext(context.Background(), "SHOW WARNINGS").Scan(&level, &code, &msg); err != nil || code != 1867 {
		t.Fatalf("PURGE with a replica reading an old file: warning %d %q (%v), want 1867", code, msg, err)
	}
	t.Logf("%s", msg)
	var first string
	if err := db.QueryRow("SHOW BINARY LOGS").Scan(&first, new(sql.NullString), new(sql.NullString)); err != nil {
		t.Fatal(err)
	}
	if first == last {
		t.Fatalf("every file before %s was purged under a replica reading the first ones", last)
	}

	// The replica reads on, to the end, without a gap.
	xids := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for xids < rows {
		e, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("the replica after the purge, %d of %d transactions read: %v", xids, rows, err)
		}
		if _, ok := e.Event.(*replication.XIDEvent); ok {
			xids++
		}
	}
	b.Close()
	// Disconnected, it protects nothing.
	waitFor(t, "the dump to end", 10*time.Second, func() bool {
		return countRows(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'") == 0
	})
	mustExec(t, db, "PURGE BINARY LOGS TO '"+last+"'")
	if err := db.QueryRow("SHOW BINARY LOGS").Scan(&first, new(sql.NullString), new(sql.NullString)); err != nil || first != last {
		t.Fatalf("after the replica left, the first file is %s (%v), want %s", first, err, last)
	}
}

// TestShowBinlogEvents: SHOW BINLOG EVENTS lists a binlog file's events
// as MySQL does: the first file unless IN names one, each row's end the
// next one's start, MySQL's names and wording (a transaction's GTID,
// BEGIN, table map, rows, XID; the rotation to the next file), FROM and
// LIMIT [offset,] count; an unknown file or a position inside an event is
// 1220, and the statement needs REPLICATION SLAVE.
func TestShowBinlogEvents(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	for _, q := range []string{
		"CREATE DATABASE ev",
		"CREATE TABLE ev.t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO ev.t VALUES (1, 'a'), (2, 'b')",
		"UPDATE ev.t SET v = 'c' WHERE id = 1",
		"DELETE FROM ev.t WHERE id = 2",
		"FLUSH BINARY LOGS",
		"INSERT INTO ev.t VALUES (3, 'd')",
	} {
		mustExec(t, db, q)
	}
	type event struct {
		file, typ, info string
		pos, end        uint64
		server          uint32
	}
	events := func(q string) []event {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []event
		for rows.Next() {
			var e event
			if err := rows.Scan(&e.file, &e.pos, &e.typ, &e.server, &e.end, &e.info); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	var files []string
	rows, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name, new(sql.NullString), new(sql.NullString)); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	rows.Close()
	if len(files) != 2 {
		t.Fatalf("binlog files %v", files)
	}
	first := events("SHOW BINLOG EVENTS")
	var types []string
	for i, e := range first {
		types = append(types, e.typ)
		if e.file != files[0] || e.server == 0 || e.end <= e.pos || (i+1 < len(first) && first[i+1].pos != e.end) {
			t.Fatalf("event %d %+v (next %+v): rows must chain", i, e, first[min(i+1, len(first)-1)])
		}
	}
	if first[0].pos != 4 || first[0].typ != "Format_desc" || !strings.HasPrefix(first[0].info, "Server ver: ") {
		t.Fatalf("first event %+v", first[0])
	}
	last := first[len(first)-1]
	if last.typ != "Rotate" || last.info != files[1]+";pos=4" {
		t.Fatalf("last event %+v, want the rotation to %s", last, files[1])
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"Gtid Query Table_map Write_rows Xid", "Table_map Update_rows Xid", "Table_map Delete_rows Xid"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("events %s: no %q", joined, want)
		}
	}
	var sawDDL, sawRows bool
	for _, e := range first {
		sawDDL = sawDDL || e.typ == "Query" && strings.HasPrefix(e.info, "use `ev`; CREATE TABLE `t`")
		sawRows = sawRows || e.typ == "Write_rows" && strings.HasSuffix(e.info, "flags: STMT_END_F")
		if e.typ == "Gtid" && !strings.HasPrefix(e.info, "SET @@SESSION.GTID_NEXT= '") || e.typ == "Xid" && !strings.HasPrefix(e.info, "COMMIT /* xid=") {
			t.Fatalf("event %+v", e)
		}
	}
	if !sawDDL || !sawRows {
		t.Fatalf("no CREATE TABLE or no rows event with STMT_END_F in %+v", first)
	}
	second := events("SHOW BINLOG EVENTS IN '" + files[1] + "'")
	if len(second) < 6 || second[1].typ != "Previous_gtids" || !strings.HasSuffix(second[1].info, ":1-5") || second[len(second)-1].typ != "Xid" {
		t.Fatalf("second file %+v", second)
	}
	from := events(fmt.Sprintf("SHOW BINLOG EVENTS FROM %d LIMIT 2", first[3].pos))
	if len(from) != 2 || from[0] != first[3] || from[1] != first[4] {
		t.Fatalf("FROM %d LIMIT 2: %+v, want %+v", first[3].pos, from, first[3:5])
	}
	if got := events("SHOW BINLOG EVENTS LIMIT 2, 3"); len(got) != 3 || got[0] != first[2] || got[2] != first[4] {
		t.Fatalf("LIMIT 2, 3: %+v", got)
	}
	for _, q := range []string{"SHOW BINLOG EVENTS IN 'binlog.999999'", fmt.Sprintf("SHOW BINLOG EVENTS FROM %d", first[3].pos+1)} {
		if _, err := db.Query(q); errNumber(err) != 1220 {
			t.Fatalf("%s: %v, want 1220", q, err)
		}
	}
	mustExec(t, db, "CREATE USER watcher@'%' IDENTIFIED BY 'pw'")
	mustExec(t, db, "GRANT REPLICATION CLIENT ON *.* TO watcher@'%'")
	if _, err := s.as(t, "watcher", "pw").Query("SHOW BINLOG EVENTS"); errNumber(err) != 1227 {
		t.Fatalf("without REPLICATION SLAVE: %v, want 1227", err)
	}
	mustExec(t, db, "GRANT REPLICATION SLAVE ON *.* TO watcher@'%'")
	if _, err := s.as(t, "watcher", "pw").Query("SHOW BINLOG EVENTS LIMIT 1"); err != nil {
		t.Fatalf("with REPLICATION SLAVE: %v", err)
	}
}
