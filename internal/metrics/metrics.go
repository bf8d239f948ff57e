// Package metrics exposes the server's counters in Prometheus format. Most
// metrics read the same atomics SHOW STATUS reads, at scrape time, so they
// cost nothing on the commit path; group sizes, fsync latencies and
// semi-sync waits are histograms fed by the pipeline's Observer and the
// source's OnWait hook. Connected replicas are listed at scrape time.
package metrics

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/replica"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Observer records the pipeline's per-group measurements.
type Observer struct {
	groupSize prometheus.Histogram
	fsync     prometheus.Histogram
	semiWait  prometheus.Histogram
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
		semiWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockstep_semisync_wait_seconds",
			Help:    "How long commit groups waited for a replica's acknowledgement (acknowledged waits only).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}),
	}
}

// GroupCommitted implements commit.Observer.
func (o *Observer) GroupCommitted(n int) { o.groupSize.Observe(float64(n)) }

// Fsynced implements commit.Observer.
func (o *Observer) Fsynced(d time.Duration) { o.fsync.Observe(d.Seconds()) }

// Registry builds the registry of every metric.
func Registry(o *Observer, p *commit.Pipeline, l *lock.Manager, src *source.Source, start time.Time) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(o.groupSize, o.fsync, o.semiWait)
	src.Semi.OnWait = func(d time.Duration) { o.semiWait.Observe(d.Seconds()) }
	r.MustRegister(replicaCollector{src})
	semi := &src.Semi.Stats
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	counter := func(name, help string, f func() uint64) {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) }))
	}
	gauge := func(name, help string, f func() float64) {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	ls := &l.Stats
	if p != nil { // a cluster member has no commit pipeline
		st := &p.Stats
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
	}
	counter("lockstep_row_lock_waits_total", "Row lock requests that had to wait.", ls.Waits.Load)
	counter("lockstep_deadlocks_total", "Deadlocks detected (victims rolled back).", ls.Deadlocks.Load)
	counter("lockstep_lock_wait_timeouts_total", "Lock waits that ended with error 1205.", ls.Timeouts.Load)
	gauge("lockstep_row_lock_current_waits", "Row lock requests waiting now.", func() float64 { return float64(max(ls.Current.Load(), 0)) })
	gauge("lockstep_uptime_seconds", "Seconds since the server started.", func() float64 { return time.Since(start).Seconds() })
	gauge("lockstep_semisync_enabled", "1 if rpl_semi_sync_source_enabled is ON.", func() float64 { return b2f(src.Semi.Enabled()) })
	gauge("lockstep_semisync_status", "1 while commits wait for replicas (Rpl_semi_sync_source_status), 0 after a fallback to async.", func() float64 { return b2f(src.Semi.Status()) })
	gauge("lockstep_semisync_clients", "Connected semi-sync replicas.", func() float64 { return float64(src.Semi.Clients()) })
	gauge("lockstep_semisync_waiting_transactions", "Transactions waiting for an acknowledgement now.", func() float64 { return float64(max(semi.WaitSessions.Load(), 0)) })
	counter("lockstep_semisync_acknowledged_transactions_total", "Transactions a replica acknowledged (Rpl_semi_sync_source_yes_tx).", semi.YesTx.Load)
	counter("lockstep_semisync_unacknowledged_transactions_total", "Transactions committed without an acknowledgement (Rpl_semi_sync_source_no_tx).", semi.NoTx.Load)
	counter("lockstep_semisync_timeouts_total", "Waits that ran out of rpl_semi_sync_source_timeout.", semi.Timeouts.Load)
	counter("lockstep_semisync_acks_total", "Acknowledgement packets received from replicas.", semi.Acks.Load)
	for _, stmt := range []string{"select", "insert", "update", "delete", "commit", "rollback"} {
		name := "Com_" + stmt
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "lockstep_statements_total",
			Help:        "Statements executed, by type (MySQL's Com_* counters).",
			ConstLabels: prometheus.Labels{"type": stmt},
		}, func() float64 { return globalStatus(name) }))
	}
	return r
}

