package storage

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/row"
)

// TestRowChangePlans prints the plans of row changes (testdata/rowchange)
// against a store held in a map, to which each planned change is then
// written, so that later changes see it. Commands:
//
//	table [keyless]: a new, empty table (id INT, u INT NULL, n INT) with
//	  a unique index on u and an index on n; primary key id unless
//	  keyless.
//	insert id,u,n / delete id,u,n / update id,u,n id,u,n: plan the
//	  change (u may be NULL) and print it.
//	rows: the keys the store holds.
//
// A plan prints its keys by name: pk(id) for a row key, row(id,u,n)#slot
// for a keyless row, img(id,u,n)#n for an image-index entry, u(u) and
// n(n;pk) for index entries; a write set names the keys it hashes.
func TestRowChangePlans(t *testing.T) {
	var s *planState
	datadriven.RunTest(t, "testdata/rowchange", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd == "table" {
			s = newPlanState(t, d.HasArg("keyless"))
			return "ok\n"
		}
		return s.run(t, d)
	})
}

type planState struct {
	tab   *Table
	data  map[string][]byte
	names map[string]string // key -> name
	known map[uint64]string // write-set hash -> name
}

func newPlanState(tb testing.TB, keyless bool) *planState {
	e, err := Open(Options{FS: vfs.NewMem(), Dir: "/s"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	def := &TableDef{ID: 7, DB: "d", Name: "t", Columns: []row.Column{
		{Name: "id", Type: row.TypeLong},
		{Name: "u", Type: row.TypeLong, Nullable: true},
		{Name: "n", Type: row.TypeLong},
	}, Indexes: []IndexDef{
		{ID: 1, Name: "u", Columns: []int{1}, Unique: true},
		{ID: 2, Name: "n", Columns: []int{2}},
	}}
	if !keyless {
		def.PK = []int{0}
	}
	return &planState{tab: e.Preview(def), data: map[string][]byte{}, names: map[string]string{}, known: map[uint64]string{}}
}

func (s *planState) get(k []byte) ([]byte, bool, error) {
	v, ok := s.data[string(k)]
	return v, ok, nil
}

func (s *planState) run(t *testing.T, d *datadriven.TestData) string {
	var c RowChange
	var err error
	switch d.Cmd {
	case "insert":
		img, vals := s.row(t, d.CmdArgs[0].Key)
		err = s.tab.PlanInsert(&c, img, vals, s.get, nil)
	case "delete", "update":
		img, vals := s.row(t, d.CmdArgs[0].Key)
		var at Located
		if at, err = s.tab.Locate(img, vals, nil, s.get, nil); err != nil || at.Key == nil {
			return fmt.Sprintf("not found (%v)\n", err)
		}
		cur, ok := s.data[string(at.Key)]
		if !ok {
			return "not found\n"
		}
		curVals, derr := s.tab.Decode(cur, nil)
		if derr != nil {
			t.Fatal(derr)
		}
		if d.Cmd == "delete" {
			err = s.tab.PlanDelete(&c, at, curVals)
		} else {
			nimg, nvals := s.row(t, d.CmdArgs[1].Key)
			err = s.tab.PlanUpdate(&c, at, cur, curVals, nimg, nvals, s.get, nil)
		}
	case "rows":
		var out []string
		for k, v := range s.data {
			out = append(out, s.name([]byte(k))+" -> "+s.value(v))
		}
		sort.Strings(out)
		return strings.Join(out, "\n") + "\n"
	default:
		t.Fatalf("unknown command %s", d.Cmd)
	}
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "key: %s\n", s.name(c.Key))
	if c.OldKey != nil {
		fmt.Fprintf(&b, "old key: %s\n", s.name(c.OldKey))
	}
	for _, k := range c.Deletes {
		fmt.Fprintf(&b, "delete %s\n", s.name(k))
	}
	for _, w := range c.Sets {
		fmt.Fprintf(&b, "set %s -> %s\n", s.name(w.Key), s.value(w.Value))
	}
	for _, a := range c.Absent {
		fmt.Fprintf(&b, "absent %s (index %d)\n", s.name(a.Key), a.Index)
	}
	var adds []string
	for _, k := range c.Adds {
		adds = append(adds, s.name(k))
	}
	fmt.Fprintf(&b, "adds: %s\n", strings.Join(adds, " "))
	var ws []string
	for _, h := range c.WriteSet {
		n, ok := s.known[h]
		if !ok {
			n = fmt.Sprintf("%016x", h)
		}
		ws = append(ws, n)
	}
	fmt.Fprintf(&b, "write set: %s\n", strings.Join(ws, " "))
	for _, k := range c.Deletes {
		delete(s.data, string(k))
	}
	for _, w := range c.Sets {
		s.data[string(w.Key)] = w.Value
	}
	return b.String()
}

// row parses id,u,n and names every key a row with those values can have.
func (s *planState) row(t testing.TB, text string) ([]byte, []row.Value) {
	parts := strings.Split(text, ",")
	if len(parts) != 3 {
		t.Fatalf("row %q: want id,u,n", text)
	}
	vals := make([]row.Value, 3)
	for i, p := range parts {
		if p == "NULL" {
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		vals[i] = v
	}
	img, err := s.tab.Encode(nil, vals)
	if err != nil {
		t.Fatal(err)
	}
	s.names[string(img)] = "(" + text + ")"
	var rowKeys [][]byte
	if s.tab.Keyless() {
		for slot := uint32(0); slot < 4; slot++ {
			rk := member(s.tab.group(kindKeyless, img), slot)
			s.learn(rk, fmt.Sprintf("row(%s)#%d", text, slot))
			s.learn(member(s.tab.group(kindImage, img), slot), fmt.Sprintf("img(%s)#%d", text, slot))
			rowKeys = append(rowKeys, rk)
		}
		s.learn(LockKey(rowKeys[0]), fmt.Sprintf("row(%s)", text))
	} else {
		rk, err := s.tab.RowKey(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		s.learn(rk, "pk("+parts[0]+")")
		rowKeys = append(rowKeys, rk)
	}
	for _, rk := range rowKeys {
		ents, err := s.tab.IndexEntries(vals, rk)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Index == 0 {
				if e.UniqueKey {
					s.learn(e.Key, "u("+parts[1]+")")
				} else {
					s.learn(e.Key, "u("+parts[1]+";"+s.name(rk)+")")
				}
			} else {
				s.learn(e.Key, "n("+parts[2]+";"+s.name(rk)+")")
			}
		}
	}
	return img, vals
}

func (s *planState) learn(k []byte, name string) {
	s.names[string(k)] = name
	s.known[KeyHash(k)] = name
}

func (s *planState) name(k []byte) string {
	if n, ok := s.names[string(k)]; ok {
		return n
	}
	return fmt.Sprintf("%x", k)
}

// value names a stored value: a row image or a row key.
func (s *planState) value(v []byte) string {
	if n, ok := s.names[string(v)]; ok {
		return n
	}
	return fmt.Sprintf("%x", v)
}

// BenchmarkPlanUpdate plans an update of a row of a table with a unique
// and a plain index, with a fresh plan each time (as a replica's decoder
// makes them) and with one plan reused (as a transaction does).
func BenchmarkPlanUpdate(b *testing.B) {
	s := newPlanState(b, false)
	img, vals := s.row(b, "1,10,5")
	nimg, nvals := s.row(b, "1,10,6")
	at, err := s.tab.Locate(img, vals, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c RowChange
			if err := s.tab.PlanUpdate(&c, at, img, vals, nimg, nvals, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var c RowChange
		for b.Loop() {
			c.Reset()
			if err := s.tab.PlanUpdate(&c, at, img, vals, nimg, nvals, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
