package source

import (
	"bufio"
	"bytes"
	"testing"
	"time"
)

// FuzzReadPacket: whatever a replica sends on its dump connection (semi-
// sync ACKs, apply reports, COM_QUIT, anything), the reader returns
// packets no longer than its limit, or an error, and never panics, nor
// does reading a packet as an apply report; one that reads as a report
// is one a replica could have sent.
func FuzzReadPacket(f *testing.F) {
	ack := []byte{0xef, 1, 0, 0, 0, 0, 0, 0, 0}
	ack = append(ack, "binlog.000001"...)
	f.Add(append([]byte{byte(len(ack)), 0, 0, 0}, ack...))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1, 2, 3})
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Add(ApplyReport{Applying: true, Lag: 1500 * time.Millisecond, Applied: 42}.Packet())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for range 1000 {
			p, err := readPacket(r, 1<<16)
			if err != nil {
				return
			}
			if len(p) > 1<<16 {
				t.Fatalf("a %d-byte packet past the 65536-byte limit", len(p))
			}
			if rep, ok := parseApplyReport(p); ok && !bytes.Equal(rep.Packet()[4:], p) {
				t.Fatalf("%x reads as %+v, which is sent as %x", p, rep, rep.Packet()[4:])
			}
		}
	})
}
