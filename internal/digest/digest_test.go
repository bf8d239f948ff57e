package digest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestDigestText runs testdata/text: each statement's digest text, and
// "same" or "differs" for pairs whose digests must match or not.
func TestDigestText(t *testing.T) {
	datadriven.RunTest(t, "testdata/text", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "text":
			text, _ := Of(d.Input, 1024)
			return text + "\n"
		case "pair":
			var q [2]string
			if _, err := fmt.Sscanf(d.Input, "%q\n%q", &q[0], &q[1]); err != nil {
				d.Fatalf(t, "two quoted statements: %v", err)
			}
			_, a := Of(q[0], 1024)
			_, b := Of(q[1], 1024)
			if a == b {
				return "same\n"
			}
			return "differs\n"
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}

func TestDigestCut(t *testing.T) {
	text, _ := Of("SELECT aaaaaaaaaa, bbbbbbbbbb, cccccccccc FROM t", 20)
	if text != "SELECT `aaaaaaaaaa` ..." {
		t.Fatalf("cut text: %q", text)
	}
}

func TestSummary(t *testing.T) {
	s := NewSummary(2, 1024)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, w := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond} {
		s.Record(Statement{Schema: "d", Query: fmt.Sprintf("SELECT * FROM t WHERE id = %d", i), Start: t0.Add(time.Duration(i) * time.Second),
			Wait: w, LockWait: time.Microsecond, RowsSent: 1, RowsExamined: 2, Warnings: uint64(i)})
	}
	s.Record(Statement{Schema: "d", Query: "UPDATE t SET v = 1", Start: t0, Wait: time.Millisecond, Error: true})
	s.Record(Statement{Schema: "e", Query: "SELECT 1", Start: t0, Wait: time.Millisecond, RowsSent: 1}) // past the size
	rows := s.Rows()
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 2 digests and the overflow row", len(rows))
	}
	var sel Row
	for _, r := range rows {
		if r.Text == "SELECT * FROM `t` WHERE `id` = ?" {
			sel = r
		}
	}
	if sel.Count != 3 || sel.SumWait != 6e9 || sel.MinWait != 1e9 || sel.MaxWait != 3e9 || sel.SumLockTime != 3e6 ||
		sel.Sent != 3 || sel.Examined != 6 || sel.Warnings != 3 || !sel.FirstSeen.Equal(t0) || !sel.LastSeen.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("the SELECT's row: %+v", sel)
	}
	if sel.Sample != "SELECT * FROM t WHERE id = 1" || sel.SampleWait != 3e9 {
		t.Fatalf("the sample: %q %d", sel.Sample, sel.SampleWait)
	}
	// 3 ms is the largest time, so every quantile is at most it and the
	// 95th is in its bucket.
	if sel.Q95 != 3e9 || sel.Q99 != 3e9 || sel.Q999 != 3e9 {
		t.Fatalf("quantiles %d %d %d", sel.Q95, sel.Q99, sel.Q999)
	}
	if last := rows[2]; last.Digest != "" || last.Count != 1 || last.Sent != 1 {
		t.Fatalf("the overflow row: %+v", last)
	}
	s.Reset()
	if len(s.Rows()) != 0 {
		t.Fatal("rows after Reset")
	}
}

func TestQuantile(t *testing.T) {
	var e entry
	for i := 1; i <= 1000; i++ {
		w := uint64(i) * 1e6 // 1 µs to 1 ms
		e.Count++
		e.MaxWait = max(e.MaxWait, w)
		e.buckets[bucketOf(w)]++
	}
	// The 95th percentile is 950 µs: its bucket's top is within 10%.
	if q := e.quantile(0.95); q < 950e6 || q > 1045e6 {
		t.Fatalf("95th percentile %d ps, want about 950e6", q)
	}
}
