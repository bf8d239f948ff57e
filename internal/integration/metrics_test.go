package integration

import (
	"fmt"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

func scrape(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams, err := (&expfmt.TextParser{}).TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return fams
}

// value is the value of a metric family's sample with the given label (or
// the only sample), counter, gauge or histogram count.
func value(fams map[string]*dto.MetricFamily, name, label string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	for _, m := range f.Metric {
		match := label == ""
		for _, l := range m.Label {
			if l.GetValue() == label {
				match = true
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetrics scrapes /metrics with the Prometheus text parser before and
// after some writes and checks the counters moved.
func TestMetrics(t *testing.T) {
	s := startServer(t, t.TempDir())
	before := scrape(t, s)
	for _, name := range []string{"lockstep_binlog_commits_total", "lockstep_binlog_group_size", "lockstep_binlog_fsync_seconds",
		"lockstep_statements_total", "lockstep_deadlocks_total", "lockstep_uptime_seconds", "go_goroutines"} {
		if _, ok := before[name]; !ok {
			t.Fatalf("metric %s missing", name)
		}
	}
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE m")
	mustExec(t, db, "CREATE TABLE m.t (id INT PRIMARY KEY)")
	for i := range 20 {
		mustExec(t, db, fmt.Sprintf("INSERT INTO m.t VALUES (%d)", i))
	}
	after := scrape(t, s)
	// Every insert is a commit and a statement; groups and fsyncs may merge
	// commits, so they only have to move.
	for _, c := range []struct {
		name, label string
		min         float64
	}{
		{"lockstep_binlog_commits_total", "", 20},
		{"lockstep_statements_total", "insert", 20},
		{"lockstep_binlog_group_commits_total", "", 1},
		{"lockstep_binlog_group_size", "", 1},
		{"lockstep_binlog_fsync_seconds", "", 1},
		{"lockstep_binlog_fsyncs_total", "", 1},
		{"lockstep_statement_seconds", "", 20},
		{"lockstep_rows_total", "changed", 20},
		{"lockstep_connections_total", "", 0},
	} {
		b, a := value(before, c.name, c.label), value(after, c.name, c.label)
		if a-b < c.min {
			t.Fatalf("%s{%s} went from %v to %v after 20 inserts, want +%v", c.name, c.label, b, a, c.min)
		}
	}
	// A SELECT that reads and sends the 20 rows.
	if n := countRows(t, db, "SELECT COUNT(*) FROM (SELECT * FROM m.t) x"); n != 20 {
		t.Fatal(n)
	}
	rows, err := db.Query("SELECT id FROM m.t")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	last := scrape(t, s)
	if d := value(last, "lockstep_rows_total", "sent") - value(after, "lockstep_rows_total", "sent"); d < 20 {
		t.Fatalf("rows sent moved by %v after a SELECT of 20 rows", d)
	}
	if d := value(last, "lockstep_rows_total", "read") - value(after, "lockstep_rows_total", "read"); d < 20 {
		t.Fatalf("rows read moved by %v after reading 20 rows twice", d)
	}
	for _, g := range []string{"lockstep_connections", "lockstep_store_bytes", "lockstep_binlog_bytes", "process_resident_memory_bytes"} {
		if v := value(last, g, ""); v <= 0 {
			t.Fatalf("%s is %v", g, v)
		}
	}
}
