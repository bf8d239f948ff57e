package dashboard

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fixture is a registry with one metric of each kind the charts use, and a
// sampler fed at chosen instants.
type fixture struct {
	reg     *prometheus.Registry
	commits prometheus.Counter
	stmts   *prometheus.CounterVec
	fsync   prometheus.Histogram
	lag     prometheus.Gauge
	s       *Sampler
	t0      time.Time
}

func newFixture(keep int) *fixture {
	f := &fixture{reg: prometheus.NewRegistry(), t0: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	f.commits = prometheus.NewCounter(prometheus.CounterOpts{Name: "lockstep_binlog_commits_total"})
	f.stmts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockstep_statements_total"}, []string{"type"})
	f.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lockstep_binlog_fsync_seconds",
		Buckets: []float64{0.001, 0.002, 0.004, 0.008}})
	f.lag = prometheus.NewGauge(prometheus.GaugeOpts{Name: "lockstep_replication_lag_seconds"})
	ignored := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total"})
	f.reg.MustRegister(f.commits, f.stmts, f.fsync, f.lag, ignored)
	f.s = NewSampler(f.reg, keep, time.Second, DefaultKeep)
	return f
}

func (f *fixture) sampleAt(sec float64) {
	f.s.Sample(f.t0.Add(time.Duration(sec * float64(time.Second))))
}

func TestSamplerRingKeepsNewest(t *testing.T) {
	f := newFixture(3)
	for i := range 5 {
		f.commits.Add(1)
		f.sampleAt(float64(i))
	}
	ss := f.s.samples()
	if len(ss) != 3 {
		t.Fatalf("kept %d samples, want 3", len(ss))
	}
	for i, s := range ss {
		if want := float64(3 + i); s.values["lockstep_binlog_commits_total"] != want {
			t.Fatalf("sample %d: commits %v, want %v", i, s.values["lockstep_binlog_commits_total"], want)
		}
		if _, ok := s.values["other_total"]; ok {
			t.Fatal("a family DefaultKeep rejects was kept")
		}
	}
}

func TestDerivedSeries(t *testing.T) {
	f := newFixture(10)
	f.sampleAt(0)
	// Interval 1 (0 -> 2 s): 100 commits, 40 updates, 10 inserts, four
	// fsyncs of 1.5 ms and one of 6 ms, lag 3 s.
	f.commits.Add(100)
	f.stmts.WithLabelValues("update").Add(40)
	f.stmts.WithLabelValues("insert").Add(10)
	for range 4 {
		f.fsync.Observe(0.0015)
	}
	f.fsync.Observe(0.006)
	f.lag.Set(3)
	f.sampleAt(2)
	// Interval 2 (2 -> 3 s): nothing happens.
	f.sampleAt(3)
	ss := f.s.samples()

	get := func(id string) []series {
		c, ok := chartByID(id)
		if !ok {
			t.Fatalf("no chart %s", id)
		}
		return c.derive(ss)
	}
	commits := get("commits")[0]
	if commits.Legend != "transactions" || len(commits.Points) != 2 || commits.Points[0].Y != 50 || commits.Points[1].Y != 0 {
		t.Fatalf("commit rate: %+v", commits)
	}
	if commits.Points[0].X != -1 || commits.Points[1].X != 0 {
		t.Fatalf("time axis: %+v", commits.Points)
	}
	stmts := get("statements")
	if len(stmts) != 2 || stmts[0].Legend != "insert" || stmts[1].Legend != "update" {
		t.Fatalf("statement lines: %+v", stmts)
	}
	if stmts[0].Points[0].Y != 5 || stmts[1].Points[0].Y != 20 {
		t.Fatalf("statement rates: %+v", stmts)
	}
	fsync := get("fsync")
	mean, p99 := fsync[0].Points, fsync[1].Points
	if want := (4*1.5 + 6) / 5; math.Abs(mean[0].Y-want) > 1e-9 {
		t.Fatalf("fsync mean %v ms, want %v", mean[0].Y, want)
	}
	if mean[1].Y != 0 {
		t.Fatalf("fsync mean with no fsyncs: %v", mean[1].Y)
	}
	// p99 of 5 observations: rank 4.95 falls in the (4 ms, 8 ms] bucket,
	// which holds one; linear interpolation gives 4 + 4*0.95.
	if want := 4 + 4*0.95; math.Abs(p99[0].Y-want) > 1e-9 {
		t.Fatalf("fsync p99 %v ms, want %v", p99[0].Y, want)
	}
	lag := get("replica_lag")[0]
	if lag.Points[0].Y != 3 || lag.Points[1].Y != 3 {
		t.Fatalf("lag gauge: %+v", lag)
	}
}

