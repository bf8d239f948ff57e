package integration

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/launch"
)

// witnessProc is a `lockstep witness` process.
type witnessProc struct {
	t    *testing.T
	dir  string
	addr string
	args []string
	proc *launch.Process
	log  string
}

// startWitness starts a witness listening at addr, and waits until its
// cluster port answers. The test's end stops it.
func startWitness(t *testing.T, dir, addr string, args ...string) *witnessProc {
	t.Helper()
	w := &witnessProc{t: t, dir: dir, addr: addr, args: args}
	w.start()
	t.Cleanup(w.stop)
	t.Cleanup(func() { showLogsOnFailure(t, dir, "witness-") })
	return w
}

func (w *witnessProc) start() {
	w.t.Helper()
	w.log = filepath.Join(w.dir, fmt.Sprintf("witness-%d.log", time.Now().UnixNano()))
	p, err := launch.Start(exec.Command(binary, append([]string{"witness", "--datadir", filepath.Join(w.dir, "data"), "--wsrep-node-address", w.addr}, w.args...)...), w.log)
	if err != nil {
		w.t.Fatal(err)
	}
	w.proc = p
	waitFor(w.t, "the witness's cluster port", 20*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", w.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (w *witnessProc) stop() {
	if w.proc == nil {
		return
	}
	w.proc.Stop(30 * time.Second)
	w.proc = nil
}

func (w *witnessProc) kill() {
	w.proc.Kill()
	w.proc = nil
}

// TestClusterWitness: two data members and a witness (Galera's garbd).
// Losing any one of the three, the other two go on committing: a data
// member killed under writes, then the witness; each comes back and
// catches up. The witness shows as WITNESS in the members' views, hands
// leadership to a data member when elected, and refuses options that do
// not concern it. Back after the data members purged their logs, it sets
// its own aside and joins again. The data members end with the same rows and GTIDs.
func TestClusterWitness(t *testing.T) {
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", fixedPort(t))
	}
	common := []string{"--wsrep-cluster-address", "gcomm://" + strings.Join(addrs, ","), "--wsrep-cluster-name", "test", "--lockstep-cluster-tick", "20",
		"--max-binlog-size", "16384"}
	out, err := exec.Command(binary, append([]string{"witness", "--port", "3399", "--wsrep-node-address", addrs[2]}, common...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--port has no meaning for a witness") {
		t.Fatalf("a witness given --port: %v, %s", err, out)
	}
	var members []*server
	for i := range 2 {
		members = append(members, startServer(t, t.TempDir(), append([]string{"--server-id", fmt.Sprint(i + 1), "--wsrep-node-address", addrs[i]}, common...)...))
	}
	w := startWitness(t, t.TempDir(), addrs[2], append([]string{"--server-id", "3"}, common...)...)
	for _, s := range members {
		waitReady(t, s.db(""))
	}
	dbs := []*sql.DB{causal(t, members[0]), causal(t, members[1])}
	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[0], "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	next := 0
	insert := func(db *sql.DB, n int) {
		for range n {
			next++
			execRetry(t, db, "INSERT INTO d.t VALUES (?, ?)", next, next*next)
		}
	}
	insert(dbs[0], 10)
	insert(dbs[1], 10)
	// Each member's view: the witness online, and a cluster of three
	// (two members and the witness). The members learn of the witness
	// each in its own time.
	for i, db := range dbs {
		waitFor(t, fmt.Sprintf("the witness in member %d's view", i+1), 10*time.Second, func() bool {
			var n int
			err := db.QueryRow("SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_ROLE = 'WITNESS' AND MEMBER_STATE = 'ONLINE'").Scan(&n)
			return err == nil && n == 1 && statusValue(t, db, "wsrep_cluster_size") == 3
		})
	}
	leaderIsData := func() bool {
		l := statusValue(t, dbs[0], "Lockstep_cluster_leader")
		return l == 1 || l == 2
	}

	// A data member lost: the other and the witness are a majority.
	members[1].kill()
	insert(dbs[0], 20)
	waitFor(t, "a data member to lead", 10*time.Second, leaderIsData)
	members[1].start()
	waitReady(t, members[1].db(""))
	insert(dbs[1], 10)

	// The witness lost: the two data members go on; back, it catches up
	// and counts again.
	w.kill()
	insert(dbs[0], 10)
	insert(dbs[1], 10)
	w.start()
	// ONLINE: it votes again. (Joined again under a new id below, it
	// is a learner, RECOVERING, until the leader promotes it; a data
	// member lost before then would cost the cluster its quorum.)
	witnessOnline := func() bool {
		var n int
		err := dbs[1].QueryRow("SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_ROLE = 'WITNESS' AND MEMBER_STATE = 'ONLINE'").Scan(&n)
		return err == nil && n == 1
	}
	waitFor(t, "the witness back in the members' view", 20*time.Second, witnessOnline)

	// Lost again while the data members purge their logs: back, it is
	// behind the purged log, sets its own aside and joins again.
	w.kill()
	insert(dbs[0], 200)
	insert(dbs[1], 200)
	for _, db := range dbs {
		mustExec(t, db, "PURGE BINARY LOGS TO '"+lastBinlog(t, db)+"'")
	}
	w.start()
	waitFor(t, "the witness to join again", 30*time.Second, func() bool {
		log, _ := os.ReadFile(w.log)
		return strings.Contains(string(log), "behind the cluster's purged log") && witnessOnline()
	})
	if _, err := os.Stat(filepath.Join(w.dir, "data", "stale-data", "raft.state")); err != nil {
		t.Fatalf("the witness's log was not set aside: %v", err)
	}
	// Now the other data member lost: member 2 and the witness carry on.
	members[0].kill()
	insert(dbs[1], 20)
	waitFor(t, "a data member to lead", 10*time.Second, func() bool {
		l := statusValue(t, dbs[1], "Lockstep_cluster_leader")
		return l == 2
	})
	members[0].start()
	waitReady(t, members[0].db(""))

	var sums [2]string
	var gtids [2]string
	for i, db := range dbs {
		waitFor(t, "every row on the member", 20*time.Second, func() bool {
			return countRows(t, db, "SELECT COUNT(*) FROM d.t") == next
		})
		if err := db.QueryRow("SELECT CAST(SUM(v) AS CHAR) FROM d.t").Scan(&sums[i]); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT @@gtid_executed").Scan(&gtids[i]); err != nil {
			t.Fatal(err)
		}
	}
	if sums[0] != sums[1] || gtids[0] != gtids[1] {
		t.Fatalf("the data members differ: sums %v, gtid_executed %v", sums, gtids)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "store")); err == nil {
		t.Fatal("the witness made a store")
	}
}
