package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/internal/bench"
	"github.com/spf13/cobra"
)

func benchCommand() *cobra.Command {
	var (
		out, threads, workers, appliers, delays, counts string
		o                                               bench.Options
	)
	cmd := &cobra.Command{
		Use:   "bench EXPERIMENT",
		Short: "run a named experiment on loopback servers and write its table and charts",
		Long: `lockstep bench starts the servers an experiment needs on 127.0.0.1 (Lockstep
primaries and replicas, and MariaDB beside them when it is installed and
the experiment has a MariaDB counterpart), drives load with sysbench when
installed or the built-in generator, and writes results.csv, results.md and
PNG/SVG charts into --out.

Experiments:
` + experimentList(),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			for _, l := range []struct {
				flag, val string
				into      *[]int
			}{{"threads", threads, &o.Threads}, {"workers", workers, &o.Workers}, {"appliers", appliers, &o.Appliers}, {"delays", delays, &o.Delays}, {"counts", counts, &o.Counts}} {
				if *l.into, err = bench.IntList(l.val); err != nil {
					return fmt.Errorf("invalid value for --%s: %w", l.flag, err)
				}
			}
			if o.Binary, err = os.Executable(); err != nil {
				return err
			}
			o.Out = out
			if o.Out == "" {
				o.Out = filepath.Join("bench-results", args[0]+"-"+time.Now().UTC().Format("20060102T150405Z"))
			}
			o.Progress = os.Stderr
			o.Command = "lockstep " + strings.Join(os.Args[1:], " ")
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.Run(ctx, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "results directory (default bench-results/EXPERIMENT-TIME)")
	f.DurationVar(&o.Duration, "duration", 30*time.Second, "load time per run")
	f.StringVar(&threads, "threads", "1,4,16,64", "client thread counts, comma-separated")
	f.IntVar(&o.Tables, "tables", 4, "sbtest tables")
	f.IntVar(&o.TableSize, "table-size", 100000, "rows per table")
	f.StringVar(&o.Workload, "workload", "", "oltp_update_index, oltp_update_non_index, oltp_write_only or oltp_point_select (default: the experiment's)")
	f.StringVar(&o.Driver, "driver", "auto", "load driver: auto (sysbench when installed), sysbench or builtin")
	f.StringVar(&o.Peer, "peer", "auto", "MariaDB beside Lockstep: auto (when installed), none, or mariadb (required)")
	f.StringVar(&workers, "workers", "0,4", "replica-lag: replica_parallel_workers values")
	f.StringVar(&appliers, "appliers", "1,16", "cluster: wsrep_slave_threads values, for Lockstep and Galera")
	f.StringVar(&delays, "delays", "0,100,500,1000,3000", "sync-delay: binlog_group_commit_sync_delay values (microseconds)")
	f.StringVar(&counts, "counts", "0,4,8,16", "sync-delay: binlog_group_commit_sync_no_delay_count values")
	f.StringVar(&o.DataDir, "data-dir", "", "where the servers' directories go (default --out/servers)")
	f.BoolVar(&o.KeepData, "keep-data", false, "keep each server's data when it stops (its logs are always kept)")
	f.IntVar(&o.BasePort, "base-port", 0, "first of the loopback ports the servers listen on, taken in turn (default: free ports the system gives)")
	return cmd
}

func experimentList() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, e := range bench.Experiments() {
		fmt.Fprintf(w, "  %s\t%s\n", e[0], e[1])
	}
	w.Flush()
	return b.String()
}