func TestCounterResetGivesNoPoint(t *testing.T) {
	a := sample{at: time.Unix(0, 0), values: map[string]float64{"c": 10}}
	b := sample{at: time.Unix(1, 0), values: map[string]float64{"c": 2}}
	if _, ok := (line{metric: "c", how: rate}).value(a, b, nil); ok {
		t.Fatal("a counter that went down gave a rate")
	}
}

func TestVisibility(t *testing.T) {
	c, _ := chartByID("replica_rate")
	off := []sample{{values: map[string]float64{`lockstep_replication_thread_running{thread="io"}`: 0}}}
	on := []sample{{values: map[string]float64{`lockstep_replication_thread_running{thread="io"}`: 1}}}
	if c.visible(off) || !c.visible(on) {
		t.Fatal("replica chart visibility does not follow the IO thread")
	}
	r, _ := chartByID("replicas")
	if !r.visible([]sample{{values: map[string]float64{`lockstep_replica_connected_seconds{server_id="2"}`: 5}}}) {
		t.Fatal("replicas chart hidden with a replica connected")
	}
}

func TestKeyRoundTrip(t *testing.T) {
	name, labels := parseKey(`m_bucket{le="0.5",type="update"}`)
	if name != "m_bucket" || labels["le"] != "0.5" || labels["type"] != "update" {
		t.Fatalf("parseKey: %s %v", name, labels)
	}
}

