package integration

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// TestSemiSyncFailover is the failover campaign of semi-synchronous
// replication (AFTER_SYNC): a primary and two replicas take inserts from
// four writers; each round kills the primary with SIGKILL, promotes the
// replica that received the most, points the other replica at it, and
// brings the old primary back as a replica. Every insert a client saw
// acknowledged must be on the last primary and its replicas. The old
// primary may hold transactions it committed but never sent (never
// acknowledged): the new primary then refuses it by name, and it is
// provisioned again from the new primary, instead of replicating with
// them and differing silently.
//
// LOCKSTEP_FAILOVER_ROUNDS sets the rounds (3 by default; the campaign in
// docs/RELIABILITY.md runs 50).
func TestSemiSyncFailover(t *testing.T) {
	c := failoverCampaign(t, true)
	if c.lost > 0 {
		t.Errorf("%d of %d acknowledged inserts lost", c.lost, c.acked)
	}
}

// TestAsyncFailover is the same campaign with asynchronous replication,
// where a failover loses what the primary acknowledged and no replica had
// received yet (as MySQL's does): it reports how many, and checks that
// the three servers still end with the same rows.
func TestAsyncFailover(t *testing.T) {
	c := failoverCampaign(t, false)
	if c.lost > c.acked {
		t.Fatalf("%d lost of %d", c.lost, c.acked)
	}
}

// campaign is what a failover campaign counted.
type campaign struct{ acked, lost int }

