package binlog

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// errTornTail marks damage that may be an incompletely written tail.
var errTornTail = errors.New("binlog: incomplete or damaged tail")

// Transaction is one complete transaction found by a scan.
type Transaction struct {
	GTID GTID
	// Events are the transaction's events after the GTID event.
	Events []Event
	Start  int64 // offset of the GTID event
	End    int64 // offset just past the last event
}

// FileScan is what ScanFile found.
type FileScan struct {
	// End is the offset just past the last complete transaction (or the
	// header, or a final Rotate/Stop event).
	End          int64
	Previous     GTIDSet
	GTIDs        GTIDSet
	LastSequence int64
	Created      time.Time
	// Header says the file's header (format description and Previous_gtids)
	// is complete; HeaderEnd is where it ends.
	Header    bool
	HeaderEnd int64
}

// ScanFile walks a whole binlog file, verifying every checksum, and calls fn
// (if not nil) for each complete transaction starting at or after from.
// On damage it returns the scan so far with an error wrapping errTornTail
// when the damage could be an incomplete tail write (a truncated event, a
// bad checksum, or an unfinished transaction at the end), or another error
// for a malformed file.
func ScanFile(data []byte, fn func(*Transaction) error) (FileScan, error) {
	return scanFrom(data, 0, fn)
}

// ScanFrom is ScanFile calling fn only for transactions at offset >= from.
func ScanFrom(data []byte, from int64, fn func(*Transaction) error) (FileScan, error) {
	return scanFrom(data, from, fn)
}

func scanFrom(data []byte, from int64, fn func(*Transaction) error) (FileScan, error) {
	var s FileScan
	if len(data) < FileHeaderSize || !bytes.Equal(data[:FileHeaderSize], FileMagic) {
		if len(data) < FileHeaderSize {
			return s, fmt.Errorf("%w: file shorter than its magic number", errTornTail)
		}
		return s, errors.New("binlog: bad magic number")
	}
	pos := int64(FileHeaderSize)
	var trx *Transaction
	inTrx := false // after GTID (and BEGIN for DML)
	dml := false
	for pos < int64(len(data)) {
		e, err := NextEvent(data[pos:])
		if err != nil {
			return s, fmt.Errorf("%w: at offset %d: %v", errTornTail, pos, err)
		}
		next := pos + int64(e.Size)
		if int64(e.LogPos) != next {
			return s, fmt.Errorf("%w: event at %d has log_pos %d, expected %d", errTornTail, pos, e.LogPos, next)
		}
		switch {
		case e.Type == FormatDescriptionEvent:
			s.Created = time.Unix(int64(e.Timestamp), 0)
			s.End = next
		case e.Type == PreviousGTIDsEvent:
			g, err := ParsePreviousGTIDs(e.Body())
			if err != nil {
				return s, fmt.Errorf("binlog: bad Previous_gtids event at %d: %v", pos, err)
			}
			s.Previous = g
			s.End = next
			s.Header, s.HeaderEnd = true, next
		case e.Type == GTIDEvent || e.Type == AnonymousGTIDEvent:
			if inTrx {
				return s, fmt.Errorf("binlog: GTID event at %d inside a transaction", pos)
			}
			g, err := ParseGTID(e.Body())
			if err != nil {
				return s, fmt.Errorf("binlog: bad GTID event at %d: %v", pos, err)
			}
			trx = &Transaction{GTID: g, Start: pos}
			inTrx, dml = true, false
		case !inTrx && (e.Type == RotateEvent || e.Type == StopEvent):
			s.End = next
		case !inTrx && e.Type == RowsQueryEvent && IsRaftRecord(e.Body()):
			// A cluster's raft entry (raftrecord.go). One that a
			// transaction follows ends with it: a record whose
			// transaction is torn is cut with it.
			r, _, err := ParseRaftRecord(e.Body())
			if err != nil {
				return s, fmt.Errorf("binlog: bad raft record at %d: %v", pos, err)
			}
			if r.TrxLen == 0 {
				s.End = next
			}
		case !inTrx:
			return s, fmt.Errorf("binlog: event type %d at %d outside a transaction", e.Type, pos)
		default:
			trx.Events = append(trx.Events, e)
			done := false
			switch e.Type {
			case QueryEvent:
				q, err := ParseQuery(e.Body())
				if err != nil {
					return s, fmt.Errorf("binlog: bad Query event at %d: %v", pos, err)
				}
				switch {
				case len(trx.Events) == 1 && q.Query == "BEGIN":
					dml = true
				case dml && q.Query == "COMMIT":
					done = true
				case !dml:
					done = true // DDL: a single statement
				}
			case XIDEvent:
				done = true
			}
			if done {
				trx.End = next
				if trx.Start >= from && fn != nil {
					if err := fn(trx); err != nil {
						return s, err
					}
				}
				s.GTIDs.Add(trx.GTID.SID, trx.GTID.GNO)
				s.LastSequence = max(s.LastSequence, trx.GTID.SequenceNumber)
				s.End = next
				trx, inTrx = nil, false
			}
		}
		pos = next
	}
	if inTrx {
		return s, fmt.Errorf("%w: transaction at %d is incomplete", errTornTail, trx.Start)
	}
	return s, nil
}

// IsTornTail reports whether err describes damage that may be a torn tail.
func IsTornTail(err error) bool { return errors.Is(err, errTornTail) }
