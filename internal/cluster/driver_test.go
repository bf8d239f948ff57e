package cluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
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
	for id := uint64(1); id <= uint64(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id], addrs[id] = ln, ln.Addr().String()
	}
	var nodes []*running
	for id := uint64(1); id <= uint64(n); id++ {
		nodes = append(nodes, startNode(t, lns[id], Roster{Self: id, Addrs: addrs}, true))
	}
	return nodes
}

// startNode starts node roster.Self on an empty log, listening on ln;
// bootstrap as NewNode's. The test's end stops it.
func startNode(t *testing.T, ln net.Listener, roster Roster, bootstrap bool) *running {
	t.Helper()
	id := roster.Self
	fs := vfs.NewMem()
	bl, _, err := binlog.Open(binlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := raftlog.Open(raftlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, bl, 0)
	if err != nil {
		t.Fatal(err)
	}
	node, err := NewNode(Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1}, l, 0, roster, bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{id: id, bl: bl, done: make(chan error, 1)}
	r.tr = NewTransport(id, "test", ln.Addr().String(), ln, roster.Addrs)
	r.d = NewDriver(node, r.tr, clusterSID, 10*time.Millisecond, func(es []raftpb.Entry) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range es {
			if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
				if gno, err := gnoOf(e.Data); err == nil {
					r.applied = append(r.applied, gno)
				}
			}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.tr.Start()
	go func() { r.done <- r.d.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
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

// lastGNO is the GTID number of the last transaction r applied: the
// snapshot of a transaction that starts on r now.
func (r *running) lastGNO() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.applied) == 0 {
		return 0
	}
	return r.applied[len(r.applied)-1]
}

// commitOn commits n transactions, each writing its own key, from node
// origins in turn, retrying while there is no leader; it returns the GTID
// numbers they got.
func commitOn(t *testing.T, origins []*running, n int, key func(i int) uint64) []uint64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var gnos []uint64
	for i := 0; i < n; {
		if time.Now().After(deadline) {
			t.Fatalf("could not commit transaction %d in 20 s", i)
		}
		r := origins[i%len(origins)]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gno, err := r.d.Commit(ctx, r.lastGNO(), []certify.Key{{Hash: key(i)}}, pending(r.id))
		cancel()
		switch {
		case err == nil:
			gnos = append(gnos, gno)
			i++
		case errors.Is(err, ErrNoLeader), errors.Is(err, ErrNotCommitted):
			time.Sleep(5 * time.Millisecond)
		default:
			t.Fatalf("node %d: %v", r.id, err)
		}
	}
	return gnos
}

// Three nodes over TCP elect a leader and commit transactions from every
// node, which all apply in the same order; when the leader is killed, the
// two others elect another and go on.
func TestClusterOverTCP(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	own := func(i int) uint64 { return uint64(i) }
	commitOn(t, nodes, 200, own)
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
	commitOn(t, rest[:1], 1, func(int) uint64 { return 1000 })
	t.Logf("writes resumed %v after the leader was killed", time.Since(killed).Round(time.Millisecond))
	commitOn(t, rest, 99, func(i int) uint64 { return uint64(2000 + i) })
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

// Two nodes write the same row from the same snapshot at once: exactly one
// commits, the other gets ErrConflict, whichever nodes they run on.
func TestClusterConflictAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	commitOn(t, nodes, 3, func(i int) uint64 { return uint64(i) })
	waitFor(t, "every node to apply 3 transactions", func() bool {
		for _, r := range nodes {
			if len(r.gnos()) < 3 {
				return false
			}
		}
		return true
	})
	for round := 0; round < 20; round++ {
		snap := nodes[0].lastGNO()
		errs := make(chan error, 2)
		for _, r := range nodes[1:] {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := r.d.Commit(ctx, snap, []certify.Key{{Hash: 7}}, pending(r.id))
				errs <- err
			}()
		}
		e1, e2 := <-errs, <-errs
		ok, conflicts := 0, 0
		for _, err := range []error{e1, e2} {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 || conflicts != 1 {
			t.Fatalf("round %d: %d committed and %d conflicted, want one each", round, ok, conflicts)
		}
		waitFor(t, "node 1 to apply the round", func() bool { return nodes[0].lastGNO() > snap })
	}
}

// A fourth node joins a running cluster with an empty log: it is added as
// a learner, sent the whole log, promoted to voter once caught up, and
// then counts in the quorum: with one of the first three stopped, the
// cluster still commits, and every node applied the same sequence.
func TestClusterJoin(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	commitOn(t, nodes, 150, func(i int) uint64 { return uint64(i) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, r := range nodes {
		seeds = append(seeds, r.tr.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A node not among the seeds cannot start a cluster of its own.
	place, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: ln.Addr().String(), Seeds: seeds})
	if err != nil || place.Start || place.LogStart != 1 {
		t.Fatalf("Discover: %v, %+v", err, place)
	}
	roster := place.Roster
	if roster.Self != 4 || len(roster.Addrs) != 4 || roster.Addrs[4] != ln.Addr().String() {
		t.Fatalf("the joiner's roster: %+v", roster)
	}
	// Asking again gives the same id: the address is a member now.
	if again, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: ln.Addr().String(), Seeds: seeds}); err != nil || again.Roster.Self != 4 {
		t.Fatalf("Discover again: %+v %v", again, err)
	}
	joiner := startNode(t, ln, roster, false)
	waitFor(t, "the joiner to become a voter everywhere", func() bool {
		for _, r := range append(nodes, joiner) {
			if v, l := r.d.Config(); len(v) != 4 || len(l) != 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, "the joiner to apply the log", func() bool { return len(joiner.gnos()) >= 150 })
	commitOn(t, []*running{joiner}, 20, func(i int) uint64 { return uint64(1000 + i) })

	// Four voters: stopping one leaves a quorum of three.
	nodes[1].stop()
	rest := []*running{nodes[0], nodes[2], joiner}
	commitOn(t, rest, 30, func(i int) uint64 { return uint64(2000 + i) })
	waitFor(t, "the three to apply 200 transactions", func() bool {
		for _, r := range rest {
			if len(r.gnos()) < 200 {
				return false
			}
		}
		return true
	})
	for _, r := range rest {
		if !equal(r.gnos()[:200], rest[0].gnos()[:200]) {
			t.Fatalf("node %d applied another sequence", r.id)
		}
	}
	ms := joiner.d.Members()
	if len(ms) != 4 || !ms[3].Self || ms[3].ID != 4 {
		t.Fatalf("the joiner's members: %+v", ms)
	}

	// The stopped member is removed (asked on a follower or the leader
	// alike): three voters again, so the cluster commits with one more
	// of them stopped.
	if err := joiner.d.Remove(ctx, "127.0.0.1:1"); err == nil {
		t.Fatal("removing an address that is no member succeeded")
	}
	if err := joiner.d.Remove(ctx, nodes[1].tr.addr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three voters everywhere", func() bool {
		for _, r := range rest {
			if v, _ := r.d.Config(); len(v) != 3 {
				return false
			}
		}
		return true
	})
	if ms := nodes[0].d.Members(); len(ms) != 3 {
		t.Fatalf("members after the removal: %+v", ms)
	}
	victim := leaderOf(rest)
	if victim == nil {
		victim = rest[0]
	}
	victim.stop()
	var left []*running
	for _, r := range rest {
		if r != victim {
			left = append(left, r)
		}
	}
	commitOn(t, left, 20, func(i int) uint64 { return uint64(3000 + i) })
}

// A joiner that replaces the leader: it is added as a learner, then one
// change promotes it and removes the leader through a joint
// configuration, which the leader leaves by itself. The old leader's
// driver then stops (ErrRemoved), the three left elect a leader and go
// on, and no node ever saw a configuration of more than three voters
// once it had left the joint one. A node that is not a voter cannot be
// replaced, and a joiner that asks to is refused for good.
func TestClusterReplaceLeader(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	commitOn(t, nodes, 50, func(i int) uint64 { return uint64(i) })
	old := leaderOf(nodes)
	var seeds []string
	for _, r := range nodes {
		seeds = append(seeds, r.tr.addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: ln.Addr().String(), Seeds: seeds, Replaces: "127.0.0.1:1"}); err == nil {
		t.Fatal("a joiner replacing an address that is no member was added")
	}
	place, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: ln.Addr().String(), Seeds: seeds, Replaces: old.tr.addr})
	if err != nil {
		t.Fatal(err)
	}
	if want := old.id; place.Roster.Replacing[place.Roster.Self] != want {
		t.Fatalf("the joiner's roster: %+v, want it replacing %d", place.Roster, want)
	}
	joiner := startNode(t, ln, place.Roster, false)
	select {
	case err := <-old.done:
		old.done <- err // for stop
		if !errors.Is(err, ErrRemoved) {
			t.Fatalf("the replaced leader stopped with %v, want ErrRemoved", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replaced leader was not removed in 20 s")
	}
	var rest []*running
	for _, r := range append(nodes, joiner) {
		if r != old {
			rest = append(rest, r)
		}
	}
	waitFor(t, "three voters everywhere, the joiner among them", func() bool {
		for _, r := range rest {
			v, l := r.d.Config()
			if len(v) != 3 || len(l) != 0 || !slices.Contains(v, joiner.id) || slices.Contains(v, old.id) {
				return false
			}
		}
		return true
	})
	commitOn(t, rest, 30, func(i int) uint64 { return uint64(1000 + i) })
	waitFor(t, "the three to apply 80 transactions", func() bool {
		for _, r := range rest {
			if len(r.gnos()) < 80 {
				return false
			}
		}
		return true
	})
	for _, r := range rest {
		if !equal(r.gnos()[:80], rest[0].gnos()[:80]) {
			t.Fatalf("node %d applied another sequence", r.id)
		}
	}
	// The removed leader is no voter: nothing replaces it.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	var live []string
	for _, r := range rest {
		live = append(live, r.tr.addr)
	}
	if _, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: ln2.Addr().String(), Seeds: live, Replaces: old.tr.addr}); err == nil {
		t.Fatal("a joiner replacing a removed member was added")
	}
}

