package dashboard

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// How a line is derived from two consecutive samples a and b.
type derive int

const (
	rate     derive = iota // (b - a) / seconds, for counters
	gauge                  // b as it is
	mean                   // Δsum / Δcount of a histogram: the mean of what it observed in the interval
	quantile               // a quantile of what a histogram observed in the interval
)

// line is one plotted series, or one per value of the label each.
type line struct {
	legend string            // "{v}" is replaced by the each label's value
	metric string            // metric (histogram: family) name
	match  map[string]string // labels a series must have
	each   string            // plot one line per value of this label
	how    derive
	q      float64 // for quantile
	scale  float64 // multiplies the value (0 means 1)
}

// chart is one panel of the dashboard.
type chart struct {
	id, title, unit string
	lines           []line
	// showIf, when set, names series of which one must have been non-zero
	// in the window for the chart to show (replica panels on a server that
	// is not a replica stay hidden).
	showIf []string
}

// charts are the dashboard's panels, in page order.
var charts = []chart{
	{id: "commits", title: "Commits", unit: "per second", lines: []line{
		{legend: "transactions", metric: "lockstep_binlog_commits_total", how: rate},
		{legend: "commit groups", metric: "lockstep_binlog_group_commits_total", how: rate},
	}},
	{id: "cluster_commits", title: "Cluster: commits by member", unit: "per second", lines: []line{
		{legend: "member {v}", metric: "lockstep_cluster_member_commits_total", each: "member", how: rate},
		{legend: "cert failures, member {v}", metric: "lockstep_cluster_member_cert_failures_total", each: "member", how: rate},
	}, showIf: []string{"lockstep_cluster_term"}},
	{id: "cluster_queue", title: "Cluster: apply lag by member", unit: "log entries the leader committed, not yet applied", lines: []line{
		{legend: "member {v}", metric: "lockstep_cluster_member_apply_lag_entries", each: "member", how: gauge},
	}, showIf: []string{"lockstep_cluster_term"}},
	{id: "cluster_flow", title: "Cluster: flow control on this member", unit: "fraction of the time commits were held back / entries", lines: []line{
		{legend: "commits held back (fraction of time)", metric: "lockstep_cluster_flow_control_paused_seconds_total", how: rate},
		{legend: "apply queue here", metric: "lockstep_cluster_apply_queue", how: gauge},
		{legend: "desynced", metric: "lockstep_cluster_desynced", how: gauge},
	}, showIf: []string{"lockstep_cluster_term"}},
	{id: "cluster_members", title: "Cluster: members up and leader", unit: "members / node id", lines: []line{
		{legend: "members up", metric: "lockstep_cluster_members_up", how: gauge},
		{legend: "leader", metric: "lockstep_cluster_leader", how: gauge},
	}, showIf: []string{"lockstep_cluster_term"}},
	{id: "replica_rate", title: "Replica: source rate and apply rate", unit: "transactions per second", lines: []line{
		{legend: "received from source", metric: "lockstep_applier_transactions_total", match: map[string]string{"result": "retrieved"}, how: rate},
		{legend: "applied", metric: "lockstep_applier_transactions_total", match: map[string]string{"result": "applied"}, how: rate},
	}, showIf: []string{`lockstep_replication_thread_running{thread="io"}`, `lockstep_replication_thread_running{thread="sql"}`}},
	{id: "replica_lag", title: "Replica lag", unit: "seconds (Seconds_Behind_Source)", lines: []line{
		{legend: "lag", metric: "lockstep_replication_lag_seconds", how: gauge},
	}, showIf: []string{`lockstep_replication_thread_running{thread="io"}`, `lockstep_replication_thread_running{thread="sql"}`}},
	{id: "replica_queue", title: "Replica apply queue", unit: "transactions read, not yet applied", lines: []line{
		{legend: "queued", metric: "lockstep_applier_queue_transactions", how: gauge},
	}, showIf: []string{`lockstep_replication_thread_running{thread="io"}`, `lockstep_replication_thread_running{thread="sql"}`}},
	{id: "replicas", title: "Connected replicas: binlog not yet sent", unit: "bytes", lines: []line{
		{legend: "replica {v}", metric: "lockstep_replica_behind_bytes", each: "server_id", how: gauge},
	}, showIf: []string{"lockstep_replica_connected_seconds"}},
	{id: "replicas_lag", title: "Connected replicas: apply lag", unit: "seconds behind its source", lines: []line{
		{legend: "replica {v}", metric: "lockstep_replica_apply_lag_seconds", each: "server_id", how: gauge},
	}, showIf: []string{"lockstep_replica_apply_lag_seconds"}},
	{id: "semisync", title: "Semi-sync acknowledgement wait", unit: "ms", lines: []line{
		{legend: "mean", metric: "lockstep_semisync_wait_seconds", how: mean, scale: 1000},
		{legend: "p99", metric: "lockstep_semisync_wait_seconds", how: quantile, q: 0.99, scale: 1000},
	}, showIf: []string{"lockstep_semisync_enabled"}},
	{id: "groupsize", title: "Commit group size", unit: "transactions per group", lines: []line{
		{legend: "mean", metric: "lockstep_binlog_group_size", how: mean},
		{legend: "p99", metric: "lockstep_binlog_group_size", how: quantile, q: 0.99},
	}},
	{id: "fsync", title: "Binlog fsync latency", unit: "ms", lines: []line{
		{legend: "mean", metric: "lockstep_binlog_fsync_seconds", how: mean, scale: 1000},
		{legend: "p99", metric: "lockstep_binlog_fsync_seconds", how: quantile, q: 0.99, scale: 1000},
	}},
	{id: "statements", title: "Statements", unit: "per second", lines: []line{
		{legend: "{v}", metric: "lockstep_statements_total", each: "type", how: rate},
	}},
	{id: "latency", title: "Statement latency", unit: "ms", lines: []line{
		{legend: "mean", metric: "lockstep_statement_seconds", how: mean, scale: 1000},
		{legend: "p99", metric: "lockstep_statement_seconds", how: quantile, q: 0.99, scale: 1000},
	}, showIf: []string{"lockstep_statement_seconds_count"}},
	{id: "rows", title: "Rows", unit: "per second", lines: []line{
		{legend: "{v}", metric: "lockstep_rows_total", each: "rows", how: rate},
	}, showIf: []string{`lockstep_rows_total{rows="read"}`, `lockstep_rows_total{rows="sent"}`, `lockstep_rows_total{rows="changed"}`}},
	{id: "connections", title: "Client connections", unit: "open / new per second", lines: []line{
		{legend: "open", metric: "lockstep_connections", how: gauge},
		{legend: "new per second", metric: "lockstep_connections_total", how: rate},
	}},
	{id: "locks", title: "Row locks", unit: "per second", lines: []line{
		{legend: "lock waits", metric: "lockstep_row_lock_waits_total", how: rate},
		{legend: "deadlocks", metric: "lockstep_deadlocks_total", how: rate},
		{legend: "wait timeouts", metric: "lockstep_lock_wait_timeouts_total", how: rate},
	}},
	{id: "cpu", title: "Server CPU", unit: "cores busy", lines: []line{
		{legend: "cpu", metric: "process_cpu_seconds_total", how: rate},
	}},
	{id: "space", title: "Memory and disk", unit: "MiB", lines: []line{
		{legend: "memory (resident)", metric: "process_resident_memory_bytes", how: gauge, scale: 1.0 / (1 << 20)},
		{legend: "store on disk", metric: "lockstep_store_bytes", how: gauge, scale: 1.0 / (1 << 20)},
		{legend: "binlog on disk", metric: "lockstep_binlog_bytes", how: gauge, scale: 1.0 / (1 << 20)},
	}},
}

