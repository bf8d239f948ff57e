package storage

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// benchRows is the number of rows of benchStore's table.
const benchRows = 200_000

func benchKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("r/"), uint64(i)) }

// benchStore is a store shaped as a loaded table is: most rows compacted
// into the bottom level, recent writes to other keys in a level-0 table
// above them (even rows below, odd rows above).
func benchStore(b *testing.B, o Options) *Engine {
	o.FS, o.Dir, o.CacheSize = vfs.NewMem(), "/s", 256<<20
	e, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	val := make([]byte, 180)
	write := func(from, step int) {
		for lo := from; lo < benchRows; lo += 1000 * step {
			bt := e.NewBatch()
			for i := lo; i < min(lo+1000*step, benchRows); i += step {
				if err := bt.Set(benchKey(i), val); err != nil {
					b.Fatal(err)
				}
			}
			if err := e.Apply([]*Batch{bt}, []binlog.Position{{File: 1, Pos: int64(lo + 1)}}, true); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := e.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	write(0, 2)
	if err := e.db.Compact(b.Context(), []byte("r/"), []byte("r0"), true); err != nil {
		b.Fatal(err)
	}
	write(1, 2)
	if m := e.db.Metrics(); m.Levels[0].TablesCount == 0 || m.Levels[6].TablesCount == 0 {
		b.Fatalf("unexpected shape:\n%s", m)
	}
	return e
}

// benchShapes are the stores the read benchmarks compare: the default,
// one without Bloom filters, and one with Pebble's default index block
// size (4 KiB, a two-level index in every table of this size).
var benchShapes = []struct {
	name string
	o    Options
}{
	{"default", Options{}},
	{"no-filters", Options{noFilters: true}},
	{"index-4KiB", Options{indexBlockSize: 4 << 10}},
}

// benchReads runs read on every store shape, from parallel goroutines.
func benchReads(b *testing.B, read func(b *testing.B, r Reader, rng *rand.Rand)) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			r := benchStore(b, sh.o).Latest()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(1, 2))
				for pb.Next() {
					read(b, r, rng)
				}
			})
		})
	}
}

// BenchmarkPointGet reads rows by key. Without filters every Get seeks
// the level-0 table's index and data blocks before it finds the row
// below; with a two-level index each table costs one more block.
func BenchmarkPointGet(b *testing.B) {
	benchReads(b, func(b *testing.B, r Reader, rng *rand.Rand) {
		if _, ok, err := r.Get(benchKey(2 * rng.IntN(benchRows/2))); err != nil || !ok {
			b.Fatal(ok, err)
		}
	})
}

// BenchmarkRangeScan reads 100 consecutive rows from a random key, as
// sysbench's range queries do: an iterator, a seek, 99 steps.
func BenchmarkRangeScan(b *testing.B) {
	benchReads(b, func(b *testing.B, r Reader, rng *rand.Rand) {
		lo := rng.IntN(benchRows - 100)
		it, err := r.NewIter(benchKey(lo), benchKey(lo+100))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != 100 {
			b.Fatal(n, err)
		}
	})
}
