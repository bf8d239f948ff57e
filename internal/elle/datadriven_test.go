package elle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the cases in testdata/. Commands:
//
//	check [isolation=<level>] [realtime] [process]
//	  <history in the ParseText notation>
//	  ----
//	  <Result.Report()>
//
//	edges [realtime] [process]
//	  <history>
//	  ----
//	  <every dependency edge with its justification>
//
//	jsonl
//	  <history in the JSON Lines format>
//	  ----
//	  <the history in the ParseText notation, or the error>
//
// A history that does not parse fails the test, except under jsonl.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var opts Options
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "isolation":
					opts.Isolation = Isolation(a.Vals[0])
				case "realtime":
					opts.RealTime = true
				case "process":
					opts.ProcessOrder = true
				default:
					d.Fatalf(t, "unknown argument %s", a.Key)
				}
			}
			switch d.Cmd {
			case "check":
				h, err := ParseText(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				res, err := Check(h, opts)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				for _, a := range res.Anomalies {
					if a.Cycle != nil {
						if got := classify(stepKinds(a.Cycle)); got != a.Class {
							t.Errorf("%s: %s cycle %s has the edges of %s", d.Pos, a.Class, a.Text, got)
						}
						checkCycleShape(t, a)
					}
				}
				return res.Report()
			case "edges":
				h, err := ParseText(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				return edgeDump(h, opts)
			case "jsonl":
				h, err := Read(strings.NewReader(d.Input))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return FormatText(h)
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

func stepKinds(steps []Step) []EdgeKind {
	ks := make([]EdgeKind, len(steps))
	for i, s := range steps {
		ks[i] = s.Kind
	}
	return ks
}

// checkCycleShape verifies that a cycle's steps chain and close.
func checkCycleShape(t *testing.T, a Anomaly) {
	t.Helper()
	n := len(a.Cycle)
	if n < 2 || len(a.Txns) != n {
		t.Errorf("%s: malformed cycle %+v", a.Class, a)
		return
	}
	for i, s := range a.Cycle {
		if s.To != a.Cycle[(i+1)%n].From || s.From != a.Txns[i] {
			t.Errorf("%s: cycle steps do not chain: %+v", a.Class, a.Cycle)
		}
	}
}

// edgeDump lists the edges Check would build for h.
func edgeDump(h History, opts Options) string {
	if err := Validate(h); err != nil {
		return "error: " + err.Error() + "\n"
	}
	c := newChecker(h, opts)
	c.analyzeKeys()
	g := c.buildGraph()
	var b strings.Builder
	for _, e := range g.edges {
		fmt.Fprintf(&b, "T%d -%s-> T%d: %s\n", c.id(e.from), e.kind, c.id(e.to), c.why(e))
	}
	if b.Len() == 0 {
		return "no edges\n"
	}
	return b.String()
}
