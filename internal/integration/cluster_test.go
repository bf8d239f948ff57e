package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startCluster starts n lockstep processes as the members of one cluster
// on loopback, and waits until each is in a primary component.
func startCluster(t *testing.T, n int, extra ...string) []*server {
	t.Helper()
	addrs := make([]string, n)
	for i, p := range fixedPorts(t, n) {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	var nodes []*server
	for i := range n {
		nodes = append(nodes, startServer(t, t.TempDir(), append(extra,
			"--server-id", fmt.Sprint(i+1),
			"--wsrep-cluster-address", "gcomm://"+strings.Join(addrs, ","),
			"--wsrep-node-address", addrs[i],
			"--wsrep-cluster-name", "test",
			"--lockstep-cluster-tick", "20")...))
	}
	for _, s := range nodes {
		waitReady(t, s.db(""))
	}
	return nodes
}

// waitReady waits (at most 30 s) until a member says wsrep_ready ON.
func waitReady(t *testing.T, db *sql.DB) {
	t.Helper()
	waitFor(t, "a member to be ready", 30*time.Second, func() bool {
		var name, v string
		err := db.QueryRow("SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &v)
		return err == nil && v == "ON"
	})
}

// causal returns a connection pool to s whose reads wait for every commit
// the cluster acknowledged before them (wsrep_sync_wait=1).
func causal(t *testing.T, s *server) *sql.DB { return syncWait(t, s, 1) }

// serial returns a connection pool to s whose every statement, writes and
// DDL too, waits for every commit the cluster acknowledged before it
// (wsrep_sync_wait=15): statements sent to the members one after the
// other then see each other as on one server. (A write is not a read: with
// causal, an INSERT sent to a member right after a CREATE TABLE on
// another can run before the table has reached it.)
func serial(t *testing.T, s *server) *sql.DB { return syncWait(t, s, 15) }

func syncWait(t *testing.T, s *server, mask int) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?wsrep_sync_wait=%d", s.port, mask))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// execRetry runs q until it succeeds, retrying what a client of a
// cluster retries (1213 a conflict, 1047 no primary component) for at
// most 30 s.
func execRetry(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Each attempt is bounded too: a statement the cluster never
		// answers fails the test instead of hanging it.
		ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(5*time.Second))
		_, err := db.ExecContext(ctx, q, args...)
		cancel()
		if err == nil {
			return
		}
		if n := errNumber(err); (n != 1213 && n != 1047) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", q, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countRows(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestClusterMultiPrimary: writes on every member, causal reads, the lost
// update refused at COMMIT, concurrent increments from every member that
// lose nothing, a killed member that rejoins and catches up, and every
// member killed at once under writes and started again, losing nothing.
func TestClusterMultiPrimary(t *testing.T) {
	nodes := startCluster(t, 3)
	dbs := make([]*sql.DB, len(nodes))
	for i, s := range nodes {
		dbs[i] = serial(t, s)
	}
	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[1], "CREATE TABLE d.t (id INT PRIMARY KEY, v INT NOT NULL)")
	execRetry(t, dbs[2], "CREATE TABLE d.a (id INT AUTO_INCREMENT PRIMARY KEY, node INT)")

	// Writes on every member are read on every member.
	for i, db := range dbs {
		for k := range 5 {
			execRetry(t, db, "INSERT INTO d.t VALUES (?, 0)", i*100+k)
			execRetry(t, db, "INSERT INTO d.a (node) VALUES (?)", i)
		}
	}
	for i, db := range dbs {
		if n := countRows(t, db, "SELECT COUNT(*) FROM d.t"); n != 15 {
			t.Fatalf("member %d sees %d rows of d.t, want 15", i+1, n)
		}
		if n := countRows(t, db, "SELECT COUNT(DISTINCT id) FROM d.a"); n != 15 {
			t.Fatalf("member %d sees %d distinct auto-increment ids, want 15", i+1, n)
		}
	}

	// JSON documents written on one member and changed on another read
	// the same on every member.
	execRetry(t, dbs[0], "CREATE TABLE d.docs (id INT PRIMARY KEY, doc JSON)")
	execRetry(t, dbs[0], `INSERT INTO d.docs VALUES (1, '{"a": [1, "x", null], "b": {"c": 2.5}}'), (2, NULL)`)
	execRetry(t, dbs[2], `UPDATE d.docs SET doc = JSON_SET(doc, '$.d', 'new') WHERE id = 1`)
	for i, db := range dbs {
		if got := tableText(t, db, "SELECT id, doc FROM d.docs ORDER BY id"); got != "1|"+`{"a": [1, "x", null], "b": {"c": 2.5}, "d": "new"}`+"|\n2|NULL|\n" {
			t.Fatalf("member %d reads the JSON documents as\n%s", i+1, got)
		}
	}

	// A view made on one member is read on every member; replaced on
	// another, it is replaced everywhere.
	execRetry(t, dbs[0], "CREATE VIEW d.small AS SELECT id FROM d.t WHERE id < 100")
	execRetry(t, dbs[1], "CREATE OR REPLACE VIEW d.small AS SELECT id FROM d.t WHERE id < 200")
	for i, db := range dbs {
		if n := countRows(t, db, "SELECT COUNT(*) FROM d.small"); n != 10 {
			t.Fatalf("member %d sees %d rows through the view, want 10", i+1, n)
		}
	}

	// A foreign key made on one member holds on every member: an orphan
	// is refused on another, and a cascade made on a third reaches all.
	execRetry(t, dbs[0], "CREATE TABLE d.par (id INT PRIMARY KEY)")
	execRetry(t, dbs[0], "CREATE TABLE d.chi (id INT PRIMARY KEY, p INT, CONSTRAINT chi_par FOREIGN KEY (p) REFERENCES d.par (id) ON DELETE CASCADE)")
	execRetry(t, dbs[1], "INSERT INTO d.par VALUES (1), (2)")
	execRetry(t, dbs[1], "INSERT INTO d.chi VALUES (10, 1), (11, 2)")
	waitFor(t, "the parents to reach member 2", 10*time.Second, func() bool {
		return countRows(t, dbs[1], "SELECT COUNT(*) FROM d.chi") == 2
	})
	if _, err := dbs[1].Exec("INSERT INTO d.chi VALUES (12, 99)"); errNumber(err) != 1452 {
		t.Fatalf("an orphan on member 2: %v, want 1452", err)
	}
	execRetry(t, dbs[2], "DELETE FROM d.par WHERE id = 1")
	for i, db := range dbs {
		waitFor(t, fmt.Sprintf("the cascade to reach member %d", i+1), 10*time.Second, func() bool {
			return countRows(t, db, "SELECT COUNT(*) FROM d.chi") == 1
		})
	}

	// A trigger made on one member fires for writes on every member, once:
	// its rows reach the others, which fire nothing when they apply them.
	execRetry(t, dbs[0], "CREATE TABLE d.tlog (id INT AUTO_INCREMENT PRIMARY KEY, k INT, node INT)")
	execRetry(t, dbs[0], "CREATE TRIGGER d.t_ai AFTER INSERT ON d.t FOR EACH ROW INSERT INTO d.tlog (k, node) VALUES (NEW.id, @@server_id)")
	for i, db := range dbs {
		execRetry(t, db, "INSERT INTO d.t VALUES (?, 0)", 5000+i)
	}
	for i, db := range dbs {
		waitFor(t, fmt.Sprintf("the trigger's rows to reach member %d", i+1), 10*time.Second, func() bool {
			return tableText(t, db, "SELECT k FROM d.tlog ORDER BY k") == "5000|\n5001|\n5002|\n"
		})
	}

	// A procedure made on one member is called on the others; its
	// statements' rows reach every member.
	execRetry(t, dbs[0], "CREATE PROCEDURE d.addrow(IN k INT) BEGIN INSERT INTO d.t VALUES (k, 1); UPDATE d.t SET v = v + 1 WHERE id = k; END")
	for i, db := range dbs {
		waitFor(t, fmt.Sprintf("the procedure to reach member %d", i+1), 10*time.Second, func() bool {
			_, err := db.Exec("CALL d.addrow(?)", 6000+i)
			return err == nil
		})
	}
	for i, db := range dbs {
		waitFor(t, fmt.Sprintf("the CALLs' rows to reach member %d", i+1), 10*time.Second, func() bool {
			return tableText(t, db, "SELECT id, v FROM d.t WHERE id >= 6000 ORDER BY id") == "6000|2|\n6001|2|\n6002|2|\n"
		})
	}

	// Accounts made on one member log in on the others; dropped on one,
	// they are gone everywhere.
	execRetry(t, dbs[0], "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	execRetry(t, dbs[0], "GRANT SELECT ON d.* TO app@'%'")
	login := func(s *server) error {
		db, err := sql.Open("mysql", fmt.Sprintf("app:pw@tcp(127.0.0.1:%d)/d", s.port))
		if err != nil {
			return err
		}
		defer db.Close()
		var n int
		return db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n)
	}
	waitLogin := func(s *server, want bool) {
		t.Helper()
		waitFor(t, fmt.Sprintf("app's login on port %d to succeed: %v", s.port, want), 10*time.Second, func() bool {
			return (login(s) == nil) == want
		})
	}
	waitLogin(nodes[1], true)
	waitLogin(nodes[2], true)
	execRetry(t, dbs[2], "DROP USER app@'%'")
	waitLogin(nodes[0], false)
	waitLogin(nodes[1], false)

	// The lost update: a transaction that read a row before another
	// member changed it cannot write it (first committer wins).
	ctx := t.Context()
	c1, err := dbs[0].Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	mustExecConn := func(q string) {
		t.Helper()
		if _, err := c1.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExecConn("BEGIN")
	var v int
	if err := c1.QueryRowContext(ctx, "SELECT v FROM d.t WHERE id = 0").Scan(&v); err != nil {
		t.Fatal(err)
	}
	execRetry(t, dbs[1], "UPDATE d.t SET v = v + 10 WHERE id = 0")
	mustExecConn(fmt.Sprintf("UPDATE d.t SET v = %d WHERE id = 0", v+1))
	if _, err := c1.ExecContext(ctx, "COMMIT"); errNumber(err) != 1213 {
		t.Fatalf("COMMIT of a lost update: got %v, want error 1213", err)
	}
	for i, db := range dbs {
		if got := countRows(t, db, "SELECT v FROM d.t WHERE id = 0"); got != 10 {
			t.Fatalf("member %d: v = %d after the refused lost update, want 10", i+1, got)
		}
	}

	// Increments from every member at once: every acknowledged one counts.
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked, conflicts := 0, 0
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				_, err := db.Exec("UPDATE d.t SET v = v + 1 WHERE id = 1")
				mu.Lock()
				switch {
				case err == nil:
					acked++
				case errNumber(err) == 1213:
					conflicts++
				default:
					t.Errorf("increment: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("concurrent increments: %d acknowledged, %d conflicts returned to the client", acked, conflicts)
	var failures, commits uint64
	for _, s := range nodes {
		var name string
		var f, c uint64
		if err := s.db("").QueryRow("SHOW STATUS LIKE 'wsrep_local_cert_failures'").Scan(&name, &f); err != nil {
			t.Fatal(err)
		}
		if err := s.db("").QueryRow("SHOW STATUS LIKE 'wsrep_local_commits'").Scan(&name, &c); err != nil {
			t.Fatal(err)
		}
		failures, commits = failures+f, commits+c
	}
	if failures < uint64(conflicts) || commits < uint64(acked) {
		t.Fatalf("wsrep_local_cert_failures %d (want at least the %d conflicts), wsrep_local_commits %d (want at least %d)", failures, conflicts, commits, acked)
	}
	for i, db := range dbs {
		if got := countRows(t, db, "SELECT v FROM d.t WHERE id = 1"); got != acked {
			t.Fatalf("member %d: v = %d, want the %d acknowledged increments", i+1, got, acked)
		}
	}

	// Every member is a source: a Lockstep replica of one member gets
	// every member's transactions, under the cluster's GTIDs.
	r := startServer(t, t.TempDir(), "--server-id=9", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", nodes[1].port),
		"--source-user=root")
	rdb := r.db("")
	rows := countRows(t, dbs[0], "SELECT COUNT(*) FROM d.t")
	waitFor(t, fmt.Sprintf("the replica of a member to have the %d rows of d.t", rows), 30*time.Second, func() bool {
		var n int
		return rdb.QueryRow("SELECT COUNT(*) FROM d.t").Scan(&n) == nil && n == rows
	})
	var clusterGTIDs string
	if err := dbs[1].QueryRow("SELECT @@gtid_executed").Scan(&clusterGTIDs); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replica to execute the member's GTIDs "+clusterGTIDs, 30*time.Second, func() bool {
		var g string
		return rdb.QueryRow("SELECT @@gtid_executed").Scan(&g) == nil && g == clusterGTIDs
	})
	r.stop()

	// What needs a single server is refused, not ignored.
	for _, q := range []string{"FLUSH BINARY LOGS", "SET gtid_next = '3E11FA47-71CA-11E1-9E33-C80AA9429562:5'", "FLUSH TABLES WITH READ LOCK"} {
		if _, err := dbs[0].Exec(q); errNumber(err) != 1235 {
			t.Fatalf("%s on a member: got %v, want 1235", q, err)
		}
	}

	// Every member executed the same GTIDs.
	var want string
	for i, db := range dbs {
		var g string
		if err := db.QueryRow("SELECT @@gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = g
		} else if g != want {
			t.Fatalf("member %d executed %s, member 1 %s", i+1, g, want)
		}
	}

	// Kill the leader: the others go on; it rejoins and catches up.
	leader := -1
	for i, s := range nodes {
		var name string
		var lead uint64
		if err := s.db("").QueryRow("SHOW STATUS LIKE 'Lockstep_cluster_leader'").Scan(&name, &lead); err != nil {
			t.Fatal(err)
		}
		if lead == uint64(i+1) {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no member says it leads")
	}
	killed := time.Now()
	nodes[leader].kill()
	other := dbs[(leader+1)%3]
	execRetry(t, other, "INSERT INTO d.t VALUES (1000, 1)")
	t.Logf("first commit %v after the leader was killed", time.Since(killed).Round(time.Millisecond))
	for k := range 20 {
		execRetry(t, dbs[(leader+1+k%2)%3], "INSERT INTO d.t VALUES (?, 1)", 1001+k)
	}
	nodes[leader].start()
	waitReady(t, nodes[leader].db(""))
	for i, db := range dbs {
		if n := countRows(t, db, "SELECT COUNT(*) FROM d.t"); n != 42 {
			t.Fatalf("member %d sees %d rows after the rejoin, want 42", i+1, n)
		}
	}

	// Kill every member at once under writes from all three, and start
	// them again: the cluster comes back by itself, with every
	// acknowledged insert on every member and the same GTIDs.
	ws := startWriters(dbs, func(db *sql.DB, w, k int) (int, error) {
		id := 10_000 + w*100_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, 2)", id)
		return id, err
	}, func(error) bool { return true })
	waitFor(t, "writes before the full kill", 20*time.Second, func() bool { return ws.count() >= 50 })
	for _, s := range nodes {
		s.kill()
	}
	ws.halt()
	for _, s := range nodes {
		s.start()
	}
	var gtids []string
	for i, s := range nodes {
		waitReady(t, s.db(""))
		db := causal(t, s)
		have := idSet(t, db, "SELECT id FROM d.t WHERE id >= 10000")
		for id := range ws.acked {
			if !have[id] {
				t.Fatalf("member %d lost acknowledged insert %d in the full kill", i+1, id)
			}
		}
		var g string
		if err := db.QueryRow("SELECT @@gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		gtids = append(gtids, g)
	}
	if gtids[0] != gtids[1] || gtids[1] != gtids[2] {
		t.Fatalf("gtid_executed differs after the full restart: %q", gtids)
	}
	t.Logf("%d acknowledged inserts survived killing every member", len(ws.acked))
}

// writers insert rows from one goroutine per pool until stopped, and keep
// the ids whose insert was acknowledged.
type writers struct {
	mu    sync.Mutex
	acked map[int]bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startWriters starts a writer per pool: writer w's k-th insert runs
// insert(db, w, k), which returns the id it wrote. A refused insert is
// passed to refused, which may end the writer (false).
func startWriters(dbs []*sql.DB, insert func(db *sql.DB, w, k int) (int, error), refused func(error) bool) *writers {
	ws := &writers{acked: map[int]bool{}, stop: make(chan struct{})}
	for w, db := range dbs {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			for k := 0; ; k++ {
				select {
				case <-ws.stop:
					return
				default:
				}
				id, err := insert(db, w, k)
				if err == nil {
					ws.mu.Lock()
					ws.acked[id] = true
					ws.mu.Unlock()
				} else if !refused(err) {
					return
				}
			}
		}()
	}
	return ws
}

// count is the number of acknowledged inserts so far.
func (ws *writers) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.acked)
}

// snapshot copies the acknowledged ids.
func (ws *writers) snapshot() map[int]bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make(map[int]bool, len(ws.acked))
	for id := range ws.acked {
		out[id] = true
	}
	return out
}

