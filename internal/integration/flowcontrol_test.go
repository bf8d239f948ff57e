package integration

import (
	"database/sql"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// throttle makes s slow: it runs 2 ms of every 50 (SIGSTOP, SIGCONT),
// until the returned function (also run at cleanup) ends it. Its raft
// heartbeats still arrive well within an election timeout.
func (s *server) throttle(t *testing.T) (end func()) {
	t.Helper()
	p := s.cmd.Process
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer p.Signal(syscall.SIGCONT)
		for {
			p.Signal(syscall.SIGSTOP)
			select {
			case <-stop:
				return
			case <-time.After(48 * time.Millisecond):
			}
			p.Signal(syscall.SIGCONT)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	ended := false
	end = func() {
		if !ended {
			ended = true
			close(stop)
			<-done
		}
	}
	t.Cleanup(end)
	return end
}

// TestClusterFlowControl: a member that cannot apply as fast as the
// cluster commits. The member the clients write on paces its commits
// (wsrep_flow_control_recv, _paused) instead of stopping; once the slow
// member has stayed behind for --lockstep-fc-desync-after it desyncs
// itself (Donor/Desynced; with --lockstep-desynced-reads=REFUSE it
// refuses table statements with 1047) and the others stop pacing for it;
// back to full speed, it catches up, syncs again and holds every row.
// Applier threads and flow-control settings change at run time.
func TestClusterFlowControl(t *testing.T) { testFlowControl(t, "REFUSE") }

// TestClusterFlowControlWait is the same with --lockstep-desynced-reads=
// WAIT (the default): desynced, the member still answers SHOW at once (it
// waited to catch up first, and a member far behind answered its own
// status after 30 s, or with 1205), and a statement on a table waits
// instead of being refused.
func TestClusterFlowControlWait(t *testing.T) { testFlowControl(t, "WAIT") }

func testFlowControl(t *testing.T, desyncedReads string) {
	addrs := make([]string, 3)
	for i, p := range fixedPorts(t, 3) {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	var nodes []*server
	for i := range 3 {
		args := []string{"--server-id", fmt.Sprint(i + 1),
			"--wsrep-cluster-address", "gcomm://" + strings.Join(addrs, ","),
			"--wsrep-node-address", addrs[i], "--wsrep-cluster-name", "test",
			"--lockstep-cluster-tick", "20", "--lockstep-fc-desync-after", "1500",
			"--wsrep-slave-threads", fmt.Sprint(1 + 3*i)}
		if i > 0 { // the one slowed below is one of these
			args = append(args, "--lockstep-desynced-reads", desyncedReads)
		}
		nodes = append(nodes, startServer(t, t.TempDir(), args...))
	}
	dbs := make([]*sql.DB, 3)
	for i, s := range nodes {
		waitReady(t, s.db(""))
		dbs[i] = s.db("")
	}
	// Settings at run time.
	if _, err := dbs[1].Exec("SET GLOBAL wsrep_applier_threads = 8"); err != nil {
		t.Fatal(err)
	}
	if n := statusValue(t, dbs[1], "wsrep_applier_thread_count"); n != 8 {
		t.Fatalf("wsrep_applier_thread_count %d after SET GLOBAL wsrep_applier_threads = 8", n)
	}
	if _, err := dbs[0].Exec("SET GLOBAL wsrep_provider_options = 'gcs.fc_limit=24; gcs.fc_factor=0.5'"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"gcs.fc_limit=0", "socket.ssl=yes", "evs.send_window=8"} {
		if _, err := dbs[0].Exec("SET GLOBAL wsrep_provider_options = '" + bad + "'"); errNumber(err) != 1231 {
			t.Fatalf("SET GLOBAL wsrep_provider_options = '%s': %v, want 1231", bad, err)
		}
	}
	if _, err := dbs[0].Exec("SET GLOBAL wsrep_provider_options = 'gcs.fc_limit=16; gcs.fc_factor=1'"); err != nil {
		t.Fatal(err)
	}

	execRetry(t, dbs[0], "CREATE DATABASE d")
	execRetry(t, dbs[0], "CREATE TABLE d.t (id INT PRIMARY KEY, w INT, pad VARCHAR(100))")
	waitFor(t, "the table on every member", 10*time.Second, func() bool {
		for _, db := range dbs {
			if db.QueryRow("SELECT COUNT(*) FROM d.t").Scan(new(int)) != nil {
				return false
			}
		}
		return true
	})
	pools := make([]*sql.DB, 8)
	for i := range pools {
		pools[i] = nodes[0].db("")
	}
	// Each transaction inserts rowsPerTrx rows, so that applying one
	// costs the slow member more than its short running slices give it.
	const rowsPerTrx = 100
	ws := startWriters(pools, func(db *sql.DB, w, k int) (int, error) {
		id := (w*1000000 + k) * rowsPerTrx
		var q strings.Builder
		q.WriteString("INSERT INTO d.t VALUES ")
		for r := range rowsPerTrx {
			if r > 0 {
				q.WriteString(",")
			}
			fmt.Fprintf(&q, "(%d, %d, REPEAT('x', 100))", id+r, w)
		}
		_, err := db.Exec(q.String())
		return id, err
	}, func(err error) bool {
		// A conflict is what clients retry: on a starved machine even a
		// leader that is not slowed can miss heartbeats, and what its
		// change left uncommitted gets 1213 (certain: not committed).
		// Nothing else may fail.
		if errNumber(err) == 1213 {
			return true
		}
		t.Errorf("an insert on the member that paces: %v", err)
		return false
	})
	defer func() {
		select {
		case <-ws.stop:
		default:
			ws.halt()
		}
	}()
	waitFor(t, "some commits", 10*time.Second, func() bool { return ws.count() > 20 })
	// Slow a member that neither takes the writes nor leads: a leader
	// slowed would be replaced, which is not what this test is about.
	slowed := nodes[2]
	if statusValue(t, dbs[0], "Lockstep_cluster_leader") == 3 {
		slowed = nodes[1]
	}
	end := slowed.throttle(t)
	waitFor(t, "the writers' member to pace its commits", 30*time.Second, func() bool {
		return statusValue(t, dbs[0], "wsrep_flow_control_recv") > 0
	})
	slow := slowed.db("")
	// Desynced, the member refuses reads (REFUSE) and says so in its
	// status and metrics. It catches up in bursts and may sync again
	// between two looks, so a round counts only if every look in it finds
	// it desynced.
	waitFor(t, "the slow member to desync itself, refuse a read and report it", 60*time.Second, func() bool {
		began := time.Now()
		if statusOf(t, slow, "wsrep_local_state_comment") != "Donor/Desynced" || statusOf(t, slow, "wsrep_local_state") != "2" {
			return false
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("SHOW STATUS on the desynced member took %v: it waited to catch up", took)
		}
		_, err := slow.Exec("SELECT COUNT(*) FROM d.t")
		switch desyncedReads {
		case "REFUSE":
			if errNumber(err) != 1047 {
				return false
			}
		default: // WAIT: a causal read, which may time out (1205) this far behind
			if errNumber(err) == 1047 {
				t.Fatalf("the desynced member refused a read with WAIT: %v", err)
			}
		}
		return value(scrape(t, slowed), "lockstep_cluster_desynced", "") == 1
	})
	waitFor(t, "the writers' member to stop pacing", 30*time.Second, func() bool {
		return statusOf(t, dbs[0], "wsrep_flow_control_active") == "false"
	})
	if statusValue(t, slow, "wsrep_flow_control_sent") == 0 {
		t.Fatal("the slow member never asked the others to slow down")
	}
	if p := value(scrape(t, nodes[0]), "lockstep_cluster_flow_control_paused_seconds_total", ""); p <= 0 {
		t.Fatalf("lockstep_cluster_flow_control_paused_seconds_total %v on the member that paced", p)
	}
	paused, err := time.ParseDuration(statusOf(t, dbs[0], "wsrep_flow_control_paused_ns") + "ns")
	if err != nil || paused <= 0 {
		t.Fatalf("wsrep_flow_control_paused_ns %v, %v", paused, err)
	}
	end()
	ws.halt()
	waitFor(t, "the slow member to catch up and sync again", 60*time.Second, func() bool {
		return statusOf(t, slow, "wsrep_local_state_comment") == "Synced"
	})
	acked := ws.snapshot()
	for i, db := range dbs {
		var n int
		waitFor(t, "every acknowledged row on every member", 30*time.Second, func() bool {
			return db.QueryRow("SELECT COUNT(*) FROM d.t").Scan(&n) == nil && n == len(acked)*rowsPerTrx
		})
		var sum int64
		if err := db.QueryRow("SELECT CAST(SUM(id) AS SIGNED) FROM d.t").Scan(&sum); err != nil {
			t.Fatal(err)
		}
		var want int64
		for id := range acked {
			want += int64(id)*rowsPerTrx + rowsPerTrx*(rowsPerTrx-1)/2
		}
		if sum != want {
			t.Fatalf("member %d holds other rows than the %d acknowledged", i+1, len(acked))
		}
	}
	t.Logf("%d inserts; the writers' member paced for %v in all, %s of the time; deps distance %s",
		len(acked), paused, statusOf(t, dbs[0], "wsrep_flow_control_paused"), statusOf(t, dbs[1], "wsrep_cert_deps_distance"))
}
