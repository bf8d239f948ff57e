package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// durabilities are the sync_binlog x innodb_flush_log_at_trx_commit
// combinations the durability experiment sweeps.
var durabilities = []struct{ syncBinlog, flush int }{{1, 1}, {1, 2}, {0, 1}, {0, 2}}

var experiments = []experiment{
	{
		name:     "replica-lag",
		about:    "primary commit rate vs a durable replica's apply rate by client threads, single-threaded vs parallel apply",
		workload: "oltp_update_index",
		peer:     true,
		run:      runReplicaLag,
		charts: []chartSpec{
			{file: "replica-lag-rate", title: "Primary and replica rate by client threads", xLabel: "client threads", yLabel: "transactions per second",
				series: func(r Row) []seriesPoint {
					return []seriesPoint{{r.Server + " primary, replica " + r.Config, r.TPS}, {r.Server + " replica apply, " + r.Config, r.ReplicaRate}}
				}},
			{file: "replica-lag-backlog", title: "Replica backlog when the load stops", xLabel: "client threads", yLabel: "transactions behind",
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " replica, " + r.Config, r.BehindAtEnd}} }},
		},
	},
	{
		name:     "sync-delay",
		about:    "binlog_group_commit_sync_delay and sync_no_delay_count sweeps: primary TPS and a replica's apply rate",
		workload: "oltp_update_non_index",
		run:      runSyncDelay,
		charts: []chartSpec{
			{file: "sync-delay", title: "binlog_group_commit_sync_delay", xLabel: "sync delay (us)", yLabel: "transactions per second",
				filter: func(r Row) bool { return r.Config == "delay" },
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint {
					return []seriesPoint{{"primary", r.TPS}, {"replica apply", r.ReplicaRate}}
				}},
			{file: "sync-delay-group", title: "Commit group size by sync delay", xLabel: "sync delay (us)", yLabel: "transactions per group",
				filter: func(r Row) bool { return r.Config == "delay" },
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint { return []seriesPoint{{"primary", r.AvgGroup}} }},
			{file: "sync-no-delay-count", title: "binlog_group_commit_sync_no_delay_count (at the largest delay)", xLabel: "no-delay count", yLabel: "transactions per second",
				filter: func(r Row) bool { return r.Config == "count" },
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint {
					return []seriesPoint{{"primary", r.TPS}, {"replica apply", r.ReplicaRate}}
				}},
		},
	},
	{
		name:     "durability",
		about:    "sync_binlog x innodb_flush_log_at_trx_commit: TPS by client threads",
		workload: "oltp_update_non_index",
		peer:     true,
		run:      runDurability,
		charts: []chartSpec{
			{file: "durability", title: "TPS by durability setting", xLabel: "client threads", yLabel: "transactions per second",
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " " + r.Config, r.TPS}} }},
		},
	},
	{
		name:     "semisync",
		about:    "asynchronous vs semi-synchronous AFTER_SYNC and AFTER_COMMIT: primary TPS by client threads",
		workload: "oltp_update_non_index",
		peer:     true,
		run:      runSemisync,
		charts: []chartSpec{
			{file: "semisync", title: "Primary TPS: async vs semi-sync", xLabel: "client threads", yLabel: "transactions per second",
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " " + r.Config, r.TPS}} }},
		},
	},
	{
		name:     "cluster",
		about:    "three Lockstep members vs three MariaDB Galera nodes: TPS, p95 and flow control by applier threads, clients on one node or spread, Galera durable or relaxed",
		workload: "oltp_write_only",
		peer:     true,
		run:      runCluster,
		charts: []chartSpec{
			{file: "cluster-tps", title: "Cluster TPS by applier threads", xLabel: "applier threads (wsrep_slave_threads)", yLabel: "transactions per second",
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " " + r.Config, r.TPS}} }},
			{file: "cluster-p95", title: "Cluster p95 latency by applier threads", xLabel: "applier threads (wsrep_slave_threads)", yLabel: "p95 latency (ms)",
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " " + r.Config, r.P95ms}} }},
			{file: "cluster-flow-control", title: "Time flow control held commits back", xLabel: "applier threads (wsrep_slave_threads)", yLabel: "percent of the run",
				x:      func(r Row) float64 { return r.X },
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Server + " " + r.Config, 100 * max(r.FCPaused, 0)}} }},
		},
	},
	{
		name:     "parallel-flush",
		about:    "binlog_parallel_flush ON vs OFF: TPS by client threads (relaxed durability, so the flush stage shows)",
		workload: "oltp_update_non_index",
		run:      runParallelFlush,
		charts: []chartSpec{
			{file: "parallel-flush", title: "binlog_parallel_flush", xLabel: "client threads", yLabel: "transactions per second",
				series: func(r Row) []seriesPoint { return []seriesPoint{{r.Config, r.TPS}} }},
		},
	},
}

