package binlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// Header is a decoded common event header.
type Header struct {
	Timestamp uint32
	Type      byte
	ServerID  uint32
	Size      uint32
	LogPos    uint32
	Flags     uint16
}

// Event is one raw event: Data is the whole event, header to checksum.
type Event struct {
	Header
	Data []byte
}

// Body is the event body, without header and checksum.
func (e Event) Body() []byte { return e.Data[HeaderSize : len(e.Data)-ChecksumSize] }

// ErrChecksum marks an event whose CRC32 does not match.
var ErrChecksum = errors.New("binlog: event checksum mismatch")

// ErrTruncated marks an event that extends past the end of the data.
var ErrTruncated = errors.New("binlog: truncated event")

// ParseHeader decodes a header from b (at least HeaderSize bytes).
func ParseHeader(b []byte) Header {
	return Header{
		Timestamp: binary.LittleEndian.Uint32(b[0:]),
		Type:      b[4],
		ServerID:  binary.LittleEndian.Uint32(b[5:]),
		Size:      binary.LittleEndian.Uint32(b[9:]),
		LogPos:    binary.LittleEndian.Uint32(b[13:]),
		Flags:     binary.LittleEndian.Uint16(b[17:]),
	}
}

// NextEvent parses the event at the start of b, verifying its checksum.
// It returns ErrTruncated if b ends inside the event and ErrChecksum (or a
// format error) if the event is damaged.
func NextEvent(b []byte) (Event, error) {
	if len(b) < HeaderSize {
		return Event{}, ErrTruncated
	}
	h := ParseHeader(b)
	if h.Size < HeaderSize+ChecksumSize || h.Size > 1<<30 {
		return Event{}, fmt.Errorf("binlog: invalid event size %d", h.Size)
	}
	if uint64(len(b)) < uint64(h.Size) {
		return Event{}, ErrTruncated
	}
	data := b[:h.Size]
	n := len(data) - ChecksumSize
	if crc32.Update(0, crcTable, data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
		return Event{}, ErrChecksum
	}
	return Event{Header: h, Data: data}, nil
}

// GTID is a decoded GTID event.
type GTID struct {
	GTIDInfo
	TransactionLength uint64
}

// ParseGTID decodes a GTID event body.
func ParseGTID(body []byte) (GTID, error) {
	var g GTID
	if len(body) < 25 {
		return g, errShort
	}
	copy(g.SID[:], body[1:17])
	g.GNO = binary.LittleEndian.Uint64(body[17:])
	if len(body) < gtidPostHeader || body[25] != logicalTimestampTyp {
		return g, nil
	}
	g.LastCommitted = int64(binary.LittleEndian.Uint64(body[26:]))
	g.SequenceNumber = int64(binary.LittleEndian.Uint64(body[34:]))
	p := body[gtidPostHeader:]
	if len(p) < 7 {
		return g, nil
	}
	read7 := func(b []byte) uint64 {
		var x uint64
		for i := range 7 {
			x |= uint64(b[i]) << (8 * i)
		}
		return x
	}
	imm := read7(p)
	p = p[7:]
	g.OriginalCommitUS = imm &^ (1 << 55)
	if imm&(1<<55) != 0 {
		if len(p) < 7 {
			return g, errShort
		}
		g.OriginalCommitUS = read7(p)
		p = p[7:]
	}
	g.ImmediateCommitUS = imm &^ (1 << 55)
	if len(p) > 0 {
		v, _, err := ReadPackedInt(p)
		if err != nil {
			return g, err
		}
		g.TransactionLength = v
	}
	return g, nil
}

// ParseRotate decodes a Rotate event body.
func ParseRotate(body []byte) (pos uint64, file string, err error) {
	if len(body) < 8 {
		return 0, "", errShort
	}
	return binary.LittleEndian.Uint64(body), string(body[8:]), nil
}

// ParsePreviousGTIDs decodes a Previous_gtids event body.
func ParsePreviousGTIDs(body []byte) (GTIDSet, error) { return decodeGTIDSet(body) }

// Query is a decoded Query event.
type Query struct {
	DB    string
	Query string
	// ServerCollation is the source's collation_server when the statement
	// ran (0 if the event does not say): the default of CREATE DATABASE.
	ServerCollation uint16
	// SQLMode is the source session's sql_mode, MySQL's bits (0 if the
	// event does not say): how the statement's text reads.
	SQLMode uint64
}

