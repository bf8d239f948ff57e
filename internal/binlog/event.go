// Package binlog reads and writes MySQL's binary log (format v4, MySQL 8
// event layouts, CRC32 checksums).
//
// Encoding is split in two so the commit pipeline can do the expensive part
// in parallel, outside any lock:
//
//  1. A transaction's events (BEGIN, Table_map, *_rows, XID or a DDL Query)
//     are built into a TrxEvents before commit, with placeholder headers.
//  2. Once the pipeline has reserved the transaction's place in the log
//     (file position, GTID, logical clock), Finalize writes the GTID event in
//     front and fills every header's timestamp, server id and log_pos, then
//     each event's checksum. Finalize touches only the transaction's own
//     buffer, so any goroutine may run it.
package binlog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
)

// Event types.
const (
	QueryEvent             byte = 2
	StopEvent              byte = 3
	RotateEvent            byte = 4
	FormatDescriptionEvent byte = 15
	XIDEvent               byte = 16
	TableMapEvent          byte = 19
	HeartbeatEvent         byte = 27
	RowsQueryEvent         byte = 29
	WriteRowsEventV1       byte = 23 // MariaDB writes v1 rows events
	UpdateRowsEventV1      byte = 24
	DeleteRowsEventV1      byte = 25
	WriteRowsEventV2       byte = 30
	UpdateRowsEventV2      byte = 31
	DeleteRowsEventV2      byte = 32
	GTIDEvent              byte = 33
	AnonymousGTIDEvent     byte = 34
	PreviousGTIDsEvent     byte = 35
	// MariaDB's own events.
	MariaAnnotateRowsEvent     byte = 160
	MariaBinlogCheckpointEvent byte = 161
	MariaGTIDEvent             byte = 162
	MariaGTIDListEvent         byte = 163
	MariaStartEncryptionEvent  byte = 164
)

// Sizes and flags.
const (
	HeaderSize   = 19
	ChecksumSize = 4
	// FileHeaderSize is the magic number at the start of every binlog file.
	FileHeaderSize = 4

	FlagBinlogInUse uint16 = 0x0001
	FlagSuppressUse uint16 = 0x0008
	FlagArtificial  uint16 = 0x0020
	FlagRelayLog    uint16 = 0x0040
	FlagIgnorable   uint16 = 0x0080
	RowsFlagStmtEnd uint16 = 0x0001
	// RowsFlagNoForeignKeyChecks: the replica applies the event's rows
	// without checking foreign keys (NO_FOREIGN_KEY_CHECKS_F).
	RowsFlagNoForeignKeyChecks uint16 = 0x0002
	gtidFlagCommitOK           byte   = 0x01
	logicalTimestampTyp        byte   = 2

	// GTIDEventBodyMin is the GTID post-header (flags, SID, GNO, clock).
	gtidPostHeader = 1 + 16 + 8 + 1 + 8 + 8
	// ServerVersion is what the format description event announces.
	ServerVersion = "8.0.40-lockstep"
	// maxRowsEventBody is where we start a new *_rows event
	// (binlog_row_event_max_size).
	maxRowsEventBody = 8192
)

// FileMagic starts every binlog file.
var FileMagic = []byte{0xfe, 'b', 'i', 'n'}

var errShort = errors.New("binlog: event too short")

var crcTable = crc32.MakeTable(crc32.IEEE)

// postHeaderLengths is MySQL 8.0's table of post-header sizes by event type
// (index = type-1), as written in the format description event.
var postHeaderLengths = []byte{
	56, 13, 0, 8, 0, 0, 0, 0, 4, 0, // 1..10
	4, 0, 0, 0, 98, 0, 4, 26, 8, 0, // 11..20 (15: FDE = 57 + 41 types)
	0, 0, 8, 8, 8, 2, 0, 0, 0, 10, // 21..30
	10, 10, 42, 42, 0, 18, 52, 0, 10, 40, // 31..40
	0, // 41 heartbeat v2
}

// putHeader writes a common header at b[0:19].
func putHeader(b []byte, ts uint32, typ byte, serverID uint32, size uint32, logPos uint32, flags uint16) {
	binary.LittleEndian.PutUint32(b[0:], ts)
	b[4] = typ
	binary.LittleEndian.PutUint32(b[5:], serverID)
	binary.LittleEndian.PutUint32(b[9:], size)
	binary.LittleEndian.PutUint32(b[13:], logPos)
	binary.LittleEndian.PutUint16(b[17:], flags)
}

