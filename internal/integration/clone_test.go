package integration

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCloneLocal: CLONE LOCAL DATA DIRECTORY under concurrent durable
// inserts writes a data directory a server starts on, holding every
// insert acknowledged before the statement began, and exactly the rows of
// the GTIDs it reports executed (one row per insert transaction: a
// consistent cut); the copy has a server UUID of its own and catches up as
// a replica of the original by GTID. CLONE needs BACKUP_ADMIN, refuses an
// existing directory (1007) and a relative path, and CLONE INSTANCE is
// refused (1235).
func TestCloneLocal(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	src := startServer(t, filepath.Join(dir, "src"))
	db := src.db("")
	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, w INT)")
	setup := lastGNO(t, gtidExecuted(t, db))

	pools := make([]*sql.DB, 4)
	for i := range pools {
		pools[i] = src.db("")
	}
	ws := startWriters(pools, func(db *sql.DB, w, k int) (int, error) {
		id := w*1_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, ?)", id, w)
		return id, err
	}, func(error) bool { return false })
	waitFor(t, "inserts before the clone", 20*time.Second, func() bool { return ws.count() >= 500 })
	before := ws.snapshot()
	// A server's data directory is <dir>/data (startServer).
	if err := os.MkdirAll(filepath.Join(dir, "copy"), 0o700); err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(dir, "copy", "data")
	began := time.Now()
	mustExec(t, db, "CLONE LOCAL DATA DIRECTORY = '"+copyDir+"'")
	t.Logf("CLONE under %d writers took %v", len(pools), time.Since(began).Round(time.Millisecond))
	waitFor(t, "inserts after the clone", 20*time.Second, func() bool { return ws.count() >= len(before)+500 })
	ws.halt()

	for _, q := range []struct {
		sql  string
		want uint16
	}{
		{"CLONE LOCAL DATA DIRECTORY = '" + copyDir + "'", 1007},
		{"CLONE LOCAL DATA DIRECTORY 'relative/dir'", 1210},
		{"CLONE INSTANCE FROM 'root'@'127.0.0.1':3306 IDENTIFIED BY 'x'", 1235},
	} {
		if _, err := db.Exec(q.sql); errNumber(err) != q.want {
			t.Errorf("%s: %v, want %d", q.sql, err, q.want)
		}
	}
	mustExec(t, db, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	if _, err := src.as(t, "plain", "pw").Exec("CLONE LOCAL DATA DIRECTORY '" + filepath.Join(dir, "no") + "'"); errNumber(err) != 1227 {
		t.Errorf("CLONE without BACKUP_ADMIN: %v, want 1227", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("a refused CLONE left a directory")
	}

	// The copy: a server of its own, a consistent cut.
	cp := startServer(t, filepath.Join(dir, "copy"), "--server-id", "2")
	cdb := cp.db("")
	cg := gtidExecuted(t, cdb)
	if strings.Contains(cg, ",") {
		t.Fatalf("the copy's gtid_executed %q names more than the original's UUID", cg)
	}
	have := idSet(t, cdb, "SELECT id FROM d.t")
	for id := range before {
		if !have[id] {
			t.Fatalf("the copy lacks insert %d, acknowledged before CLONE began", id)
		}
	}
	if n := lastGNO(t, cg) - setup; uint64(len(have)) != n {
		t.Fatalf("the copy holds %d rows for %d insert transactions (%s): not a consistent cut", len(have), n, cg)
	}
	var su, cu string
	db.QueryRow("SELECT @@server_uuid").Scan(&su)
	cdb.QueryRow("SELECT @@server_uuid").Scan(&cu)
	if su == cu || su == "" {
		t.Fatalf("the copy's server UUID %q, the original's %q", cu, su)
	}
	t.Logf("the copy holds %d rows, %s; %d were acknowledged before CLONE began", len(have), cg, len(before))

	// It catches up as a replica of the original.
	mustExec(t, cdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1", src.port))
	mustExec(t, cdb, "START REPLICA")
	want := gtidExecuted(t, db)
	waitFor(t, "the copy to catch up as a replica", 30*time.Second, func() bool { return gtidExecuted(t, cdb) == want })
	if a, b := countRows(t, db, "SELECT COUNT(*) FROM d.t"), countRows(t, cdb, "SELECT COUNT(*) FROM d.t"); a != b {
		t.Fatalf("after catching up: %d rows on the original, %d on the copy", a, b)
	}
}

// TestCloneMember: CLONE on a cluster member under writes gives a copy
// that starts as a single server with the cluster's rows and GTIDs up to
// a point (committed entries only: every insert acknowledged before the
// statement is there), and follows the cluster as a replica of a member.
func TestCloneMember(t *testing.T) {
	nodes := startCluster(t, 3)
	dbs := []*sql.DB{causal(t, nodes[0]), causal(t, nodes[1]), causal(t, nodes[2])}
	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[0], "CREATE TABLE d.t (id INT PRIMARY KEY)")
	ws := startWriters(dbs, func(db *sql.DB, w, k int) (int, error) {
		id := w*1_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?)", id)
		return id, err
	}, func(err error) bool { return errNumber(err) == 1213 || errNumber(err) == 1047 })
	waitFor(t, "writes before the clone", 30*time.Second, func() bool { return ws.count() >= 300 })
	before := ws.snapshot()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "copy"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustExec(t, nodes[1].db(""), "CLONE LOCAL DATA DIRECTORY '"+filepath.Join(dir, "copy", "data")+"'")
	waitFor(t, "writes after the clone", 30*time.Second, func() bool { return ws.count() >= len(before)+300 })
	ws.halt()

	cp := startServer(t, filepath.Join(dir, "copy"), "--server-id", "9")
	cdb := cp.db("")
	var on int
	if err := cdb.QueryRow("SELECT @@wsrep_on").Scan(&on); err != nil || on != 0 {
		t.Fatalf("the copy of a member starts as a member: wsrep_on %d, %v", on, err)
	}
	have := idSet(t, cdb, "SELECT id FROM d.t")
	for id := range before {
		if !have[id] {
			t.Fatalf("the copy lacks insert %d, acknowledged before CLONE", id)
		}
	}
	mustExec(t, cdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1", nodes[0].port))
	mustExec(t, cdb, "START REPLICA")
	want := gtidExecuted(t, nodes[0].db(""))
	waitFor(t, "the copy to catch up with the cluster", 30*time.Second, func() bool { return gtidExecuted(t, cdb) == want })
	if a, b := countRows(t, dbs[0], "SELECT COUNT(*) FROM d.t"), countRows(t, cdb, "SELECT COUNT(*) FROM d.t"); a != b {
		t.Fatalf("%d rows in the cluster, %d in the copy after catching up", a, b)
	}
	t.Logf("the copy held %d rows; %d acknowledged before CLONE", len(have), len(before))
}
