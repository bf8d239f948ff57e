package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// The metamorphic test: one random statement stream (the differential
// test's, over foreign keys, CHECK constraints, a generated column, a
// table without a primary key, a view and dates, plus the point reads
// and writes the fast path takes, transactions with savepoints, DDL and
// JSON documents changed in place) runs statement by statement on three
// servers that must behave alike however they are configured:
//
//   - fast: the defaults (fast path on, WRITESET dependency tracking);
//   - slow: the fast path off in the session, binlog_parallel_flush ON,
//     COMMIT_ORDER dependency tracking, statements prepared (the binary
//     protocol);
//   - crashed: WRITESET_SESSION, a binlog file every 16 KiB, killed with
//     SIGKILL between statements every few dozen statements and
//     restarted (durable settings), so that every table is read back
//     through crash recovery, across rotations.
//
// Each statement must have the same outcome on all of them (its rows, OK,
// or the same error), and at the end every table must be the same on
// all three and all three must have committed as many transactions.
//
// A cluster of three takes the same statements, prepared, each member in
// turn (every statement waits for every commit before it:
// wsrep_sync_wait=15), and must give the same outcomes and tables on
// every member, with the same GTIDs.
//
// Two replicas follow: one of the fast server applying in its
// coordinator (0 workers), one of the crashed server with 4 workers,
// reconnecting after each crash; both must end with their source's
// tables and GTIDs. The replicas hold each commit group 1 ms, so that a
// transaction is still in flight while the next one is built.
//
// The configurations cover each setting's values, not their every
// combination. LOCKSTEP_METAMORPHIC_SEEDS runs more seeds (6 by default,
// 250 statements each).

// metaStatement is the differential test's stream, mixed with point
// reads and writes of the fast path's shapes, changes of identical
// keyless rows, transactions of several statements and DDL, and (json)
// changes of JSON documents.
func metaStatement(r *rand.Rand, json bool) string {
	id := 1 + r.IntN(12)
	switch r.IntN(14) {
	case 6:
		// JSON documents changed in place (partial updates in the
		// binlog's terms) and read back; only where both sides are
		// Lockstep (MariaDB keeps JSON as text, unnormalised).
		if !json {
			break
		}
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf(`INSERT INTO diff.j VALUES (%d, '{"a": [1, "x", null], "n": %d, "s": {"t": "u"}}') ON DUPLICATE KEY UPDATE doc = JSON_SET(doc, '$.n', %d)`, id, r.IntN(9), r.IntN(9))
		case 1:
			return fmt.Sprintf("UPDATE diff.j SET doc = JSON_ARRAY_APPEND(doc, '$.a', %d) WHERE id = %d", r.IntN(99), id)
		case 2:
			return fmt.Sprintf("UPDATE diff.j SET doc = JSON_REMOVE(doc, '$.a[0]'), doc = JSON_SET(doc, '$.s.t', 'v%d') WHERE id BETWEEN %d AND %d", r.IntN(9), id, id+3)
		default:
			return "SELECT id, doc, JSON_EXTRACT(doc, '$.n'), JSON_LENGTH(doc, '$.a') FROM diff.j ORDER BY id"
		}
	case 0:
		return fmt.Sprintf("SELECT id, name, score FROM diff.p WHERE id = %d", id)
	case 1:
		return fmt.Sprintf("UPDATE diff.p SET score = score + %d WHERE id = %d", r.IntN(5)-2, id)
	case 2:
		return fmt.Sprintf("SELECT id, p, qty, total FROM diff.c WHERE id BETWEEN %d AND %d ORDER BY id", id, id+10)
	case 3:
		// Identical rows of the table without a key changed one at a
		// time and several at once. (Not a change that turns a row into
		// the image of a row the statement visits later: replay, as a
		// MySQL replica, then changes the older of the two; see
		// storage/order.go.)
		if r.IntN(2) == 0 {
			return fmt.Sprintf("UPDATE diff.k SET b = 'u%d' WHERE a = %d LIMIT 1", r.IntN(3), r.IntN(5))
		}
		return fmt.Sprintf("UPDATE diff.k SET b = UPPER(b) WHERE a = %d", r.IntN(5))
	case 4:
		// Transactions of several statements, committed; some roll back
		// to a savepoint on the way (what follows it must not reach the
		// binlog, replicas or recovery).
		if r.IntN(2) == 0 {
			return fmt.Sprintf("TXN:INSERT INTO diff.k VALUES (%d, 's')|SAVEPOINT s1|UPDATE diff.p SET score = score + 5 WHERE id = %d|DELETE FROM diff.k WHERE a = %d LIMIT 1|ROLLBACK TO SAVEPOINT s1|UPDATE diff.p SET score = score - 1 WHERE id = %d",
				r.IntN(5), id, r.IntN(5), 1+r.IntN(12))
		}
		return fmt.Sprintf("TXN:INSERT INTO diff.k VALUES (%d, 't')|UPDATE diff.p SET score = score + 1 WHERE id = %d|DELETE FROM diff.k WHERE a = %d LIMIT 1|INSERT INTO diff.c (id, p, qty) VALUES (%d, %d, 1)",
			r.IntN(5), id, r.IntN(5), 1+r.IntN(30), id)
	case 5:
		// Definitions changed under rows: a table rewritten (the one
		// without a key keeps its order), an index added and dropped.
		return []string{
			"ALTER TABLE diff.k ADD COLUMN x INT NOT NULL DEFAULT 3",
			"ALTER TABLE diff.k DROP COLUMN x",
			"ALTER TABLE diff.p ADD INDEX name_score (name, score)",
			"ALTER TABLE diff.p DROP INDEX name_score",
			"ALTER TABLE diff.k MODIFY b VARCHAR(12)",
		}[r.IntN(5)]
	}
	return diffStatement(r)
}

