package storage

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// TestInsertionOrder drives a table without a primary key through batches
// and prints its rows in insertion order (testdata/order). Commands:
//
//	apply: each input line is one batch, all of them one Apply (a merged
//	  run); ops: +v inserts a row with id v, -v deletes it, v>w updates
//	  it, =v writes it again as a new row (SetNew: a transaction that
//	  deleted and reinserted it).
//	reopen: close and open the store (the counters restart from it).
//	unorder: make the store one written before the sequence index (no
//	  entries, no mark) and open it.
//	rewrite: rewrite the table under a new id (ALTER TABLE).
//
// Every command prints the ids in insertion order, after checking that
// each row has exactly one sequence entry and each entry names a row.
func TestInsertionOrder(t *testing.T) {
	datadriven.RunTest(t, "testdata/order", func(t *testing.T, d *datadriven.TestData) string {
		return orderCase.run(t, d)
	})
}

type orderState struct {
	fs *vfs.MemFS
	e  *Engine
}

var orderCase = &orderState{}

func (s *orderState) table(t *testing.T) *Table {
	tab, ok := s.e.Table("d", "t")
	if !ok {
		t.Fatal("no table")
	}
	return tab
}

func (s *orderState) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "new":
		if s.e != nil {
			s.e.Close()
		}
		s.fs = vfs.NewMem()
		s.open(t)
		if err := catalog(t, s.e, &CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
			t.Fatal(err)
		}
		def := &TableDef{ID: s.e.NewTableID(), DB: "d", Name: "t", Columns: cols}
		if err := catalog(t, s.e, &CatalogChange{Op: "create_table", Table: def}); err != nil {
			t.Fatal(err)
		}
		return "ok\n"
	case "apply":
		tab := s.table(t)
		var batches []*Batch
		var ends []binlog.Position
		for _, line := range strings.Split(d.Input, "\n") {
			b := s.e.NewBatch()
			own := ownWrites{}
			for _, op := range strings.Fields(line) {
				if err := s.op(t, b, own, tab, op); err != nil {
					return "error: " + err.Error()
				}
			}
			batches = append(batches, b)
			ends = append(ends, binlog.Position{File: 1, Pos: int64(1000 + len(ends))})
		}
		if err := s.e.Apply(batches, ends, true); err != nil {
			return "error: " + err.Error()
		}
	case "reopen":
		s.e.Close()
		s.open(t)
	case "unorder":
		tab := s.table(t)
		for _, kind := range []byte{kindSeq, kindSeqOf} {
			p := append(append([]byte(nil), tab.prefix...), kind)
			if err := s.e.db.DeleteRange(p, row.PrefixEnd(p), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.e.db.Delete([]byte("\x00meta/"+orderedMeta), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		s.e.Close()
		s.open(t)
	case "rewrite":
		tab := s.table(t)
		nd := *tab.Def
		nd.ID = s.e.NewTableID()
		fill, err := FillImage(s.e.Preview(&nd), make([]row.Value, len(nd.Columns)))
		if err != nil {
			t.Fatal(err)
		}
		if err := catalog(t, s.e, &CatalogChange{Op: "rewrite_table", TableID: tab.Def.ID, Table: &nd, Sources: []int{0, 1, 2}, Fill: fill}); err != nil {
			return "error: " + err.Error()
		}
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return s.order(t)
}

func (s *orderState) open(t *testing.T) {
	e, err := Open(Options{FS: s.fs, Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	s.e = e
}

func orderRow(v int64) []row.Value { return []row.Value{v, nil, "x"} }

func (s *orderState) op(t *testing.T, b *Batch, own ownWrites, tab *Table, op string) error {
	enc := func(s string) ([]byte, []row.Value) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad op %q", op)
		}
		vals := orderRow(v)
		img, err := tab.Encode(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		return img, vals
	}
	switch {
	case op[0] == '+':
		img, vals := enc(op[1:])
		return s.e.putRow(b, own, &RowChange{}, tab, img, vals)
	case op[0] == '-':
		img, vals := enc(op[1:])
		return s.e.deleteRow(b, own, &RowChange{}, tab, img, vals)
	case op[0] == '=':
		img, _ := enc(op[1:])
		k, _, err := tab.KeylessFind(img, nil, s.e.getter(own), nil)
		if err != nil || k == nil {
			return fmt.Errorf("row %s not found (%v)", op[1:], err)
		}
		return b.SetNew(k, img)
	case strings.Contains(op, ">"):
		from, to, _ := strings.Cut(op, ">")
		bimg, bvals := enc(from)
		aimg, avals := enc(to)
		return s.e.updateRow(b, own, &RowChange{}, tab, bimg, bvals, aimg, avals)
	}
	t.Fatalf("bad op %q", op)
	return nil
}

// order lists the table's ids in insertion order, checking the sequence
// index against the rows.
func (s *orderState) order(t *testing.T) string {
	tab := s.table(t)
	lo, hi, ok := InsertionOrder(tab.PrimaryPrefix(), row.PrefixEnd(tab.PrimaryPrefix()))
	if !ok {
		t.Fatal("no insertion order for a keyless table")
	}
	r := s.e.Latest()
	it, err := r.NewIter(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	named := map[string]bool{}
	for it.First(); it.Valid(); it.Next() {
		seq := binary.BigEndian.Uint64(it.Key()[10:])
		rk := append([]byte(nil), it.Value()...)
		if named[string(rk)] {
			t.Fatalf("two sequence entries name one row")
		}
		named[string(rk)] = true
		v, ok, err := r.Get(seqOfKey(rk))
		if err != nil || !ok || binary.BigEndian.Uint64(v) != seq {
			t.Fatalf("row's own sequence entry: %x %v %v, want %d", v, ok, err, seq)
		}
		img, ok, err := r.Get(rk)
		if err != nil || !ok {
			t.Fatalf("sequence entry %d names no row (%v)", seq, err)
		}
		vals, err := tab.Decode(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals[0]))
	}
	if rows := len(scan(t, s.e, tab.PrimaryPrefix())); rows != len(named) {
		t.Fatalf("%d rows, %d in the sequence index", rows, len(named))
	}
	if ofs := len(scan(t, s.e, append(append([]byte(nil), tab.prefix...), kindSeqOf))); ofs != len(named) {
		t.Fatalf("%d reverse sequence entries for %d rows", ofs, len(named))
	}
	return strings.Join(out, " ") + "\n"
}
