package source

// JSON columns for MariaDB replicas. MariaDB has no JSON type: its JSON is
// LONGTEXT holding the document's text (with a json_valid CHECK, which is
// what a MariaDB replica makes of Lockstep's CREATE TABLE). A MariaDB
// replica given MySQL's JSON column type (245) in a Table_map stops with
// "unknown field type". So, for a table with JSON columns:
//
//   - its Table_map says LONGBLOB (type 252, pack length 4) for each JSON
//     column, and loses its optional metadata (column names, charsets:
//     binlog_row_metadata=MINIMAL), which would otherwise list no charset
//     for a column that is now a string;
//   - in its rows events, each JSON value is replaced by its text as MySQL
//     prints it (row.AppendJSONText), a 4-byte length first, as MariaDB
//     writes a LONGTEXT.
//
// The rest of each image is copied unchanged. Events of other tables pass
// as they are.

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// translateJSON returns ev as a MariaDB replica must get it: a Table_map
// or rows event of a table with JSON columns rewritten, any other event
// unchanged.
func (m *mariadbState) translateJSON(ev []byte) ([]byte, error) {
	typ := ev[4]
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	if typ == binlog.TableMapEvent {
		tm, err := binlog.ParseTableMap(body)
		if err != nil {
			return nil, err
		}
		delete(m.jsonMaps, tm.TableID)
		if !hasJSON(tm.Types) {
			return ev, nil
		}
		cols, err := tm.Columns()
		if err != nil {
			return nil, err
		}
		if m.jsonMaps == nil {
			m.jsonMaps = map[uint64][]row.Column{}
		}
		m.jsonMaps[tm.TableID] = cols
		return mariadbTableMap(ev)
	}
	if _, ok := binlog.RowsKind(typ); !ok || len(body) < 6 {
		return ev, nil
	}
	var id uint64
	for i := range 6 {
		id |= uint64(body[i]) << (8 * i)
	}
	cols := m.jsonMaps[id]
	if cols == nil {
		return ev, nil
	}
	return mariadbRows(ev, cols)
}

func hasJSON(types []byte) bool {
	for _, t := range types {
		if t == row.TypeJSON {
			return true
		}
	}
	return false
}

// mariadbTableMap rewrites a Table_map event: JSON columns become
// LONGBLOB, and the optional metadata after the null bitmap is dropped.
func mariadbTableMap(ev []byte) ([]byte, error) {
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	p := 8
	for range 2 { // the database's and the table's names
		if p >= len(body) {
			return nil, fmt.Errorf("short Table_map")
		}
		p += 1 + int(body[p]) + 1
	}
	if p > len(body) {
		return nil, fmt.Errorf("short Table_map")
	}
	n, k, err := binlog.ReadPackedInt(body[p:])
	if err != nil {
		return nil, err
	}
	p += k
	types := p
	if n > 4096 || n > uint64(len(body)-p) {
		return nil, fmt.Errorf("a Table_map of %d columns", n)
	}
	p += int(n)
	ml, k, err := binlog.ReadPackedInt(body[p:])
	if err != nil {
		return nil, err
	}
	p += k
	if ml > uint64(len(body)-p) {
		return nil, fmt.Errorf("short Table_map")
	}
	p += int(ml) + (int(n)+7)/8
	if p > len(body) {
		return nil, fmt.Errorf("short Table_map")
	}
	out := make([]byte, 0, binlog.HeaderSize+p+binlog.ChecksumSize)
	out = append(out, ev[:binlog.HeaderSize+p]...)
	for i := range int(n) {
		if at := binlog.HeaderSize + types + i; out[at] == row.TypeJSON {
			out[at] = row.TypeBlob
		}
	}
	return sealed(out), nil
}

// mariadbRows rewrites the JSON values of a rows event's images as text.
func mariadbRows(ev []byte, cols []row.Column) ([]byte, error) {
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	r, err := binlog.ParseRows(ev[4], body)
	if err != nil {
		return nil, err
	}
	if r.NCols != len(cols) {
		return nil, fmt.Errorf("rows event of %d columns for a table map of %d", r.NCols, len(cols))
	}
	out := make([]byte, 0, len(ev)+len(ev)/2)
	out = append(out, ev[:len(ev)-binlog.ChecksumSize-len(r.Data)]...)
	data := r.Data
	nb := (len(cols) + 7) / 8
	for len(data) > 0 {
		if len(data) < nb {
			return nil, fmt.Errorf("short null bitmap")
		}
		out = append(out, data[:nb]...)
		pos := nb
		for i := range cols {
			if data[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			n, err := row.ValueLen(data[pos:], &cols[i])
			if err != nil {
				return nil, fmt.Errorf("column %d: %w", i, err)
			}
			if cols[i].Type != row.TypeJSON {
				out = append(out, data[pos:pos+n]...)
				pos += n
				continue
			}
			doc, err := row.DecodeJSON(data[pos+4 : pos+n])
			if err != nil {
				return nil, fmt.Errorf("column %d: %w", i, err)
			}
			at := len(out)
			out = append(out, 0, 0, 0, 0)
			out = row.AppendJSONText(out, doc)
			binary.LittleEndian.PutUint32(out[at:], uint32(len(out)-at-4))
			pos += n
		}
		data = data[pos:]
	}
	return sealed(out), nil
}

// sealed completes an event whose header and body are ev: its length in
// the header, and its checksum appended.
func sealed(ev []byte) []byte {
	ev = append(ev, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)))
	reseal(ev)
	return ev
}