// metaRun is diffRun, and runs a TXN: statement list (separated by |) in
// one transaction, committed if every statement succeeded. prepared runs
// each statement as a prepared statement (the binary protocol); mariadb
// says db is MariaDB's (diffErr).
func metaRun(db *sql.DB, q string, prepared, mariadb bool) string {
	list, ok := strings.CutPrefix(q, "TXN:")
	if !ok {
		if prepared && !strings.HasPrefix(q, "PREPARED:") && !strings.HasPrefix(q, "ROLLBACK:") {
			return preparedRun(db, q)
		}
		return diffRun(db, q, mariadb)
	}
	tx, err := db.Begin()
	if err != nil {
		return "begin: " + err.Error()
	}
	for _, st := range strings.Split(list, "|") {
		var err error
		if prepared {
			var ps *sql.Stmt
			if ps, err = tx.Prepare(st); err == nil {
				_, err = ps.Exec()
				ps.Close()
			}
		} else {
			_, err = tx.Exec(st)
		}
		if err != nil {
			tx.Rollback()
			return diffErr(err, mariadb)
		}
	}
	if err := tx.Commit(); err != nil {
		return "commit: " + err.Error()
	}
	return "ok"
}

// preparedRun runs q as a prepared statement and describes its outcome
// as diffRun does.
func preparedRun(db *sql.DB, q string) string {
	ps, err := db.Prepare(q)
	if err != nil {
		return diffErr(err, false)
	}
	defer ps.Close()
	if !strings.HasPrefix(q, "SELECT") {
		res, err := ps.Exec()
		if err != nil {
			return diffErr(err, false)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return "rows affected: " + err.Error()
		}
		return fmt.Sprintf("ok, %d rows", n)
	}
	rows, err := ps.Query()
	if err != nil {
		return diffErr(err, false)
	}
	text, err := rowsText(rows)
	if err != nil {
		return diffErr(err, false)
	}
	return text
}

// metaSchema is created after diffSchema on the servers of the
// metamorphic test only.
var metaSchema = []string{"CREATE TABLE diff.j (id INT PRIMARY KEY, doc JSON)"}

// metaTables read every table whole, in a deterministic order (the table
// without a key in insertion order, which recovery must keep).
var metaTables = []string{
	"SELECT id, doc FROM diff.j ORDER BY id",
	"SELECT * FROM diff.p ORDER BY id",
	"SELECT * FROM diff.c ORDER BY id",
	"SELECT a, b FROM diff.k",
	"SELECT * FROM diff.v ORDER BY id",
	"SELECT id, d, dt, tm, b + 0 FROM diff.t ORDER BY id",
	"SELECT * FROM diff.ks",
	"SELECT id, doc FROM diff.jd ORDER BY id",
}