// failoverCampaign runs the failover campaign (TestSemiSyncFailover),
// semi-synchronous or not, and checks that the three servers end with
// the same rows; acknowledged inserts missing from them are counted as
// lost, for the caller to judge.
func failoverCampaign(t *testing.T, semiSync bool) campaign {
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("LOCKSTEP_FAILOVER_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	// Semi-sync waits are on for the primary alone (SET GLOBAL at each
	// promotion): a replica that waited for acknowledgements of what it
	// applies, with none of its own, would stall its applier.
	common := []string{"--rpl-semi-sync-source-timeout=600000", "--rpl-semi-sync-replica-enabled", "--source-connect-retry=1"}
	srv := make([]*server, 3)
	dbs := make([]*sql.DB, 3)
	for i := range srv {
		srv[i] = startServer(t, t.TempDir(), append([]string{fmt.Sprintf("--server-id=%d", i+1)}, common...)...)
		dbs[i] = srv[i].db("")
	}
	point := func(i, to int) {
		t.Helper()
		dbs[i].Exec("STOP REPLICA")
		mustExec(t, dbs[i], fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1", srv[to].port))
		mustExec(t, dbs[i], "START REPLICA")
	}
	primary := 0
	promote := func(i int) {
		t.Helper()
		if semiSync {
			mustExec(t, dbs[i], "SET GLOBAL rpl_semi_sync_source_enabled = ON")
		}
	}
	registered := func(i int, round int) {
		t.Helper()
		if semiSync {
			waitStatus(t, dbs[i], "Rpl_semi_sync_source_clients", "2", fmt.Sprintf("round %d: the replicas never registered as semi-sync", round))
		}
	}
	promote(0)
	point(1, 0)
	point(2, 0)
	registered(0, -1)
	mustExec(t, dbs[0], "CREATE DATABASE app")
	mustExec(t, dbs[0], "CREATE TABLE app.t (id BIGINT PRIMARY KEY, w INT)")

	var current atomic.Pointer[sql.DB]
	current.Store(dbs[0])
	var next atomic.Int64
	var mu sync.Mutex
	acked := map[int64]bool{}
	failed := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := next.Add(1)
				if _, err := current.Load().Exec("INSERT INTO app.t VALUES (?, ?)", id, w); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()

	gtids := func(db *sql.DB, q string) binlog.GTIDSet {
		t.Helper()
		var s string
		if err := db.QueryRow(q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		set, err := binlog.ParseGTIDSet(s)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	reprovisioned := 0
	for round := range rounds {
		time.Sleep(time.Second) // writes flow
		old := primary
		srv[old].kill()
		// `lockstep failover` promotes the replica that received most,
		// once both applied what they received, and points the other at
		// it.
		var replicas []int
		var addrs []string
		for i := range srv {
			if i != old {
				replicas = append(replicas, i)
				addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", srv[i].port))
			}
		}
		args := []string{"failover", "--replicas", strings.Join(addrs, ","), "--apply-timeout", "30s"}
		if semiSync {
			args = append(args, "--semi-sync")
		}
		out, err := tool(t, time.Minute, binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("round %d: lockstep failover: %v\n%s", round, err, out)
		}
		best := -1
		for _, i := range replicas {
			if strings.Contains(string(out), fmt.Sprintf("new primary: 127.0.0.1:%d\n", srv[i].port)) {
				best = i
			}
		}
		if best < 0 {
			t.Fatalf("round %d: lockstep failover named no new primary:\n%s", round, out)
		}
		current.Store(dbs[best])
		primary = best

		// The old primary comes back as a replica of the new one, or is
		// refused (it holds transactions that were never acknowledged) and
		// provisioned again.
		srv[old].start()
		point(old, best)
		refused := false
		waitFor(t, fmt.Sprintf("round %d: the old primary to catch up or be refused", round), 30*time.Second, func() bool {
			st := replicaStatus(t, dbs[old])
			if strings.Contains(st["Last_IO_Error"], "transactions this source does not have") {
				refused = true
				return true
			}
			return gtids(dbs[best], "SELECT @@global.gtid_executed").Subtract(gtids(dbs[old], "SELECT @@global.gtid_executed")).IsEmpty()
		})
		if refused {
			reprovisioned++
			srv[old].stop()
			if err := os.RemoveAll(filepath.Join(srv[old].dir, "data")); err != nil {
				t.Fatal(err)
			}
			srv[old].start()
			point(old, best)
		}
		registered(best, round)
	}
	close(stop)
	wg.Wait()

	for i := range srv {
		if i != primary {
			waitCaughtUp(t, dbs[primary], dbs[i], 60*time.Second)
		}
	}
	var sets []map[int64]bool
	for _, db := range dbs {
		rows, err := db.Query("SELECT id FROM app.t")
		if err != nil {
			t.Fatal(err)
		}
		have := map[int64]bool{}
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			have[id] = true
		}
		rows.Close()
		sets = append(sets, have)
	}
	for i := range sets {
		if len(sets[i]) != len(sets[primary]) {
			t.Errorf("server %d has %d rows, the primary (%d) %d", i, len(sets[i]), primary, len(sets[primary]))
			continue
		}
		for id := range sets[primary] {
			if !sets[i][id] {
				t.Errorf("server %d lacks row %d of the primary (%d)", i, id, primary)
				break
			}
		}
	}
	lost := 0
	for id := range acked {
		if !sets[primary][id] {
			lost++
		}
	}
	mode := "async"
	if semiSync {
		mode = "semi-sync"
	}
	t.Logf("%s, %d rounds: %d inserts acknowledged, %d of them lost, %d failed (during failovers), %d old primaries refused and provisioned again",
		mode, rounds, len(acked), lost, failed, reprovisioned)
	return campaign{acked: len(acked), lost: lost}
}

// TestOldPrimaryWithUnsentTransactionsRefused: a primary that committed
// transactions its replica never received, and then lost its place to
// that replica, is refused when it comes back as the new primary's
// replica, with the transactions named; replicating would have kept them
// on it alone.
func TestOldPrimaryWithUnsentTransactionsRefused(t *testing.T) {
	a := startServer(t, t.TempDir(), "--server-id=1", "--source-connect-retry=1")
	b := startServer(t, t.TempDir(), "--server-id=2", "--source-connect-retry=1")
	adb, bdb := a.db(""), b.db("")
	mustExec(t, bdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1", a.port))
	mustExec(t, bdb, "START REPLICA")
	mustExec(t, adb, "CREATE DATABASE app")
	mustExec(t, adb, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	waitCaughtUp(t, adb, bdb, 20*time.Second)
	mustExec(t, bdb, "STOP REPLICA")
	for i := range 3 {
		mustExec(t, adb, "INSERT INTO app.t VALUES (?)", i) // never sent
	}
	unsent := gtidExecuted(t, adb)
	a.kill()
	mustExec(t, bdb, "RESET REPLICA ALL")
	mustExec(t, bdb, "INSERT INTO app.t VALUES (100)")
	a.start()
	mustExec(t, adb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1", b.port))
	mustExec(t, adb, "START REPLICA")
	var st map[string]string
	waitFor(t, "the old primary to be refused", 20*time.Second, func() bool {
		st = replicaStatus(t, adb)
		return st["Last_IO_Errno"] == "13114"
	})
	if !strings.Contains(st["Last_IO_Error"], "transactions this source does not have") || !strings.Contains(st["Last_IO_Error"], ":3-5") {
		t.Fatalf("the refusal (the old primary had %s): %s", unsent, st["Last_IO_Error"])
	}
	var n int
	if err := adb.QueryRow("SELECT COUNT(*) FROM app.t WHERE id = 100").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused replica applied the new primary's insert: %d, %v", n, err)
	}
}

// TestFailoverRefuses: `lockstep failover` promotes nothing when the
// replicas diverged (each holds a transaction the other lacks), naming
// what each lacks and letting them receive again; nor when a replica
// does not answer, unless told to go on without it.
func TestFailoverRefuses(t *testing.T) {
	a := startServer(t, t.TempDir(), "--server-id=1")
	b := startServer(t, t.TempDir(), "--server-id=2", "--source-connect-retry=1")
	c := startServer(t, t.TempDir(), "--server-id=3", "--source-connect-retry=1")
	adb, bdb, cdb := a.db(""), b.db(""), c.db("")
	for _, db := range []*sql.DB{bdb, cdb} {
		mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1", a.port))
		mustExec(t, db, "START REPLICA")
	}
	mustExec(t, adb, "CREATE DATABASE app")
	mustExec(t, adb, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	waitCaughtUp(t, adb, bdb, 20*time.Second)
	waitCaughtUp(t, adb, cdb, 20*time.Second)
	// The primary lists its replicas' connections as MySQL does (failover
	// tools find replicas by them), from the address they came from.
	if n := countRows(t, adb, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump GTID' AND HOST LIKE '127.0.0.1:%'"); n != 2 {
		t.Fatalf("%d connections from 127.0.0.1:port listed as Binlog Dump GTID, want 2", n)
	}
	// c misses the primary's last insert and takes one of its own.
	mustExec(t, cdb, "STOP REPLICA")
	mustExec(t, adb, "INSERT INTO app.t VALUES (1)")
	waitCaughtUp(t, adb, bdb, 20*time.Second)
	mustExec(t, cdb, "INSERT INTO app.t VALUES (2)")
	mustExec(t, cdb, "START REPLICA IO_THREAD")
	a.kill()

	failover := func(args ...string) (string, error) {
		all := append([]string{"failover", "--apply-timeout", "20s", "--replicas",
			fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", b.port, c.port)}, args...)
		out, err := tool(t, time.Minute, binary, all...).CombinedOutput()
		return string(out), err
	}
	out, err := failover()
	if err == nil || !strings.Contains(out, "the replicas diverged") ||
		!strings.Contains(out, fmt.Sprintf("127.0.0.1:%d lacks", b.port)) || !strings.Contains(out, fmt.Sprintf("127.0.0.1:%d lacks", c.port)) {
		t.Fatalf("diverged replicas: %v\n%s", err, out)
	}
	for _, db := range []*sql.DB{bdb, cdb} {
		st := replicaStatus(t, db)
		if st["Replica_IO_Running"] == "No" || st["Source_Port"] != fmt.Sprint(a.port) {
			t.Fatalf("a replica after a refused failover: IO %s, source port %s", st["Replica_IO_Running"], st["Source_Port"])
		}
	}

	// c provisioned again would be the way out; here it is down instead.
	c.kill()
	out, err = failover()
	if err == nil || !strings.Contains(out, "does not answer") {
		t.Fatalf("a replica down: %v\n%s", err, out)
	}
	out, err = failover("--skip-unreachable")
	if err != nil || !strings.Contains(out, fmt.Sprintf("new primary: 127.0.0.1:%d", b.port)) {
		t.Fatalf("--skip-unreachable: %v\n%s", err, out)
	}
	if st := replicaStatus(t, bdb); st != nil {
		t.Fatalf("the new primary still replicates: %v", st)
	}
	mustExec(t, bdb, "INSERT INTO app.t VALUES (3)")
}

// TestFailoverRefusesMariaDB: a MariaDB replica is refused by name before
// anything is stopped: its GTIDs are of another kind.
func TestFailoverRefusesMariaDB(t *testing.T) {
	m := startMariaDB(t, 7)
	out, err := tool(t, time.Minute, binary, "failover", "--replicas", fmt.Sprintf("127.0.0.1:%d", m.port)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is MariaDB") {
		t.Fatalf("lockstep failover of a MariaDB replica: %v\n%s", err, out)
	}
}
