package binlog

// A cluster keeps its raft log in the binlog files. Each raft entry is a
// record event followed, when the entry is a transaction, by the
// transaction's events:
//
//	Rows_query "lockstep-raft " index term type trx_len [data]
//	GTID ... XID                         (trx_len bytes, when trx_len > 0)
//
// The record is a Rows_query event flagged ignorable, as the catalog
// payload is (event.go): mysqlbinlog prints it as a comment, and dump
// threads leave it out of what they send. It carries the entry's raft
// index, term and type; an entry that is not a transaction (a leader's
// empty entry, a configuration change) keeps its data in the record.
//
// A transaction's events carry log_pos, which depends on where a node's
// file puts them, so each node relocates an entry's events to its own
// offsets when it writes them (Relocate): the GTIDs and the events are the
// same on every node, the byte offsets need not be.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// RaftPrefix marks a Rows_query event that records a raft entry.
const RaftPrefix = "lockstep-raft "

// raftFixed is the size of a record's fixed fields: index, term, type and
// the length of the transaction that follows.
const raftFixed = 8 + 8 + 1 + 4

// RaftRecord is one raft entry's record.
type RaftRecord struct {
	Index, Term uint64
	Type        byte   // the raft entry type
	TrxLen      uint32 // bytes of transaction events after the record
	Data        []byte // the entry's data when it is not a transaction
}

// RaftRecordSize is the size of the record event for r.
func RaftRecordSize(r RaftRecord) int {
	return HeaderSize + 1 + len(RaftPrefix) + raftFixed + len(r.Data) + ChecksumSize
}

// AppendRaftRecord appends r's record event, ending at endPos in its file.
func AppendRaftRecord(dst []byte, r RaftRecord, ts, serverID uint32, endPos uint32) []byte {
	body := make([]byte, 0, 1+len(RaftPrefix)+raftFixed+len(r.Data))
	body = append(body, 255) // length byte; readers use the event size
	body = append(body, RaftPrefix...)
	body = binary.BigEndian.AppendUint64(body, r.Index)
	body = binary.BigEndian.AppendUint64(body, r.Term)
	body = append(body, r.Type)
	body = binary.BigEndian.AppendUint32(body, r.TrxLen)
	body = append(body, r.Data...)
	return appendEvent(dst, ts, RowsQueryEvent, serverID, endPos, FlagIgnorable, body)
}

// ParseRaftRecord decodes a record from a Rows_query event body. ok is
// false when the event is not a raft record; err reports a damaged one.
// Data aliases body.
func ParseRaftRecord(body []byte) (r RaftRecord, ok bool, err error) {
	if !IsRaftRecord(body) {
		return r, false, nil
	}
	b := body[1+len(RaftPrefix):]
	if len(b) < raftFixed {
		return r, true, errors.New("binlog: short raft record")
	}
	r.Index = binary.BigEndian.Uint64(b)
	r.Term = binary.BigEndian.Uint64(b[8:])
	r.Type = b[16]
	r.TrxLen = binary.BigEndian.Uint32(b[17:])
	r.Data = b[raftFixed:]
	return r, true, nil
}

// IsRaftRecord reports whether a Rows_query event body is a raft record.
func IsRaftRecord(body []byte) bool {
	return len(body) >= 1+len(RaftPrefix) && string(body[1:1+len(RaftPrefix)]) == RaftPrefix
}

// Relocate copies the events in src, which must be whole events with valid
// checksums, to the end of dst as if written at offset start of a file:
// each event's log_pos and checksum are rewritten, nothing else. It is
// how a node writes a raft entry that another node encoded.
func Relocate(dst, src []byte, start int64) ([]byte, error) {
	pos := start
	for off := 0; off < len(src); {
		e, err := NextEvent(src[off:])
		if err != nil {
			return dst, fmt.Errorf("binlog: relocating event at %d: %w", off, err)
		}
		pos += int64(e.Size)
		if pos > 1<<32-1 {
			return dst, errors.New("binlog: relocated event past 4 GiB")
		}
		at := len(dst)
		dst = append(dst, e.Data...)
		ev := dst[at:]
		binary.LittleEndian.PutUint32(ev[13:], uint32(pos))
		n := len(ev) - ChecksumSize
		binary.LittleEndian.PutUint32(ev[n:], crc32.Update(0, crcTable, ev[:n]))
		off += int(e.Size)
	}
	return dst, nil
}

// SetSequence gives a finalized transaction (trx starts with its GTID
// event) its GTID number and logical clock, rewriting the GTID event's
// fields and checksum in place; the sizes do not change. A cluster's
// leader sequences transactions that other nodes encoded this way.
func SetSequence(trx []byte, sid UUID, gno uint64, lastCommitted, sequence int64) error {
	e, err := NextEvent(trx)
	if err != nil {
		return err
	}
	body := e.Body()
	if e.Type != GTIDEvent || len(body) < gtidPostHeader || body[25] != logicalTimestampTyp {
		return errors.New("binlog: a transaction that does not start with a GTID event")
	}
	copy(body[1:17], sid[:])
	binary.LittleEndian.PutUint64(body[17:], gno)
	binary.LittleEndian.PutUint64(body[26:], uint64(lastCommitted))
	binary.LittleEndian.PutUint64(body[34:], uint64(sequence))
	ev := trx[:e.Size]
	n := len(ev) - ChecksumSize
	binary.LittleEndian.PutUint32(ev[n:], crc32.Update(0, crcTable, ev[:n]))
	return nil
}

// ParseTransaction reads one transaction's events (its GTID event first),
// verifying every checksum. Event data aliases events.
func ParseTransaction(events []byte) (*Transaction, error) {
	e, err := NextEvent(events)
	if err != nil {
		return nil, err
	}
	if e.Type != GTIDEvent {
		return nil, errors.New("binlog: a transaction that does not start with a GTID event")
	}
	g, err := ParseGTID(e.Body())
	if err != nil {
		return nil, err
	}
	t := &Transaction{GTID: g, End: int64(len(events))}
	for off := int(e.Size); off < len(events); {
		ev, err := NextEvent(events[off:])
		if err != nil {
			return nil, err
		}
		t.Events = append(t.Events, ev)
		off += int(ev.Size)
	}
	return t, nil
}
