package source

import (
	"encoding/binary"
	"math"
	"sync"
	"time"
)

// ApplyReport is what a Lockstep replica tells its Lockstep source, every
// ApplyReportInterval on the dump connection beside semi-sync ACKs, so
// that the source can show how far behind each replica applies: its
// Seconds_Behind_Source, to the microsecond, and the transactions it has
// applied. MySQL's replica protocol has no such message (a source knows
// what it sent and, with semi-sync, what was received, never what was
// applied); MySQL's source reads nothing on a dump connection but ACKs,
// so a replica sends reports to Lockstep sources only, and an older
// Lockstep source reads them and ignores them.
//
// The packet: ApplyReportMagic, a version (1), the lag in microseconds
// (int64, little endian; -1 while the replica's SQL thread is stopped),
// the transactions applied (uint64). Sequence number 0: the source does
// not check sequence numbers on a dump connection.
type ApplyReport struct {
	Applying bool // the replica's SQL thread runs
	Lag      time.Duration
	Applied  uint64
}

const (
	// ApplyReportMagic starts an apply report (0xef starts a semi-sync
	// ACK, 0x01 is COM_QUIT).
	ApplyReportMagic = 0xee
	// ApplyReportInterval is how often a replica reports.
	ApplyReportInterval = time.Second
	applyReportLen      = 18
)

// Packet is the report as a whole packet, header included.
func (r ApplyReport) Packet() []byte {
	us := int64(-1)
	if r.Applying {
		us = r.Lag.Microseconds()
	}
	b := []byte{applyReportLen, 0, 0, 0, ApplyReportMagic, 1}
	b = binary.LittleEndian.AppendUint64(b, uint64(us))
	return binary.LittleEndian.AppendUint64(b, r.Applied)
}

// parseApplyReport reads an apply report's payload; ok is false for
// anything else, a later version included.
func parseApplyReport(pkt []byte) (r ApplyReport, ok bool) {
	if len(pkt) != applyReportLen || pkt[0] != ApplyReportMagic || pkt[1] != 1 {
		return ApplyReport{}, false
	}
	us := int64(binary.LittleEndian.Uint64(pkt[2:10]))
	if us < -1 || us > math.MaxInt64/int64(time.Microsecond) {
		return ApplyReport{}, false // not a lag a Duration holds
	}
	r.Applying = us >= 0
	if r.Applying {
		r.Lag = time.Duration(us) * time.Microsecond
	}
	r.Applied = binary.LittleEndian.Uint64(pkt[10:18])
	return r, true
}

// applyState is the last report a replica sent and when it arrived.
type applyState struct {
	mu     sync.Mutex
	report ApplyReport
	at     time.Time // zero: never
}

func (a *applyState) set(r ApplyReport, now time.Time) {
	a.mu.Lock()
	a.report, a.at = r, now
	a.mu.Unlock()
}

// get returns the last report if one arrived within three intervals (a
// replica that stopped reporting, or never did, has no known lag).
func (a *applyState) get(now time.Time) (ApplyReport, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at.IsZero() || now.Sub(a.at) > 3*ApplyReportInterval {
		return ApplyReport{}, false
	}
	return a.report, true
}
