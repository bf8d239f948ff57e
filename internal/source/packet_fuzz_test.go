package source

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzReadPacket: whatever a replica sends on its dump connection (semi-
// sync ACKs, COM_QUIT, anything), the reader returns packets no longer
// than its limit, or an error, and never panics.
func FuzzReadPacket(f *testing.F) {
	ack := []byte{0xef, 1, 0, 0, 0, 0, 0, 0, 0}
	ack = append(ack, "binlog.000001"...)
	f.Add(append([]byte{byte(len(ack)), 0, 0, 0}, ack...))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1, 2, 3})
	f.Add([]byte{1, 0, 0, 0, 1})
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
		}
	})
}