// sealEvent fills timestamp, server id and log_pos of the complete event in
// ev (header through checksum placeholder), then its checksum.
func sealEvent(ev []byte, ts uint32, serverID uint32, endPos uint32) {
	binary.LittleEndian.PutUint32(ev[0:], ts)
	binary.LittleEndian.PutUint32(ev[5:], serverID)
	binary.LittleEndian.PutUint32(ev[13:], endPos)
	n := len(ev) - ChecksumSize
	binary.LittleEndian.PutUint32(ev[n:], crc32.Update(0, crcTable, ev[:n]))
}

// appendEvent appends a whole event (header, body, checksum).
func appendEvent(dst []byte, ts uint32, typ byte, serverID uint32, endPos uint32, flags uint16, body []byte) []byte {
	start := len(dst)
	size := HeaderSize + len(body) + ChecksumSize
	dst = append(dst, make([]byte, HeaderSize)...)
	putHeader(dst[start:], ts, typ, serverID, uint32(size), endPos, flags)
	dst = append(dst, body...)
	dst = append(dst, 0, 0, 0, 0)
	sealEvent(dst[start:], ts, serverID, endPos)
	return dst
}

// FormatDescription returns the format description event written at
// position 4 of a file (inUse sets LOG_EVENT_BINLOG_IN_USE_F).
func FormatDescription(ts uint32, serverID uint32, inUse bool) []byte {
	body := make([]byte, 0, 2+50+4+1+len(postHeaderLengths)+1)
	body = binary.LittleEndian.AppendUint16(body, 4)
	var ver [50]byte
	copy(ver[:], ServerVersion)
	body = append(body, ver[:]...)
	body = binary.LittleEndian.AppendUint32(body, ts)
	body = append(body, HeaderSize)
	body = append(body, postHeaderLengths...)
	body = append(body, 1) // checksum algorithm: CRC32
	var flags uint16
	if inUse {
		flags = FlagBinlogInUse
	}
	return appendEvent(nil, ts, FormatDescriptionEvent, serverID, uint32(FileHeaderSize+HeaderSize+len(body)+ChecksumSize), flags, body)
}

// FormatDescriptionSize is the size of the format description event.
var FormatDescriptionSize = len(FormatDescription(0, 0, false))

// PreviousGTIDsSize is the size of a Previous_gtids event for g.
func PreviousGTIDsSize(g GTIDSet) int { return HeaderSize + g.encodedSize() + ChecksumSize }

// PreviousGTIDs returns a Previous_gtids event ending at endPos.
func PreviousGTIDs(ts uint32, serverID uint32, endPos uint32, g GTIDSet) []byte {
	return appendEvent(nil, ts, PreviousGTIDsEvent, serverID, endPos, 0, g.appendEncoded(nil))
}

// RotateSize is the size of a Rotate event naming file.
func RotateSize(file string) int { return HeaderSize + 8 + len(file) + ChecksumSize }

// Rotate returns a Rotate event pointing at position pos of file.
func Rotate(ts uint32, serverID uint32, endPos uint32, file string, pos uint64, artificial bool) []byte {
	body := binary.LittleEndian.AppendUint64(nil, pos)
	body = append(body, file...)
	var flags uint16
	if artificial {
		flags = FlagArtificial
	}
	return appendEvent(nil, ts, RotateEvent, serverID, endPos, flags, body)
}

// Heartbeat returns a heartbeat event (log_pos = the current position).
func Heartbeat(serverID uint32, logPos uint32, file string) []byte {
	return appendEvent(nil, 0, HeartbeatEvent, serverID, logPos, FlagArtificial, []byte(file))
}

// TrxEvents accumulates the events of one transaction (everything after its
// GTID event) with placeholder headers. Row changes are collected per
// statement: EndStatement writes the statement's Table_map events followed by
// its *_rows events (STMT_END_F on the last), as MySQL does, and
// DiscardStatement drops them (statement rollback). The zero value is ready
// to use.
type TrxEvents struct {
	buf    []byte
	starts []int

	stmt       []byte // the current statement's *_rows events
	stmtStarts []int
	stmtTables []TableRef
	rowsOpen   bool
	rowsType   byte
	rowsTable  uint64
	isDDL      bool

	// cascade holds the current statement's row changes made by foreign
	// keys' referential actions (AddCascadeRow), in the order they were
	// made; their images are in cascadeImg.
	cascade    []cascadeRow
	cascadeImg []byte
}

