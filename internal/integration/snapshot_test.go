package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// conn opens one connection of db.
func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFlushTablesWithReadLock: FTWRL holds back every commit until UNLOCK
// TABLES or the holder's disconnect, waits are bounded by
// lock_wait_timeout, the holder's own writes get 1223, and it needs
// RELOAD.
func TestFlushTablesWithReadLock(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT PRIMARY KEY)")
	mustExec(t, root, "CREATE USER low@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT ALL ON d.* TO low@'%'")
	ctx := context.Background()

	holder := conn(t, root)
	if _, err := holder.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "INSERT INTO d.t VALUES (1)"); errNumber(err) != 1223 {
		t.Fatalf("the holder's insert: %v, want 1223", err)
	}
	w := conn(t, root)
	mustConnExec(t, w, "SET SESSION lock_wait_timeout = 1")
	start := time.Now()
	if _, err := w.ExecContext(ctx, "INSERT INTO d.t VALUES (2)"); errNumber(err) != 1205 {
		t.Fatalf("an insert under the read lock: %v, want 1205", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("the insert gave up after %v, before lock_wait_timeout", d)
	}
	if _, err := w.ExecContext(ctx, "CREATE TABLE d.u (id INT PRIMARY KEY)"); errNumber(err) != 1205 {
		t.Fatalf("DDL under the read lock: %v, want 1205", err)
	}
	var n int
	if err := w.QueryRowContext(ctx, "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("reads go on under the read lock: %d %v", n, err)
	}
	// A waiting insert goes in at UNLOCK TABLES.
	mustConnExec(t, w, "SET SESSION lock_wait_timeout = 60")
	done := make(chan error, 1)
	go func() { _, err := w.ExecContext(ctx, "INSERT INTO d.t VALUES (3)"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("the insert did not wait: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	mustConnExec(t, holder, "UNLOCK TABLES")
	if err := <-done; err != nil {
		t.Fatalf("the insert after UNLOCK TABLES: %v", err)
	}

	// A holder that disconnects releases the lock. This one's statement
	// carries comments, as backup tools' do: they change nothing.
	h2 := conn(t, root)
	mustConnExec(t, h2, "/* backup 7 */ FLUSH TABLES /*!40101 WITH */ READ LOCK -- note")
	if _, err := h2.ExecContext(ctx, "INSERT INTO d.t VALUES (5)"); errNumber(err) != 1223 {
		t.Fatalf("the commented holder's insert: %v, want 1223", err)
	}
	go func() { _, err := w.ExecContext(ctx, "INSERT INTO d.t VALUES (4)"); done <- err }()
	time.Sleep(200 * time.Millisecond)
	h2.Raw(func(any) error { return driver.ErrBadConn }) // drops the connection
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the insert after the holder left: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the read lock outlived its holder's connection")
	}

	if _, err := s.as(t, "low", "pw").Exec("FLUSH TABLES WITH READ LOCK"); errNumber(err) != 1227 {
		t.Fatalf("FTWRL without RELOAD: %v, want 1227", err)
	}
}

func mustConnExec(t *testing.T, c *sql.Conn, q string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestConsistentSnapshotPosition: with inserts running, FTWRL, START
// TRANSACTION WITH CONSISTENT SNAPSHOT, the GTID set read under the lock,
// UNLOCK TABLES, and reads after more inserts: the snapshot holds exactly
// the rows of the GTIDs read, as a backup or a CDC snapshot needs. The
// snapshot is taken at START, not at the first read.
func TestConsistentSnapshotPosition(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT AUTO_INCREMENT PRIMARY KEY, w INT)")
	base := lastGNO(t, gtidExecuted(t, root))

	var stop atomic.Bool
	var wg sync.WaitGroup
	var inserted atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := root.Exec("INSERT INTO d.t (w) VALUES (?)", w); err == nil {
					inserted.Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(200 * time.Millisecond)

	ctx := context.Background()
	for round := range 5 {
		c := conn(t, root)
		mustConnExec(t, c, "FLUSH TABLES WITH READ LOCK")
		spelling := "START TRANSACTION WITH CONSISTENT SNAPSHOT"
		if round%2 == 1 {
			spelling = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
		}
		mustConnExec(t, c, spelling)
		var g string
		if err := c.QueryRowContext(ctx, "SELECT @@global.gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		mustConnExec(t, c, "UNLOCK TABLES")
		before := inserted.Load()
		time.Sleep(200 * time.Millisecond)
		if inserted.Load() == before {
			t.Fatal("the inserts did not resume after UNLOCK TABLES")
		}
		var n int64
		if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		want := int64(lastGNO(t, g) - base)
		if n != want {
			t.Fatalf("round %d: the snapshot holds %d rows, the GTID set read under the lock %d", round, n, want)
		}
		mustConnExec(t, c, "COMMIT")
		c.Close()
		t.Logf("round %d: %d rows in the snapshot, exactly the GTIDs read", round, n)
	}

	// Without the lock too: the view is taken at START, so a commit after
	// it is not seen by the first read.
	c := conn(t, root)
	mustConnExec(t, c, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	var at int64
	root.QueryRow("SELECT COUNT(*) FROM d.t").Scan(&at) // the latest, after START
	time.Sleep(100 * time.Millisecond)
	var n int64
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > at {
		t.Fatalf("the first read saw %d rows, more than %d committed after START", n, at)
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY, READ WRITE"); errNumber(err) != 1064 || !strings.Contains(err.Error(), "syntax") {
		t.Fatalf("READ ONLY with READ WRITE: %v, want 1064", err)
	}
}

// lastGNO is the highest GTID number of the (one-source) set g.
func lastGNO(t *testing.T, g string) uint64 {
	t.Helper()
	set, err := binlog.ParseGTIDSet(g)
	if err != nil {
		t.Fatal(err)
	}
	var max uint64
	for _, u := range set.UUIDs() {
		max = set.MaxGNO(u)
	}
	return max
}

// TestLockInstanceForBackup: LOCK INSTANCE FOR BACKUP (BACKUP_ADMIN)
// holds other sessions' DDL back until UNLOCK INSTANCE or the holder's
// disconnect, lets row changes and the holder's own DDL through, and
// BACKUP STAGE is refused with 1235.
func TestLockInstanceForBackup(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT PRIMARY KEY)")
	mustExec(t, root, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT ALL ON d.* TO plain@'%'")
	if _, err := s.as(t, "plain", "pw").Exec("LOCK INSTANCE FOR BACKUP"); errNumber(err) != 1227 {
		t.Errorf("LOCK INSTANCE FOR BACKUP without BACKUP_ADMIN: %v, want 1227", err)
	}
	if _, err := root.Exec("BACKUP STAGE START"); errNumber(err) != 1235 {
		t.Errorf("BACKUP STAGE START: %v, want 1235", err)
	}

	holder := conn(t, root)
	mustConnExec(t, holder, "LOCK INSTANCE FOR BACKUP")
	other := conn(t, root)
	mustConnExec(t, other, "SET SESSION lock_wait_timeout = 1")
	mustConnExec(t, other, "INSERT INTO d.t VALUES (1)")
	if _, err := other.ExecContext(t.Context(), "CREATE TABLE d.u (id INT PRIMARY KEY)"); errNumber(err) != 1205 {
		t.Errorf("another session's DDL under the backup lock: %v, want 1205", err)
	}
	if _, err := other.ExecContext(t.Context(), "CREATE USER later@'%'"); errNumber(err) != 1205 {
		t.Errorf("an account change under the backup lock: %v, want 1205", err)
	}
	mustConnExec(t, holder, "ALTER TABLE d.t ADD COLUMN v INT") // the holder's own
	mustConnExec(t, holder, "UNLOCK INSTANCE")
	mustConnExec(t, other, "CREATE TABLE d.u (id INT PRIMARY KEY)")

	// Released when the holder disconnects.
	own, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := own.Exec("LOCK INSTANCE FOR BACKUP"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(t.Context(), "CREATE TABLE d.w (id INT PRIMARY KEY)"); errNumber(err) != 1205 {
		t.Errorf("DDL under the second backup lock: %v, want 1205", err)
	}
	own.Close()
	waitFor(t, "the backup lock to go with its session", 10*time.Second, func() bool {
		_, err := other.ExecContext(t.Context(), "CREATE TABLE IF NOT EXISTS d.w (id INT PRIMARY KEY)")
		return err == nil
	})
}