func TestMetamorphic(t *testing.T) {
	seeds, perSeed := 6, 250
	if v, err := strconv.Atoi(os.Getenv("LOCKSTEP_METAMORPHIC_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	const crashEvery = 40 // statements, on average
	// A member is one server, or a cluster whose members take the
	// statements in turn (each waits for every commit before it:
	// wsrep_sync_wait=15, reads and writes; with reads alone a write
	// could run on a member that has not applied the previous statement,
	// and fail certification with 1213 as a client that retries would
	// see it).
	type member struct {
		name     string
		nodes    []*server
		dsn      string // session settings
		prepared bool   // statements run prepared
		dbs      []*sql.DB
	}
	open := func(m *member, sqlMode string) {
		t.Helper()
		for _, db := range m.dbs {
			db.Close()
		}
		m.dbs = nil
		for _, s := range m.nodes {
			db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?sql_mode=%s%s", s.port, url.QueryEscape("'"+sqlMode+"'"), m.dsn))
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			m.dbs = append(m.dbs, db)
		}
	}
	// db is the connection that runs statement n.
	db := func(m *member, n int) *sql.DB { return m.dbs[n%len(m.dbs)] }
	members := []*member{
		{name: "fast", nodes: []*server{startServer(t, t.TempDir())}},
		{name: "slow", nodes: []*server{startServer(t, t.TempDir(), "--binlog-parallel-flush=ON", "--binlog-transaction-dependency-tracking=COMMIT_ORDER")},
			dsn: "&lockstep_fast_path=OFF", prepared: true},
		{name: "crashed", nodes: []*server{startServer(t, t.TempDir(), "--binlog-transaction-dependency-tracking=WRITESET_SESSION", "--max-binlog-size=16384")}},
		{name: "cluster", nodes: startCluster(t, 3), dsn: "&wsrep_sync_wait=15", prepared: true},
	}
	crashed := members[2]
	t.Cleanup(func() {
		for _, m := range members {
			for _, db := range m.dbs {
				db.Close()
			}
		}
	})
	for _, m := range members {
		open(m, diffSQLModes[0])
		for _, q := range append(diffSchema, metaSchema...) {
			mustExec(t, m.dbs[0], q)
		}
	}
	replicaOf := func(src *server, id, workers string) *server {
		return startServer(t, t.TempDir(), "--server-id="+id, "--source-host=127.0.0.1",
			fmt.Sprintf("--source-port=%d", src.port), "--source-user=root", "--source-connect-retry=1",
			"--replica-parallel-workers="+workers, "--binlog-group-commit-sync-delay=1000")
	}
	r0, r4 := replicaOf(members[0].nodes[0], "12", "0"), replicaOf(crashed.nodes[0], "13", "4")

	rng := rand.New(rand.NewPCG(11, 13))
	statements, crashes, differences := 0, 0, 0
	for seed := range seeds {
		mode := diffSQLModes[seed%len(diffSQLModes)]
		for _, m := range members {
			open(m, mode)
		}
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		for range perSeed {
			if rng.IntN(crashEvery) == 0 {
				crashed.nodes[0].kill()
				crashed.nodes[0].start()
				open(crashed, mode)
				crashes++
			}
			q := metaStatement(r, true)
			statements++
			outcomes := make([]string, len(members))
			for i, m := range members {
				outcomes[i] = metaRun(db(m, statements), q, m.prepared, false)
			}
			for i := 1; i < len(members); i++ {
				if outcomes[i] != outcomes[0] {
					differences++
					if differences <= 10 {
						t.Errorf("seed %d, statement %d: %s\n%s: %s\n%s: %s", seed, statements, q,
							members[0].name, outcomes[0], members[i].name, outcomes[i])
					}
				}
			}
		}
	}
	t.Logf("%d statements, %d crashes of the crashed server, %d differences", statements, crashes, differences)

	// The final tables, and the number of transactions each committed.
	committed := func(db *sql.DB) (uint64, binlog.GTIDSet) {
		set, err := binlog.ParseGTIDSet(gtidExecuted(t, db))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, u := range set.UUIDs() {
			n += set.MaxGNO(u)
		}
		return n, set
	}
	want := make([]string, len(metaTables))
	for i, q := range metaTables {
		want[i] = diffRun(members[0].dbs[0], q, false)
	}
	n0, _ := committed(members[0].dbs[0])
	for _, m := range members[1:] {
		for j, mdb := range m.dbs {
			name := m.name
			if len(m.dbs) > 1 {
				name = fmt.Sprintf("%s member %d", m.name, j+1)
			}
			for i, q := range metaTables {
				if got := diffRun(mdb, q, false); got != want[i] {
					t.Errorf("final %s\n%s: %s\n%s: %s", q, members[0].name, want[i], name, got)
				}
			}
			n, set := committed(mdb)
			if len(m.dbs) == 1 && n != n0 {
				t.Errorf("%s committed %d transactions, %s %d", name, n, members[0].name, n0)
			}
			// A cluster commits more: a transaction that locked rows and
			// changed none is certified, as an empty transaction
			// (txn/cluster.go). Its members must have the same GTIDs.
			if _, first := committed(m.dbs[0]); set.String() != first.String() {
				t.Errorf("%s: gtid_executed %s, member 1 %s", name, set, first)
			}
		}
	}
	for _, rep := range []struct {
		r   *server
		src *member
	}{{r0, members[0]}, {r4, crashed}} {
		rdb := rep.r.db("")
		waitCaughtUp(t, rep.src.dbs[0], rdb, 60*time.Second)
		_, srcSet := committed(rep.src.dbs[0])
		if _, repSet := committed(rdb); srcSet.String() != repSet.String() {
			t.Errorf("replica of %s: gtid_executed %s, source %s", rep.src.name, repSet, srcSet)
		}
		for i, q := range metaTables {
			if got := diffRun(rdb, q, false); got != want[i] {
				t.Errorf("replica of %s, final %s\nwant %s\ngot  %s", rep.src.name, q, want[i], got)
			}
		}
		if st := replicaStatus(t, rdb); st["Last_Error"] != "" || !strings.EqualFold(st["Replica_SQL_Running"], "Yes") {
			t.Errorf("replica of %s: %v", rep.src.name, st)
		}
	}
}