type cascadeRow struct {
	typ                byte
	tab                TableRef
	before, after, end int // the images are cascadeImg[before:after] and [after:end]
}

// TableRef is what a row change needs to know of its table.
type TableRef struct {
	ID    uint64
	NCols int
	// Map is the Table_map event body (see TableMapBody).
	Map []byte
}

// Reset empties the events, keeping the buffers.
func (t *TrxEvents) Reset() {
	t.buf = t.buf[:0]
	t.starts = t.starts[:0]
	t.DiscardStatement()
	t.isDDL = false
}

// Grow makes room for about n more bytes of events, so that building a
// transaction whose size is known in advance (a replica re-logging a
// source's transaction) allocates once instead of growing as it goes.
func (t *TrxEvents) Grow(n int) {
	t.buf = slices.Grow(t.buf, n)
	t.stmt = slices.Grow(t.stmt, n)
}

// Len is the encoded size of the finished statements (GTID event excluded).
func (t *TrxEvents) Len() int { return len(t.buf) }

// Empty reports whether no event has been added.
func (t *TrxEvents) Empty() bool {
	return len(t.starts) == 0 && len(t.stmtStarts) == 0 && len(t.cascade) == 0
}

// Mark is a point a transaction can roll back to (a savepoint).
type Mark struct{ buf, starts int }

// Mark records the end of the finished statements.
func (t *TrxEvents) Mark() Mark { return Mark{buf: len(t.buf), starts: len(t.starts)} }

// Truncate rolls back to m and drops the current statement.
func (t *TrxEvents) Truncate(m Mark) {
	t.buf = t.buf[:m.buf]
	t.starts = t.starts[:m.starts]
	t.DiscardStatement()
}

func beginEvent(buf []byte, starts []int, typ byte, flags uint16) ([]byte, []int, int) {
	start := len(buf)
	buf = append(buf, make([]byte, HeaderSize)...)
	buf[start+4] = typ
	binary.LittleEndian.PutUint16(buf[start+17:], flags)
	return buf, append(starts, start), start
}