// ParseQuery decodes a Query event body.
func ParseQuery(body []byte) (Query, error) {
	if len(body) < 13 {
		return Query{}, errShort
	}
	dbLen := int(body[8])
	svLen := int(binary.LittleEndian.Uint16(body[11:]))
	p := 13 + svLen
	if len(body) < p+dbLen+1 {
		return Query{}, errShort
	}
	q := Query{DB: string(body[p : p+dbLen]), Query: string(body[p+dbLen+1:])}
	q.readStatusVars(body[13 : 13+svLen])
	return q, nil
}

// readStatusVars finds sql_mode (Q_SQL_MODE_CODE) and collation_server
// (in Q_CHARSET_CODE) in a Query event's status variables, stopping at a
// code it does not know.
func (q *Query) readStatusVars(sv []byte) {
	fixed := map[byte]int{0: 4, 1: 8, 3: 4, 4: 6, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 14: 8, 16: 1, 17: 8, 18: 2, 19: 1, 20: 1, 128: 3, 129: 8, 130: 1}
	for len(sv) > 0 {
		code := sv[0]
		sv = sv[1:]
		if n, ok := fixed[code]; ok {
			if len(sv) < n {
				return
			}
			switch code {
			case 1:
				q.SQLMode = binary.LittleEndian.Uint64(sv)
			case 4:
				q.ServerCollation = binary.LittleEndian.Uint16(sv[4:])
			}
			sv = sv[n:]
			continue
		}
		switch code {
		case 5, 6: // time zone, catalog: length-prefixed
			if len(sv) < 1 || len(sv) < 1+int(sv[0]) {
				return
			}
			sv = sv[1+int(sv[0]):]
		default:
			return
		}
	}
}

// Rows is a decoded *_rows v2 event; Data holds the row images.
type Rows struct {
	TableID uint64
	Flags   uint16
	NCols   int
	Data    []byte
}

// RowsKind maps a *_rows event type, v1 (MariaDB) or v2, to its v2 type;
// ok is false for any other event.
func RowsKind(typ byte) (v2 byte, ok bool) {
	switch typ {
	case WriteRowsEventV2, UpdateRowsEventV2, DeleteRowsEventV2:
		return typ, true
	case WriteRowsEventV1, UpdateRowsEventV1, DeleteRowsEventV1:
		return typ - WriteRowsEventV1 + WriteRowsEventV2, true
	}
	return 0, false
}

// ParseRows decodes the header of a *_rows event body (v2, or v1 as MariaDB
// writes it). Only full row images (every column present) are accepted,
// which is what Lockstep and binlog_row_image=FULL sources write.
func ParseRows(typ byte, body []byte) (Rows, error) {
	var r Rows
	if len(body) < 8 {
		return r, errShort
	}
	for i := range 6 {
		r.TableID |= uint64(body[i]) << (8 * i)
	}
	r.Flags = binary.LittleEndian.Uint16(body[6:])
	p := body[8:]
	v2, ok := RowsKind(typ)
	if !ok {
		return r, fmt.Errorf("binlog: event type %d is not a rows event", typ)
	}
	if typ == v2 {
		if len(body) < 10 {
			return r, errShort
		}
		extra := int(binary.LittleEndian.Uint16(body[8:]))
		if extra < 2 || len(body) < 8+extra {
			return r, errShort
		}
		p = body[8+extra:]
	}
	typ = v2
	n, k, err := ReadPackedInt(p)
	if err != nil {
		return r, err
	}
	if n > 4096 {
		return r, fmt.Errorf("binlog: rows event with %d columns", n)
	}
	r.NCols = int(n)
	p = p[k:]
	nb := (r.NCols + 7) / 8
	bitmaps := 1
	if typ == UpdateRowsEventV2 {
		bitmaps = 2
	}
	if len(p) < nb*bitmaps {
		return r, errShort
	}
	for b := range bitmaps {
		for i := range r.NCols {
			if p[b*nb+i/8]&(1<<(i%8)) == 0 {
				return r, fmt.Errorf("binlog: rows event without a full row image (column %d absent)", i)
			}
		}
	}
	r.Data = p[nb*bitmaps:]
	return r, nil
}

// ReadPackedInt decodes a MySQL length-encoded integer.
func ReadPackedInt(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, errShort
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, errShort
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, nil
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, errShort
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, nil
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, errShort
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, nil
	case 0xfb, 0xff:
		return 0, 0, fmt.Errorf("binlog: invalid packed integer prefix %#x", b[0])
	}
	return uint64(b[0]), 1, nil
}

