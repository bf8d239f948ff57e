package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// dataNode is a cluster node with a store: what a server will be.
type dataNode struct {
	id      uint64
	fs      vfs.FS
	ln      net.Listener
	addrs   map[uint64]string
	bl      *binlog.Log
	store   *storage.Engine
	applier *Applier
	tr      *Transport
	d       *Driver
	cancel  context.CancelFunc
	done    chan error
	running bool
}

func (n *dataNode) start(t *testing.T, peers []uint64) {
	t.Helper()
	bl, _, err := binlog.Open(binlog.Options{FS: n.fs, Dir: "/data", ServerID: uint32(n.id)}, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(storage.Options{FS: n.fs, Dir: "/data/store"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := raftlog.Open(raftlog.Options{FS: n.fs, Dir: "/data", ServerID: uint32(n.id)}, bl, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, applied, err := NewApplier(clusterSID, store, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.NoteApplied(applied); err != nil {
		t.Fatal(err)
	}
	node, err := NewNode(Config{ID: n.id, ElectionTicks: 10, HeartbeatTicks: 1}, l, applied, Roster{Self: n.id, Addrs: n.addrs}, len(peers) > 0)
	if err != nil {
		t.Fatal(err)
	}
	if n.ln == nil {
		if n.ln, err = net.Listen("tcp", n.addrs[n.id]); err != nil {
			t.Fatal(err)
		}
	}
	n.bl, n.store, n.applier = bl, store, a
	n.tr = NewTransport(n.id, "test", n.addrs[n.id], n.ln, n.addrs)
	n.d = NewDriver(node, n.tr, clusterSID, 10*time.Millisecond, a.Apply)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done, n.running = cancel, make(chan error, 1), true
	n.tr.Start()
	go func() { n.done <- n.d.Run(ctx) }()
}

func (n *dataNode) stop() error {
	if !n.running {
		return nil
	}
	n.running = false
	n.cancel()
	err := <-n.done
	n.tr.Close()
	n.ln = nil
	n.store.Close()
	n.bl.Close()
	return err
}

// startDataNodes starts n nodes with stores on crashable in-memory file
// systems and loopback listeners, stopped when the test ends.
func startDataNodes(t *testing.T, n int) []*dataNode {
	t.Helper()
	addrs := map[uint64]string{}
	var nodes []*dataNode
	var peers []uint64
	for id := uint64(1); id <= uint64(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[id] = ln.Addr().String()
		nodes = append(nodes, &dataNode{id: id, fs: vfs.NewCrashableMem(), ln: ln, addrs: addrs})
		peers = append(peers, id)
	}
	for _, d := range nodes {
		d.start(t, peers)
	}
	t.Cleanup(func() {
		for _, d := range nodes {
			d.stop()
		}
	})
	return nodes
}

var kv = []row.Column{{Name: "k", Type: row.TypeLongLong}, {Name: "v", Type: row.TypeLongLong}}

// ddl is a catalog change as a transaction under a placeholder GTID.
func ddl(c *storage.CatalogChange, stmt string) []byte {
	var ev binlog.TrxEvents
	ev.AddCatalog(c.Encode())
	ev.AddQuery("db", stmt, binlog.QueryOptions{})
	ev.Close()
	return ev.Finalize(nil, 4, 1, 1, binlog.GTIDInfo{SID: clusterSID})
}

// put is a transaction writing k=v into tab.
func put(t *testing.T, tab *storage.Table, k, v int64) []byte {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	img, err := tab.Encode(nil, []row.Value{k, v})
	if err != nil {
		t.Fatal(err)
	}
	ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, img)
	ev.AddXID(uint64(k))
	ev.Close()
	return ev.Finalize(nil, 4, 1, 1, binlog.GTIDInfo{SID: clusterSID})
}

func rowsOf(t *testing.T, s *storage.Engine) map[int64]int64 {
	t.Helper()
	tab, ok := s.Table("db", "kv")
	if !ok {
		return nil
	}
	it, err := s.Latest().NewIter(tab.PrimaryPrefix(), row.PrefixEnd(tab.PrimaryPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[int64]int64{}
	for it.First(); it.Valid(); it.Next() {
		vals, err := tab.Decode(it.Value(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out[vals[0].(int64)] = vals[1].(int64)
	}
	return out
}

// commitRetry commits on n, retrying while there is no leader, and, as a
// client would after 1213, when certification refused it (its snapshot
// was older than a write it conflicts with).
func commitRetry(t *testing.T, n *dataNode, keys []certify.Key, events []byte) uint64 {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gno, err := n.d.Commit(ctx, n.applier.Snapshot(), keys, append([]byte(nil), events...))
		cancel()
		if err == nil {
			return gno
		}
		if !errors.Is(err, ErrNoLeader) && !errors.Is(err, ErrNotCommitted) && !errors.Is(err, ErrConflict) {
			t.Fatalf("node %d: %v", n.id, err)
		}
	}
	t.Fatal("no commit in 20 s")
	return 0
}

// Three nodes with stores: a table created on one node and rows written
// from every node end up identical in every store; a node restarted
// (cleanly, or with its store behind after losing what it had not
// flushed) applies exactly the entries it lacks.
func TestStoresAgree(t *testing.T) {
	nodes := startDataNodes(t, 3)
	waitFor(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.d.State().Leader {
				return true
			}
		}
		return false
	})
	schema := []certify.Key{{Hash: 1}}
	commitRetry(t, nodes[0], schema, ddl(&storage.CatalogChange{Op: "create_db", DB: &storage.DatabaseDef{Name: "db"}}, "CREATE DATABASE db"))
	def := &storage.TableDef{ID: 100, DB: "db", Name: "kv", Columns: kv, PK: []int{0}}
	commitRetry(t, nodes[1], schema, ddl(&storage.CatalogChange{Op: "create_table", Table: def}, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)"))
	var tab *storage.Table
	waitFor(t, "the table on node 3", func() bool {
		var ok bool
		tab, ok = nodes[2].store.Table("db", "kv")
		return ok
	})
	want := map[int64]int64{}
	write := func(lo, hi int64) {
		for k := lo; k <= hi; k++ {
			n := nodes[int(k)%len(nodes)]
			if !n.running {
				n = nodes[0]
			}
			commitRetry(t, n, []certify.Key{{Hash: uint64(k) + 1000}, {Hash: 1, Shared: true}}, put(t, tab, k, k*k))
			want[k] = k * k
		}
	}
	same := func(what string) {
		waitFor(t, what, func() bool {
			for _, n := range nodes {
				select {
				case err := <-n.done:
					t.Fatalf("%s: node %d stopped: %v", what, n.id, err)
				default:
				}
				if got := rowsOf(t, n.store); len(got) != len(want) {
					return false
				}
			}
			return true
		})
		for _, n := range nodes {
			if got := rowsOf(t, n.store); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: node %d holds %v, want %v", what, n.id, got, want)
			}
		}
	}
	write(1, 60)
	same("every store to hold 60 rows")

	// A clean restart of node 2, while the others go on.
	if err := nodes[1].stop(); err != nil {
		t.Fatal(err)
	}
	write(61, 90)
	nodes[1].start(t, nil)
	write(91, 120)
	same("the restarted node to catch up")

	// Node 3's machine crashes: what it had not synced is gone, and its
	// store (Pebble without a WAL) is behind its log. Restarted, it
	// applies the entries after the store's position, once.
	crashed := nodes[2].fs.(*vfs.MemFS).CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := nodes[2].stop(); err != nil {
		t.Fatal(err)
	}
	nodes[2].fs = crashed
	write(121, 130)
	nodes[2].start(t, nil)
	write(131, 140)
	same("the crashed node to catch up")

	// GTIDs are the cluster's, numbered in log order, the same on every
	// node: the store's high water marks agree.
	for _, n := range nodes {
		high, err := n.store.GTIDHighWater()
		if err != nil {
			t.Fatal(err)
		}
		if high[clusterSID] != 142 {
			t.Fatalf("node %d: highest cluster GTID %d, want 142", n.id, high[clusterSID])
		}
	}
}

// A causal read on one node sees a write acknowledged on another just
// before it; without a quorum it times out instead of reading stale data.
func TestSyncWait(t *testing.T) {
	nodes := startDataNodes(t, 3)
	schema := []certify.Key{{Hash: 1}}
	waitFor(t, "a leader", func() bool { return nodes[0].d.State().Lead != 0 })
	commitRetry(t, nodes[0], schema, ddl(&storage.CatalogChange{Op: "create_db", DB: &storage.DatabaseDef{Name: "db"}}, "CREATE DATABASE db"))
	def := &storage.TableDef{ID: 100, DB: "db", Name: "kv", Columns: kv, PK: []int{0}}
	commitRetry(t, nodes[0], schema, ddl(&storage.CatalogChange{Op: "create_table", Table: def}, "CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)"))
	tab, _ := nodes[0].store.Table("db", "kv")
	for k := int64(1); k <= 30; k++ {
		writer, reader := nodes[k%3], nodes[(k+1)%3]
		commitRetry(t, writer, []certify.Key{{Hash: uint64(k) + 1000}, {Hash: 1, Shared: true}}, put(t, tab, k, k))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := reader.d.SyncWait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("sync wait on node %d: %v", reader.id, err)
		}
		if got := rowsOf(t, reader.store); got[k] != k {
			t.Fatalf("after a sync wait, node %d does not see row %d written on node %d", reader.id, k, writer.id)
		}
	}
	// Alone, a node cannot confirm what is committed: it waits, then
	// gives up.
	nodes[1].stop()
	nodes[2].stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := nodes[0].d.SyncWait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync wait without a quorum: %v", err)
	}
}
