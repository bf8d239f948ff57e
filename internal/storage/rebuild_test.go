package storage

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// keys lists every key under p.
func keys(t *testing.T, e *Engine, p []byte) []string {
	t.Helper()
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: row.PrefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.First(); it.Valid(); it.Next() {
		out = append(out, string(it.Key()))
	}
	return out
}

func getter(e *Engine) Getter {
	return func(k []byte) ([]byte, bool, error) {
		var out []byte
		ok, err := view(e.db, k, func(v []byte) error {
			out = append([]byte(nil), v...)
			return nil
		})
		return out, ok, err
	}
}

// TestChunkedRebuilds: index builds and table rewrites of more data than a
// chunk are written in chunks under a range nothing names until the DDL's
// batch publishes it; the result equals a build from scratch, a failing
// rebuild leaves nothing behind, and chunks a crash left under an id or an
// index are cleared before the id or index is used.
func TestChunkedRebuilds(t *testing.T) {
	defer func(n int) { chunkBytes = n }(chunkBytes)
	chunkBytes = 64 << 10
	for _, keyless := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyless=%v", keyless), func(t *testing.T) {
			e := open(t)
			if err := catalog(t, e, &CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
				t.Fatal(err)
			}
			tcols := append([]row.Column(nil), cols...)
			tcols[2].Nullable = true
			def := &TableDef{ID: e.NewTableID(), DB: "d", Name: "t", Columns: tcols, PK: []int{0}, NextIndex: 1}
			if keyless {
				def.PK = nil
			}
			// Garbage a crashed rebuild could have left under the id.
			stale := e.newTable(def)
			if err := e.db.Set(append(append([]byte(nil), stale.prefix...), kindPrimary, 9), []byte("stale"), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if err := catalog(t, e, &CatalogChange{Op: "create_table", Table: def}); err != nil {
				t.Fatal(err)
			}
			if got := keys(t, e, stale.prefix); len(got) != 0 {
				t.Fatalf("create_table kept %d stale keys under its id", len(got))
			}
			tab, _ := e.Table("d", "t")
			// Some 20 chunks' worth of rows; k repeats every 5000 rows,
			// so duplicates fall into different chunks.
			const n = 20000
			pad := strings.Repeat("x", 36)
			b := e.NewBatch()
			for i := range n {
				vals := []row.Value{int64(i), int64(i % 5000), []byte(pad)}
				img, err := tab.Encode(nil, vals)
				if err != nil {
					t.Fatal(err)
				}
				var k []byte
				if keyless {
					var entry []byte
					var err error
					k, entry, err = tab.KeylessInsert(img, getter(e), nil)
					if err != nil {
						t.Fatal(err)
					}
					// Distinct images: slot 0, entry 0.
					if err := b.Set(entry, k); err != nil {
						t.Fatal(err)
					}
				} else {
					k, _ = tab.RowKey(nil, vals)
				}
				if err := b.Set(k, img); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Apply([]*Batch{b}, []binlog.Position{{File: 1, Pos: 200}}, true); err != nil {
				t.Fatal(err)
			}

			// A UNIQUE index over duplicates fails, and leaves nothing.
			ud := *tab.Def
			ud.Indexes = []IndexDef{{ID: 1, Name: "u", Columns: []int{1}, Unique: true}}
			ud.NextIndex = 2
			var dup *DuplicateKeyError
			if err := catalog(t, e, &CatalogChange{Op: "add_index", TableID: ud.ID, Table: &ud, Index: &ud.Indexes[0]}); !errors.As(err, &dup) {
				t.Fatalf("unique index over duplicates: %v", err)
			}
			if got := keys(t, e, e.newTable(&ud).IndexPrefix(0)); len(got) != 0 {
				t.Fatalf("a failed index build left %d entries", len(got))
			}
			// A plain index over the same column.
			kd := ud
			kd.Indexes = []IndexDef{{ID: 1, Name: "k", Columns: []int{1}}}
			if err := catalog(t, e, &CatalogChange{Op: "add_index", TableID: kd.ID, Table: &kd, Index: &kd.Indexes[0]}); err != nil {
				t.Fatal(err)
			}
			tab, _ = e.Table("d", "t")
			if got := len(keys(t, e, tab.IndexPrefix(0))); got != n {
				t.Fatalf("index has %d entries, want %d", got, n)
			}

			// A rewrite that fails on its last rows (NULL into a column
			// made NOT NULL) leaves the table as it was and nothing under
			// the new id.
			nn := *tab.Def
			nn.ID = e.NewTableID()
			nn.Columns = append([]row.Column(nil), tcols...)
			nn.Columns[2].Nullable = false
			nullVals := []row.Value{int64(n), int64(1), nil}
			nullImg, err := tab.Encode(nil, nullVals)
			if err != nil {
				t.Fatal(err)
			}
			nb := e.NewBatch()
			var nk []byte
			if keyless {
				var entry []byte
				var err error
				if nk, entry, err = tab.KeylessInsert(nullImg, getter(e), nil); err != nil {
					t.Fatal(err)
				}
				if err := nb.Set(entry, nk); err != nil {
					t.Fatal(err)
				}
			} else {
				nk, _ = tab.RowKey(nil, nullVals)
			}
			if err := nb.Set(nk, nullImg); err != nil {
				t.Fatal(err)
			}
			ents, _ := tab.IndexEntries(nullVals, nk)
			if err := nb.Set(ents[0].Key, ents[0].Value); err != nil {
				t.Fatal(err)
			}
			if err := e.Apply([]*Batch{nb}, []binlog.Position{{File: 1, Pos: 300}}, true); err != nil {
				t.Fatal(err)
			}
			fill, _ := FillImage(e.newTable(&nn), make([]row.Value, 3))
			var nv *NullValueError
			if err := catalog(t, e, &CatalogChange{Op: "rewrite_table", TableID: tab.Def.ID, Table: &nn, Sources: []int{0, 1, 2}, Fill: fill}); !errors.As(err, &nv) {
				t.Fatalf("rewrite with a NULL into NOT NULL: %v", err)
			}
			if got := keys(t, e, e.newTable(&nn).prefix); len(got) != 0 {
				t.Fatalf("a failed rewrite left %d keys under the new id", len(got))
			}
			if cur, _ := e.Table("d", "t"); cur != tab {
				t.Fatal("a failed rewrite changed the catalog")
			}
			// Take the row out again, as a DELETE would.
			db := e.NewBatch()
			for _, k := range [][]byte{nk, ents[0].Key} {
				if err := db.Delete(k); err != nil {
					t.Fatal(err)
				}
			}
			if keyless {
				if err := db.Delete(member(tab.group(kindImage, nullImg), 0)); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Apply([]*Batch{db}, []binlog.Position{{File: 1, Pos: 400}}, true); err != nil {
				t.Fatal(err)
			}

			// A rewrite that adds a column: every row and index entry
			// moves to the new id, the old id's range is empty.
			ad := *tab.Def
			ad.ID = e.NewTableID()
			ad.Columns = append(append([]row.Column(nil), tcols...), row.Column{Name: "z", Type: row.TypeLong, Nullable: true})
			at := e.newTable(&ad)
			fill, _ = FillImage(at, []row.Value{nil, nil, nil, int64(7)})
			if err := catalog(t, e, &CatalogChange{Op: "rewrite_table", TableID: tab.Def.ID, Table: &ad, Sources: []int{0, 1, 2, -1}, Fill: fill}); err != nil {
				t.Fatal(err)
			}
			if got := keys(t, e, tab.prefix); len(got) != 0 {
				t.Fatalf("%d keys left under the old id", len(got))
			}
			if _, ok := e.TableByID(tab.Def.ID); ok {
				t.Fatal("the old id is still in the catalog")
			}
			nt, _ := e.Table("d", "t")
			if nt.Def.ID != ad.ID {
				t.Fatalf("table id %d, want %d", nt.Def.ID, ad.ID)
			}
			rows := 0
			it, _ := e.db.NewIter(&pebble.IterOptions{LowerBound: nt.rowPfx, UpperBound: row.PrefixEnd(nt.rowPfx)})
			for it.First(); it.Valid(); it.Next() {
				vals, err := nt.Decode(it.Value(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if vals[3] != int64(7) || vals[1] != vals[0].(int64)%5000 {
					t.Fatalf("row %v", vals)
				}
				rows++
			}
			it.Close()
			if rows != n {
				t.Fatalf("%d rows after the rewrite, want %d", rows, n)
			}
			if got := len(keys(t, e, nt.IndexPrefix(0))); got != n {
				t.Fatalf("index has %d entries after the rewrite, want %d", got, n)
			}
			if keyless {
				ip := append(append([]byte(nil), nt.prefix...), kindImage)
				if got := len(keys(t, e, ip)); got != n {
					t.Fatalf("image index has %d entries after the rewrite, want %d", got, n)
				}
			}

			// A rewrite_table logged before rewrites took a new id (the
			// same id for both) is replayed in place.
			dd := *nt.Def
			dd.Columns = tcols
			fill, _ = FillImage(e.newTable(&dd), make([]row.Value, 3))
			if err := catalog(t, e, &CatalogChange{Op: "rewrite_table", TableID: dd.ID, Table: &dd, Sources: []int{0, 1, 2}, Fill: fill}); err != nil {
				t.Fatal(err)
			}
			it, _ = e.db.NewIter(&pebble.IterOptions{LowerBound: nt.prefix, UpperBound: row.PrefixEnd(nt.prefix)})
			total := 0
			for it.First(); it.Valid(); it.Next() {
				total++
			}
			it.Close()
			want := 2 * n // rows and index entries
			if keyless {
				want = 5 * n // and image and sequence entries
			}
			if total != want {
				t.Fatalf("%d keys after an in-place rewrite, want %d", total, want)
			}
			dt, _ := e.Table("d", "t")
			if len(dt.Def.Columns) != 3 || dt.Def.ID != nt.Def.ID {
				t.Fatalf("in-place rewrite: %d columns, id %d", len(dt.Def.Columns), dt.Def.ID)
			}
		})
	}
}
