package cluster

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestFlowControl drives the flow-control policy with the commands in
// testdata/flowcontrol, time given as offsets from the start:
//
//	new limit=<n> factor=<f> desync-after=<duration>
//	local at=<d> queue=<n> rate=<r> [unsynced]    this node's measurements
//	observe at=<d> node=<id> queue=<n> rate=<r> [desynced] [unsynced]
//	pace at=<d> share=<f>                          the pacing rate
//	held at=<d> for=<d>                            a commit held back
//	stats at=<d>
//	reset at=<d>
//	meter at=<d> count=<n>                         a rate's moving mean
//	capacity trxs=<n> busy=<d>                     apply capacity's moving mean
func TestFlowControl(t *testing.T) {
	start := time.Unix(1000, 0)
	var f *FlowControl
	var m meter
	var c capacity
	datadriven.RunTest(t, "testdata/flowcontrol", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
		flag := func(k string) bool { _, ok := args[k]; return ok }
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(args[k], 64)
			if err != nil {
				d.Fatalf(t, "bad or missing %s=%q", k, args[k])
			}
			return v
		}
		dur := func(k string) time.Duration {
			v, err := time.ParseDuration(args[k])
			if err != nil {
				d.Fatalf(t, "bad or missing %s=%q", k, args[k])
			}
			return v
		}
		at := func() time.Time { return start.Add(dur("at")) }
		switch d.Cmd {
		case "new":
			f = NewFlowControl(FlowConfig{Limit: uint64(num("limit")), Factor: num("factor"), DesyncAfter: dur("desync-after")}, start)
			return "ok"
		case "local":
			r, send := f.Local(at(), uint64(num("queue")), num("rate"), !flag("unsynced"))
			return fmt.Sprintf("%s send=%v", report(r), send)
		case "observe":
			f.Observe(at(), uint64(num("node")), FlowReport{Queue: uint64(num("queue")), Rate: num("rate"), Desynced: flag("desynced"), Synced: !flag("unsynced")})
			return "ok"
		case "pace":
			r := f.Pace(at(), num("share"))
			if math.IsInf(r, 1) {
				return "none"
			}
			return fmt.Sprintf("%.1f/s", r)
		case "stats":
			s := f.Stats(at())
			return fmt.Sprintf("paused=%v fraction=%.3f sent=%d recv=%d active=%v requested=%v desynced=%v", s.Paused, s.PausedFraction, s.Sent, s.Recv, s.Active, s.Requested, s.Desynced)
		case "held":
			f.Held(at(), at().Add(dur("for")))
			return "ok"
		case "reset":
			f.Reset(at())
			return "ok"
		case "meter":
			return fmt.Sprintf("%.1f/s", m.note(at(), uint64(num("count"))))
		case "capacity":
			return fmt.Sprintf("%.1f/s", c.note(uint64(num("trxs")), dur("busy")))
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}

func report(r FlowReport) string {
	return fmt.Sprintf("queue=%d rate=%.0f desynced=%v synced=%v", r.Queue, r.Rate, r.Desynced, r.Synced)
}

// Flow reports survive their encoding, and damaged ones are refused.
func TestFlowReportEncoding(t *testing.T) {
	for _, r := range []FlowReport{{}, {Queue: 1 << 40, Rate: 1234.5, Desynced: true, Synced: true}, {Queue: 17, Rate: 0, Synced: true}} {
		got, err := decodeFlowReport(encodeFlowReport(r))
		if err != nil || got != r {
			t.Fatalf("%+v came back as %+v, %v", r, got, err)
		}
	}
	good := encodeFlowReport(FlowReport{Queue: 300, Rate: 10})
	for _, b := range [][]byte{nil, good[:len(good)-1], append(good, 0), {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, encodeFlowReport(FlowReport{Rate: math.NaN()}), encodeFlowReport(FlowReport{Rate: -1})} {
		if _, err := decodeFlowReport(b); err == nil {
			t.Fatalf("%x decoded", b)
		}
	}
}