// halt stops the writers and waits for them.
func (ws *writers) halt() {
	close(ws.stop)
	ws.wg.Wait()
}

// pause stops s with SIGSTOP until the returned function (also run at
// cleanup) continues it.
func (s *server) pause(t *testing.T) (resume func()) {
	t.Helper()
	p := s.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { p.Signal(syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// groupMembers maps each member's client port to its MEMBER_STATE in
// performance_schema.replication_group_members as db's member sees it.
func groupMembers(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT MEMBER_PORT, MEMBER_STATE FROM performance_schema.replication_group_members")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var port sql.NullString // NULL until the member is heard from
		var state string
		if err := rows.Scan(&port, &state); err != nil {
			t.Fatal(err)
		}
		out[port.String] = state
	}
	return out
}

// allOnline reports whether db's member lists n members, every one ONLINE.
func allOnline(t *testing.T, db *sql.DB, n int) bool {
	t.Helper()
	m := groupMembers(t, db)
	for _, st := range m {
		if st != "ONLINE" {
			return false
		}
	}
	return len(m) == n
}

// clusterAddrs are the members' cluster addresses.
func clusterAddrs(nodes []*server) []string {
	var out []string
	for _, s := range nodes {
		out = append(out, s.argOf("--wsrep-node-address"))
	}
	return out
}

// startInsertWriters creates d.t (id, v) through dbs[0] and starts a
// writer per pool: writer w inserts ids w*1,000,000 + k, and goes on
// after a conflict (1213) or a refusal of a member that is not ready
// (1047).
func startInsertWriters(t *testing.T, dbs []*sql.DB) *writers {
	t.Helper()
	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[0], "CREATE TABLE d.t (id INT PRIMARY KEY, v INT NOT NULL)")
	return startWriters(dbs, func(db *sql.DB, w, k int) (int, error) {
		id := w*1_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, ?)", id, w)
		return id, err
	}, func(err error) bool { return errNumber(err) == 1213 || errNumber(err) == 1047 })
}