// RegisterFastPath adds the fast path's statement counts: statements it
// ran, and statements of a recognised shape it handed to go-mysql-server.
func RegisterFastPath(r *prometheus.Registry, executed, fallbacks func() uint64) {
	for path, f := range map[string]func() uint64{"fast": executed, "fallback": fallbacks} {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "lockstep_fastpath_statements_total",
			Help:        "Statements of a shape the fast path recognises, by who ran them: the fast path, or go-mysql-server after a fallback.",
			ConstLabels: prometheus.Labels{"path": path},
		}, func() float64 { return float64(f()) }))
	}
}

// replicaCollector reports each connected replica (dump connection).
type replicaCollector struct{ src *source.Source }

var (
	replicaLabels   = []string{"server_id", "flavor", "semi_sync"}
	replicaSentDesc = prometheus.NewDesc("lockstep_replica_sent_position",
		"Binlog offset, in file lockstep_replica_sent_file, up to which events were sent to the replica.", replicaLabels, nil)
	replicaFileDesc = prometheus.NewDesc("lockstep_replica_sent_file",
		"Number of the binlog file the replica is reading.", replicaLabels, nil)
	replicaAckDesc = prometheus.NewDesc("lockstep_replica_acknowledged_position",
		"Binlog offset the semi-sync replica acknowledged last, in file lockstep_replica_acknowledged_file.", replicaLabels, nil)
	replicaAckFileDesc = prometheus.NewDesc("lockstep_replica_acknowledged_file",
		"Binlog file number of the replica's last acknowledgement.", replicaLabels, nil)
	replicaBehindDesc = prometheus.NewDesc("lockstep_replica_behind_bytes",
		"Binlog bytes published but not yet sent to the replica.", replicaLabels, nil)
	replicaUpDesc = prometheus.NewDesc("lockstep_replica_connected_seconds",
		"Seconds the replica's dump connection has been open.", replicaLabels, nil)
	replicaApplyLagDesc = prometheus.NewDesc("lockstep_replica_apply_lag_seconds",
		"The replica's Seconds_Behind_Source as it reported it last, to the microsecond (Lockstep replicas applying, only).", replicaLabels, nil)
	replicaAppliedDesc = prometheus.NewDesc("lockstep_replica_applied_transactions",
		"Transactions the replica reported it applied since its SQL thread started (Lockstep replicas only).", replicaLabels, nil)
)

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{replicaSentDesc, replicaFileDesc, replicaAckDesc, replicaAckFileDesc, replicaBehindDesc, replicaUpDesc,
		replicaApplyLagDesc, replicaAppliedDesc} {
		ch <- d
	}
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.src.Replicas() {
		labels := []string{strconv.FormatUint(uint64(r.ServerID), 10), r.Flavor.String(), strconv.FormatBool(r.SemiSync)}
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		g(replicaSentDesc, float64(r.Sent.Pos))
		g(replicaFileDesc, float64(r.Sent.File))
		g(replicaBehindDesc, float64(c.src.BytesBehind(r.Sent)))
		g(replicaUpDesc, time.Since(r.Started).Seconds())
		if r.SemiSync {
			g(replicaAckDesc, float64(r.Acked.Pos))
			g(replicaAckFileDesc, float64(r.Acked.File))
		}
		if r.ApplyKnown {
			g(replicaAppliedDesc, float64(r.Apply.Applied))
			if r.Apply.Applying {
				g(replicaApplyLagDesc, r.Apply.Lag.Seconds())
			}
		}
	}
}