func endEvent(buf []byte, start int) []byte {
	buf = append(buf, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(buf[start+9:], uint32(len(buf)-start))
	return buf
}

func (t *TrxEvents) begin(typ byte, flags uint16) int {
	var start int
	t.buf, t.starts, start = beginEvent(t.buf, t.starts, typ, flags)
	return start
}

func (t *TrxEvents) end(start int) { t.buf = endEvent(t.buf, start) }

// flags2ExplicitDefaults is the flags2 bit MariaDB writes for
// explicit_defaults_for_timestamp = ON and its replicas apply (without it
// a nullable TIMESTAMP column is created NOT NULL DEFAULT
// current_timestamp() ON UPDATE current_timestamp()). MySQL ignores the
// bit.
const flags2ExplicitDefaults = 1 << 24

// QueryOptions are the session settings a Query event carries.
type QueryOptions struct {
	// SuppressUse sets LOG_EVENT_SUPPRESS_USE_F, as MySQL does for CREATE
	// and DROP DATABASE: binlog readers (mysqlbinlog) must not put a USE
	// of the event's database before the statement, since it may not
	// exist (yet, or any more) where the output is replayed.
	SuppressUse bool
	ThreadID    uint32
	SQLMode     uint64
	Charset     uint16 // character_set_client as a collation id
	Collation   uint16 // collation_connection
	Server      uint16 // collation_server
}

// AddQuery appends a Query event (BEGIN or a DDL statement).
func (t *TrxEvents) AddQuery(db, query string, o QueryOptions) {
	t.EndStatement()
	if query != "BEGIN" {
		t.isDDL = true
	}
	var flags uint16
	if o.SuppressUse {
		flags = FlagSuppressUse
	}
	start := t.begin(QueryEvent, flags)
	// Status variables: flags2, sql_mode, catalog, charset, and
	// explicit_defaults_for_timestamp, which Lockstep always has on.
	// flags2's bits that MySQL and MariaDB replicas read (foreign and
	// unique checks, autocommit, sql_auto_is_null) are clear, their
	// defaults; MariaDB carries explicit_defaults_for_timestamp there
	// (flags2ExplicitDefaults), MySQL in its own status variable, which
	// goes last: MariaDB stops reading status variables at a code it does
	// not know.
	var sv []byte
	sv = append(sv, 0) // Q_FLAGS2_CODE
	sv = binary.LittleEndian.AppendUint32(sv, flags2ExplicitDefaults)
	sv = append(sv, 1) // Q_SQL_MODE_CODE
	sv = binary.LittleEndian.AppendUint64(sv, o.SQLMode)
	sv = append(sv, 6, 3) // Q_CATALOG_NZ_CODE
	sv = append(sv, "std"...)
	sv = append(sv, 4) // Q_CHARSET_CODE
	// utf8mb4_general_ci (45) unless told otherwise: both MySQL and MariaDB
	// know it (MariaDB has no utf8mb4_0900_* collations).
	sv = binary.LittleEndian.AppendUint16(sv, orDefault(o.Charset, 45))
	sv = binary.LittleEndian.AppendUint16(sv, orDefault(o.Collation, 45))
	sv = binary.LittleEndian.AppendUint16(sv, orDefault(o.Server, 45))
	sv = append(sv, 16, 1) // Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: ON
	t.buf = binary.LittleEndian.AppendUint32(t.buf, o.ThreadID)
	t.buf = binary.LittleEndian.AppendUint32(t.buf, 0) // exec time
	t.buf = append(t.buf, byte(len(db)))
	t.buf = binary.LittleEndian.AppendUint16(t.buf, 0) // error code
	t.buf = binary.LittleEndian.AppendUint16(t.buf, uint16(len(sv)))
	t.buf = append(t.buf, sv...)
	t.buf = append(t.buf, db...)
	t.buf = append(t.buf, 0)
	t.buf = append(t.buf, query...)
	t.end(start)
}

func orDefault(v, d uint16) uint16 {
	if v == 0 {
		return d
	}
	return v
}

// CatalogPrefix marks a Rows_query event that carries Lockstep's catalog
// change for the DDL statement that follows it in the same transaction.
// Rows_query is an ignorable event every binlog reader knows (mysqlbinlog
// prints it as a comment), so the files stay readable; replay uses it to
// redo the DDL's storage effect exactly.
const CatalogPrefix = "lockstep-catalog "

// AddCatalog appends the catalog change of a DDL statement (a Rows_query
// event). Call it before AddQuery for the statement.
func (t *TrxEvents) AddCatalog(payload []byte) {
	t.EndStatement()
	start := t.begin(RowsQueryEvent, FlagIgnorable)
	t.buf = append(t.buf, 255) // length byte; readers use the event size
	t.buf = append(t.buf, CatalogPrefix...)
	t.buf = append(t.buf, payload...)
	t.end(start)
}

// CatalogPayload returns the catalog change carried by a Rows_query event
// body, if it is one.
func CatalogPayload(body []byte) ([]byte, bool) {
	if len(body) < 1+len(CatalogPrefix) || string(body[1:1+len(CatalogPrefix)]) != CatalogPrefix {
		return nil, false
	}
	return body[1+len(CatalogPrefix):], true
}

// AddXID appends the XID event that commits a DML transaction.
func (t *TrxEvents) AddXID(xid uint64) {
	t.EndStatement()
	start := t.begin(XIDEvent, 0)
	t.buf = binary.LittleEndian.AppendUint64(t.buf, xid)
	t.end(start)
}

// AddRow adds one row change of kind typ (Write/Update/DeleteRowsEventV2)
// to the current statement. before/after are full row images (before is nil
// for an insert, after for a delete).
func (t *TrxEvents) AddRow(typ byte, tab TableRef, before, after []byte) {
	if !t.rowsOpen || t.rowsType != typ || t.rowsTable != tab.ID ||
		len(t.stmt)-t.stmtStarts[len(t.stmtStarts)-1] > maxRowsEventBody {
		t.closeRows()
		var start int
		t.stmt, t.stmtStarts, start = beginEvent(t.stmt, t.stmtStarts, typ, 0)
		_ = start
		t.rowsType, t.rowsTable, t.rowsOpen = typ, tab.ID, true
		t.stmt = appendRowsHeader(t.stmt, typ, tab, 0) // STMT_END_F later
		t.noteTable(tab)
	}
	t.stmt = append(t.stmt, before...)
	t.stmt = append(t.stmt, after...)
}

// appendRowsHeader appends the post-header and the column bitmaps of a
// *_rows event of tab.
func appendRowsHeader(dst []byte, typ byte, tab TableRef, flags uint16) []byte {
	dst = appendUint48(dst, tab.ID)
	dst = binary.LittleEndian.AppendUint16(dst, flags)
	dst = binary.LittleEndian.AppendUint16(dst, 2) // extra data: none
	dst = AppendPackedInt(dst, uint64(tab.NCols))
	dst = appendAllSet(dst, tab.NCols)
	if typ == UpdateRowsEventV2 {
		dst = appendAllSet(dst, tab.NCols)
	}
	return dst
}

func (t *TrxEvents) noteTable(tab TableRef) {
	for _, x := range t.stmtTables {
		if x.ID == tab.ID {
			return
		}
	}
	t.stmtTables = append(t.stmtTables, tab)
}

// AddCascadeRow adds a row change a foreign key's referential action made
// (a child row deleted or changed because its parent was). MySQL 8 and
// MariaDB do not log such changes: their replicas make them again when
// they apply the parent's change. Lockstep logs them (its replicas, its
// recovery and binlog consumers apply rows, not foreign keys), so that a
// MySQL or MariaDB replica finds nothing left to do: the statement's
// cascaded changes are written before its own, the last made first (so a
// grandchild goes before its parent), in events flagged
// NO_FOREIGN_KEY_CHECKS_F, as MySQL 9 writes the cascades its SQL layer
// makes.
func (t *TrxEvents) AddCascadeRow(typ byte, tab TableRef, before, after []byte) {
	t.noteTable(tab)
	b := len(t.cascadeImg)
	t.cascadeImg = append(append(t.cascadeImg, before...), after...)
	t.cascade = append(t.cascade, cascadeRow{typ: typ, tab: tab, before: b, after: b + len(before), end: len(t.cascadeImg)})
}

// appendCascades writes the statement's cascaded changes into the
// transaction, last made first.
func (t *TrxEvents) appendCascades() {
	open := -1
	var typ byte
	var table uint64
	for i := len(t.cascade) - 1; i >= 0; i-- {
		c := t.cascade[i]
		if open < 0 || typ != c.typ || table != c.tab.ID || len(t.buf)-open > maxRowsEventBody {
			if open >= 0 {
				t.end(open)
			}
			open = t.begin(c.typ, 0)
			typ, table = c.typ, c.tab.ID
			t.buf = appendRowsHeader(t.buf, c.typ, c.tab, RowsFlagNoForeignKeyChecks)
		}
		t.buf = append(t.buf, t.cascadeImg[c.before:c.end]...)
	}
	if open >= 0 {
		t.end(open)
	}
}

func (t *TrxEvents) closeRows() {
	if t.rowsOpen {
		t.stmt = endEvent(t.stmt, t.stmtStarts[len(t.stmtStarts)-1])
		t.rowsOpen = false
	}
}

// EndStatement moves the current statement's row changes into the
// transaction: its Table_map events, then its *_rows events, the last one
// flagged STMT_END_F.
func (t *TrxEvents) EndStatement() {
	t.closeRows()
	if len(t.stmtStarts) == 0 && len(t.cascade) == 0 {
		return
	}
	for _, tab := range t.stmtTables {
		start := t.begin(TableMapEvent, 0)
		t.buf = append(t.buf, tab.Map...)
		t.end(start)
	}
	t.appendCascades()
	if len(t.stmtStarts) == 0 { // only cascades (not made by go-mysql-server)
		last := t.starts[len(t.starts)-1]
		flags := binary.LittleEndian.Uint16(t.buf[last+HeaderSize+6:])
		binary.LittleEndian.PutUint16(t.buf[last+HeaderSize+6:], flags|RowsFlagStmtEnd)
		t.DiscardStatement()
		return
	}
	last := t.stmtStarts[len(t.stmtStarts)-1]
	binary.LittleEndian.PutUint16(t.stmt[last+HeaderSize+6:], RowsFlagStmtEnd)
	base := len(t.buf)
	t.buf = append(t.buf, t.stmt...)
	for _, s := range t.stmtStarts {
		t.starts = append(t.starts, base+s)
	}
	t.DiscardStatement()
}

// DiscardStatement drops the current statement's row changes.
func (t *TrxEvents) DiscardStatement() {
	t.stmt = t.stmt[:0]
	t.stmtStarts = t.stmtStarts[:0]
	t.stmtTables = t.stmtTables[:0]
	t.rowsOpen = false
	t.cascade = t.cascade[:0]
	t.cascadeImg = t.cascadeImg[:0]
}

// Close ends the last statement; call it before FinalSize and Finalize.
func (t *TrxEvents) Close() { t.EndStatement() }

func appendAllSet(dst []byte, n int) []byte {
	for i := 0; i < n; i += 8 {
		if n-i >= 8 {
			dst = append(dst, 0xFF)
		} else {
			dst = append(dst, byte(1<<(n-i)-1))
		}
	}
	return dst
}

func appendUint48(dst []byte, v uint64) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40))
}

