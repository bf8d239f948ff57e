package bench

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSysbench(t *testing.T) {
	out, err := os.ReadFile("testdata/sysbench-run.txt")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseSysbench(out)
	if err != nil {
		t.Fatal(err)
	}
	want := load{TPS: 2263.29, QPS: 2263.29, P95ms: 1.32, Errors: 0, Elapsed: 2001500 * time.Microsecond}
	if l != want {
		t.Fatalf("parsed %+v, want %+v", l, want)
	}
	if _, err := parseSysbench([]byte("FATAL: unable to connect")); err == nil {
		t.Fatal("a report without transactions parsed")
	}
}

func TestIntList(t *testing.T) {
	got, err := IntList(" 1, 4,16 ,")
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 16 {
		t.Fatalf("IntList: %v %v", got, err)
	}
	for _, bad := range []string{"1,x", "-4", "1.5"} {
		if _, err := IntList(bad); err == nil {
			t.Fatalf("IntList(%q) accepted", bad)
		}
	}
}

func TestPickDriver(t *testing.T) {
	if d, err := pickDriver("builtin"); err != nil || d.Name() != "built-in" {
		t.Fatalf("builtin: %v %v", d, err)
	}
	if _, err := pickDriver("jmeter"); err == nil {
		t.Fatal("an unknown driver was accepted")
	}
}

func TestUnknownExperiment(t *testing.T) {
	err := Run(t.Context(), "nope", Options{Threads: []int{1}, Tables: 1, TableSize: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "replica-lag") {
		t.Fatalf("unknown experiment: %v", err)
	}
}

// TestReport writes a report from made-up rows and checks the files: the
// CSV has every column and row, the Markdown table leaves out the columns
// that are empty in this experiment, and the charts are real PNG and SVG.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	e := experiments[0] // replica-lag: two charts
	r := &runner{o: Options{Out: dir, Workload: "oltp_update_index", Tables: 1, TableSize: 10, Duration: time.Second, Command: "lockstep bench replica-lag"},
		drv: builtinDriver{}, exp: e}
	for _, th := range []int{1, 4, 16} {
		for _, s := range []string{"lockstep", "mariadb"} {
			r.rows = append(r.rows, Row{Server: s, Config: "single-threaded", Threads: th, TPS: float64(1000 * th),
				ReplicaRate: 900, BehindAtEnd: float64(100 * th), FsyncsPerTrx: -1})
		}
	}
	if err := r.report(time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 7 || len(recs[0]) != len(columns) {
		t.Fatalf("csv: %d records, %v", len(recs), err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	header := ""
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "| server") {
			header = l
		}
	}
	for _, want := range []string{"tps", "replica_rate", "behind_at_end"} {
		if !strings.Contains(header, " "+want+" ") {
			t.Fatalf("markdown header lacks %s: %s", want, header)
		}
	}
	for _, empty := range []string{" x ", "catch_up_s", "fsyncs_per_trx"} {
		if strings.Contains(header, empty) {
			t.Fatalf("markdown header keeps the empty column %q: %s", empty, header)
		}
	}
	for _, c := range e.charts {
		if !strings.Contains(string(md), "]("+c.file+".png)") {
			t.Fatalf("results.md does not show %s", c.file)
		}
		b, err := os.ReadFile(filepath.Join(dir, c.file+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() < 400 {
			t.Fatalf("%s.png: %v", c.file, err)
		}
		svg, err := os.ReadFile(filepath.Join(dir, c.file+".svg"))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Fatalf("%s.svg: %v", c.file, err)
		}
	}
}

func TestReplicaBroken(t *testing.T) {
	for _, tc := range []struct {
		st      map[string]string
		failing time.Duration
		want    string
	}{
		{map[string]string{"Slave_SQL_Running": "Yes", "Last_SQL_Errno": "0", "Last_IO_Errno": "0"}, 0, ""},
		{map[string]string{"Slave_SQL_Running": "No", "Last_SQL_Errno": "1062", "Last_SQL_Error": "dup"}, 0, "SQL thread error 1062: dup"},
		{map[string]string{"Slave_SQL_Running": "No", "Last_SQL_Errno": "0"}, 0, "SQL thread is not running"},
		// Connection errors are retried for a while before they count.
		{map[string]string{"Slave_SQL_Running": "Yes", "Last_IO_Errno": "2003", "Last_IO_Error": "refused"}, 5 * time.Second, ""},
		{map[string]string{"Slave_SQL_Running": "Yes", "Last_IO_Errno": "2003", "Last_IO_Error": "refused"}, 2 * time.Minute, "I/O thread error 2003 for 2m0s: refused"},
	} {
		err := replicaBroken(tc.st, tc.failing)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("replicaBroken(%v, %v) = %q, want %q", tc.st, tc.failing, got, tc.want)
		}
	}
}
