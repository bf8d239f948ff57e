// Package dashboard serves the live dashboard at "/": the server's own
// picture of itself, with nothing to install and nothing fetched from the
// network.
//
// The data path is one-way and cheap. A Sampler gathers the server's
// Prometheus registry once a second and keeps the last minutes of samples
// in a ring, and a longer span at a coarser step in a second one; nothing on the commit path knows the dashboard exists,
// and a server nobody watches pays one Gather a second. Charts (charts.go)
// are derived from consecutive samples when a browser asks for them: rates
// of counters, interval means and quantiles of histograms, gauges as they
// are. They are drawn server-side as SVG with gonum/plot, so the page
// (assets/, embedded in the binary) holds no chart code of its own: it asks
// for /dashboard/state.json and the charts' SVGs once a second and swaps
// them in.
//
// The dashboard knows nothing of the packages that produce the metrics:
// it reads metric names, and the server hands it a Topology function for
// the replication links it draws.
package dashboard

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// sample is one Gather: the value of every kept series at one instant.
// Series are keyed like Prometheus' text format, name{label="value",...}
// with labels sorted; a histogram contributes name_sum, name_count and one
// name_bucket{le="..."} per bucket (cumulative counts).
type sample struct {
	at     time.Time
	values map[string]float64
}

// Sampler keeps the last samples of a registry in a ring, and every
// coarseEvery-th of them in a second ring as long, which covers
// coarseEvery times the time at a coarser step (the longer windows of the
// page's time-range control).
type Sampler struct {
	g     prometheus.Gatherer
	keep  func(family string) bool
	every time.Duration

	mu     sync.Mutex
	fine   ring
	coarse ring
	taken  int // samples taken
}

// coarseEvery is how many samples apart the coarse ring's are.
const coarseEvery = 12

// ring is a fixed number of the newest samples.
type ring struct {
	s    []sample // oldest first once full; next is the slot to overwrite
	next int
	full bool
}

func (r *ring) add(x sample) {
	r.s[r.next] = x
	r.next++
	if r.next == len(r.s) {
		r.next, r.full = 0, true
	}
}

// all returns the samples, oldest first.
func (r *ring) all() []sample {
	if !r.full {
		return append([]sample(nil), r.s[:r.next]...)
	}
	out := make([]sample, 0, len(r.s))
	out = append(out, r.s[r.next:]...)
	return append(out, r.s[:r.next]...)
}

// NewSampler keeps n samples of the families keep accepts, taken every
// interval, and n more coarseEvery intervals apart.
func NewSampler(g prometheus.Gatherer, n int, every time.Duration, keep func(family string) bool) *Sampler {
	return &Sampler{g: g, keep: keep, every: every, fine: ring{s: make([]sample, n)}, coarse: ring{s: make([]sample, n)}}
}

// Windows are the spans the samples cover: the fine ring's, then the
// coarse ring's.
func (s *Sampler) Windows() (fine, coarse time.Duration) {
	n := time.Duration(len(s.fine.s))
	return n * s.every, n * coarseEvery * s.every
}

// DefaultKeep keeps Lockstep's own metrics and the process's CPU and memory.
func DefaultKeep(family string) bool {
	return strings.HasPrefix(family, "lockstep_") || family == "process_cpu_seconds_total" || family == "process_resident_memory_bytes"
}

// Run samples every interval until stop closes.
func (s *Sampler) Run(stop <-chan struct{}) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	s.Sample(time.Now())
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.Sample(now)
		}
	}
}

// Sample gathers the registry once and records it as taken at now.
func (s *Sampler) Sample(now time.Time) {
	fams, _ := s.g.Gather() // a failing collector still leaves the others
	values := make(map[string]float64, 64)
	for _, f := range fams {
		if !s.keep(f.GetName()) {
			continue
		}
		flatten(f, values)
	}
	s.mu.Lock()
	x := sample{at: now, values: values}
	s.fine.add(x)
	if s.taken%coarseEvery == 0 {
		s.coarse.add(x)
	}
	s.taken++
	s.mu.Unlock()
}

// samples returns the fine ring's samples, oldest first. The maps are
// shared and never written after Sample stored them.
func (s *Sampler) samples() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fine.all()
}

// samplesIn returns the samples of the last window, oldest first: the
// fine ring's when it covers the window, else the coarse ring's followed
// by the newest sample.
func (s *Sampler) samplesIn(window time.Duration) []sample {
	fine, _ := s.Windows()
	s.mu.Lock()
	var ss []sample
	if window <= fine {
		ss = s.fine.all()
	} else {
		ss = s.coarse.all()
		if f := s.fine.all(); len(f) > 0 && (len(ss) == 0 || f[len(f)-1].at.After(ss[len(ss)-1].at)) {
			ss = append(ss, f[len(f)-1])
		}
	}
	s.mu.Unlock()
	if len(ss) == 0 {
		return ss
	}
	from := ss[len(ss)-1].at.Add(-window)
	i := 0
	for i < len(ss)-1 && ss[i].at.Before(from) {
		i++
	}
	return ss[i:]
}

func flatten(f *dto.MetricFamily, into map[string]float64) {
	name := f.GetName()
	for _, m := range f.Metric {
		labels := m.GetLabel()
		switch {
		case m.Counter != nil:
			into[key(name, labels)] = m.Counter.GetValue()
		case m.Gauge != nil:
			into[key(name, labels)] = m.Gauge.GetValue()
		case m.Untyped != nil:
			into[key(name, labels)] = m.Untyped.GetValue()
		case m.Histogram != nil:
			h := m.Histogram
			into[key(name+"_sum", labels)] = h.GetSampleSum()
			into[key(name+"_count", labels)] = float64(h.GetSampleCount())
			for _, b := range h.Bucket {
				le := &dto.LabelPair{Name: strPtr("le"), Value: strPtr(formatLe(b.GetUpperBound()))}
				into[key(name+"_bucket", append(append([]*dto.LabelPair(nil), labels...), le))] = float64(b.GetCumulativeCount())
			}
			into[key(name+"_bucket", append(append([]*dto.LabelPair(nil), labels...),
				&dto.LabelPair{Name: strPtr("le"), Value: strPtr("+Inf")}))] = float64(h.GetSampleCount())
		}
	}
}

func strPtr(s string) *string { return &s }

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// key is the series key of a metric with labels, labels sorted by name.
func key(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	ls := append([]*dto.LabelPair(nil), labels...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].GetName() < ls[j].GetName() })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.GetName())
		b.WriteString(`="`)
		b.WriteString(l.GetValue())
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// parseKey splits a series key into its name and labels.
func parseKey(k string) (string, map[string]string) {
	i := strings.IndexByte(k, '{')
	if i < 0 {
		return k, nil
	}
	labels := map[string]string{}
	for _, pair := range strings.Split(strings.TrimSuffix(k[i+1:], "}"), ",") {
		n, v, _ := strings.Cut(pair, "=")
		labels[n] = strings.Trim(v, `"`)
	}
	return k[:i], labels
}