func chartByID(id string) (chart, bool) {
	for _, c := range charts {
		if c.id == id {
			return c, true
		}
	}
	return chart{}, false
}

// point is one value of a series, at seconds relative to the newest sample
// (so 0 is now and earlier points are negative).
type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// series is one derived line.
type series struct {
	Legend string  `json:"legend"`
	Points []point `json:"points"`
}

// visible reports whether c shows, given the window of samples.
func (c chart) visible(ss []sample) bool {
	if len(c.showIf) == 0 {
		return true
	}
	for _, s := range ss {
		for k, v := range s.values {
			for _, want := range c.showIf {
				if (k == want || strings.HasPrefix(k, want+"{")) && v != 0 {
					return true
				}
			}
		}
	}
	return false
}

// derive computes c's lines over the window.
func (c chart) derive(ss []sample) []series {
	var out []series
	for _, l := range c.lines {
		for _, inst := range l.instances(ss) {
			s := series{Legend: inst.legend}
			for i := 1; i < len(ss); i++ {
				if y, ok := l.value(ss[i-1], ss[i], inst.labels); ok {
					s.Points = append(s.Points, point{X: ss[i].at.Sub(ss[len(ss)-1].at).Seconds(), Y: y})
				}
			}
			out = append(out, s)
		}
	}
	return out
}

type instance struct {
	legend string
	labels map[string]string // the labels a series must have
}