// TestClusterMinorityRefuses: members see each other in
// performance_schema.replication_group_members; a member cut off from the
// majority sees the others UNREACHABLE, refuses reads and writes of
// tables with 1047, as a Galera node outside the primary component does, still answers status, session statements and
// system-schema reads, gives stale reads only with wsrep_dirty_reads, and
// serves again by itself once the majority is back.
func TestClusterMinorityRefuses(t *testing.T) {
	nodes := startCluster(t, 3)
	execRetry(t, nodes[0].db(""), "CREATE DATABASE d")
	execRetry(t, nodes[0].db(""), "CREATE TABLE d.t (id INT PRIMARY KEY)")
	execRetry(t, nodes[0].db(""), "INSERT INTO d.t VALUES (1)")
	if n := countRows(t, causal(t, nodes[2]), "SELECT COUNT(*) FROM d.t"); n != 1 {
		t.Fatalf("rows on the third member: %d", n)
	}

	// Every member sees every member ONLINE, with the port its clients use.
	waitFor(t, "every member to see every member ONLINE", 30*time.Second, func() bool {
		for _, n := range nodes {
			g := groupMembers(t, n.db(""))
			for _, m := range nodes {
				if g[fmt.Sprint(m.port)] != "ONLINE" {
					return false
				}
			}
			if len(g) != 3 {
				return false
			}
		}
		return true
	})
	// Every member's announcements catch up with the three transactions.
	waitFor(t, "member stats to show the three transactions everywhere", 30*time.Second, func() bool {
		var checked, all string
		err := causal(t, nodes[1]).QueryRow("SELECT COUNT_TRANSACTIONS_CHECKED, TRANSACTIONS_COMMITTED_ALL_MEMBERS FROM performance_schema.replication_group_member_stats WHERE MEMBER_ID = @@server_uuid").Scan(&checked, &all)
		if err != nil {
			t.Fatal(err)
		}
		return checked == "3" && strings.HasSuffix(all, ":1-3")
	})

	fams := scrape(t, nodes[0])
	if up, commits := value(fams, "lockstep_cluster_members_up", ""), value(fams, "lockstep_cluster_member_commits_total", "1"); up != 3 || commits != 3 {
		t.Fatalf("metrics: %v members up, member 1 committed %v, want 3 and 3", up, commits)
	}

	// group_replication_consistency = BEFORE reads everything
	// acknowledged on any member before the statement; AFTER is refused.
	before, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?group_replication_consistency=%%27BEFORE%%27", nodes[2].port))
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	execRetry(t, nodes[0].db(""), "CREATE TABLE d.u (id INT PRIMARY KEY)")
	for k := 1; k <= 20; k++ {
		execRetry(t, nodes[0].db(""), "INSERT INTO d.u VALUES (?)", k)
		if n := countRows(t, before, "SELECT COUNT(*) FROM d.u"); n != k {
			t.Fatalf("a BEFORE read on another member saw %d rows after %d acknowledged inserts", n, k)
		}
	}
	if _, err := before.Exec("SET SESSION group_replication_consistency = 'AFTER'"); errNumber(err) != 1231 {
		t.Fatalf("group_replication_consistency = AFTER: %v, want 1231", err)
	}

	resume1, resume2 := nodes[0].pause(t), nodes[1].pause(t)
	db := nodes[2].db("")
	waitFor(t, "the lone member to leave the primary component", 30*time.Second, func() bool {
		var name, v string
		return db.QueryRow("SHOW STATUS LIKE 'wsrep_cluster_status'").Scan(&name, &v) == nil && v == "non-Primary"
	})
	waitFor(t, "the paused members to show UNREACHABLE", 30*time.Second, func() bool {
		g := groupMembers(t, db)
		return g[fmt.Sprint(nodes[0].port)] == "UNREACHABLE" && g[fmt.Sprint(nodes[1].port)] == "UNREACHABLE"
	})
	var name, size string
	if err := db.QueryRow("SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size); err != nil || size != "1" {
		t.Fatalf("wsrep_cluster_size of the lone member: %s %v", size, err)
	}
	for _, q := range []string{"SELECT * FROM d.t", "INSERT INTO d.t VALUES (2)", "SELECT 1 FROM d.t FOR UPDATE", "CREATE TABLE d.u (id INT PRIMARY KEY)"} {
		if _, err := db.Exec(q); errNumber(err) != 1047 || !strings.Contains(err.Error(), "WSREP has not yet prepared node") {
			t.Fatalf("%s outside the primary component: %v, want 1047", q, err)
		}
	}
	for _, q := range []string{"SHOW STATUS LIKE 'wsrep%'", "SELECT 1", "SELECT COUNT(*) FROM information_schema.tables", "SET SESSION wsrep_sync_wait = 0", "SHOW CREATE TABLE d.t"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s outside the primary component: %v", q, err)
		}
	}
	dirty, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?wsrep_dirty_reads=1", nodes[2].port))
	if err != nil {
		t.Fatal(err)
	}
	defer dirty.Close()
	if n := countRows(t, dirty, "SELECT COUNT(*) FROM d.t"); n != 1 {
		t.Fatalf("dirty read: %d rows", n)
	}

	resume1()
	resume2()
	waitReady(t, db)
	execRetry(t, db, "INSERT INTO d.t VALUES (2)")
	if n := countRows(t, causal(t, nodes[0]), "SELECT COUNT(*) FROM d.t"); n != 2 {
		t.Fatalf("rows after the majority came back: %d", n)
	}
}

