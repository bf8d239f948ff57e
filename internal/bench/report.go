package bench

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartSpec draws one chart from an experiment's rows: one line per
// series name, x by threads unless x is set.
type chartSpec struct {
	file, title, xLabel, yLabel string
	filter                      func(Row) bool
	x                           func(Row) float64
	series                      func(Row) []seriesPoint
}

type seriesPoint struct {
	name string
	y    float64
}

func init() { plot.DefaultFont.Variant = "Sans" }

// settingOf is a series name without its server.
func settingOf(name string) string {
	for _, server := range []string{"lockstep ", "mariadb ", "galera "} {
		name = strings.TrimPrefix(name, server)
	}
	return name
}

var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255}, color.RGBA{213, 94, 0, 255},
	color.RGBA{0, 0, 0, 255}, color.RGBA{240, 228, 66, 255},
}

// draw writes the chart as PNG and SVG into dir.
func (c chartSpec) draw(rows []Row, dir string) error {
	type xy struct{ x, y float64 }
	lines := map[string][]xy{}
	var order []string
	for _, r := range rows {
		if c.filter != nil && !c.filter(r) {
			continue
		}
		x := float64(r.Threads)
		if c.x != nil {
			x = c.x(r)
		}
		for _, sp := range c.series(r) {
			if _, ok := lines[sp.name]; !ok {
				order = append(order, sp.name)
			}
			lines[sp.name] = append(lines[sp.name], xy{x, sp.y})
		}
	}
	if len(order) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xLabel
	p.Y.Label.Text = c.yLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	xs := map[float64]bool{}
	// A setting keeps its colour across servers; MariaDB's (and Galera's)
	// lines are dashed.
	colours := map[string]color.Color{}
	for _, name := range order {
		k := settingOf(name)
		if _, ok := colours[k]; !ok {
			colours[k] = palette[len(colours)%len(palette)]
		}
	}
	for _, name := range order {
		pts := lines[name]
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].x < pts[b].x })
		data := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			data[j].X, data[j].Y = pt.x, pt.y
			xs[pt.x] = true
			p.Y.Max = max(p.Y.Max, pt.y*1.15)
		}
		l, s, err := plotter.NewLinePoints(data)
		if err != nil {
			return err
		}
		l.Color, s.Color = colours[settingOf(name)], colours[settingOf(name)]
		l.Width = vg.Points(1.5)
		if strings.HasPrefix(name, "mariadb") || strings.HasPrefix(name, "galera") {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			s.Shape = draw.BoxGlyph{}
		} else {
			s.Shape = draw.CircleGlyph{}
		}
		p.Add(l, s)
		p.Legend.Add(name, l, s)
	}
	var ticks []plot.Tick
	for x := range xs {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if c.x == nil && !xs[0] { // threads: 1, 4, 16, 64 spread evenly
		p.X.Scale = plot.LogScale{}
		lo, hi := math.Inf(1), math.Inf(-1)
		for x := range xs {
			lo, hi = min(lo, x), max(hi, x)
		}
		p.X.Min, p.X.Max = lo/1.2, hi*1.2
	}
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	// Room above the data for the legend, a line per series.
	p.Y.Max *= 1 + 0.07*float64(len(order))
	p.Legend.Left = true
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, c.file+"."+ext)); err != nil {
			return err
		}
	}
	return nil
}

var columns = []string{"server", "config", "x", "threads", "tps", "qps", "p95_ms", "errors", "cpu_us_per_trx",
	"avg_group", "fsyncs_per_trx", "replica_rate", "behind_at_end", "catch_up_s", "fc_paused"}

func (r Row) cells() []string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	fsync, group := "", ""
	if r.AvgGroup > 0 {
		group = f(r.AvgGroup, 2)
	}
	if r.FsyncsPerTrx >= 0 {
		fsync = f(r.FsyncsPerTrx, 2)
	}
	paused := ""
	if r.FCPaused >= 0 {
		paused = f(r.FCPaused, 3)
	}
	return []string{r.Server, r.Config, f(r.X, -1), strconv.Itoa(r.Threads), f(r.TPS, 1), f(r.QPS, 1), f(r.P95ms, 2),
		strconv.FormatUint(r.Errors, 10), f(r.CPUPerTrxUs, 1), group, fsync,
		f(r.ReplicaRate, 1), f(r.BehindAtEnd, 0), f(r.CatchUpSeconds, 2), paused}
}

// report writes results.csv, results.md and the charts.
func (r *runner) report(started time.Time, runErr error) error {
	dir := r.o.Out
	f, err := os.Create(filepath.Join(dir, "results.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(columns)
	for _, row := range r.rows {
		w.Write(row.cells())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var charts []string
	for _, c := range r.exp.charts {
		if err := c.draw(r.rows, dir); err != nil {
			return fmt.Errorf("chart %s: %w", c.file, err)
		}
		if _, err := os.Stat(filepath.Join(dir, c.file+".png")); err == nil {
			charts = append(charts, c.file)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# lockstep bench %s\n\n%s.\n\n", r.exp.name, r.exp.about)
	fmt.Fprintf(&b, "- command: `%s`\n", r.o.Command)
	fmt.Fprintf(&b, "- started %s, took %s, on %d CPUs\n", started.UTC().Format(time.RFC3339), time.Since(started).Round(time.Second), runtime.NumCPU())
	fmt.Fprintf(&b, "- load: %s `%s`, %d tables x %d rows, %v per run, uniform keys\n", r.drv.Name(), r.o.Workload, r.o.Tables, r.o.TableSize, r.o.Duration)
	for _, n := range r.notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}
	if runErr != nil {
		fmt.Fprintf(&b, "- **the experiment stopped early**: %v\n", runErr)
	}
	b.WriteString("\n")
	for _, c := range charts {
		fmt.Fprintf(&b, "![%s](%s.png)\n\n", c, c)
	}
	// The Markdown table leaves out columns with nothing to say in this
	// experiment (no sweep value, no replica); the CSV has them all.
	var keep []int
	for i := range columns {
		for _, row := range r.rows {
			if c := row.cells()[i]; c != "" && c != "0" && strings.Trim(c, "0.") != "" {
				keep = append(keep, i)
				break
			}
		}
	}
	pick := func(cells []string) string {
		var out []string
		for _, i := range keep {
			out = append(out, cells[i])
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	b.WriteString(pick(columns))
	b.WriteString("|" + strings.Repeat("---|", len(keep)) + "\n")
	for _, row := range r.rows {
		b.WriteString(pick(row.cells()))
	}
	b.WriteString(`
tps, qps, p95_ms, errors: from the load driver. cpu_us_per_trx: the primary's
utime+stime over the run per transaction. avg_group: Binlog_commits /
Binlog_group_commits (empty where not counted: a Lockstep cluster member
commits through the raft log, not the pipeline). fsyncs_per_trx: Lockstep_binlog_fsyncs per commit;
for MariaDB, Innodb_data_fsyncs plus one binlog fsync per group under
sync_binlog=1. replica_rate: the replica's Binlog_commits per second during
the run. behind_at_end: primary commits minus replica commits over the run.
catch_up_s: from the end of the run until a marker row written on the
primary was visible on the replica. For a cluster, cpu_us_per_trx is all
its nodes' CPU, x the applier threads (wsrep_slave_threads), and
fc_paused the largest node's fraction of the run during which flow
control held commits back (wsrep_flow_control_paused_ns; for Galera,
replication was paused).
`)
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644)
}