// instances expands l into one instance per value of its each label seen
// in the window (sorted), or returns l alone.
func (l line) instances(ss []sample) []instance {
	if l.each == "" {
		return []instance{{legend: l.legend, labels: l.match}}
	}
	family := l.metric
	if l.how == mean || l.how == quantile {
		family += "_count"
	}
	seen := map[string]bool{}
	for _, s := range ss {
		for k := range s.values {
			if !strings.HasPrefix(k, family+"{") {
				continue
			}
			name, labels := parseKey(k)
			if name == family && matches(labels, l.match) {
				if v, ok := labels[l.each]; ok {
					seen[v] = true
				}
			}
		}
	}
	vals := make([]string, 0, len(seen))
	for v := range seen {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	out := make([]instance, 0, len(vals))
	for _, v := range vals {
		labels := map[string]string{l.each: v}
		for k, w := range l.match {
			labels[k] = w
		}
		out = append(out, instance{legend: strings.ReplaceAll(l.legend, "{v}", v), labels: labels})
	}
	return out
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// find sums the series of name whose labels include want (a metric with
// more labels than the line names, such as a per-replica gauge read without
// its server_id, adds up).
func find(s sample, name string, want map[string]string) (float64, bool) {
	if len(want) == 0 {
		if v, ok := s.values[name]; ok {
			return v, true
		}
	}
	var sum float64
	found := false
	for k, v := range s.values {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		if _, labels := parseKey(k); matches(labels, want) {
			sum += v
			found = true
		}
	}
	return sum, found
}

// value is l's value over the interval from a to b.
func (l line) value(a, b sample, labels map[string]string) (float64, bool) {
	scale := l.scale
	if scale == 0 {
		scale = 1
	}
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return 0, false
	}
	switch l.how {
	case gauge:
		v, ok := find(b, l.metric, labels)
		return v * scale, ok
	case rate:
		// A series absent from a was created in the interval (a CounterVec
		// child appears on its first increment), so it counts from 0.
		va, _ := find(a, l.metric, labels)
		vb, okb := find(b, l.metric, labels)
		if !okb || vb < va { // a reset (restart) gives no point
			return 0, false
		}
		return (vb - va) / dt * scale, true
	case mean:
		sa, _ := find(a, l.metric+"_sum", labels)
		sb, okS := find(b, l.metric+"_sum", labels)
		ca, _ := find(a, l.metric+"_count", labels)
		cb, okC := find(b, l.metric+"_count", labels)
		if !okS || !okC || cb <= ca {
			return 0, okS && okC && cb == ca // nothing observed: 0, still a point
		}
		return (sb - sa) / (cb - ca) * scale, true
	case quantile:
		return l.quantile(a, b, labels, scale)
	}
	return 0, false
}

// quantile estimates l.q of the observations between a and b from bucket
// count deltas, interpolating linearly inside the bucket as Prometheus'
// histogram_quantile does.
func (l line) quantile(a, b sample, labels map[string]string, scale float64) (float64, bool) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := l.metric + "_bucket{"
	for k, vb := range b.values {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		_, kl := parseKey(k)
		if !matches(kl, labels) {
			continue
		}
		le := math.Inf(1)
		if kl["le"] != "+Inf" {
			fmt.Sscan(kl["le"], &le)
		}
		bs = append(bs, bucket{le: le, n: vb - a.values[k]})
	}
	if len(bs) == 0 {
		return 0, false
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	total := bs[len(bs)-1].n
	if total <= 0 {
		return 0, true
	}
	rank := l.q * total
	lower, below := 0.0, 0.0
	for _, bk := range bs {
		if bk.n >= rank {
			if math.IsInf(bk.le, 1) {
				return lower * scale, true // beyond the last bound: report the bound
			}
			inBucket := bk.n - below
			if inBucket <= 0 {
				return bk.le * scale, true
			}
			return (lower + (bk.le-lower)*(rank-below)/inBucket) * scale, true
		}
		lower, below = bk.le, bk.n
	}
	return lower * scale, true
}

func init() {
	// Liberation Sans (embedded in gonum/plot) reads better on screens than
	// its default serif.
	plot.DefaultFont.Variant = "Sans"
}

// palette is colour-blind-safe (Okabe-Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255}, color.RGBA{213, 94, 0, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

// render draws c's lines as SVG, width and height in CSS pixels.
func (c chart) render(lines []series, window time.Duration, width, height float64) ([]byte, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.unit
	p.X.Label.Text = "ago"
	p.X.Min, p.X.Max = -window.Seconds(), 0
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, s := range lines {
		for _, pt := range s.Points {
			p.Y.Max = max(p.Y.Max, pt.Y*1.1)
		}
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j].X, xys[j].Y = pt.X, pt.Y
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Legend, l)
	}
	p.X.Tick.Marker = secondsTicks{}
	// gonum/plot measures in points (1/72 in); a CSS pixel is 0.75 pt.
	canvas := vgsvg.New(vg.Length(width*0.75), vg.Length(height*0.75))
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// secondsTicks labels the time axis at most ten times, at a round step:
// seconds on short windows, minutes on long ones.
type secondsTicks struct{}

func (secondsTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 600.0
	for _, s := range []float64{10, 30, 60, 120, 300} {
		if (hi-lo)/s <= 10 {
			step = s
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		label := fmt.Sprintf("%.0f s", -v)
		if step >= 60 {
			label = fmt.Sprintf("%.0f min", -v/60)
		}
		if v == 0 {
			label = "now"
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
	}
	return ts
}
