package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"go.etcd.io/raft/v3/raftpb"
)

// running is one node of a cluster over real TCP on loopback.
type running struct {
	id      uint64
	bl      *binlog.Log
	tr      *Transport
	d       *Driver
	cancel  context.CancelFunc
	done    chan error
	stopped bool

	mu      sync.Mutex
	applied []uint64 // GTID numbers of applied transactions, in order
}

func (r *running) gnos() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.applied...)
}

func (r *running) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	<-r.done
	r.tr.Close()
	r.bl.Close()
}

func startCluster(t *testing.T, n int) []*running {
	t.Helper()
	lns := map[uint64]net.Listener{}
	addrs := map[uint64]string{}
	var peers []uint64
	for id := uint64(1); id <= uint64(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id], addrs[id] = ln, ln.Addr().String()
		peers = append(peers, id)
	}
	var nodes []*running
	for _, id := range peers {
		fs := vfs.NewMem()
		bl, _, err := binlog.Open(binlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, binlog.GTIDSet{}, binlog.Position{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := raftlog.Open(raftlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, bl, 0)
		if err != nil {
			t.Fatal(err)
		}
		node, err := NewNode(Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1}, l, 0, peers)
		if err != nil {
			t.Fatal(err)
		}
		r := &running{id: id, bl: bl, done: make(chan error, 1)}
		r.tr = NewTransport(id, "test", lns[id], addrs)
		r.d = NewDriver(node, r.tr, 10*time.Millisecond, func(es []raftpb.Entry) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, e := range es {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					if gno, err := gnoOf(e.Data); err == nil {
						r.applied = append(r.applied, gno)
					}
				}
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.tr.Start()
		go func() { r.done <- r.d.Run(ctx) }()
		nodes = append(nodes, r)
	}
	t.Cleanup(func() {
		for _, r := range nodes {
			r.stop()
		}
	})
	return nodes
}

// waitFor polls cond for at most 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func leaderOf(nodes []*running) *running {
	for _, r := range nodes {
		if r.d.State().Leader {
			return r
		}
	}
	return nil
}

// propose proposes transactions lo..hi on whichever node leads,
// retrying while there is none.
func propose(t *testing.T, nodes []*running, lo, hi uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for g := lo; g <= hi; {
		if time.Now().After(deadline) {
			t.Fatalf("could not propose transaction %d in 20 s", g)
		}
		l := leaderOf(nodes)
		if l == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if err := l.d.Propose(context.Background(), testTrx(g)); err == nil {
			g++
		}
	}
}

// Three nodes over TCP elect a leader and apply the same transactions in
// the same order; when the leader is killed, the two others elect another
// and go on.
func TestClusterOverTCP(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	propose(t, nodes, 1, 200)
	waitFor(t, "every node to apply 200 transactions", func() bool {
		for _, r := range nodes {
			if len(r.gnos()) < 200 {
				return false
			}
		}
		return true
	})
	for _, r := range nodes[1:] {
		if !equal(r.gnos(), nodes[0].gnos()) {
			t.Fatalf("node %d applied %v, node 1 %v", r.id, r.gnos(), nodes[0].gnos())
		}
	}

	old := leaderOf(nodes)
	killed := time.Now()
	old.stop()
	var rest []*running
	for _, r := range nodes {
		if r != old {
			rest = append(rest, r)
		}
	}
	propose(t, rest, 201, 201)
	waitFor(t, "a transaction committed after the leader died", func() bool {
		g := rest[0].gnos()
		return len(g) > 0 && g[len(g)-1] == 201
	})
	t.Logf("writes resumed %v after the leader was killed", time.Since(killed).Round(time.Millisecond))
	propose(t, rest, 202, 300)
	waitFor(t, "both survivors to apply 300 transactions", func() bool {
		return len(rest[0].gnos()) >= 300 && len(rest[1].gnos()) >= 300
	})
	if !equal(rest[0].gnos(), rest[1].gnos()) {
		t.Fatal("the survivors applied different sequences")
	}
	for i, g := range rest[0].gnos() {
		if g != uint64(i+1) {
			t.Fatalf("applied transaction %d is GTID %d", i+1, g)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
