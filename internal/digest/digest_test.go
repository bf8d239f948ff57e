package digest

import (
	"fmt"
	"math/rand/v2"
	"strings"
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

// TestShapeKeepsDigest: statements of one template, filled with random
// literals (quotes, backslashes, signs, exponents, hexadecimal and bit
// values, non-ASCII text), have one shape and one digest, and
// statements that differ outside their literals have different shapes.
func TestShapeKeepsDigest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		parts := []string{"a", "'", "''", `\'`, `\\`, "é", "\"", "--", "/*", "#", "x", "1", " ", "?", "`"}
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		s := strings.ReplaceAll(b.String(), `\`, `\\`)
		s = strings.ReplaceAll(s, "'", "''")
		return "'" + s + "'"
	}
	num := func() string {
		switch r.IntN(6) {
		case 0:
			return fmt.Sprint(r.IntN(1000))
		case 1:
			return fmt.Sprintf("%d.%d", r.IntN(100), r.IntN(100))
		case 2:
			return fmt.Sprintf("%de%d", 1+r.IntN(9), r.IntN(20))
		case 3:
			return fmt.Sprintf("0x%X", r.IntN(1<<16))
		case 4:
			return fmt.Sprintf("X'%02x'", r.IntN(256))
		}
		return fmt.Sprintf("b'%b'", r.IntN(64))
	}
	templates := []string{
		"SELECT c FROM sbtest1 WHERE id=%s",
		"SELECT c FROM t2 WHERE k BETWEEN %s AND %s ORDER BY c",
		"INSERT INTO t (a, `b``c`, d) VALUES (%s, %s, %s)",
		"UPDATE t SET v = v + %s, w = %s WHERE id IN (%s, %s) -- note",
		"SELECT /* hint 1 */ a2, t.b3 FROM t WHERE x = %s AND y LIKE %s AND @v1 = %s",
		"SELECT f(%s), -%s, .5 + %s FROM `t` WHERE `1a` = %s",
	}
	for _, tpl := range templates {
		var shape0, digest0 string
		for i := range 50 {
			args := make([]any, strings.Count(tpl, "%s"))
			for j := range args {
				if r.IntN(2) == 0 {
					args[j] = str()
				} else {
					args[j] = num()
				}
			}
			q := fmt.Sprintf(tpl, args...)
			sh := shape(q)
			_, d := Of(q, 1024)
			if i == 0 {
				shape0, digest0 = sh, d
				continue
			}
			if sh != shape0 {
				t.Fatalf("%q and the first of its template differ in shape:\n%q\n%q", q, sh, shape0)
			}
			if d != digest0 {
				text, _ := Of(q, 1024)
				t.Fatalf("%q: one shape, another digest (%s)", q, text)
			}
		}
	}
	for _, pair := range [][2]string{
		{"SELECT a FROM t WHERE id = 1", "SELECT b FROM t WHERE id = 1"},
		{"SELECT a1 FROM t", "SELECT a2 FROM t"},
		{"SELECT @1", "SELECT @2"},
		{"SELECT N'x'", "SELECT N?"},
		{"SELECT 2a FROM t", "SELECT 3a FROM t"},
	} {
		if shape(pair[0]) == shape(pair[1]) {
			t.Errorf("%q and %q have one shape", pair[0], pair[1])
		}
	}
}
