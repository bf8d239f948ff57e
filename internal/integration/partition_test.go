package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/launch"
	"github.com/lockstepdb/lockstep/internal/netns"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// Network partitions, made with network namespaces (package netns):
// each member runs in a namespace of its own on a bridge and talks to the
// others over TLS on its bridge address; clients reach a member on
// 127.0.0.1 inside its namespace, so cutting a member's link isolates it
// from the other members and not from its clients. Skipped without root.

// netnsCluster is a cluster whose members run in network namespaces.
type netnsCluster struct {
	t       *testing.T
	members []*nsMember
}

type nsMember struct {
	host   *netns.Host
	addr   string // cluster address
	port   int    // client port, on the namespace's loopback
	dir    string
	proc   *launch.Process
	exited <-chan struct{}
	db     *sql.DB
}

// startNetnsCluster starts n members, each in its own namespace, with
// TLS between them (certificates of one CA made for the test).
func startNetnsCluster(t *testing.T, n int) *netnsCluster {
	t.Helper()
	nw, err := netns.New(fmt.Sprintf("ls%d", os.Getpid()%10000), n)
	if errors.Is(err, netns.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nw.Close)
	certs, _, err := tlscert.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &netnsCluster{t: t}
	var addrs []string
	for _, h := range nw.Hosts {
		m := &nsMember{host: h, addr: h.IP + ":4567", port: 3306, dir: t.TempDir()}
		c.members = append(c.members, m)
		addrs = append(addrs, m.addr)
	}
	for i, m := range c.members {
		m.start(t, "--server-id", fmt.Sprint(i+1),
			"--wsrep-cluster-address", "gcomm://"+strings.Join(addrs, ","),
			"--wsrep-node-address", m.addr, "--wsrep-cluster-name", "partitioned",
			"--wsrep-ssl-mode", "SERVER", "--ssl-cert", certs.Cert, "--ssl-key", certs.Key, "--ssl-ca", certs.CA,
			"--lockstep-cluster-tick", "20")
	}
	for _, m := range c.members {
		waitReady(t, m.db)
	}
	return c
}