// pair starts a primary and a replica of the given kind, with full
// durability on both, prepared with the sbtest tables.
func (r *runner) pair(ctx context.Context, kind string, workers int, semisync bool) (primary, replica server, err error) {
	if kind == "mariadb" {
		pExtra := []string{"sync_binlog=1", "innodb_flush_log_at_trx_commit=1"}
		rExtra := []string{"sync_binlog=1", "innodb_flush_log_at_trx_commit=1",
			"slave_parallel_threads=" + strconv.Itoa(workers), "slave_parallel_mode=optimistic"}
		if semisync {
			pExtra = append(pExtra, "rpl_semi_sync_master_enabled=ON")
			rExtra = append(rExtra, "rpl_semi_sync_slave_enabled=ON")
		}
		if primary, err = r.mariadb(1, pExtra...); err != nil {
			return nil, nil, err
		}
		if replica, err = r.mariadb(2, rExtra...); err != nil {
			return nil, nil, err
		}
	} else {
		pOpts := []string{"--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1"}
		rOpts := []string{"--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1", "--replica-parallel-workers=" + strconv.Itoa(workers)}
		if semisync {
			pOpts = append(pOpts, "--rpl-semi-sync-source-enabled=ON")
			rOpts = append(rOpts, "--rpl-semi-sync-replica-enabled=ON")
		}
		if primary, err = r.lockstep(1, pOpts...); err != nil {
			return nil, nil, err
		}
		if replica, err = r.lockstep(2, rOpts...); err != nil {
			return nil, nil, err
		}
	}
	if err := replicate(ctx, replica, primary); err != nil {
		return nil, nil, err
	}
	return primary, replica, r.prepare(ctx, primary, replica)
}

func (r *runner) kinds() []string {
	if r.withMariaDB {
		return []string{"lockstep", "mariadb"}
	}
	return []string{"lockstep"}
}

func workersLabel(w int) string {
	if w <= 1 {
		return "single-threaded"
	}
	return fmt.Sprintf("%d workers", w)
}

func runReplicaLag(ctx context.Context, r *runner) error {
	workers := r.o.Workers
	if len(workers) == 0 {
		workers = []int{0, 4}
	}
	r.plan(len(r.kinds()) * len(workers) * len(r.o.Threads))
	for _, kind := range r.kinds() {
		for _, w := range workers {
			p, rep, err := r.pair(ctx, kind, w, false)
			if err != nil {
				return err
			}
			for _, th := range r.o.Threads {
				if _, err := r.measure(ctx, p, rep, workersLabel(w), 0, th); err != nil {
					return err
				}
			}
			r.stop(p, rep)
		}
	}
	return nil
}

