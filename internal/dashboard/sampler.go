// Package dashboard serves the live dashboard at "/": the server's own
// picture of itself, with nothing to install and nothing fetched from the
// network.
//
// The data path is one-way and cheap. A Sampler gathers the server's
// Prometheus registry once a second and keeps the last few minutes of
// samples in a ring; nothing on the commit path knows the dashboard exists,
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

// Sampler keeps the last samples of a registry in a ring.
type Sampler struct {
	g     prometheus.Gatherer
	keep  func(family string) bool
	every time.Duration

	mu   sync.Mutex
	ring []sample // oldest first once full; next is the slot to overwrite
	next int
	full bool
}

// NewSampler keeps n samples of the families keep accepts.
func NewSampler(g prometheus.Gatherer, n int, every time.Duration, keep func(family string) bool) *Sampler {
	return &Sampler{g: g, keep: keep, every: every, ring: make([]sample, n)}
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
	s.ring[s.next] = sample{at: now, values: values}
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
	s.mu.Unlock()
}

// samples returns the kept samples, oldest first. The maps are shared and
// never written after Sample stored them.
func (s *Sampler) samples() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.full {
		return append([]sample(nil), s.ring[:s.next]...)
	}
	out := make([]sample, 0, len(s.ring))
	out = append(out, s.ring[s.next:]...)
	return append(out, s.ring[:s.next]...)
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
