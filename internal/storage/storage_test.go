package storage

import (
	"errors"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

var cols = []row.Column{
	{Name: "id", Type: row.TypeLong},
	{Name: "k", Type: row.TypeLong, Nullable: true},
	{Name: "c", Type: row.TypeVarchar, MaxBytes: 40, Collation: 255},
}

func open(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Options{FS: vfs.NewMem(), Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func catalog(t *testing.T, e *Engine, c *CatalogChange) error {
	t.Helper()
	b := e.NewBatch()
	if err := e.PrepareCatalog(b, c); err != nil {
		b.Close()
		return err
	}
	if err := e.Apply([]*Batch{b}, []binlog.Position{{File: 1, Pos: 100}}, true); err != nil {
		return err
	}
	e.PublishCatalog(c)
	return nil
}

// rowsEvent builds the body of a *_rows event the way the binlog holds it
// and parses it back, so the test goes through the replay path.
func rowsEvent(t *testing.T, tab *Table, typ byte, images ...[]row.Value) binlog.Rows {
	t.Helper()
	var ev binlog.TrxEvents
	for i := 0; i < len(images); i++ {
		var before, after []byte
		enc := func(v []row.Value) []byte {
			b, err := tab.Encode(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		switch typ {
		case binlog.WriteRowsEventV2:
			after = enc(images[i])
		case binlog.DeleteRowsEventV2:
			before = enc(images[i])
		case binlog.UpdateRowsEventV2:
			before, after = enc(images[i]), enc(images[i+1])
			i++
		}
		ev.AddRow(typ, tab.Ref(), before, after)
	}
	ev.Close()
	data := ev.Finalize(nil, 4, 0, 1, binlog.GTIDInfo{})
	var rows binlog.Rows
	for b := data; len(b) > 0; {
		e, err := binlog.NextEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == typ {
			r, err := binlog.ParseRows(typ, e.Body())
			if err != nil {
				t.Fatal(err)
			}
			rows = r
		}
		b = b[e.Size:]
	}
	return rows
}

func scan(t *testing.T, e *Engine, prefix []byte) [][]byte {
	t.Helper()
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: row.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][]byte
	for it.First(); it.Valid(); it.Next() {
		out = append(out, append([]byte(nil), it.Key()...))
	}
	return out
}

func TestReplayMaintainsIndexes(t *testing.T) {
	e := open(t)
	if err := catalog(t, e, &CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	def := &TableDef{ID: e.NewTableID(), DB: "d", Name: "t", Columns: cols, PK: []int{0},
		Indexes: []IndexDef{{ID: 1, Name: "k", Columns: []int{1}}, {ID: 2, Name: "uc", Columns: []int{2}, Unique: true}}}
	if err := catalog(t, e, &CatalogChange{Op: "create_table", Table: def}); err != nil {
		t.Fatal(err)
	}
	tab, _ := e.Table("D", "T")
	apply := func(typ byte, images ...[]row.Value) {
		b := e.NewBatch()
		if err := e.ApplyRowEvent(b, ownWrites{}, typ, rowsEvent(t, tab, typ, images...)); err != nil {
			t.Fatal(err)
		}
		if err := e.Apply([]*Batch{b}, []binlog.Position{{File: 1, Pos: 200}}, true); err != nil {
			t.Fatal(err)
		}
	}
	apply(binlog.WriteRowsEventV2, []row.Value{int64(1), int64(10), "a"}, []row.Value{int64(2), nil, "b"}, []row.Value{int64(3), int64(10), "c"})
	apply(binlog.UpdateRowsEventV2, []row.Value{int64(1), int64(10), "a"}, []row.Value{int64(1), int64(20), "z"})
	apply(binlog.DeleteRowsEventV2, []row.Value{int64(3), int64(10), "c"})

	if n := len(scan(t, e, tab.PrimaryPrefix())); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	// Index k must hold exactly (NULL,2) and (20,1); index uc exactly b, z.
	want := func(ix int, rows ...[]row.Value) {
		t.Helper()
		var exp []string
		for _, r := range rows {
			k, _ := tab.RowKey(nil, r)
			ents, err := tab.IndexEntries(r, k)
			if err != nil {
				t.Fatal(err)
			}
			exp = append(exp, string(ents[ix].Key))
		}
		sort.Strings(exp)
		var got []string
		for _, k := range scan(t, e, tab.IndexPrefix(ix)) {
			got = append(got, string(k))
		}
		if len(got) != len(exp) {
			t.Fatalf("index %d has %d entries, want %d", ix, len(got), len(exp))
		}
		for i := range got {
			if got[i] != exp[i] {
				t.Fatalf("index %d entry %d differs", ix, i)
			}
		}
	}
	want(0, []row.Value{int64(2), nil, "b"}, []row.Value{int64(1), int64(20), "z"})
	want(1, []row.Value{int64(2), nil, "b"}, []row.Value{int64(1), int64(20), "z"})

	// A unique index over duplicate values is refused with 1062's error.
	apply(binlog.WriteRowsEventV2, []row.Value{int64(4), int64(20), "y"})
	nd := *tab.Def
	nd.Indexes = append(append([]IndexDef(nil), nd.Indexes...), IndexDef{ID: 3, Name: "uk", Columns: []int{1}, Unique: true})
	err := catalog(t, e, &CatalogChange{Op: "add_index", TableID: nd.ID, Table: &nd, Index: &nd.Indexes[2]})
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) {
		t.Fatalf("adding a unique index over duplicates: %v", err)
	}
	// A non-unique one builds an entry per row.
	nd.Indexes[2].Unique = false
	if err := catalog(t, e, &CatalogChange{Op: "add_index", TableID: nd.ID, Table: &nd, Index: &nd.Indexes[2]}); err != nil {
		t.Fatal(err)
	}
	tab, _ = e.Table("d", "t")
	if n := len(scan(t, e, tab.IndexPrefix(2))); n != 3 {
		t.Fatalf("built index has %d entries, want 3", n)
	}
	if got := e.Applied(); got != (binlog.Position{File: 1, Pos: 100}) {
		t.Fatalf("applied position %v", got)
	}
}

// Apply merges runs of small batches into one commit and commits large ones
// alone; every write lands, in order, and each commit records the position
// its last batch reaches.
func TestApplyMergesSmallBatches(t *testing.T) {
	e := open(t)
	big := make([]byte, mergeBatchMax)
	var batches []*Batch
	var ends []binlog.Position
	add := func(k string, v []byte) {
		b := e.NewBatch()
		if err := b.Set([]byte(k), v); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		ends = append(ends, binlog.Position{File: 1, Pos: int64(100 * len(ends))})
	}
	add("\x02a", []byte("1"))
	add("\x02a", []byte("2")) // a later write of the same key wins
	add("\x02b", big)
	add("\x02c", []byte("3"))
	add("\x02a", []byte("4"))
	if err := e.Apply(batches, ends, true); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int{"\x02a": 1, "\x02b": len(big), "\x02c": 1} {
		v, ok, err := get(e.db, []byte(k))
		if err != nil || !ok || len(v) != want {
			t.Fatalf("%q: %d bytes, %v %v", k, len(v), ok, err)
		}
	}
	if v, _, _ := get(e.db, []byte("\x02a")); string(v) != "4" {
		t.Fatalf("a = %q, want the last write", v)
	}
	if e.Applied() != ends[len(ends)-1] {
		t.Fatalf("applied %v", e.Applied())
	}
	if v, _, _ := get(e.db, metaAppliedKey); len(v) != 17 || v[15] != byte(ends[4].Pos) || v[16] != 0 {
		t.Fatalf("recorded position %x", v)
	}
	if err := e.Apply(batches[:1], ends, true); err == nil {
		t.Fatal("Apply with mismatched positions succeeded")
	}
}

// count finds a free member of a group in O(log n) probes, with or
// without gaps.
func TestCountMembers(t *testing.T) {
	for _, tc := range []struct {
		present []uint32
		want    uint32
	}{
		{nil, 0}, {[]uint32{0}, 1}, {[]uint32{0, 1, 2}, 3}, {[]uint32{1}, 0}, {[]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8}, 9},
	} {
		set := map[string]bool{}
		group := []byte("g")
		for _, n := range tc.present {
			set[string(member(group, n))] = true
		}
		probes := 0
		got, err := count(group, func(k []byte) ([]byte, bool, error) {
			probes++
			return nil, set[string(k)], nil
		})
		if err != nil || got != tc.want || probes > 12 {
			t.Fatalf("present %v: count %d (want %d) in %d probes, %v", tc.present, got, tc.want, probes, err)
		}
	}
	// With gaps it returns a free member whose predecessor exists.
	set := map[string]bool{}
	for _, n := range []uint32{0, 1, 3, 4, 5} {
		set[string(member([]byte("g"), n))] = true
	}
	got, _ := count([]byte("g"), func(k []byte) ([]byte, bool, error) { return nil, set[string(k)], nil })
	if set[string(member([]byte("g"), got))] || !set[string(member([]byte("g"), got-1))] {
		t.Fatalf("gapped: %d", got)
	}
}
