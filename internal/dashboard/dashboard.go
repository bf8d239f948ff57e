package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Topology is this server's place in replication, as the page draws it.
type Topology struct {
	ServerID     uint32        `json:"server_id"`
	UUID         string        `json:"server_uuid"`
	Version      string        `json:"version"`
	Address      string        `json:"address"`
	ReadOnly     bool          `json:"read_only"`
	GTIDExecuted string        `json:"gtid_executed"`
	Source       *SourceLink   `json:"source,omitempty"`
	Replicas     []ReplicaLink `json:"replicas"`
}

// SourceLink is the source this server replicates from.
type SourceLink struct {
	Host           string `json:"host"`
	Port           int    `json:"port"`
	IORunning      string `json:"io_running"` // Yes, Connecting, No
	SQLRunning     bool   `json:"sql_running"`
	IOState        string `json:"io_state"`
	SQLState       string `json:"sql_state"`
	SecondsBehind  int64  `json:"seconds_behind"` // -1: NULL
	LastError      string `json:"last_error,omitempty"`
	RetrievedGTIDs string `json:"retrieved_gtid_set"`
	ExecutedGTIDs  string `json:"executed_gtid_set"`
}

// ReplicaLink is one replica connected to this server.
type ReplicaLink struct {
	ServerID         uint32  `json:"server_id"`
	Host             string  `json:"host"`
	Port             int     `json:"port"`
	Flavor           string  `json:"flavor"`
	SemiSync         bool    `json:"semi_sync"`
	Sent             string  `json:"sent"`
	Acknowledged     string  `json:"acknowledged,omitempty"`
	BehindBytes      int64   `json:"behind_bytes"`
	ConnectedSeconds float64 `json:"connected_seconds"`
	// Applying is what a Lockstep replica last reported: "yes" (its SQL
	// thread runs, ApplyLagSeconds behind its source), "no" (stopped), or
	// "" (not known: another server, or no recent report).
	Applying        string  `json:"applying,omitempty"`
	ApplyLagSeconds float64 `json:"apply_lag_seconds"`
}

// Dashboard serves the page, its state and its charts.
type Dashboard struct {
	s        *Sampler
	topology func() Topology
}

// New serves s's samples and the topology function's answers.
func New(s *Sampler, topology func() Topology) *Dashboard {
	return &Dashboard{s: s, topology: topology}
}

// Register adds the dashboard's routes to mux: the page at "/" and its
// data under /dashboard/.
func (d *Dashboard) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /dashboard/assets/", http.StripPrefix("/dashboard/assets/", files))
	mux.HandleFunc("GET /dashboard/state.json", d.state)
	mux.HandleFunc("GET /dashboard/chart/{file}", d.chart)
}

// headline numbers shown above the charts: the newest interval's value of
// a chart's line.
var headlines = []struct {
	label, chart string
	line         int
	format       string
}{
	{"commits/s", "commits", 0, "%.0f"},
	{"trx per group", "groupsize", 0, "%.1f"},
	{"fsync ms", "fsync", 0, "%.2f"},
	{"CPU cores", "cpu", 0, "%.2f"},
}

type stateJSON struct {
	Now       time.Time      `json:"now"`
	WindowSec float64        `json:"window_seconds"`
	Samples   int            `json:"samples"`
	Charts    []chartInfo    `json:"charts"`
	Headline  []headlineJSON `json:"headline"`
	Topology  Topology       `json:"topology"`
}

type chartInfo struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type headlineJSON struct {
	Label string   `json:"label"`
	Value *float64 `json:"value"` // null before two samples
}

func (d *Dashboard) state(w http.ResponseWriter, r *http.Request) {
	win := d.window(r)
	ss := d.s.samplesIn(win)
	st := stateJSON{Now: time.Now().UTC(), WindowSec: win.Seconds(), Samples: len(ss), Charts: []chartInfo{}}
	for _, c := range charts {
		if c.visible(ss) {
			st.Charts = append(st.Charts, chartInfo{ID: c.id, Title: c.title})
		}
	}
	// The headline is the newest second's, whatever the window.
	fine := d.s.samples()
	for _, h := range headlines {
		hj := headlineJSON{Label: h.label}
		c, _ := chartByID(h.chart)
		if n := len(fine); n >= 2 {
			l := c.lines[h.line]
			if v, ok := l.value(fine[n-2], fine[n-1], l.match); ok {
				hj.Value = &v
			}
		}
		st.Headline = append(st.Headline, hj)
	}
	if d.topology != nil {
		st.Topology = d.topology()
	}
	if st.Topology.Replicas == nil {
		st.Topology.Replicas = []ReplicaLink{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(st)
}

// window is the span the page asked for (query range, in seconds; at
// most the coarse samples' span), by default the fine samples' span.
func (d *Dashboard) window(r *http.Request) time.Duration {
	fine, coarse := d.s.Windows()
	secs, err := strconv.Atoi(r.URL.Query().Get("range"))
	if err != nil || secs <= 0 {
		return fine
	}
	return min(time.Duration(secs)*time.Second, coarse)
}

// chart serves /dashboard/chart/{id}.svg (query w and h: size in CSS
// pixels) and /dashboard/chart/{id}.json (the derived points), over the
// window of query range (seconds).
func (d *Dashboard) chart(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	id, ext, _ := strings.Cut(file, ".")
	c, ok := chartByID(id)
	if !ok || (ext != "svg" && ext != "json") {
		http.NotFound(w, r)
		return
	}
	win := d.window(r)
	ss := d.s.samplesIn(win)
	lines := c.derive(ss)
	w.Header().Set("Cache-Control", "no-store")
	if ext == "json" {
		if lines == nil {
			lines = []series{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(lines)
		return
	}
	width := dimension(r.URL.Query().Get("w"), 640)
	height := dimension(r.URL.Query().Get("h"), 260)
	svg, err := c.render(lines, shownWindow(ss, win), width, height)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(svg)
}

// shownWindow is the time axis' span: the samples' span rounded up to a
// minute, so a server up for seconds does not draw a line squeezed against
// the right edge of a five-minute axis.
func shownWindow(ss []sample, full time.Duration) time.Duration {
	if len(ss) < 2 {
		return time.Minute
	}
	span := ss[len(ss)-1].at.Sub(ss[0].at)
	return min(full, (span + time.Minute - 1).Truncate(time.Minute))
}

// dimension parses a size in pixels, keeping it within sane bounds.
func dimension(s string, def float64) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v {
		return def
	}
	return min(max(v, 160), 2000)
}