// Handler serves the registry at /metrics, and Go's profiler under
// /debug/pprof/ only if withPprof (profiles and traces cost CPU and show
// the process's internals, so they are off unless asked for); callers add
// their own routes (the dashboard) to the mux.
func Handler(r *prometheus.Registry, withPprof bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r, promhttp.HandlerOpts{}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// RegisterReplica adds the replica side: the IO and SQL threads' state,
// lag, queues, achieved parallelism and per-worker counters.
func RegisterReplica(r *prometheus.Registry, rep *replica.Replica) {
	r.MustRegister(applierCollector{rep})
}

type applierCollector struct{ rep *replica.Replica }

var (
	applierRunningDesc = prometheus.NewDesc("lockstep_replication_thread_running",
		"1 while the replica's IO (receiver) or SQL (applier) thread runs.", []string{"thread"}, nil)
	applierLagDesc = prometheus.NewDesc("lockstep_replication_lag_seconds",
		"Seconds_Behind_Source: how long ago the oldest transaction read but not applied committed on the source (0 when caught up).", nil, nil)
	applierTrxDesc = prometheus.NewDesc("lockstep_applier_transactions_total",
		"Transactions from the source: retrieved into the relay log, applied, or skipped (already executed).", []string{"result"}, nil)
	applierQueueDesc = prometheus.NewDesc("lockstep_applier_queue_transactions",
		"Transactions read from the relay log and not yet applied.", nil, nil)
	relaySpaceDesc = prometheus.NewDesc("lockstep_relay_log_bytes",
		"Bytes in relay log files (Relay_Log_Space).", nil, nil)
	applierParDesc = prometheus.NewDesc("lockstep_applier_parallelism",
		"Transactions being applied at once (from the start of their apply to visibility), sampled as each starts.", nil, nil)
	applierDistDesc = prometheus.NewDesc("lockstep_applier_dependency_distance_avg",
		"Average distance from a transaction to the one it depends on (like wsrep_cert_deps_distance).", nil, nil)
	workerTrxDesc = prometheus.NewDesc("lockstep_applier_worker_transactions_total",
		"Transactions applied by each worker (0: the coordinator applying alone).", []string{"worker"}, nil)
	workerBusyDesc = prometheus.NewDesc("lockstep_applier_worker_busy_seconds_total",
		"Seconds each worker spent decoding, checking and building transactions.", []string{"worker"}, nil)
	workerWaitDesc = prometheus.NewDesc("lockstep_applier_worker_wait_seconds_total",
		"Seconds each worker waited for dependencies and for its commit turn.", []string{"worker"}, nil)
)

func (c applierCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{applierRunningDesc, applierLagDesc, applierTrxDesc, applierQueueDesc, relaySpaceDesc,
		applierParDesc, applierDistDesc, workerTrxDesc, workerBusyDesc, workerWaitDesc} {
		ch <- d
	}
}

func (c applierCollector) Collect(ch chan<- prometheus.Metric) {
	st := &c.rep.Stats
	status, ok := c.rep.Status(time.Now())
	io, sqlRunning, lag := 0.0, 0.0, 0.0
	if ok {
		if status.IORunning == "Yes" {
			io = 1
		}
		if status.SQLRunning {
			sqlRunning = 1
		}
		lag = float64(max(status.SecondsBehind, 0))
	}
	ch <- prometheus.MustNewConstMetric(applierRunningDesc, prometheus.GaugeValue, io, "io")
	ch <- prometheus.MustNewConstMetric(applierRunningDesc, prometheus.GaugeValue, sqlRunning, "sql")
	ch <- prometheus.MustNewConstMetric(applierLagDesc, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(applierTrxDesc, prometheus.CounterValue, float64(st.Retrieved.Load()), "retrieved")
	ch <- prometheus.MustNewConstMetric(applierTrxDesc, prometheus.CounterValue, float64(st.Applied.Load()), "applied")
	ch <- prometheus.MustNewConstMetric(applierTrxDesc, prometheus.CounterValue, float64(st.Skipped.Load()), "skipped")
	ch <- prometheus.MustNewConstMetric(applierQueueDesc, prometheus.GaugeValue, float64(st.Pending()))
	ch <- prometheus.MustNewConstMetric(relaySpaceDesc, prometheus.GaugeValue, float64(status.RelayLogSpace))
	buckets := map[float64]uint64{}
	var count uint64
	for i := range st.Concurrency {
		count += st.Concurrency[i].Load()
		buckets[float64(uint64(1)<<i)] = count
	}
	sum := float64(st.ConcurrencySum.Load())
	ch <- prometheus.MustNewConstHistogram(applierParDesc, count, sum, buckets)
	dist := 0.0
	if n := st.DepDistN.Load(); n > 0 {
		dist = float64(st.DepDistSum.Load()) / float64(n)
	}
	ch <- prometheus.MustNewConstMetric(applierDistDesc, prometheus.GaugeValue, dist)
	for id, w := range st.Workers() {
		l := strconv.Itoa(id)
		ch <- prometheus.MustNewConstMetric(workerTrxDesc, prometheus.CounterValue, float64(w.Applied.Load()), l)
		ch <- prometheus.MustNewConstMetric(workerBusyDesc, prometheus.CounterValue, float64(w.BusyNanos.Load())/1e9, l)
		ch <- prometheus.MustNewConstMetric(workerWaitDesc, prometheus.CounterValue, float64(w.WaitNanos.Load())/1e9, l)
	}
}

// ClusterNode is what a cluster member shows of itself and the other
// members (package cluster's Driver).
type ClusterNode interface {
	State() cluster.State
	Members() []cluster.Member
	Reachable(cluster.Member) bool
	LeaderCommit() uint64
	FlowStats() cluster.FlowStats
	RecvQueue() uint64
	Desynced() bool
}

// RegisterCluster adds a cluster member's metrics: its raft state, its
// apply queue and flow control, and each member's state, apply queue and
// commit counters as that member last announced them.
func RegisterCluster(r *prometheus.Registry, n ClusterNode) {
	r.MustRegister(clusterCollector{n})
}

type clusterCollector struct{ n ClusterNode }

var (
	memberLabels        = []string{"member", "address"}
	clusterLeaderDesc   = prometheus.NewDesc("lockstep_cluster_leader", "Node id of the raft leader this member follows (0: none, outside the primary component).", nil, nil)
	clusterTermDesc     = prometheus.NewDesc("lockstep_cluster_term", "Raft term.", nil, nil)
	clusterCommitDesc   = prometheus.NewDesc("lockstep_cluster_commit_index", "Raft commit index: the last log entry known committed.", nil, nil)
	clusterAppliedDesc  = prometheus.NewDesc("lockstep_cluster_applied_index", "Raft applied index: the last log entry applied here.", nil, nil)
	clusterUpDesc       = prometheus.NewDesc("lockstep_cluster_members_up", "Members heard from recently that follow a leader and have caught up, this one included.", nil, nil)
	memberUpDesc        = prometheus.NewDesc("lockstep_cluster_member_up", "1 if the member was heard from recently, follows a leader and has caught up (Synced).", memberLabels, nil)
	memberQueueDesc     = prometheus.NewDesc("lockstep_cluster_member_apply_lag_entries", "Log entries the leader has committed and the member has not applied, as of its last announcement (its apply lag).", memberLabels, nil)
	memberGNODesc       = prometheus.NewDesc("lockstep_cluster_member_applied_gno", "GTID number of the last transaction the member applied.", memberLabels, nil)
	memberCommitsDesc   = prometheus.NewDesc("lockstep_cluster_member_commits_total", "Transactions of the member's own sessions committed since it started.", memberLabels, nil)
	memberConflictsDesc = prometheus.NewDesc("lockstep_cluster_member_cert_failures_total", "Transactions of the member's own sessions refused by certification (1213) since it started.", memberLabels, nil)
	applyQueueDesc      = prometheus.NewDesc("lockstep_cluster_apply_queue", "Entries committed and not yet applied here (wsrep_local_recv_queue).", nil, nil)
	fcPausedDesc        = prometheus.NewDesc("lockstep_cluster_flow_control_paused_seconds_total", "Time during which flow control held at least one of this member's commits back (wsrep_flow_control_paused_ns).", nil, nil)
	fcActiveDesc        = prometheus.NewDesc("lockstep_cluster_flow_control_active", "1 while this member paces its commits because a member's apply queue is over gcs.fc_limit.", nil, nil)
	desyncedDesc        = prometheus.NewDesc("lockstep_cluster_desynced", "1 while this member has desynced itself (it could not keep up; the others no longer wait for it).", nil, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clusterLeaderDesc, clusterTermDesc, clusterCommitDesc, clusterAppliedDesc, clusterUpDesc,
		memberUpDesc, memberQueueDesc, memberGNODesc, memberCommitsDesc, memberConflictsDesc,
		applyQueueDesc, fcPausedDesc, fcActiveDesc, desyncedDesc} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.State()
	g := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(clusterLeaderDesc, st.Lead)
	g(clusterTermDesc, st.Term)
	g(clusterCommitDesc, st.Commit)
	g(clusterAppliedDesc, st.Applied)
	g(applyQueueDesc, c.n.RecvQueue())
	fs := c.n.FlowStats()
	ch <- prometheus.MustNewConstMetric(fcPausedDesc, prometheus.CounterValue, fs.Paused.Seconds())
	g(fcActiveDesc, boolGauge(fs.Active))
	g(desyncedDesc, boolGauge(c.n.Desynced()))
	up := uint64(0)
	lead := c.n.LeaderCommit()
	for _, m := range c.n.Members() {
		labels := []string{strconv.FormatUint(m.ID, 10), m.Addr}
		isUp := uint64(0)
		if c.n.Reachable(m) && m.Synced {
			isUp = 1
		}
		up += isUp
		g(memberUpDesc, isUp, labels...)
		if m.Heard.IsZero() {
			continue // nothing known of it
		}
		g(memberQueueDesc, lead-min(m.Applied, lead), labels...)
		g(memberGNODesc, m.AppliedGNO, labels...)
		ch <- prometheus.MustNewConstMetric(memberCommitsDesc, prometheus.CounterValue, float64(m.Committed), labels...)
		ch <- prometheus.MustNewConstMetric(memberConflictsDesc, prometheus.CounterValue, float64(m.Conflicts), labels...)
	}
	g(clusterUpDesc, up)
}

func boolGauge(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Statements measures every statement clients run: its latency and the
// rows it read, sent and changed, as performance_schema's digest summary
// counts them (the server feeds both from the same measurement).
type Statements struct {
	latency                        prometheus.Histogram
	rowsRead, rowsSent, rowsChange prometheus.Counter
}

// RegisterStatements adds the statement metrics to r. The server calls it
// only when it measures every statement (performance_schema ON), so that
// the metrics are true or absent, never a zero that means nothing.
func RegisterStatements(r *prometheus.Registry) *Statements {
	s := &Statements{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockstep_statement_seconds",
			Help:    "Time from a statement's arrival to its answer.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 20),
		}),
	}
	rows := func(what string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "lockstep_rows_total", Help: "Rows statements read (examined), sent to clients, or changed (affected).",
			ConstLabels: prometheus.Labels{"rows": what}})
	}
	s.rowsRead, s.rowsSent, s.rowsChange = rows("read"), rows("sent"), rows("changed")
	r.MustRegister(s.latency, s.rowsRead, s.rowsSent, s.rowsChange)
	return s
}