func runSyncDelay(ctx context.Context, r *runner) error {
	delays, counts := r.o.Delays, r.o.Counts
	if len(delays) == 0 {
		delays = []int{0, 100, 500, 1000, 3000}
	}
	if len(counts) == 0 {
		counts = []int{0, 4, 8, 16}
	}
	threads := slices.Max(r.o.Threads)
	r.notef("sync-delay runs at %d client threads (the largest of --threads).", threads)
	r.plan(len(delays) + len(counts))
	p, rep, err := r.pair(ctx, "lockstep", 4, false)
	if err != nil {
		return err
	}
	for _, d := range delays {
		if err := setGlobal(ctx, p, fmt.Sprintf("binlog_group_commit_sync_delay=%d", d), "binlog_group_commit_sync_no_delay_count=0"); err != nil {
			return err
		}
		if _, err := r.measure(ctx, p, rep, "delay", float64(d), threads); err != nil {
			return err
		}
	}
	maxDelay := slices.Max(delays)
	for _, c := range counts {
		if err := setGlobal(ctx, p, fmt.Sprintf("binlog_group_commit_sync_delay=%d", maxDelay), fmt.Sprintf("binlog_group_commit_sync_no_delay_count=%d", c)); err != nil {
			return err
		}
		if _, err := r.measure(ctx, p, rep, "count", float64(c), threads); err != nil {
			return err
		}
	}
	return nil
}

func runDurability(ctx context.Context, r *runner) error {
	r.plan(len(r.kinds()) * len(durabilities) * len(r.o.Threads))
	for _, kind := range r.kinds() {
		var s server
		var err error
		if kind == "mariadb" {
			s, err = r.mariadb(1)
		} else {
			s, err = r.lockstep(1)
		}
		if err != nil {
			return err
		}
		if err := r.prepare(ctx, s, nil); err != nil {
			return err
		}
		for _, d := range durabilities {
			if err := setGlobal(ctx, s, fmt.Sprintf("sync_binlog=%d", d.syncBinlog), fmt.Sprintf("innodb_flush_log_at_trx_commit=%d", d.flush)); err != nil {
				return err
			}
			for _, th := range r.o.Threads {
				if _, err := r.measure(ctx, s, nil, fmt.Sprintf("sync_binlog=%d flush=%d", d.syncBinlog, d.flush), 0, th); err != nil {
					return err
				}
			}
		}
		r.stop(s)
	}
	return nil
}

func runSemisync(ctx context.Context, r *runner) error {
	r.plan(len(r.kinds()) * 3 * len(r.o.Threads))
	for _, kind := range r.kinds() {
		p, rep, err := r.pair(ctx, kind, 4, true)
		if err != nil {
			return err
		}
		enabled, point := "rpl_semi_sync_source_enabled", "rpl_semi_sync_source_wait_point"
		if kind == "mariadb" {
			enabled, point = "rpl_semi_sync_master_enabled", "rpl_semi_sync_master_wait_point"
		}
		for _, mode := range []string{"async", "AFTER_SYNC", "AFTER_COMMIT"} {
			set := []string{enabled + "=OFF"}
			if mode != "async" {
				set = []string{enabled + "=ON", point + "='" + mode + "'"}
			}
			if err := setGlobal(ctx, p, set...); err != nil {
				return err
			}
			for _, th := range r.o.Threads {
				if _, err := r.measure(ctx, p, rep, mode, 0, th); err != nil {
					return err
				}
			}
		}
		r.stop(p, rep)
	}
	return nil
}

func runParallelFlush(ctx context.Context, r *runner) error {
	r.plan(2 * len(r.o.Threads))
	s, err := r.lockstep(1, "--sync-binlog=0", "--innodb-flush-log-at-trx-commit=2")
	if err != nil {
		return err
	}
	if err := r.prepare(ctx, s, nil); err != nil {
		return err
	}
	for _, on := range []string{"OFF", "ON"} {
		if err := setGlobal(ctx, s, "binlog_parallel_flush="+on); err != nil {
			return err
		}
		for _, th := range r.o.Threads {
			if _, err := r.measure(ctx, s, nil, "binlog_parallel_flush="+on, 0, th); err != nil {
				return err
			}
		}
	}
	return nil
}
