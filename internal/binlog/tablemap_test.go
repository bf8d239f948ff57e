package binlog

import (
	"testing"

	"github.com/lockstepdb/lockstep/internal/row"
)

// TestTableMapColumns: the columns read back from a Table_map have the
// sizes, precisions and pack lengths of those it was written from, for
// every type Lockstep writes.
func TestTableMapColumns(t *testing.T) {
	cols := []row.Column{
		{Name: "ti", Type: row.TypeTiny}, {Name: "sm", Type: row.TypeShort}, {Name: "m", Type: row.TypeInt24},
		{Name: "i", Type: row.TypeLong, Unsigned: true}, {Name: "bi", Type: row.TypeLongLong},
		{Name: "f", Type: row.TypeFloat}, {Name: "d", Type: row.TypeDouble},
		{Name: "dec", Type: row.TypeNewDecimal, Precision: 20, Scale: 5},
		{Name: "vc", Type: row.TypeVarchar, MaxBytes: 400, Collation: 255},
		{Name: "vc1", Type: row.TypeVarchar, MaxBytes: 20, Collation: 63},
		{Name: "c", Type: row.TypeString, RealType: row.TypeString, MaxBytes: 480, Collation: 255},
		{Name: "c1", Type: row.TypeString, RealType: row.TypeString, MaxBytes: 40, Collation: 255},
		{Name: "c2", Type: row.TypeString, RealType: row.TypeString, MaxBytes: 1020, Collation: 255},
		{Name: "t", Type: row.TypeBlob, PackLen: 2, Collation: 255}, {Name: "lb", Type: row.TypeBlob, PackLen: 4, Collation: 63},
		{Name: "dt", Type: row.TypeDate}, {Name: "dt2", Type: row.TypeDateTime2, Fsp: 6},
		{Name: "ts", Type: row.TypeTimestamp2, Fsp: 3}, {Name: "tm", Type: row.TypeTime2, Fsp: 2}, {Name: "y", Type: row.TypeYear},
		{Name: "e", Type: row.TypeString, RealType: row.TypeEnum, PackLen: 2, Elements: []string{"a"}},
		{Name: "s", Type: row.TypeString, RealType: row.TypeSet, PackLen: 1, Elements: []string{"x"}},
		{Name: "b12", Type: row.TypeBit, Precision: 12}, {Name: "b64", Type: row.TypeBit, Precision: 64},
		{Name: "j", Type: row.TypeJSON, PackLen: 4},
		{Name: "g", Type: row.TypeGeometry, PackLen: 4, Geometry: row.GeometryLineString},
	}
	m, err := ParseTableMap(TableMapBody(7, "d", "t", cols, []int{0}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Columns()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		g := got[i]
		if g.Type != c.Type || g.Precision != c.Precision || g.Scale != c.Scale || g.MaxBytes != c.MaxBytes ||
			g.PackLen != c.PackLen || g.Fsp != c.Fsp || c.RealType != 0 && g.RealType != c.RealType {
			t.Errorf("column %s: read back as %+v", c.Name, g)
		}
	}
	m.Types = append([]byte(nil), m.Types...)
	m.Types[0] = row.TypeTinyBlob
	if _, err := m.Columns(); err == nil {
		t.Error("a type Lockstep does not write was read")
	}
	m.Types[0], m.Meta = row.TypeTiny, m.Meta[:3]
	if _, err := m.Columns(); err == nil {
		t.Error("short metadata was read")
	}
}
