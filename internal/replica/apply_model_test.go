package replica

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// TestApplierAgainstModel feeds the applier a random stream of inserts,
// updates (some moving the primary key) and deletes on a few hot keys, so
// that consecutive transactions keep changing the rows the ones behind them
// check: their rows are read ahead (prefetch) while the writers before them
// are still on their way to storage. Every worker count and mode must apply
// the stream without an error and leave exactly the model's rows and index
// entries, no more keys and no fewer. LOCKSTEP_SEED replays a run.
func TestApplierAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	for _, c := range []struct {
		workers int64
		mode    string
	}{{0, "LOGICAL_CLOCK"}, {4, "LOGICAL_CLOCK"}, {4, "WRITESET"}} {
		t.Run(fmt.Sprintf("%d-%s", c.workers, c.mode), func(t *testing.T) {
			applyModelStream(t, rand.New(rand.NewPCG(seed, uint64(c.workers))), c.workers, c.mode)
		})
	}
}

var modelCols = []row.Column{{Name: "k", Type: row.TypeLongLong}, {Name: "v", Type: row.TypeLongLong}}

// modelReplica opens an in-memory store and pipeline with table db.t (k
// BIGINT PRIMARY KEY, v BIGINT, KEY (v)) and a replica with a relay log.
func modelReplica(t *testing.T, workers int64, mode string) (*commit.Pipeline, *storage.Engine, *storage.Table, *Replica, *relayLog) {
	cfg := &commit.Config{ServerID: 2, ServerUUID: binlog.UUID{9}}
	cfg.SyncBinlog.Store(1)
	cfg.MaxBinlogSize.Store(1 << 30)
	cfg.Tracking.Store(int32(commit.WriteSet))
	cfg.HistorySize.Store(1000)
	p, s, _, _, err := commit.Open(commit.OpenOptions{FS: vfs.NewMem(), Dir: "/data", Collator: row.BinaryCollator{}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		s.Close()
	})
	for _, c := range []*storage.CatalogChange{
		{Op: "create_db", DB: &storage.DatabaseDef{Name: "db"}},
		{Op: "create_table", Table: &storage.TableDef{ID: s.NewTableID(), DB: "db", Name: "t", Columns: modelCols, PK: []int{0},
			Indexes: []storage.IndexDef{{ID: 1, Name: "v", Columns: []int{1}}}, NextIndex: 2}},
	} {
		err := p.CommitExclusive(commit.Caller{}, func() (*commit.Trx, error) {
			return commit.CatalogTrx(s, c, "db", "DDL", binlog.QueryOptions{})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tab, ok := s.Table("db", "t")
	if !ok {
		t.Fatal("table not created")
	}

	dir := t.TempDir()
	r, err := New(Options{Dir: dir, ServerID: 2, Store: s, Pipe: p, Exec: &ddlExec{pipe: p, store: s}})
	if err != nil {
		t.Fatal(err)
	}
	r.Settings.Workers.Store(workers)
	r.Settings.Type.Store(mode)
	rl, err := openRelay(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.close() })
	r.relay = rl

	return p, s, tab, r, rl
}

func applyModelStream(t *testing.T, rng *rand.Rand, workers int64, mode string) {
	p, s, tab, r, rl := modelReplica(t, workers, mode)
	// The source: a model of the table and a stream of transactions on 8
	// hot keys, each with a serial last_committed chain (WRITESET finds
	// the parallelism itself).
	model := map[int64]int64{}
	img := func(k, v int64) []byte {
		b, err := tab.Encode(nil, []row.Value{k, v})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const trxs = 3000
	for gno := uint64(1); gno <= trxs; gno++ {
		var ev binlog.TrxEvents
		ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
		for range 1 + rng.IntN(3) {
			k := int64(rng.IntN(8))
			v, present := model[k]
			switch {
			case !present:
				nv := rng.Int64N(4)
				ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, img(k, nv))
				model[k] = nv
			case rng.IntN(4) == 0:
				ev.AddRow(binlog.DeleteRowsEventV2, tab.Ref(), img(k, v), nil)
				delete(model, k)
			case rng.IntN(4) == 0:
				nk := int64(rng.IntN(8))
				if _, taken := model[nk]; taken {
					continue
				}
				ev.AddRow(binlog.UpdateRowsEventV2, tab.Ref(), img(k, v), img(nk, v))
				delete(model, k)
				model[nk] = v
			default:
				nv := rng.Int64N(4)
				ev.AddRow(binlog.UpdateRowsEventV2, tab.Ref(), img(k, v), img(k, nv))
				model[k] = nv
			}
			ev.EndStatement()
		}
		ev.AddXID(gno)
		ev.Close()
		g := binlog.GTIDInfo{SID: testUUID, GNO: gno, LastCommitted: int64(gno) - 1, SequenceNumber: int64(gno), OriginalCommitUS: 1_700_000_000_000_000}
		appendTrx(t, rl, events(t, ev.Finalize(make([]byte, ev.FinalSize(false)), 4, 1, 1, g)))
	}
	if err := rl.flush(); err != nil {
		t.Fatal(err)
	}

	a := newApplier(r, rl)
	r.sql = a
	go a.run()
	deadline := time.Now().Add(60 * time.Second)
	for {
		vis := p.GTIDVisible()
		if vis.Contains(testUUID, trxs) {
			break
		}
		r.errMu.Lock()
		code, msg := r.sqlErrno, r.sqlErr
		r.errMu.Unlock()
		if code != 0 {
			t.Fatalf("SQL thread stopped: %d %s", code, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream was not applied within 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.close()

	// Every key of the table, against the model's rows and index entries.
	want := map[string][]byte{}
	for k, v := range model {
		rk, err := tab.RowKey(nil, []row.Value{k, v})
		if err != nil {
			t.Fatal(err)
		}
		want[string(rk)] = img(k, v)
		ents, err := tab.IndexEntries([]row.Value{k, v}, rk)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			want[string(e.Key)] = e.Value
		}
	}
	it, err := s.Latest().NewIter(tab.TablePrefix(), row.PrefixEnd(tab.TablePrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var extra []string
	for it.First(); it.Valid(); it.Next() {
		w, ok := want[string(it.Key())]
		if !ok || !bytes.Equal(w, it.Value()) {
			extra = append(extra, fmt.Sprintf("%x=%x", it.Key(), it.Value()))
			continue
		}
		delete(want, string(it.Key()))
	}
	var missing []string
	for k := range want {
		missing = append(missing, fmt.Sprintf("%x", k))
	}
	sort.Strings(missing)
	if len(extra) > 0 || len(missing) > 0 {
		t.Fatalf("storage differs from the model: %d unexpected or changed keys %v, %d missing %v", len(extra), extra, len(missing), missing)
	}
}

// TestPrefetchValidity: a prefetched read is used only while nothing it
// must see can have been missing from it: not after a transaction that
// wrote the key and was not yet visible at the read has published, and not
// after one of the server's own commits (a client writing on the replica)
// became visible.
func TestPrefetchValidity(t *testing.T) {
	p, s, tab, r, rl := modelReplica(t, 0, "LOGICAL_CLOCK")
	a := newApplier(r, rl)
	key, err := tab.RowKey(nil, []row.Value{int64(1), int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	prefetch := func() *rowChange {
		j := &job{changes: []rowChange{{kind: binlog.UpdateRowsEventV2, t: tab, bkey: key}}}
		if err := a.prefetch(j); err != nil {
			t.Fatal(err)
		}
		return &j.changes[0]
	}
	c := prefetch()
	if _, found, ok := a.prefetched(c, key); !ok || found {
		t.Fatalf("fresh read of an absent row: ok %v found %v, want usable and absent", ok, found)
	}
	if _, _, ok := a.prefetched(c, append([]byte{}, tab.TablePrefix()...)); ok {
		t.Fatal("a prefetched read answered for another key")
	}

	// A replicated transaction numbered after the read's visible mark
	// publishes the key.
	a.lastWrite[a.slot(string(key))].Store(c.preVis + 1)
	if _, _, ok := a.prefetched(c, key); ok {
		t.Fatal("a read older than the key's last replicated writer was used")
	}
	a.visible.Store(c.preVis + 1)
	c = prefetch()
	if _, _, ok := a.prefetched(c, key); !ok {
		t.Fatal("a read taken after the writer was visible was refused")
	}

	// A client of the replica commits the row itself.
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	im, _ := tab.Encode(nil, []row.Value{int64(1), int64(0)})
	ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, im)
	ev.AddXID(1)
	b := s.NewBatch()
	if err := b.Set(key, im); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(&commit.Trx{Events: &ev, Batch: b}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := a.prefetched(c, key); ok {
		t.Fatal("a read older than a local commit was used")
	}
	if _, found, ok := a.prefetched(prefetch(), key); !ok || !found {
		t.Fatalf("read after the local commit: ok %v found %v, want usable and present", ok, found)
	}
}