// AppendPackedInt appends a MySQL length-encoded integer.
func AppendPackedInt(dst []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(dst, byte(v))
	case v < 1<<16:
		return append(dst, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(dst, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(dst, 0xfe), v)
}

// PackedIntSize is the size of v as a length-encoded integer.
func PackedIntSize(v uint64) int {
	switch {
	case v < 251:
		return 1
	case v < 1<<16:
		return 3
	case v < 1<<24:
		return 4
	}
	return 9
}

// GTIDInfo is what the pipeline decides for a transaction at reserve time.
type GTIDInfo struct {
	SID            UUID
	GNO            uint64
	LastCommitted  int64
	SequenceNumber int64
	// Microseconds since the epoch. Original is the source's commit time
	// (equal to Immediate on the server where the transaction originated).
	OriginalCommitUS  uint64
	ImmediateCommitUS uint64
}

// ServerVersionID is ServerVersion as MySQL numbers versions (8.0.40 is
// 80040): in GTID events, and in executable comments (/*!80040 ... */).
const ServerVersionID = 80040

func gtidEventSize(trxLen uint64, differentOriginal bool) int {
	n := HeaderSize + gtidPostHeader + 7 + PackedIntSize(trxLen) + 4 + ChecksumSize
	if differentOriginal {
		n += 7
	}
	return n
}

// FinalSize is the total size of the transaction in the log, GTID event
// included (the transaction_length MySQL writes in the GTID event).
func (t *TrxEvents) FinalSize(differentOriginal bool) uint64 {
	body := uint64(len(t.buf))
	total := body + uint64(gtidEventSize(body+30, differentOriginal))
	// The size of the length field depends on the length: settle it.
	for range 3 {
		total = body + uint64(gtidEventSize(total, differentOriginal))
	}
	return total
}

// Finalize writes the complete transaction, starting at file position pos,
// into dst (which must have room for FinalSize bytes) and returns the slice
// written. ts is the event timestamp (seconds).
func (t *TrxEvents) Finalize(dst []byte, pos uint64, ts uint32, serverID uint32, g GTIDInfo) []byte {
	diffOrig := g.OriginalCommitUS != g.ImmediateCommitUS
	total := t.FinalSize(diffOrig)
	gsize := int(total) - len(t.buf)
	out := dst[:0]
	// GTID event.
	out = append(out, make([]byte, HeaderSize)...)
	putHeader(out, ts, GTIDEvent, serverID, uint32(gsize), 0, 0)
	out = append(out, gtidFlagCommitOK)
	out = append(out, g.SID[:]...)
	out = binary.LittleEndian.AppendUint64(out, g.GNO)
	out = append(out, logicalTimestampTyp)
	out = binary.LittleEndian.AppendUint64(out, uint64(g.LastCommitted))
	out = binary.LittleEndian.AppendUint64(out, uint64(g.SequenceNumber))
	imm := g.ImmediateCommitUS
	if diffOrig {
		imm |= 1 << 55
	}
	out = append(out, byte(imm), byte(imm>>8), byte(imm>>16), byte(imm>>24), byte(imm>>32), byte(imm>>40), byte(imm>>48))
	if diffOrig {
		o := g.OriginalCommitUS
		out = append(out, byte(o), byte(o>>8), byte(o>>16), byte(o>>24), byte(o>>32), byte(o>>40), byte(o>>48))
	}
	out = AppendPackedInt(out, total)
	out = binary.LittleEndian.AppendUint32(out, ServerVersionID)
	out = append(out, 0, 0, 0, 0)
	sealEvent(out, ts, serverID, uint32(pos)+uint32(gsize))
	base := len(out)
	out = append(out, t.buf...)
	for i, s := range t.starts {
		e := len(t.buf)
		if i+1 < len(t.starts) {
			e = t.starts[i+1]
		}
		sealEvent(out[base+s:base+e], ts, serverID, uint32(pos)+uint32(base+e))
	}
	return out
}
