package commit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

var blobCols = []row.Column{{Name: "k", Type: row.TypeLongLong}, {Name: "b", Type: row.TypeBlob, PackLen: 3, Collation: row.CollationBinary}}

// BenchmarkPipeline measures commit throughput of the pipeline alone (real
// files, sync_binlog=0 so the OS absorbs writes) with binlog_parallel_flush
// on and off, for small and large transactions and many committers.
//
//	go test ./internal/commit -run - -bench Pipeline -benchtime 2s
func BenchmarkPipeline(b *testing.B) {
	for _, size := range []int{200, 4 << 10, 64 << 10} {
		for _, committers := range []int{4, 64} {
			for _, parallel := range []bool{false, true} {
				name := fmt.Sprintf("row=%dB/committers=%d/parallel=%v", size, committers, parallel)
				b.Run(name, func(b *testing.B) { benchPipeline(b, size, committers, parallel) })
			}
		}
	}
}

func benchPipeline(b *testing.B, size, committers int, parallel bool) {
	cfg := newConfig(0, parallel, 1<<30)
	cfg.FlushLogAtTrxCommit.Store(2)
	p, s, _, _, err := Open(OpenOptions{FS: vfs.Default, Dir: b.TempDir(), Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { p.Close(); s.Close() }()
	c := &storage.CatalogChange{Op: "create_table", Table: &storage.TableDef{ID: s.NewTableID(), DB: "db", Name: "t", Columns: blobCols, PK: []int{0}}}
	if err := p.CommitExclusive(Caller{}, func() (*Trx, error) {
		return CatalogTrx(s, c, "db", "DDL", binlog.QueryOptions{})
	}); err != nil {
		b.Fatal(err)
	}
	tab, _ := s.Table("db", "t")
	payload := make([]byte, size)
	var next atomic.Int64
	b.SetBytes(int64(size))
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/committers + 1
	for range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				k := next.Add(1)
				img, _ := tab.Encode(nil, []row.Value{k, payload})
				key, _ := tab.RowKey(nil, []row.Value{k, payload})
				var ev binlog.TrxEvents
				ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
				ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, img)
				ev.AddXID(uint64(k))
				bt := s.NewBatch()
				bt.Set(key, img)
				if err := p.Commit(&Trx{Events: &ev, Batch: bt, WriteSet: []uint64{uint64(k)}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRecoveryReplay measures how fast a restart after kill -9
// replays the binlog into the store: 20,000 one-row transactions
// committed (durable), a crash image keeping what was synced (the
// store's memtable, without a WAL, is lost), and Open on it, which
// replays all of them. Each op is one Open; trx/s is the replay rate.
//
//	go test ./internal/commit -run - -bench RecoveryReplay -benchtime 5x
func BenchmarkRecoveryReplay(b *testing.B) {
	const n = 20000
	fs := vfs.NewCrashableMem()
	p, s, _ := openAt(b, fs, newConfig(1, true, 1<<30))
	tab := createTable(b, p, s)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := put(p, s, tab, map[int64]int64{int64(i): int64(i)}, nil); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	image := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	p.Close()
	s.Close()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		crashed := image.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		b.StartTimer()
		p, s, rec := openAt(b, crashed, newConfig(1, true, 1<<30))
		b.StopTimer()
		if rec.Replayed < n {
			b.Fatalf("replayed %d transactions, want at least %d", rec.Replayed, n)
		}
		p.Close()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "trx/s")
}