// start runs the member's server in its namespace and opens a pool that
// reaches it there.
func (m *nsMember) start(t *testing.T, args ...string) {
	t.Helper()
	p, err := launch.Start(m.host.Command(binary, launch.Lockstep{DataDir: filepath.Join(m.dir, "data"), Port: m.port, Extra: args}.Args()...),
		filepath.Join(m.dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	m.proc, m.exited = p, p.Exited()
	t.Cleanup(func() { p.Stop(30 * time.Second) })
	mysqldrv.RegisterDialContext(m.host.NS, m.host.Dial)
	m.db, err = sql.Open("mysql", fmt.Sprintf("root@%s(127.0.0.1:%d)/", m.host.NS, m.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.db.Close() })
	waitFor(t, "the member in "+m.host.NS+" to answer", 30*time.Second, func() bool {
		select {
		case <-m.exited:
			log, _ := os.ReadFile(filepath.Join(m.dir, "server.log"))
			t.Fatalf("the member in %s exited:\n%s", m.host.NS, log)
		default:
		}
		return m.db.Ping() == nil
	})
}

// TestClusterNetworkPartition: the leader is cut off from the two other
// members while clients write to them. The majority elects a leader and
// goes on; the old leader leaves the primary component and refuses table
// access with 1047; when the link comes back it rejoins by itself, serves
// no read before it has caught up, and every acknowledged write is on
// every member, with the same GTIDs.
func TestClusterNetworkPartition(t *testing.T) {
	c := startNetnsCluster(t, 3)
	first := c.members[0].db
	execRetry(t, first, "CREATE DATABASE d")
	execRetry(t, first, "CREATE TABLE d.t (id INT PRIMARY KEY, node INT)")
	// Every member has the table before the writers start (a member may
	// not have applied the CREATE TABLE yet when it is acknowledged).
	for _, m := range c.members {
		waitFor(t, "the table on "+m.host.NS, 30*time.Second, func() bool {
			_, err := m.db.Exec("SELECT COUNT(*) FROM d.t")
			return err == nil
		})
	}
	var leader *nsMember
	var others []*nsMember
	lead := statusOf(t, first, "Lockstep_cluster_leader")
	for i, m := range c.members {
		if fmt.Sprint(i+1) == lead {
			leader = m
		} else {
			others = append(others, m)
		}
	}
	if leader == nil {
		t.Fatalf("no leader (%q)", lead)
	}

	// Writers on the majority's members, acknowledged ids kept.
	var majority []*sql.DB
	for _, m := range others {
		majority = append(majority, m.db)
	}
	ws := startWriters(majority, func(db *sql.DB, w, k int) (int, error) {
		time.Sleep(5 * time.Millisecond)
		id := w*1_000_000 + k
		_, err := db.Exec("INSERT INTO d.t VALUES (?, ?)", id, w)
		return id, err
	}, func(err error) bool {
		if n := errNumber(err); n != 1047 && n != 1213 && n != 1180 {
			t.Errorf("insert on the majority: %v", err)
			return false
		}
		return true
	})
	count := ws.count
	waitFor(t, "writes before the partition", 10*time.Second, func() bool { return count() >= 20 })

	leader.host.Cut()
	cut := time.Now()
	before := count()
	waitFor(t, "the majority to commit again", 30*time.Second, func() bool { return count() > before+5 })
	t.Logf("writes went on %v after the leader was cut off", time.Since(cut).Round(10*time.Millisecond))
	waitFor(t, "the old leader to leave the primary component", 30*time.Second, func() bool {
		return statusOf(t, leader.db, "wsrep_cluster_status") == "non-Primary"
	})
	if _, err := leader.db.Exec("SELECT * FROM d.t"); errNumber(err) != 1047 {
		t.Fatalf("a read on the cut-off member: %v, want 1047", err)
	}
	if _, err := leader.db.Exec("INSERT INTO d.t VALUES (-1, -1)"); errNumber(err) != 1047 {
		t.Fatalf("a write on the cut-off member: %v, want 1047", err)
	}
	time.Sleep(500 * time.Millisecond)

	// Back with the majority, the old leader serves reads again only once
	// it has caught up: its first plain read (no causal wait) that is not
	// refused sees every insert acknowledged before the link came back.
	ackedBefore := ws.snapshot()
	leader.host.Heal()
	healed := time.Now()
	waitFor(t, "the old leader to serve reads again", 30*time.Second, func() bool {
		have, err := queryIDs(leader.db, "SELECT id FROM d.t")
		if errNumber(err) == 1047 {
			return false
		}
		if err != nil {
			t.Fatalf("a read on the rejoining member: %v", err)
		}
		for id := range ackedBefore {
			if !have[id] {
				t.Fatalf("the rejoining member served a read missing insert %d, acknowledged before it rejoined", id)
			}
		}
		return true
	})
	t.Logf("the old leader served reads again %v after the link came back", time.Since(healed).Round(10*time.Millisecond))
	waitReady(t, leader.db)
	waitFor(t, "writes after the partition healed", 10*time.Second, func() bool { return count() > before+50 })
	ws.halt()

	var gtids []string
	for _, m := range c.members {
		causalDB, err := sql.Open("mysql", fmt.Sprintf("root@%s(127.0.0.1:%d)/?wsrep_sync_wait=1", m.host.NS, m.port))
		if err != nil {
			t.Fatal(err)
		}
		defer causalDB.Close()
		have := idSet(t, causalDB, "SELECT id FROM d.t")
		for id := range ws.acked {
			if !have[id] {
				t.Fatalf("%s lost acknowledged insert %d", m.host.NS, id)
			}
		}
		if have[-1] {
			t.Fatalf("%s has the write refused on the cut-off member", m.host.NS)
		}
		var g string
		if err := causalDB.QueryRow("SELECT @@gtid_executed").Scan(&g); err != nil {
			t.Fatal(err)
		}
		gtids = append(gtids, g)
	}
	if gtids[0] != gtids[1] || gtids[1] != gtids[2] {
		t.Fatalf("gtid_executed differs: %q", gtids)
	}
	t.Logf("%d acknowledged inserts on every member; gtid_executed %s", len(ws.acked), gtids[0])
}
