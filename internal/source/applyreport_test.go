package source

import (
	"testing"
	"time"
)

// TestApplyReport: a report reads back as sent, whether the replica
// applies or not; anything else (a semi-sync ACK, another length, a later
// version, a negative lag other than "stopped", a lag past what a
// time.Duration holds) is not a report; and a
// report is known for three intervals after it arrived, then forgotten.
func TestApplyReport(t *testing.T) {
	for _, r := range []ApplyReport{
		{Applying: true, Lag: 0, Applied: 0},
		{Applying: true, Lag: 2500 * time.Microsecond, Applied: 1 << 40},
		{Applying: false, Applied: 7},
	} {
		pkt := r.Packet()
		if int(pkt[0]) != len(pkt)-4 {
			t.Fatalf("%+v: header says %d bytes, payload is %d", r, pkt[0], len(pkt)-4)
		}
		got, ok := parseApplyReport(pkt[4:])
		if !ok || got != r {
			t.Fatalf("%+v read back as %+v (%v)", r, got, ok)
		}
	}
	good := ApplyReport{Applying: true, Lag: time.Second, Applied: 3}.Packet()[4:]
	for name, pkt := range map[string][]byte{
		"ack":                 append([]byte{0xef, 4, 0, 0, 0, 0, 0, 0, 0}, "binlog.000001"...),
		"short":               good[:17],
		"long":                append(append([]byte{}, good...), 0),
		"version 2":           append([]byte{ApplyReportMagic, 2}, good[2:]...),
		"negative lag":        append([]byte{ApplyReportMagic, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, good[10:]...),
		"lag past a Duration": append([]byte{ApplyReportMagic, 1, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30}, good[10:]...),
		"empty":               nil,
		"com_quit byte":       {0x01},
	} {
		if r, ok := parseApplyReport(pkt); ok {
			t.Errorf("%s read as a report: %+v", name, r)
		}
	}

	var st applyState
	now := time.Now()
	if _, ok := st.get(now); ok {
		t.Fatal("a replica that never reported has a known lag")
	}
	st.set(ApplyReport{Applying: true, Lag: time.Second}, now)
	if r, ok := st.get(now.Add(2 * ApplyReportInterval)); !ok || r.Lag != time.Second {
		t.Fatalf("a recent report: %+v %v", r, ok)
	}
	if _, ok := st.get(now.Add(4 * ApplyReportInterval)); ok {
		t.Fatal("a replica that stopped reporting still has a known lag")
	}
}
