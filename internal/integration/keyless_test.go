package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// keylessLoad runs concurrent inserts (with duplicates), deletes and updates
// of one copy or several on a table without a primary key.
func keylessLoad(t *testing.T, db *sql.DB, sessions, ops int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 9))
			for range ops {
				a, b := r.IntN(8), r.IntN(3)
				var q string
				switch r.IntN(6) {
				case 0, 1, 2:
					q = fmt.Sprintf("INSERT INTO kl.t VALUES (%d, 'v%d'), (%d, 'v%d')", a, b, a, b)
				case 3:
					q = fmt.Sprintf("DELETE FROM kl.t WHERE a = %d AND b = 'v%d' LIMIT 1", a, b)
				case 4:
					q = fmt.Sprintf("UPDATE kl.t SET b = 'v%d' WHERE a = %d LIMIT 1", r.IntN(3), a)
				case 5:
					q = fmt.Sprintf("UPDATE kl.t SET a = a + 1 WHERE b = 'v%d' AND a = %d", b, a)
				}
				if _, err := db.Exec(q); err != nil && !strings.Contains(err.Error(), "Deadlock") {
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func keylessRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT a, b FROM kl.t ORDER BY a, b")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a int
		var b string
		if err := rows.Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d,%s", a, b))
	}
	return strings.Join(out, ";")
}

func waitSameRows(t *testing.T, src, rep *sql.DB, status func() map[string]string) {
	t.Helper()
	want := keylessRows(t, src)
	deadline := time.Now().Add(60 * time.Second)
	for keylessRows(t, rep) != want {
		if time.Now().After(deadline) {
			got := keylessRows(t, rep)
			t.Fatalf("replica rows differ: source %d rows, replica %d (first difference at byte %d)\nstatus: %v",
				strings.Count(want, ";")+1, strings.Count(got, ";")+1, firstDiff(want, got), status())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKeylessReplication: a table without a primary key under concurrent
// writes replicates from a Lockstep primary to a Lockstep replica (parallel
// workers; such transactions apply in order), survives the replica's
// restart from its binlog, and replicates from a real MariaDB primary,
// whose rows events name rows only by image.
func TestKeylessReplication(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE kl")
	mustExec(t, pdb, "CREATE TABLE kl.t (a INT, b VARCHAR(10), KEY a_1 (a))")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--replica-parallel-workers=4", "--replica-parallel-type=WRITESET")
	keylessLoad(t, pdb, 4, 150)
	// Rows come back in insertion order (no ORDER BY), on the replica too.
	mustExec(t, pdb, "CREATE TABLE kl.o (v INT)")
	mustExec(t, pdb, "INSERT INTO kl.o VALUES (5), (3), (8)")
	mustExec(t, pdb, "INSERT INTO kl.o VALUES (1)")
	mustExec(t, pdb, "UPDATE kl.o SET v = 30 WHERE v = 3")
	mustExec(t, pdb, "DELETE FROM kl.o WHERE v = 5")
	mustExec(t, pdb, "INSERT INTO kl.o VALUES (5)")
	const order = "30|\n8|\n1|\n5|\n"
	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	waitSameRows(t, pdb, rdb, func() map[string]string { return replicaStatus(t, rdb) })
	for name, db := range map[string]*sql.DB{"primary": pdb, "replica": rdb} {
		if got := tableText(t, db, "SELECT v FROM kl.o"); got != order {
			t.Fatalf("%s returns %q, want insertion order %q", name, got, order)
		}
	}
	// The replica's store rebuilt from its own binlog agrees, and goes on.
	r.kill()
	r.start()
	if got := tableText(t, r.db(""), "SELECT v FROM kl.o"); got != order {
		t.Fatalf("after a crash the replica returns %q, want %q", got, order)
	}
	// Column changes rewrite the rows in place; later changes still find
	// them by image, on both sides.
	mustExec(t, pdb, "ALTER TABLE kl.t MODIFY COLUMN b VARCHAR(20)")
	mustExec(t, pdb, "ALTER TABLE kl.t ADD COLUMN c INT NOT NULL DEFAULT 5")
	mustExec(t, pdb, "ALTER TABLE kl.t DROP COLUMN c")
	keylessLoad(t, pdb, 4, 50)
	rdb = r.db("")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	waitSameRows(t, pdb, rdb, func() map[string]string { return replicaStatus(t, rdb) })
	n := strings.Count(keylessRows(t, pdb), ";")
	t.Logf("Lockstep primary and replica agree on %d rows", n+1)

	needTool(t, "mariadbd")
	m := startMariaDB(t, 1, "--log-bin=mysql-bin", "--binlog-format=ROW")
	mdb := m.db()
	mustExec(t, mdb, "SET sql_log_bin = 0")
	mustExec(t, mdb, "CREATE USER repl@'%' IDENTIFIED BY 'replpw'")
	mustExec(t, mdb, "GRANT ALL ON *.* TO repl@'%'")
	mustExec(t, mdb, "SET sql_log_bin = 1")
	mustExec(t, mdb, "CREATE DATABASE kl")
	// A CREATE TABLE with an inline key is one catalog change on the
	// replica, as it is one transaction on the source.
	mustExec(t, mdb, "CREATE TABLE kl.t (a INT, b VARCHAR(10), KEY a_1 (a))")
	mr := startServer(t, t.TempDir(), "--server-id=3", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", m.port),
		"--source-user=repl", "--source-password=replpw", "--replica-parallel-workers=4")
	keylessLoad(t, mdb, 4, 150)
	mrdb := mr.db("")
	waitSameRows(t, mdb, mrdb, func() map[string]string { return replicaStatus(t, mrdb) })
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
