package source

import (
	"testing"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// TestMariaDBJSONTranslation: for a MariaDB replica, a table's JSON
// columns become LONGBLOB in its Table_map and their values the
// documents' text in its rows events (before and after images alike,
// NULLs kept); the other columns pass unchanged; a damaged event is an
// error, never a panic.
func TestMariaDBJSONTranslation(t *testing.T) {
	cols := []row.Column{
		{Name: "id", Type: row.TypeLong},
		{Name: "doc", Type: row.TypeJSON, PackLen: 4, Nullable: true},
		{Name: "v", Type: row.TypeVarchar, MaxBytes: 40, Collation: 255, Nullable: true},
	}
	var m mariadbState
	tmEv := mariadbEvent(1, binlog.TableMapEvent, 1, 100, 0, binlog.TableMapBody(9, "d", "t", cols, []int{0}))
	out, err := m.translateJSON(tmEv)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := binlog.ParseTableMap(out[binlog.HeaderSize : len(out)-binlog.ChecksumSize])
	if err != nil {
		t.Fatal(err)
	}
	if tm.Types[1] != row.TypeBlob || tm.Types[0] != row.TypeLong || tm.Types[2] != row.TypeVarchar {
		t.Fatalf("translated column types %v", tm.Types)
	}
	translated, err := tm.Columns()
	if err != nil {
		t.Fatal(err)
	}
	translated[1].Collation, translated[2].Collation = 255, 255 // read back as text

	before := []row.Value{int64(1), row.JSONValue{Doc: map[string]any{"a": []any{int64(1), "x"}}}, "keep"}
	after := []row.Value{int64(1), nil, "kept"}
	body := []byte{9, 0, 0, 0, 0, 0, 0, 0, 2, 0, 3, 0x07, 0x07}
	var ends []int // where each image ends
	for _, vals := range [][]row.Value{before, after} {
		if body, err = row.AppendImage(body, cols, vals); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(body))
	}
	rowsEv := mariadbEvent(1, binlog.UpdateRowsEventV2, 1, 200, 0, body)
	out, err = m.translateJSON(rowsEv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := binlog.ParseRows(binlog.UpdateRowsEventV2, out[binlog.HeaderSize:len(out)-binlog.ChecksumSize])
	if err != nil {
		t.Fatal(err)
	}
	got1, n, err := row.DecodeImage(r.Data, translated, nil)
	if err != nil {
		t.Fatal(err)
	}
	got2, n2, err := row.DecodeImage(r.Data[n:], translated, nil)
	if err != nil || n+n2 != len(r.Data) {
		t.Fatalf("after image: %v, %d of %d bytes", err, n+n2, len(r.Data))
	}
	if doc, _ := got1[1].(string); doc != `{"a": [1, "x"]}` || got1[2] != "keep" || got2[1] != nil || got2[2] != "kept" {
		t.Fatalf("translated images %q, %q", got1, got2)
	}

	// Another table's events pass unchanged.
	other := mariadbEvent(1, binlog.WriteRowsEventV2, 1, 300, 0, []byte{8, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 5, 0, 0, 0})
	if out, err := m.translateJSON(other); err != nil || &out[0] != &other[0] {
		t.Fatalf("an event of a table without JSON columns was rewritten (%v)", err)
	}
	// A damaged image: every cut inside an image is refused.
	for cut := len(body) - 1; cut > 13; cut-- {
		if cut == ends[0] {
			continue
		}
		if _, err := m.translateJSON(mariadbEvent(1, binlog.UpdateRowsEventV2, 1, 200, 0, body[:cut])); err == nil {
			t.Fatalf("a rows event cut to %d bytes was translated", cut)
		}
	}
	// A damaged Table_map: cut anywhere, with any byte turned into a
	// length prefix, or with a length of eight bytes that wraps an int
	// put anywhere, is an error or a well-formed event, never a panic.
	tmBody := tmEv[binlog.HeaderSize : len(tmEv)-binlog.ChecksumSize]
	for cut := range len(tmBody) {
		_, _ = mariadbTableMap(mariadbEvent(1, binlog.TableMapEvent, 1, 100, 0, tmBody[:cut]))
	}
	for i := 8; i < len(tmBody); i++ {
		for _, b := range []byte{0xfc, 0xfd, 0xfe, 0xff} {
			damaged := append([]byte(nil), tmBody...)
			damaged[i] = b
			_, _ = mariadbTableMap(mariadbEvent(1, binlog.TableMapEvent, 1, 100, 0, damaged))
		}
		huge := []byte{0xfe, 0x5b, 0x1e, 0x6e, 0xd5, 0x41, 0xde, 0x30, 0xd5}
		damaged := append(append(append([]byte(nil), tmBody[:i]...), huge...), tmBody[i:]...)
		_, _ = mariadbTableMap(mariadbEvent(1, binlog.TableMapEvent, 1, 100, 0, damaged))
	}
}