// TableMap is a decoded Table_map event (the parts a replica checks).
type TableMap struct {
	TableID uint64
	DB      string
	Table   string
	Types   []byte // one column type per column
	Meta    []byte // the concatenated per-column metadata
}

// ParseTableMap decodes a Table_map event body.
func ParseTableMap(body []byte) (TableMap, error) {
	var m TableMap
	if len(body) < 10 {
		return m, errShort
	}
	for i := range 6 {
		m.TableID |= uint64(body[i]) << (8 * i)
	}
	p := body[8:]
	str := func() (string, error) {
		if len(p) < 1 || len(p) < 2+int(p[0]) {
			return "", errShort
		}
		n := int(p[0])
		s := string(p[1 : 1+n])
		p = p[2+n:]
		return s, nil
	}
	var err error
	if m.DB, err = str(); err != nil {
		return m, err
	}
	if m.Table, err = str(); err != nil {
		return m, err
	}
	n, k, err := ReadPackedInt(p)
	if err != nil {
		return m, err
	}
	p = p[k:]
	if n > 4096 || uint64(len(p)) < n {
		return m, fmt.Errorf("binlog: table map with %d columns", n)
	}
	m.Types = p[:n]
	p = p[n:]
	ml, k, err := ReadPackedInt(p)
	if err != nil {
		return m, err
	}
	p = p[k:]
	if uint64(len(p)) < ml {
		return m, errShort
	}
	m.Meta = p[:ml]
	return m, nil
}

// ColumnMismatch compares the columns a table map describes (src, from
// another server's binlog) with the table's own (own): "" when they have
// the same number, types and metadata, else a sentence saying how they
// differ. Lockstep applies row images only to a table of the same column
// types.
func ColumnMismatch(own, src TableMap) string {
	if len(own.Types) != len(src.Types) {
		return fmt.Sprintf("Table '%s.%s' has %d columns here and %d in the binlog", src.DB, src.Table, len(own.Types), len(src.Types))
	}
	if bytes.Equal(own.Types, src.Types) && bytes.Equal(own.Meta, src.Meta) {
		return ""
	}
	for i := range src.Types {
		if own.Types[i] != src.Types[i] {
			return fmt.Sprintf("Column %d of table '%s.%s' cannot be converted from type %d to type %d", i, src.DB, src.Table, src.Types[i], own.Types[i])
		}
	}
	return fmt.Sprintf("Columns of table '%s.%s' differ in length or precision (metadata %x in the binlog, %x here)", src.DB, src.Table, src.Meta, own.Meta)
}

// MariaGTID is a decoded MariaDB GTID event (the server id is the event
// header's).
type MariaGTID struct {
	Seq      uint64
	Domain   uint32
	Flags    byte
	CommitID uint64 // 0 when absent
	// Standalone marks a transaction without BEGIN (DDL): it ends with its
	// one Query event.
	Standalone bool
}

// ParseMariaGTID decodes a MariaDB GTID event body.
func ParseMariaGTID(body []byte) (MariaGTID, error) {
	var g MariaGTID
	if len(body) < 13 {
		return g, errShort
	}
	g.Seq = binary.LittleEndian.Uint64(body)
	g.Domain = binary.LittleEndian.Uint32(body[8:])
	g.Flags = body[12]
	g.Standalone = g.Flags&0x01 != 0
	if g.Flags&0x02 != 0 && len(body) >= 21 {
		g.CommitID = binary.LittleEndian.Uint64(body[13:])
	}
	return g, nil
}

// FormatChecksum reports the checksum algorithm a format description event
// (whole event) declares: 0 none, 1 CRC32. Events written before checksums
// existed declare nothing; they report 0.
func FormatChecksum(ev []byte) (byte, error) {
	// header, binlog version (2), server version (50), timestamp (4),
	// header length (1), post-header lengths..., then alg (1) and CRC (4).
	if len(ev) < HeaderSize+2+50+4+1+5 {
		return 0, errShort
	}
	ver := string(bytes.TrimRight(ev[HeaderSize+2:HeaderSize+52], "\x00"))
	if !checksumCapable(ver) {
		return 0, nil
	}
	return ev[len(ev)-5], nil
}

// checksumCapable reports whether a server version writes the checksum
// algorithm in its format description (MySQL 5.6.1 and later, MariaDB 5.3+).
func checksumCapable(v string) bool {
	var a, b, c int
	fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c)
	return a > 5 || (a == 5 && (b > 6 || (b == 6 && c >= 1))) || strings.Contains(v, "MariaDB") && a >= 10
}