// argOf is the value s was started with for flag.
func (s *server) argOf(flag string) string {
	for i, a := range s.args {
		if a == flag && i+1 < len(s.args) {
			return s.args[i+1]
		}
	}
	return ""
}

// TestClusterJoin: a fourth member started with an empty data directory
// and the running members' addresses joins under writes, catches up from
// the log and serves the same rows and GTIDs; it is a voter then, so the
// cluster of four keeps its quorum with one of the first three killed; it
// restarts as the member it became; and a member cannot join with data
// of its own.
func TestClusterJoin(t *testing.T) {
	nodes := startCluster(t, 3)
	seeds := clusterAddrs(nodes)
	dbs := []*sql.DB{causal(t, nodes[0]), causal(t, nodes[1]), causal(t, nodes[2])}
	ws := startInsertWriters(t, dbs)
	waitFor(t, "writes before the join", 30*time.Second, func() bool { return ws.count() >= 3000 })

	addr := fmt.Sprintf("127.0.0.1:%d", fixedPort(t))
	joinArgs := func(addr string) []string {
		return []string{"--server-id", "4",
			"--wsrep-cluster-address", "gcomm://" + strings.Join(seeds, ","),
			"--wsrep-node-address", addr,
			"--wsrep-cluster-name", "test",
			"--lockstep-cluster-tick", "20"}
	}
	began := time.Now()
	joiner := startServer(t, t.TempDir(), joinArgs(addr)...)
	waitReady(t, joiner.db(""))
	t.Logf("the new member was ready %v after it started, %d inserts acknowledged by then", time.Since(began).Round(time.Millisecond), ws.count())
	waitFor(t, "four members ONLINE", 30*time.Second, func() bool { return allOnline(t, nodes[0].db(""), 4) })
	jdb := causal(t, joiner)
	ws2 := startWriters([]*sql.DB{jdb}, func(db *sql.DB, w, k int) (int, error) {
		id := 9_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, 9)", id)
		return id, err
	}, func(err error) bool { return errNumber(err) == 1213 || errNumber(err) == 1047 })
	waitFor(t, "writes on the new member", 20*time.Second, func() bool { return ws2.count() >= 50 })

	// Four voters: one of the first three killed leaves a quorum.
	nodes[1].kill()
	before := ws.count() + ws2.count()
	waitFor(t, "writes with a member of four down", 20*time.Second, func() bool { return ws.count()+ws2.count() >= before+100 })
	ws.halt()
	ws2.halt()
	live := []*server{nodes[0], nodes[2], joiner}
	var gtids []string
	for i, s := range live {
		db := causal(t, s)
		have := idSet(t, db, "SELECT id FROM d.t")
		for _, acked := range []map[int]bool{ws.snapshot(), ws2.snapshot()} {
			for id := range acked {
				if !have[id] {
					t.Fatalf("member %d lacks acknowledged insert %d", i, id)
				}
			}
		}
		var g string
		if err := db.QueryRow("SELECT @@gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		gtids = append(gtids, g)
	}
	if gtids[0] != gtids[1] || gtids[1] != gtids[2] {
		t.Fatalf("gtid_executed differs: %q", gtids)
	}
	var name, idx string
	if err := joiner.db("").QueryRow("SHOW STATUS LIKE 'wsrep_local_index'").Scan(&name, &idx); err != nil || idx != "3" {
		t.Fatalf("the new member's wsrep_local_index: %q %v, want 3", idx, err)
	}

	// The new member restarts as the member it became.
	joiner.stop()
	joiner.start()
	waitReady(t, joiner.db(""))
	nodes[1].start()
	waitReady(t, nodes[1].db(""))
	if n := countRows(t, causal(t, nodes[1]), "SELECT COUNT(*) FROM d.t"); n != countRows(t, causal(t, joiner), "SELECT COUNT(*) FROM d.t") {
		t.Fatalf("after restarts: %d rows on member 2", n)
	}

	// Member 2 is removed, asked on the new member: it refuses tables
	// from then on, the others list three members, and with member 1
	// killed the two left still commit. Removing needs SUPER or
	// GROUP_REPLICATION_ADMIN.
	jroot := joiner.db("")
	mustExec(t, jroot, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	plain := joiner.as(t, "plain", "pw")
	if _, err := plain.Exec("SELECT lockstep_remove_member(?)", nodes[1].argOf("--wsrep-node-address")); errNumber(err) != 1227 {
		t.Fatalf("lockstep_remove_member without the privilege: %v, want 1227", err)
	}
	var msg string
	if err := jroot.QueryRow("SELECT lockstep_remove_member(?)", nodes[1].argOf("--wsrep-node-address")).Scan(&msg); err != nil {
		t.Fatalf("lockstep_remove_member: %v", err)
	}
	t.Log(msg)
	waitFor(t, "the removed member to refuse tables", 20*time.Second, func() bool {
		_, err := nodes[1].db("").Exec("SELECT COUNT(*) FROM d.t")
		return errNumber(err) == 1047
	})
	waitFor(t, "three members listed", 20*time.Second, func() bool { return len(groupMembers(t, nodes[0].db(""))) == 3 })
	nodes[0].kill()
	execRetry(t, causal(t, nodes[2]), "INSERT INTO d.t VALUES (-1, 0)")
	execRetry(t, jdb, "INSERT INTO d.t VALUES (-2, 0)")
	if n := countRows(t, causal(t, joiner), "SELECT COUNT(*) FROM d.t WHERE id < 0"); n != 2 {
		t.Fatalf("%d rows written after the removal and the kill, want 2", n)
	}

	// A data directory that holds transactions cannot join.
	other := startServer(t, t.TempDir(), "--server-id", "5")
	mustExec(t, other.db(""), "CREATE DATABASE mine")
	other.stop()
	other.args = joinArgs(fmt.Sprintf("127.0.0.1:%d", fixedPort(t)))
	if other.tryStart() {
		t.Fatal("a member with data of its own joined the cluster")
	}
	if log, _ := os.ReadFile(other.logPath); !strings.Contains(string(log), "already holds transactions") {
		t.Fatalf("a member with data of its own: %s", log)
	}
}

// TestClusterReplaceMember: a member that died is replaced by a new one
// started with --lockstep-replace-member, under writes. Once caught up,
// the new member becomes a voter and the dead one stops being one in the
// same change (joint consensus), so the cluster is three voters again,
// not four: killing one more of the first members leaves the two others
// a quorum (with the dead member still a voter, one of four up would
// stop it). A new member cannot replace one that is not a voter.
func TestClusterReplaceMember(t *testing.T) {
	nodes := startCluster(t, 3)
	seeds := clusterAddrs(nodes)
	dbs := []*sql.DB{causal(t, nodes[0]), causal(t, nodes[1])}
	ws := startInsertWriters(t, dbs)
	waitFor(t, "writes before the loss", 30*time.Second, func() bool { return ws.count() >= 1000 })
	nodes[2].kill()
	dead := nodes[2].argOf("--wsrep-node-address")

	joinArgs := func(id int, replaces string) []string {
		return []string{"--server-id", fmt.Sprint(id),
			"--wsrep-cluster-address", "gcomm://" + strings.Join(seeds, ","),
			"--wsrep-node-address", fmt.Sprintf("127.0.0.1:%d", fixedPort(t)),
			"--wsrep-cluster-name", "test",
			"--lockstep-cluster-tick", "20",
			"--lockstep-replace-member", replaces}
	}
	joiner := startServer(t, t.TempDir(), joinArgs(4, dead)...)
	waitReady(t, joiner.db(""))
	first := nodes[0].db("")
	waitFor(t, "three members ONLINE, the dead one gone", 30*time.Second, func() bool { return allOnline(t, first, 3) })
	var name, size string
	if err := nodes[1].db("").QueryRow("SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size); err != nil || size != "3" {
		t.Fatalf("wsrep_cluster_size after the replacement: %q %v, want 3", size, err)
	}

	// Voters 2 and 4 are a quorum of {1, 2, 4}.
	nodes[0].kill()
	before := ws.count()
	waitFor(t, "writes with member 1 down too", 30*time.Second, func() bool { return ws.count() >= before+200 })
	ws.halt()
	for i, s := range []*server{nodes[1], joiner} {
		// Member 1's loss may have left this one without a leader for a
		// moment (it refuses reads with 1047 then, as Galera does).
		waitReady(t, s.db(""))
		have := idSet(t, causal(t, s), "SELECT id FROM d.t")
		for id := range ws.snapshot() {
			if !have[id] {
				t.Fatalf("member %d lacks acknowledged insert %d", i, id)
			}
		}
	}
	var g1, g2 string
	if err := causal(t, nodes[1]).QueryRow("SELECT @@gtid_executed").Scan(&g1); err != nil {
		t.Fatal(err)
	}
	if err := causal(t, joiner).QueryRow("SELECT @@gtid_executed").Scan(&g2); err != nil {
		t.Fatal(err)
	}
	if g1 != g2 {
		t.Fatalf("gtid_executed differs: %q and %q", g1, g2)
	}

	// The dead member is no voter any more: nothing may replace it.
	other := &server{t: t, dir: t.TempDir(), args: joinArgs(5, dead)}
	other.port, other.httpPort = freePort(t), freePort(t)
	if other.tryStart() {
		other.stop()
		t.Fatal("a member replacing a removed member joined the cluster")
	}
	if log, _ := os.ReadFile(other.logPath); !strings.Contains(string(log), "is not a voting member") {
		t.Fatalf("replacing a removed member: %s", log)
	}
}

// lastBinlog is the name of the last binlog file db's server lists.
func lastBinlog(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last string
	for rows.Next() {
		var name, size, enc sql.NullString
		if err := rows.Scan(&name, &size, &enc); err != nil {
			t.Fatal(err)
		}
		last = name.String
	}
	return last
}

// TestClusterCompactionAndStateTransfer: members rotate their binlogs at
// max_binlog_size and PURGE BINARY LOGS compacts their logs; a member
// added afterwards, under writes, is sent a copy of a member's state
// instead of the log and then serves the same rows and GTIDs; a member
// that was down while the others compacted cannot be sent what it lacks:
// it sets its data aside, restarts in its process and comes back with
// the same copy.
func TestClusterCompactionAndStateTransfer(t *testing.T) {
	nodes := startCluster(t, 3, "--max-binlog-size", "16384")
	dbs := []*sql.DB{causal(t, nodes[0]), causal(t, nodes[1])}
	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[0], "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(100))")
	insert := func(db *sql.DB, w, k int) (int, error) {
		id := w*1_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, REPEAT('x', 100))", id)
		return id, err
	}
	retried := func(err error) bool { return errNumber(err) == 1213 || errNumber(err) == 1047 }
	ws := startWriters([]*sql.DB{dbs[0], dbs[1], causal(t, nodes[2])}, insert, retried)
	waitFor(t, "writes before the down member", 30*time.Second, func() bool { return ws.count() >= 500 })
	nodes[2].kill()
	waitFor(t, "writes before compaction", 30*time.Second, func() bool { return ws.count() >= 1500 })
	// Both forms of PURGE: to a file, and before a time given by any
	// expression, as MySQL takes it.
	mustExec(t, nodes[0].db(""), "PURGE BINARY LOGS TO '"+lastBinlog(t, nodes[0].db(""))+"'")
	mustExec(t, nodes[1].db(""), "PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY")
	var files int
	rows, err := nodes[1].db("").Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		files++
	}
	rows.Close()
	if files > 2 {
		t.Fatalf("%d binlog files left after PURGE BINARY LOGS BEFORE a day from now", files)
	}
	if _, err := nodes[1].db("").Exec("PURGE BINARY LOGS BEFORE 'not a time'"); errNumber(err) != 1210 {
		t.Fatalf("PURGE BINARY LOGS BEFORE 'not a time': %v, want 1210", err)
	}

	seeds := []string{nodes[0].argOf("--wsrep-node-address"), nodes[1].argOf("--wsrep-node-address")}
	joiner := startServer(t, t.TempDir(), "--server-id", "4",
		"--wsrep-cluster-address", "gcomm://"+strings.Join(seeds, ","),
		"--wsrep-node-address", fmt.Sprintf("127.0.0.1:%d", fixedPort(t)),
		"--wsrep-cluster-name", "test", "--lockstep-cluster-tick", "20")
	waitReady(t, joiner.db(""))
	if log, _ := os.ReadFile(joiner.logPath); !strings.Contains(string(log), "copied a member's state") {
		t.Fatalf("the new member did not copy a member's state:\n%s", log)
	}
	before := ws.count()
	waitFor(t, "writes with the new member", 30*time.Second, func() bool { return ws.count() >= before+300 })

	// The member that was down is behind the compacted logs: it sets its
	// data aside and comes back with a copy, by itself.
	nodes[2].start()
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(nodes[2].logPath)
			t.Logf("the stale member's log:\n%s", log)
		}
	})
	waitFor(t, "the stale member to take a copy", 60*time.Second, func() bool {
		log, _ := os.ReadFile(nodes[2].logPath)
		return strings.Contains(string(log), "behind the cluster's purged log") && strings.Contains(string(log), "copied a member's state")
	})
	if _, err := os.Stat(filepath.Join(nodes[2].dir, "data", "stale-data", "raft.state")); err != nil {
		t.Fatalf("the stale member's data was not set aside: %v", err)
	}
	waitReady(t, nodes[2].db(""))
	// It restarted in its process: the same one serves.
	if err := nodes[2].cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the stale member's process: %v", err)
	}
	ws.halt()

	var gtids []string
	for i, s := range []*server{nodes[0], nodes[1], joiner, nodes[2]} {
		db := causal(t, s)
		have := idSet(t, db, "SELECT id FROM d.t")
		for id := range ws.snapshot() {
			if !have[id] {
				t.Fatalf("member %d lacks acknowledged insert %d", i, id)
			}
		}
		gtids = append(gtids, gtidExecuted(t, db))
	}
	for _, g := range gtids[1:] {
		if g != gtids[0] {
			t.Fatalf("gtid_executed differs: %q", gtids)
		}
	}
	t.Logf("%d acknowledged inserts on every member; %s", ws.count(), gtids[0])
}
