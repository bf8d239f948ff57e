package integration

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/tlscert"
	"golang.org/x/sys/unix"
)

// Network partitions, made with network namespaces: each member runs in
// a namespace of its own, joined to the others by a veth pair on a
// bridge, and talks to them over TLS on its bridge address. Clients reach
// a member on 127.0.0.1 inside its namespace (a socket opened by a thread
// that entered it), so cutting a member's link to the bridge isolates it
// from the other members and not from its clients. This needs root and
// iproute2; without them the test is skipped.

// netnsCluster is a cluster whose members run in network namespaces.
type netnsCluster struct {
	t       *testing.T
	name    string // prefix of the namespaces and links
	members []*nsMember
}

type nsMember struct {
	ns, link, addr string // namespace, its link on the bridge, cluster address
	port           int    // client port, on the namespace's loopback
	dir            string
	cmd            *exec.Cmd
	exited         chan struct{}
	db             *sql.DB
}

func runCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// startNetnsCluster starts n members, each in its own namespace, with
// TLS between them (certificates of one CA made for the test).
func startNetnsCluster(t *testing.T, n int) *netnsCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	needTool(t, "ip")
	c := &netnsCluster{t: t, name: fmt.Sprintf("ls%d", os.Getpid()%100000)}
	subnet := 200 + os.Getpid()%50
	bridge := c.name + "br"
	if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
		t.Skipf("cannot make a bridge (%v): %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	runCmd(t, "ip", "link", "set", bridge, "up")
	certs, _, err := tlscert.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := 1; i <= n; i++ {
		m := &nsMember{ns: fmt.Sprintf("%s-%d", c.name, i), link: fmt.Sprintf("%sv%d", c.name, i),
			addr: fmt.Sprintf("10.%d.0.%d:4567", subnet, i), port: 3306, dir: t.TempDir()}
		runCmd(t, "ip", "netns", "add", m.ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", m.ns).Run() })
		runCmd(t, "ip", "link", "add", m.link, "type", "veth", "peer", "name", m.link+"p")
		runCmd(t, "ip", "link", "set", m.link+"p", "netns", m.ns)
		runCmd(t, "ip", "link", "set", m.link, "master", bridge, "up")
		runCmd(t, "ip", "-n", m.ns, "addr", "add", fmt.Sprintf("10.%d.0.%d/24", subnet, i), "dev", m.link+"p")
		runCmd(t, "ip", "-n", m.ns, "link", "set", m.link+"p", "up")
		runCmd(t, "ip", "-n", m.ns, "link", "set", "lo", "up")
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
	logf, err := os.Create(filepath.Join(m.dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"netns", "exec", m.ns, binary, "serve", "--port", fmt.Sprint(m.port), "--http-port", "0",
		"--datadir", filepath.Join(m.dir, "data")}, args...)
	m.cmd = exec.Command("ip", args...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.exited = make(chan struct{})
	go func(c *exec.Cmd) { c.Wait(); logf.Close(); close(m.exited) }(m.cmd)
	t.Cleanup(func() {
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(30 * time.Second):
			m.cmd.Process.Kill()
			<-m.exited
		}
	})
	mysqldrv.RegisterDialContext(m.ns, func(ctx context.Context, addr string) (net.Conn, error) { return dialInNetns(ctx, m.ns, addr) })
	m.db, err = sql.Open("mysql", fmt.Sprintf("root@%s(127.0.0.1:%d)/", m.ns, m.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.db.Close() })
	waitFor(t, "the member in "+m.ns+" to answer", 30*time.Second, func() bool {
		select {
		case <-m.exited:
			log, _ := os.ReadFile(filepath.Join(m.dir, "server.log"))
			t.Fatalf("the member in %s exited:\n%s", m.ns, log)
		default:
		}
		return m.db.Ping() == nil
	})
}

// dialInNetns opens a TCP connection from inside network namespace ns: a
// thread enters it, makes the socket and ends with its goroutine (a
// locked thread is not reused), and the socket stays in the namespace.
func dialInNetns(ctx context.Context, ns, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, err}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// cut and heal take a member's link to the bridge down and up.
func (c *netnsCluster) cut(m *nsMember)  { runCmd(c.t, "ip", "link", "set", m.link, "down") }
func (c *netnsCluster) heal(m *nsMember) { runCmd(c.t, "ip", "link", "set", m.link, "up") }

// TestClusterNetworkPartition: the leader is cut off from the two other
// members while clients write to them. The majority elects a leader and
// goes on; the old leader leaves the primary component and refuses table
// access with 1047; when the link comes back it rejoins by itself, and
// every acknowledged write is on every member, with the same GTIDs.
func TestClusterNetworkPartition(t *testing.T) {
	c := startNetnsCluster(t, 3)
	first := c.members[0].db
	execRetry(t, first, "CREATE DATABASE d")
	execRetry(t, first, "CREATE TABLE d.t (id INT PRIMARY KEY, node INT)")
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
	var mu sync.Mutex
	acked := map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, m := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				id := w*1_000_000 + k
				if _, err := m.db.Exec("INSERT INTO d.t VALUES (?, ?)", id, w); err == nil {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				} else if n := errNumber(err); n != 1047 && n != 1213 && n != 1180 {
					t.Errorf("insert on the majority: %v", err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, "writes before the partition", 10*time.Second, func() bool { return count() >= 20 })

	c.cut(leader)
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

	c.heal(leader)
	waitReady(t, leader.db)
	waitFor(t, "writes after the partition healed", 10*time.Second, func() bool { return count() > before+50 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var gtids []string
	for _, m := range c.members {
		causalDB, err := sql.Open("mysql", fmt.Sprintf("root@%s(127.0.0.1:%d)/?wsrep_sync_wait=1", m.ns, m.port))
		if err != nil {
			t.Fatal(err)
		}
		defer causalDB.Close()
		rows, err := causalDB.Query("SELECT id FROM d.t")
		if err != nil {
			t.Fatalf("%s: %v", m.ns, err)
		}
		have := map[int]bool{}
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			have[id] = true
		}
		rows.Close()
		for id := range acked {
			if !have[id] {
				t.Fatalf("%s lost acknowledged insert %d", m.ns, id)
			}
		}
		if have[-1] {
			t.Fatalf("%s has the write refused on the cut-off member", m.ns)
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
	t.Logf("%d acknowledged inserts on every member; gtid_executed %s", len(acked), gtids[0])
}