func TestHandlers(t *testing.T) {
	f := newFixture(300)
	f.sampleAt(0)
	f.commits.Add(10)
	f.sampleAt(1)
	mux := http.NewServeMux()
	New(f.s, func() Topology {
		return Topology{ServerID: 7, Replicas: []ReplicaLink{{ServerID: 8, Sent: "binlog.000001:4"}}}
	}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp, b.String()
	}

	resp, body := get("/")
	if resp.StatusCode != 200 || !strings.Contains(body, "/dashboard/assets/app.js") {
		t.Fatalf("page: %d %.200s", resp.StatusCode, body)
	}
	for _, asset := range []string{"/dashboard/assets/app.js", "/dashboard/assets/style.css"} {
		if resp, _ := get(asset); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", asset, resp.StatusCode)
		}
	}
	if resp, _ := get("/nothing-here"); resp.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}

	_, body = get("/dashboard/state.json")
	var st stateJSON
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("state.json: %v\n%s", err, body)
	}
	if st.Samples != 2 || st.Topology.ServerID != 7 || len(st.Topology.Replicas) != 1 {
		t.Fatalf("state: %+v", st)
	}
	if st.Headline[0].Label != "commits/s" || st.Headline[0].Value == nil || *st.Headline[0].Value != 10 {
		t.Fatalf("headline: %+v", st.Headline)
	}
	ids := map[string]bool{}
	for _, c := range st.Charts {
		ids[c.ID] = true
	}
	if !ids["commits"] || ids["replica_rate"] {
		t.Fatalf("visible charts: %+v", st.Charts)
	}

	resp, body = get("/dashboard/chart/commits.svg?w=500&h=200")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("svg: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		XMLName xml.Name
		ViewBox string `xml:"viewBox,attr"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("chart is not SVG: %v", err)
	}
	if doc.ViewBox != "0 0 375 150" { // CSS pixels to points
		t.Fatalf("viewBox %q", doc.ViewBox)
	}
	if !strings.Contains(body, ">Commits<") || !strings.Contains(body, ">transactions<") {
		t.Fatal("chart lacks its title or legend")
	}

	_, body = get("/dashboard/chart/commits.json")
	var lines []series
	if err := json.Unmarshal([]byte(body), &lines); err != nil || len(lines) != 2 || lines[0].Points[0].Y != 10 {
		t.Fatalf("chart json: %v %s", err, body)
	}
	for _, bad := range []string{"/dashboard/chart/nope.svg", "/dashboard/chart/commits.png"} {
		if resp, _ := get(bad); resp.StatusCode != 404 {
			t.Fatalf("%s: %d", bad, resp.StatusCode)
		}
	}
	// Absurd sizes are clamped, not rendered.
	if resp, body := get("/dashboard/chart/cpu.svg?w=1e12&h=NaN"); resp.StatusCode != 200 || !strings.Contains(body, `viewBox="0 0 1500 195"`) {
		t.Fatalf("clamped size: %d %.300s", resp.StatusCode, body)
	}
}

func TestShownWindow(t *testing.T) {
	at := func(s float64) sample {
		return sample{at: time.Unix(0, 0).Add(time.Duration(s * float64(time.Second)))}
	}
	for _, c := range []struct {
		ss   []sample
		want time.Duration
	}{
		{nil, time.Minute},
		{[]sample{at(0), at(5)}, time.Minute},
		{[]sample{at(0), at(61)}, 2 * time.Minute},
		{[]sample{at(0), at(299)}, 5 * time.Minute},
		{[]sample{at(0), at(1000)}, 5 * time.Minute},
	} {
		if got := shownWindow(c.ss, 5*time.Minute); got != c.want {
			t.Fatalf("span %v: window %v, want %v", c.ss, got, c.want)
		}
	}
}

// TestTimeRanges: a window the fine samples cover is drawn from them; a
// longer one from the coarse ring, up to its span, ending with the newest
// sample; state.json says which window it drew.
func TestTimeRanges(t *testing.T) {
	f := newFixture(60) // one minute fine, twelve minutes coarse
	for i := range 600 {
		f.commits.Add(1)
		f.sampleAt(float64(i))
	}
	span := func(ss []sample) time.Duration { return ss[len(ss)-1].at.Sub(ss[0].at) }
	if ss := f.s.samplesIn(30 * time.Second); len(ss) != 31 || span(ss) != 30*time.Second {
		t.Fatalf("30 s: %d samples over %v, want 31 over 30s", len(ss), span(ss))
	}
	ss := f.s.samplesIn(5 * time.Minute)
	if span(ss) < 4*time.Minute || span(ss) > 5*time.Minute || len(ss) > 5*60/coarseEvery+2 {
		t.Fatalf("5 min: %d samples over %v", len(ss), span(ss))
	}
	if last := ss[len(ss)-1].values["lockstep_binlog_commits_total"]; last != 600 {
		t.Fatalf("5 min: ends at commits %v, want the newest (600)", last)
	}
	fine, coarse := f.s.Windows()
	if fine != time.Minute || coarse != 12*time.Minute {
		t.Fatalf("windows %v and %v", fine, coarse)
	}
	d := New(f.s, nil)
	mux := http.NewServeMux()
	d.Register(mux)
	for q, want := range map[string]float64{"": 60, "?range=300": 300, "?range=99999": 720, "?range=x": 60} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/state.json"+q, nil))
		var st stateJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.WindowSec != want {
			t.Fatalf("state.json%s: window %v (%v), want %v", q, st.WindowSec, err, want)
		}
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/chart/commits.svg?range=600", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "min") {
		t.Fatalf("a ten-minute chart: %d, minute labels %v", rec.Code, strings.Contains(rec.Body.String(), "min"))
	}
}
