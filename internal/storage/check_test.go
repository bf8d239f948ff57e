package storage

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// TestCheckTable: a table written through replay is consistent; an index
// entry lost, one more than the rows account for, and one pointing to
// another row are each found and named.
func TestCheckTable(t *testing.T) {
	e, tab := tableWithRows(t, []IndexDef{{ID: 1, Name: "k", Columns: []int{1}}, {ID: 2, Name: "uc", Columns: []int{2}, Unique: true}},
		[]row.Value{int64(1), int64(10), "a"}, []row.Value{int64(2), nil, "b"}, []row.Value{int64(3), int64(10), "c"})
	check := func() []string {
		t.Helper()
		p, err := CheckTable(e.Latest(), tab, 10)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := check(); len(p) != 0 {
		t.Fatalf("a consistent table: %v", p)
	}

	// Damage the indexes directly.
	k := scan(t, e, tab.IndexPrefix(0))
	uc := scan(t, e, tab.IndexPrefix(1))
	if err := e.db.Delete(k[0], pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	stray := append(append([]byte(nil), tab.IndexPrefix(0)...), 0xff, 0xfe)
	if err := e.db.Set(stray, []byte("x"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	other, _ := tab.RowKey(nil, []row.Value{int64(3), int64(10), "c"})
	if err := e.db.Set(uc[0], other, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(check(), "; ")
	for _, want := range []string{"index 'k' has no entry for row", "index 'uc' has the entry of row 1 pointing to another row",
		"index 'k' has an entry for a row that does not exist", "index 'uc' has an entry that its row's values do not make"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
	if p, _ := CheckTable(e.Latest(), tab, 1); len(p) != 1 {
		t.Errorf("the limit: %d problems", len(p))
	}
}

// TestChecksumTable: the same rows give the same checksum whatever order
// they were written in; one value changed gives another.
func TestChecksumTable(t *testing.T) {
	sum := func(rows ...[]row.Value) uint64 {
		e, tab := tableWithRows(t, nil, rows...)
		v, err := ChecksumTable(e.Latest(), tab)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b := []row.Value{int64(1), int64(10), "a"}, []row.Value{int64(2), nil, "b"}
	if x, y := sum(a, b), sum(b, a); x != y || x == 0 {
		t.Fatalf("the same rows: %d and %d", x, y)
	}
	if x, y := sum(a, b), sum(a, []row.Value{int64(2), nil, "c"}); x == y {
		t.Fatalf("different rows, one checksum %d", x)
	}
}

// tableWithRows is a store with table d.t (cols, with indexes) holding
// rows, written through replay.
func tableWithRows(t *testing.T, indexes []IndexDef, rows ...[]row.Value) (*Engine, *Table) {
	t.Helper()
	e := open(t)
	if err := catalog(t, e, &CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	def := &TableDef{ID: e.NewTableID(), DB: "d", Name: "t", Columns: cols, PK: []int{0}, Indexes: indexes}
	if err := catalog(t, e, &CatalogChange{Op: "create_table", Table: def}); err != nil {
		t.Fatal(err)
	}
	tab, _ := e.Table("d", "t")
	b := e.NewBatch()
	if err := e.ApplyRowEvent(b, ownWrites{}, binlog.WriteRowsEventV2, rowsEvent(t, tab, binlog.WriteRowsEventV2, rows...)); err != nil {
		t.Fatal(err)
	}
	if err := e.Apply([]*Batch{b}, []binlog.Position{{File: 1, Pos: 200}}, true); err != nil {
		t.Fatal(err)
	}
	return e, tab
}
