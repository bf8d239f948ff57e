// Package metrics exposes the server's counters in Prometheus format. Most
// metrics read the same atomics SHOW STATUS reads, at scrape time, so they
// cost nothing on the commit path; group sizes and fsync latencies are
// histograms fed by the pipeline's Observer.
package metrics

import (
	"net/http"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Observer records the pipeline's per-group measurements.
type Observer struct {
	groupSize prometheus.Histogram
	fsync     prometheus.Histogram
}

// NewObserver makes the histograms the pipeline feeds.
func NewObserver() *Observer {
	return &Observer{
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockstep_binlog_group_size",
			Help:    "Transactions per binlog commit group.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockstep_binlog_fsync_seconds",
			Help:    "Latency of binlog fsyncs.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
	}
}

// GroupCommitted implements commit.Observer.
func (o *Observer) GroupCommitted(n int) { o.groupSize.Observe(float64(n)) }

// Fsynced implements commit.Observer.
func (o *Observer) Fsynced(d time.Duration) { o.fsync.Observe(d.Seconds()) }

// Registry builds the registry of every metric.
func Registry(o *Observer, p *commit.Pipeline, l *lock.Manager, start time.Time) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(o.groupSize, o.fsync)
	counter := func(name, help string, f func() uint64) {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) }))
	}
	gauge := func(name, help string, f func() float64) {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	st, ls := &p.Stats, &l.Stats
	counter("lockstep_binlog_commits_total", "Transactions committed through the binlog.", st.Commits.Load)
	counter("lockstep_binlog_group_commits_total", "Binlog commit groups.", st.Groups.Load)
	counter("lockstep_binlog_fsyncs_total", "Binlog fsyncs.", st.Fsyncs.Load)
	counter("lockstep_binlog_written_bytes_total", "Bytes written to the binlog.", st.BytesWritten.Load)
	counter("lockstep_binlog_rotations_total", "Binlog file rotations.", st.RotateCount.Load)
	for trigger, f := range map[string]func() uint64{"count": st.TriggerCount.Load, "timeout": st.TriggerTimeout.Load, "lock_wait": st.TriggerLockWait.Load} {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "lockstep_binlog_group_commit_triggers_total",
			Help:        "Commit groups closed before the sync delay ran out, by what closed them (count, lock_wait) or by the delay (timeout).",
			ConstLabels: prometheus.Labels{"trigger": trigger},
		}, func() float64 { return float64(f()) }))
	}
	counter("lockstep_row_lock_waits_total", "Row lock requests that had to wait.", ls.Waits.Load)
	counter("lockstep_deadlocks_total", "Deadlocks detected (victims rolled back).", ls.Deadlocks.Load)
	counter("lockstep_lock_wait_timeouts_total", "Lock waits that ended with error 1205.", ls.Timeouts.Load)
	gauge("lockstep_row_lock_current_waits", "Row lock requests waiting now.", func() float64 { return float64(max(ls.Current.Load(), 0)) })
	gauge("lockstep_uptime_seconds", "Seconds since the server started.", func() float64 { return time.Since(start).Seconds() })
	for _, stmt := range []string{"select", "insert", "update", "delete", "commit", "rollback"} {
		name := "Com_" + stmt
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "lockstep_statements_total",
			Help:        "Statements executed, by type (MySQL's Com_* counters).",
			ConstLabels: prometheus.Labels{"type": stmt},
		}, func() float64 {
			_, v, _ := sql.StatusVariables.GetGlobal(name)
			switch x := v.(type) {
			case uint64:
				return float64(x)
			case int64:
				return float64(x)
			}
			return 0
		}))
	}
	return r
}

// Handler serves the registry at /metrics.
func Handler(r *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r, promhttp.HandlerOpts{}))
	return mux
}
