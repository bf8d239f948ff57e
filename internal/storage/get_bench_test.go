package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// BenchmarkPointGet reads rows by key from a store shaped as a loaded
// table is: most rows compacted into the bottom level, recent writes to
// other keys in a level-0 table above them. Without filters every Get
// seeks the level-0 table's index and data blocks before it finds the
// row below.
func BenchmarkPointGet(b *testing.B) {
	for _, filters := range []bool{true, false} {
		b.Run(fmt.Sprintf("filters=%v", filters), func(b *testing.B) {
			e, err := Open(Options{FS: vfs.NewMem(), Dir: "/s", CacheSize: 256 << 20, noFilters: !filters})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			const rows = 200_000
			key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte("r/"), uint64(i)) }
			val := make([]byte, 180)
			write := func(from, step int) {
				for lo := from; lo < rows; lo += 1000 * step {
					bt := e.NewBatch()
					for i := lo; i < min(lo+1000*step, rows); i += step {
						if err := bt.Set(key(i), val); err != nil {
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
			write(0, 2) // even rows
			if err := e.db.Compact(b.Context(), []byte("r/"), []byte("r0"), true); err != nil {
				b.Fatal(err)
			}
			write(1, 2) // odd rows, in level 0 over them
			if m := e.db.Metrics(); m.Levels[0].TablesCount == 0 || m.Levels[6].TablesCount == 0 {
				b.Fatalf("unexpected shape:\n%s", m)
			}
			r := e.Latest()
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for range b.N {
				if _, ok, err := r.Get(key(2 * rng.IntN(rows/2))); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