// A member that held entries and comes back at the same address with an
// empty log (its data lost) does not get its id back: that id may have
// voted in a term its new log knows nothing of. The leader retires it and
// the node joins under a new id, as a learner, then a voter.
func TestClusterRejoinWithoutLog(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	commitOn(t, nodes, 50, func(i int) uint64 { return uint64(i) })
	// A follower loses its data.
	var victim *running
	var others []*running
	for _, r := range nodes {
		if victim == nil && r != leaderOf(nodes) {
			victim = r
		} else {
			others = append(others, r)
		}
	}
	waitFor(t, "the follower to apply", func() bool { return len(victim.gnos()) >= 50 })
	addr, oldID := victim.tr.addr, victim.id
	victim.stop()
	var seeds []string
	for _, r := range others {
		seeds = append(seeds, r.tr.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	place, err := Discover(ctx, DiscoverConfig{Cluster: "test", Addr: addr, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	if place.Roster.Self == oldID || !slices.Contains(place.Roster.Removed, oldID) {
		t.Fatalf("the wiped member %d came back as %d (removed %v), want a new id with %d retired", oldID, place.Roster.Self, place.Roster.Removed, oldID)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	back := startNode(t, ln, place.Roster, false)
	rest := append(others, back)
	waitFor(t, "three voters with the new id", func() bool {
		for _, r := range rest {
			if v, l := r.d.Config(); len(v) != 3 || len(l) != 0 || !slices.Contains(v, place.Roster.Self) {
				return false
			}
		}
		return true
	})
	commitOn(t, []*running{back}, 10, func(i int) uint64 { return uint64(100 + i) })
	waitFor(t, "the member to apply everything", func() bool { return len(back.gnos()) >= 60 })
}
