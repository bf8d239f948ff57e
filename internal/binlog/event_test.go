package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/shopspring/decimal"
)

var testSID = UUID{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}

var testCols = []row.Column{
	{Name: "id", Type: row.TypeLong},
	{Name: "k", Type: row.TypeLong, Unsigned: true},
	{Name: "c", Type: row.TypeString, RealType: row.TypeString, MaxBytes: 480, Collation: 255},
	{Name: "pad", Type: row.TypeVarchar, MaxBytes: 240, Collation: 255, Nullable: true},
	{Name: "amount", Type: row.TypeNewDecimal, Precision: 10, Scale: 2},
	{Name: "at", Type: row.TypeDateTime2, Fsp: 3},
	{Name: "e", Type: row.TypeString, RealType: row.TypeEnum, PackLen: 1, Elements: []string{"red", "green"}},
}

func img(t *testing.T, vals ...row.Value) []byte {
	t.Helper()
	b, err := row.AppendImage(nil, testCols, vals)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildFile returns a binlog file with one DML and one DDL transaction.
func buildFile(t *testing.T) []byte {
	t.Helper()
	ts := uint32(1700000000)
	var prev GTIDSet
	prev.AddRange(testSID, 1, 5)
	f := append([]byte(nil), FileMagic...)
	f = append(f, FormatDescription(ts, 7, false)...)
	f = append(f, PreviousGTIDs(ts, 7, uint32(len(f)+PreviousGTIDsSize(prev)), prev)...)

	at := time.Date(2026, 11, 22, 10, 30, 0, 125_000_000, time.UTC)
	tab := TableRef{ID: 42, NCols: len(testCols), Map: TableMapBody(42, "sbtest", "sbtest1", testCols, []int{0})}
	var ev TrxEvents
	ev.AddQuery("sbtest", "BEGIN", QueryOptions{})
	ev.AddRow(WriteRowsEventV2, tab, nil, img(t, int64(1), uint64(7), "hello", nil, decimal.RequireFromString("12.50"), at, uint64(2)))
	ev.AddRow(WriteRowsEventV2, tab, nil, img(t, int64(2), uint64(8), "world", "x", decimal.RequireFromString("-3.01"), at, uint64(1)))
	ev.EndStatement()
	ev.AddRow(UpdateRowsEventV2, tab,
		img(t, int64(1), uint64(7), "hello", nil, decimal.RequireFromString("12.50"), at, uint64(2)),
		img(t, int64(1), uint64(9), "hello", "y", decimal.RequireFromString("12.50"), at, uint64(2)))
	ev.AddRow(DeleteRowsEventV2, tab, img(t, int64(2), uint64(8), "world", "x", decimal.RequireFromString("-3.01"), at, uint64(1)), nil)
	ev.AddXID(99)
	ev.Close()
	g := GTIDInfo{SID: testSID, GNO: 5, LastCommitted: 3, SequenceNumber: 4, OriginalCommitUS: 1700000000123456, ImmediateCommitUS: 1700000000123456}
	out := make([]byte, 0, ev.FinalSize(false))
	f = append(f, ev.Finalize(out, uint64(len(f)), ts, 7, g)...)

	var ddl TrxEvents
	ddl.AddQuery("sbtest", "CREATE TABLE t2 (a INT PRIMARY KEY)", QueryOptions{SuppressUse: true})
	ddl.Close()
	g2 := GTIDInfo{SID: testSID, GNO: 6, LastCommitted: 4, SequenceNumber: 5, OriginalCommitUS: 1, ImmediateCommitUS: 2}
	if n := ddl.FinalSize(true); n != uint64(len(ddl.Finalize(nil, 0, ts, 7, g2))) {
		t.Fatalf("FinalSize %d disagrees with Finalize", n)
	}
	f = append(f, ddl.Finalize(make([]byte, 0, ddl.FinalSize(true)), uint64(len(f)), ts, 7, g2)...)
	return f
}

func TestDecodeWithGoMySQL(t *testing.T) {
	f := buildFile(t)
	p := replication.NewBinlogParser()
	p.SetVerifyChecksum(true)
	p.SetUseDecimal(true)
	var types []replication.EventType
	var gtids []*replication.GTIDEvent
	var rows []*replication.RowsEvent
	var queries []string
	var queryFlags []uint16
	var statusVars [][]byte
	err := p.ParseReader(bytes.NewReader(f[4:]), func(e *replication.BinlogEvent) error {
		types = append(types, e.Header.EventType)
		switch x := e.Event.(type) {
		case *replication.GTIDEvent:
			gtids = append(gtids, x)
		case *replication.RowsEvent:
			rows = append(rows, x)
		case *replication.QueryEvent:
			queries = append(queries, string(x.Query))
			queryFlags = append(queryFlags, e.Header.Flags)
			statusVars = append(statusVars, x.StatusVars)
		case *replication.PreviousGTIDsEvent:
			if x.GTIDSets != testSID.String()+":1-4" {
				return fmt.Errorf("previous gtids %q", x.GTIDSets)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []replication.EventType{
		replication.FORMAT_DESCRIPTION_EVENT, replication.PREVIOUS_GTIDS_EVENT,
		replication.GTID_EVENT, replication.QUERY_EVENT,
		replication.TABLE_MAP_EVENT, replication.WRITE_ROWS_EVENTv2,
		replication.TABLE_MAP_EVENT, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
		replication.XID_EVENT,
		replication.GTID_EVENT, replication.QUERY_EVENT,
	}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("events\n got %v\nwant %v", types, want)
	}
	if g := gtids[0]; g.GNO != 5 || g.LastCommitted != 3 || g.SequenceNumber != 4 ||
		g.ImmediateCommitTimestamp != 1700000000123456 || g.TransactionLength == 0 {
		t.Fatalf("gtid event %+v", g)
	}
	if g := gtids[1]; g.OriginalCommitTimestamp != 1 || g.ImmediateCommitTimestamp != 2 {
		t.Fatalf("gtid timestamps %+v", g)
	}
	if queries[0] != "BEGIN" || queries[1] != "CREATE TABLE t2 (a INT PRIMARY KEY)" {
		t.Fatalf("queries %q", queries)
	}
	// LOG_EVENT_SUPPRESS_USE_F only where asked for; flags2 with MariaDB's
	// explicit_defaults_for_timestamp bit first, MySQL's status variable
	// for it last.
	if queryFlags[0]&FlagSuppressUse != 0 || queryFlags[1]&FlagSuppressUse == 0 {
		t.Fatalf("query event flags %#x %#x", queryFlags[0], queryFlags[1])
	}
	for _, sv := range statusVars {
		if len(sv) < 7 || sv[0] != 0 || binary.LittleEndian.Uint32(sv[1:]) != flags2ExplicitDefaults || !bytes.HasSuffix(sv, []byte{16, 1}) {
			t.Fatalf("status variables % x", sv)
		}
	}
	tm := rows[0].Table
	if string(tm.Schema) != "sbtest" || string(tm.Table) != "sbtest1" {
		t.Fatalf("table %s.%s", tm.Schema, tm.Table)
	}
	names := tm.ColumnNameString()
	if fmt.Sprint(names) != "[id k c pad amount at e]" {
		t.Fatalf("column names %v", names)
	}
	if len(tm.PrimaryKey) != 1 || tm.PrimaryKey[0] != 0 {
		t.Fatalf("primary key %v", tm.PrimaryKey)
	}
	if got := fmt.Sprint(tm.UnsignedMap()); got != "map[0:false 1:true 4:false]" {
		t.Fatalf("signedness %s", got)
	}
	if len(rows[0].Rows) != 2 || len(rows[1].Rows) != 2 || len(rows[2].Rows) != 1 {
		t.Fatalf("row counts %d %d %d", len(rows[0].Rows), len(rows[1].Rows), len(rows[2].Rows))
	}
	r0 := rows[0].Rows[0]
	if r0[0] != int32(1) || r0[1] != uint32(7) || r0[2] != "hello" || r0[3] != nil || r0[6] != int64(2) {
		t.Fatalf("row 0 = %#v", r0)
	}
	if d, ok := r0[4].(decimal.Decimal); !ok || !d.Equal(decimal.RequireFromString("12.5")) {
		t.Fatalf("decimal = %#v", r0[4])
	}
	if d := rows[0].Rows[1][4].(decimal.Decimal); !d.Equal(decimal.RequireFromString("-3.01")) {
		t.Fatalf("negative decimal = %v", d)
	}
	if s := fmt.Sprint(r0[5]); s != "2026-11-22 10:30:00.125" {
		t.Fatalf("datetime = %q", s)
	}
	if after := rows[1].Rows[1]; after[3] != "y" || after[1] != uint32(9) {
		t.Fatalf("update after image %#v", after)
	}
	// log_pos chains: every event's log_pos is the next event's offset.
	pos := uint32(4)
	for b := f[4:]; len(b) > 0; {
		e, err := NextEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		pos += e.Size
		if e.LogPos != pos {
			t.Fatalf("event type %d log_pos %d, want %d", e.Type, e.LogPos, pos)
		}
		b = b[e.Size:]
	}
}

func TestNextEventDetectsDamage(t *testing.T) {
	f := buildFile(t)
	body := f[4:]
	e, err := NextEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NextEvent(body[:e.Size-1]); err != ErrTruncated {
		t.Fatalf("short event: %v", err)
	}
	bad := bytes.Clone(body)
	bad[30] ^= 1
	if _, err := NextEvent(bad); err != ErrChecksum {
		t.Fatalf("flipped bit: %v", err)
	}
	if _, err := NextEvent(make([]byte, 40)); err == nil {
		t.Fatal("zeroes parsed as an event")
	}
}

func TestGTIDSet(t *testing.T) {
	g, err := ParseGTIDSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9, 3e11fa47-71ca-11e1-9e33-c80aa9429562:6")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.String(); got != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9" {
		t.Fatalf("merged set %q", got)
	}
	o, _ := ParseGTIDSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:3-4")
	if got := g.Subtract(o).String(); got != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2:5-9" {
		t.Fatalf("subtract %q", got)
	}
	if !g.Contains(testSID, 9) || g.Contains(testSID, 10) {
		t.Fatal("contains")
	}
	for _, bad := range []string{"x:1", "3e11fa47-71ca-11e1-9e33-c80aa9429562:0", "3e11fa47-71ca-11e1-9e33-c80aa9429562:5-3", "3e11fa47-71ca-11e1-9e33-c80aa9429562"} {
		if _, err := ParseGTIDSet(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
	d, err := decodeGTIDSet(g.appendEncoded(nil))
	if err != nil || !d.Equal(g) {
		t.Fatalf("encoded round trip: %v %v", d, err)
	}
}

// FuzzDecodeGTIDSet: the sort-and-merge decoder of the binary GTID set form
// (peers send it in dump commands) agrees with adding each interval to a
// set one by one, and never panics.
func FuzzDecodeGTIDSet(f *testing.F) {
	var g GTIDSet
	g.AddRange(testSID, 1, 10)
	g.AddRange(testSID, 20, 30)
	g.AddRange(UUID{1}, 5, 6)
	f.Add(g.Encode())
	desc := binary.LittleEndian.AppendUint64(nil, 1)
	desc = append(desc, testSID[:]...)
	desc = binary.LittleEndian.AppendUint64(desc, 4)
	for i := uint64(4); i > 0; i-- {
		desc = binary.LittleEndian.AppendUint64(desc, 10*i)
		desc = binary.LittleEndian.AppendUint64(desc, 10*i+5)
	}
	f.Add(desc)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeGTIDSet(b)
		if err != nil {
			return
		}
		// The model: the same intervals added one at a time.
		var want GTIDSet
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		for range n {
			var u UUID
			copy(u[:], b)
			k := binary.LittleEndian.Uint64(b[16:])
			b = b[24:]
			for range k {
				want.AddRange(u, binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]))
				b = b[16:]
			}
		}
		if !got.Equal(want) {
			t.Fatalf("decoded %s, adding one by one gives %s", got, want)
		}
	})
}

// TestCascadeRowsComeFirst: a statement's cascaded changes are written
// before its own, the last made first, flagged NO_FOREIGN_KEY_CHECKS_F,
// with the statement's last event flagged STMT_END_F; a discarded
// statement drops them.
func TestCascadeRowsComeFirst(t *testing.T) {
	ts := uint32(1700000000)
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	parent := TableRef{ID: 1, NCols: len(testCols), Map: TableMapBody(1, "d", "parent", testCols, []int{0})}
	child := TableRef{ID: 2, NCols: len(testCols), Map: TableMapBody(2, "d", "child", testCols, []int{0})}
	grand := TableRef{ID: 3, NCols: len(testCols), Map: TableMapBody(3, "d", "grandchild", testCols, []int{0})}
	r := func(id int64) []byte {
		return img(t, id, uint64(0), "x", nil, decimal.RequireFromString("1"), at, uint64(1))
	}
	var ev TrxEvents
	ev.AddQuery("d", "BEGIN", QueryOptions{})
	ev.AddRow(DeleteRowsEventV2, parent, r(1), nil)
	ev.AddCascadeRow(DeleteRowsEventV2, child, r(10), nil)
	ev.AddCascadeRow(DeleteRowsEventV2, grand, r(100), nil)
	ev.AddCascadeRow(DeleteRowsEventV2, child, r(11), nil)
	ev.AddRow(DeleteRowsEventV2, parent, r(2), nil)
	ev.EndStatement()
	ev.AddRow(DeleteRowsEventV2, parent, r(3), nil)
	ev.AddCascadeRow(DeleteRowsEventV2, child, r(12), nil)
	ev.DiscardStatement()
	ev.AddXID(1)
	ev.Close()
	g := GTIDInfo{SID: testSID, GNO: 1, SequenceNumber: 1}
	body := ev.Finalize(nil, 4, ts, 7, g)
	f := append(append([]byte(nil), FileMagic...), FormatDescription(ts, 7, false)...)
	f = append(f, body...)
	p := replication.NewBinlogParser()
	p.SetUseDecimal(true)
	var got []string
	err := p.ParseReader(bytes.NewReader(f[4:]), func(e *replication.BinlogEvent) error {
		if x, ok := e.Event.(*replication.RowsEvent); ok {
			var ids []any
			for _, row := range x.Rows {
				ids = append(ids, row[0])
			}
			got = append(got, fmt.Sprintf("%s%v flags=%d", x.Table.Table, ids, x.Flags))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"child[11] flags=2", "grandchild[100] flags=2", "child[10] flags=2", "parent[1 2] flags=1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows events\n got %v\nwant %v", got, want)
	}
}

// TestQueryStatusVars: a Query event gives back the sql_mode and
// collation_server it carries (a replica reads the statement's text by
// the one, and CREATE DATABASE's default by the other).
func TestQueryStatusVars(t *testing.T) {
	var ev TrxEvents
	ev.AddQuery("d", `CREATE TABLE t (c VARCHAR(9) DEFAULT 'a\b')`, QueryOptions{SQLMode: 0x00100004, Server: 33})
	ev.Close()
	b := ev.Finalize(nil, 4, 1700000000, 7, GTIDInfo{SID: testSID, GNO: 1})
	var q Query
	for len(b) > 0 {
		e, err := NextEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		if e.Header.Type == QueryEvent {
			if q, err = ParseQuery(e.Body()); err != nil {
				t.Fatal(err)
			}
			break
		}
		b = b[e.Size:]
	}
	if q.SQLMode != 0x00100004 || q.ServerCollation != 33 || q.DB != "d" || q.Query != `CREATE TABLE t (c VARCHAR(9) DEFAULT 'a\b')` {
		t.Fatalf("%+v", q)
	}
}