// Ended records a statement that took d and read, sent and changed those
// rows.
func (s *Statements) Ended(d time.Duration, read, sent, changed uint64) {
	s.latency.Observe(d.Seconds())
	s.rowsRead.Add(float64(read))
	s.rowsSent.Add(float64(sent))
	s.rowsChange.Add(float64(changed))
}

// RegisterServer adds the server-wide gauges: client connections (as
// Threads_connected and Connections count them) and the bytes the store
// and the binlog take on disk.
func RegisterServer(r *prometheus.Registry, storeBytes, binlogBytes func() uint64) {
	r.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockstep_connections", Help: "Client connections open now (Threads_connected)."},
			func() float64 { return globalStatus("Threads_connected") }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockstep_connections_total", Help: "Connection attempts since start (Connections)."},
			func() float64 { return globalStatus("Connections") }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockstep_store_bytes", Help: "Bytes the store's files take on disk."},
			func() float64 { return float64(storeBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockstep_binlog_bytes", Help: "Bytes the binlog files take on disk."},
			func() float64 { return float64(binlogBytes()) }),
	)
}

// globalStatus is the global value of a status variable go-mysql-server's
// registry keeps, as a number (0 if it holds none).
func globalStatus(name string) float64 {
	_, v, _ := sql.StatusVariables.GetGlobal(name)
	switch x := v.(type) {
	case uint64:
		return float64(x)
	case int64:
		return float64(x)
	case uint32:
		return float64(x)
	case int32:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}
