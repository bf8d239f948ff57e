package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/mariadb"
	"github.com/lockstepdb/lockstep/internal/netns"
	"github.com/lockstepdb/lockstep/internal/workload"
	"github.com/spf13/cobra"
)

// errChecksFailed makes the command exit with status 1 without a message:
// the report said what failed.
var errChecksFailed = errors.New("checks failed")

func workloadCommand() *cobra.Command {
	var (
		cfg                workload.Config
		endpoints, faults  string
		check, startServer bool
		serverOpts         string
		startCluster       int
		startReplicas      int
		semiSync           bool
		diskSize           int64
		faultInterval      time.Duration
		mariadbd, provider string
	)
	cmd := &cobra.Command{
		Use:   "workload NAME",
		Short: "run a consistency workload against MySQL-protocol servers and check it",
		Long: `lockstep workload runs a consistency workload against one or more
MySQL-protocol endpoints (Lockstep, MariaDB, a Galera cluster) and checks
what the servers promise, with a progress line while it runs and a report
at the end. The history and the report are written to --dir.

Workloads:
  acked-writes  every acknowledged insert must survive any crash
  bank          transfers between accounts: the total never changes, no
                balance goes negative
  list-append   appends and reads of lists, checked for isolation anomalies
                (G0, G1a/b/c, G-single, G2-item, lost update)
  register      read-modify-write of hot counters: no lost update under
                FOR UPDATE; with plain reads, as the level allows

With --start-server, the command starts a Lockstep server of its own (this
binary, data under --dir) and can inject faults into it: --faults
kill,pause,restart every --fault-interval, diskfull (as root: the data
directory on a tmpfs of --disk-size bytes, filled for half an interval)
and readonly (as root: the data directory on an ext4 filesystem of
--disk-size bytes on a loop device, which the kernel makes read-only for
half an interval, as after an I/O error; the server is then killed, the
filesystem checked and the server started again). With --start-cluster N it
starts N cluster members instead, spreads the clients over them, and each
fault hits one member; partition (as root: members in network namespaces)
and wipe (a member's data directory emptied: it rejoins with a copy of the
state) apply to members. With --start-replicas N it starts a primary and
N-1 replicas (--semi-sync: semi-synchronous, AFTER_SYNC); clients write
to whichever server is the primary, failover kills it and promotes a
replica as 'lockstep failover' does, disconnect drops the replicas'
connections, and the checks add that every server ends with the same
rows. With --mariadbd, --start-server and --start-cluster start MariaDB
instead (durable settings; a cluster is a Galera cluster through
--galera-provider), under the same faults, to compare. The exit status
is 1 when a check fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cfg.Dir == "" {
				cfg.Dir = filepath.Join(".", fmt.Sprintf("workload-%s-%s", args[0], time.Now().UTC().Format("20060102T150405Z")))
			}
			kinds, err := workload.ParseFaults(faults)
			if err != nil {
				return err
			}
			started := 0
			for _, on := range []bool{startServer, startCluster > 0, startReplicas > 0} {
				if on {
					started++
				}
			}
			if len(kinds) > 0 && started == 0 {
				return errors.New("--faults needs --start-server, --start-cluster or --start-replicas: faults are injected into servers this command started")
			}
			if started > 1 {
				return errors.New("--start-server, --start-cluster and --start-replicas exclude each other")
			}
			bin := workload.Lockstep("")
			if mariadbd != "" {
				if started == 0 {
					return errors.New("--mariadbd applies to --start-server and --start-cluster")
				}
				if startReplicas > 0 {
					return errors.New("--start-replicas starts Lockstep servers only: failover promotes with MySQL's statements, which MariaDB does not take")
				}
				if bin, err = workload.MariaDB(mariadbd, provider); err != nil {
					return err
				}
			} else if started > 0 {
				path, err := os.Executable()
				if err != nil {
					return err
				}
				bin = workload.Lockstep(path)
			}
			if semiSync && startReplicas == 0 {
				return errors.New("--semi-sync applies to --start-replicas")
			}
			for _, k := range kinds {
				if (k == "failover" || k == "disconnect") && startReplicas == 0 {
					return fmt.Errorf("the %s fault needs --start-replicas", k)
				}
				if (k == "diskfull" || k == "readonly") && !startServer {
					return fmt.Errorf("the %s fault needs --start-server", k)
				}
			}
			switch {
			case startReplicas > 0:
				rs, err := workload.StartReplicaSet(startReplicas, bin, cfg.Dir, semiSync, strings.Fields(serverOpts)...)
				if err != nil {
					return err
				}
				defer rs.Stop()
				cfg.Endpoints, cfg.User, cfg.Password, cfg.Replication = []string{rs.Endpoint()}, "root", "", rs
				var skipped []string
				for _, k := range []string{"partition", "wipe"} {
					if slices.Contains(kinds, k) {
						skipped = append(skipped, k+" (cluster members only)")
						kinds = slices.DeleteFunc(kinds, func(x string) bool { return x == k })
					}
				}
				if len(kinds) > 0 || len(skipped) > 0 {
					cfg.Faults = &workload.Faults{Kinds: kinds, Interval: faultInterval, Targets: rs.Servers, Replication: rs, Seed: cfg.Seed, Skipped: skipped}
				}
			case startCluster > 0:
				var members []*workload.Server
				var skipped []string
				if slices.Contains(kinds, "partition") {
					// Partitions need each member in a network namespace.
					var closeAll func()
					members, closeAll, err = workload.StartClusterInNamespaces(startCluster, bin, cfg.Dir, strings.Fields(serverOpts)...)
					if errors.Is(err, netns.ErrUnavailable) {
						skipped = append(skipped, "partition ("+err.Error()+")")
						kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "partition" })
					} else if err != nil {
						return err
					} else {
						defer closeAll()
					}
				}
				if members == nil {
					members, err = workload.StartCluster(startCluster, bin, cfg.Dir, strings.Fields(serverOpts)...)
					if err != nil {
						return err
					}
					defer func() {
						for _, s := range members {
							s.Stop()
						}
					}()
				}
				cfg.Endpoints, cfg.User, cfg.Password = nil, "root", ""
				for _, s := range members {
					cfg.Endpoints = append(cfg.Endpoints, s.Endpoint())
				}
				if len(kinds) > 0 || len(skipped) > 0 {
					cfg.Faults = &workload.Faults{Kinds: kinds, Interval: faultInterval, Targets: members, Seed: cfg.Seed, Skipped: skipped}
				}
			case startServer:
				var skipped []string
				var s *workload.Server
				if slices.Contains(kinds, "readonly") {
					// An ext4 disk of its own for the kernel to make
					// read-only (and to fill).
					s, err = workload.StartServerOnLoopDisk("server1", bin, filepath.Join(cfg.Dir, "server1"), diskSize, strings.Fields(serverOpts)...)
					if errors.Is(err, workload.ErrNoLoopDisk) {
						skipped = append(skipped, "readonly ("+err.Error()+")")
						kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "readonly" })
						s, err = nil, nil
					}
				}
				if s == nil && err == nil && slices.Contains(kinds, "diskfull") {
					// A disk of its own to fill.
					s, err = workload.StartServerOnTmpfs("server1", bin, filepath.Join(cfg.Dir, "server1"), diskSize, strings.Fields(serverOpts)...)
					if errors.Is(err, workload.ErrNoTmpfs) {
						skipped = append(skipped, "diskfull ("+err.Error()+")")
						kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "diskfull" })
						s, err = nil, nil
					}
				}
				if s == nil && err == nil {
					s, err = workload.StartServer("server1", bin, filepath.Join(cfg.Dir, "server1"), strings.Fields(serverOpts)...)
				}
				if err != nil {
					return err
				}
				defer s.Close()
				cfg.Endpoints, cfg.User, cfg.Password = []string{s.Endpoint()}, "root", ""
				if slices.Contains(kinds, "partition") {
					skipped = append(skipped, "partition (a single server has no members to be cut off from)")
					kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "partition" })
				}
				if len(kinds) > 0 || len(skipped) > 0 {
					cfg.Faults = &workload.Faults{Kinds: kinds, Interval: faultInterval, Targets: []*workload.Server{s}, Seed: cfg.Seed, Skipped: skipped}
				}
			default:
				for _, e := range strings.Split(endpoints, ",") {
					if e = strings.TrimSpace(e); e != "" {
						cfg.Endpoints = append(cfg.Endpoints, e)
					}
				}
			}
			cfg.Progress = os.Stderr
			// The driver logs every connection a fault breaks; the report
			// counts them.
			_ = mysqldrv.SetLogger(log.New(io.Discard, "", 0))
			rep, err := workload.Run(ctx, args[0], cfg)
			if err != nil {
				return err
			}
			fmt.Print(rep.String())
			fmt.Printf("history and report: %s\n", cfg.Dir)
			if !rep.Valid && check {
				return errChecksFailed // after the deferred stop of the server
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoints, "endpoints", "127.0.0.1:3306", "host:port of each server, comma-separated; clients are spread over them")
	f.StringVarP(&cfg.User, "user", "u", "root", "account to log in as")
	f.StringVarP(&cfg.Password, "password", "p", "", "its password")
	f.StringVar(&cfg.Database, "database", "lockstep_workload", "database for the workload's tables (created if missing)")
	f.IntVar(&cfg.Clients, "clients", 8, "client sessions")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to run")
	f.StringVar(&cfg.Isolation, "isolation", "", "sessions' transaction_isolation (e.g. REPEATABLE-READ, READ-COMMITTED, SERIALIZABLE; default: the server's)")
	f.StringVar(&cfg.Expect, "expect", "", "level to judge list-append and register histories against (read-committed, snapshot-isolation, repeatable-read, serializable, strict-serializable; default: what --isolation guarantees in MySQL-family servers)")
	f.StringVar(&cfg.Dir, "dir", "", "where the history and report go (default ./workload-NAME-TIME)")
	f.Int64Var(&cfg.Seed, "seed", 0, "random seed (default: the time)")
	f.BoolVar(&check, "check", true, "exit with status 1 when a check fails")
	f.BoolVar(&startServer, "start-server", false, "start a Lockstep server of this binary for the run (data under --dir)")
	f.IntVar(&startCluster, "start-cluster", 0, "start a cluster of this many Lockstep members of this binary for the run (data under --dir); clients are spread over them and faults hit one member at a time")
	f.IntVar(&startReplicas, "start-replicas", 0, "start a primary and this many servers in all, the others its replicas, of this binary for the run (data under --dir); clients follow the primary across failovers")
	f.BoolVar(&semiSync, "semi-sync", false, "with --start-replicas: semi-synchronous replication (AFTER_SYNC)")
	f.Int64Var(&diskSize, "disk-size", 1<<30, "with --faults diskfull or readonly: bytes of the disk (tmpfs, or ext4 with readonly) the started server's data directory is on")
	f.StringVar(&serverOpts, "server-opts", "", "extra options for the started server, space-separated (e.g. \"--sync-binlog=0\")")
	f.StringVar(&faults, "faults", "", "faults to inject into the started servers: kill, pause, restart, partition, wipe, failover, disconnect (comma-separated; partition puts each cluster member in a network namespace, which needs root, and is reported as skipped where it cannot; wipe empties a cluster member's data directory; failover and disconnect hit --start-replicas; diskfull fills the started server's tmpfs and readonly has the kernel make its ext4 disk read-only, both as root)")
	f.DurationVar(&faultInterval, "fault-interval", 5*time.Second, "mean time between faults")
	f.StringVar(&mariadbd, "mariadbd", "", "with --start-server or --start-cluster: start MariaDB's mariadbd at this path instead of Lockstep (mariadb-install-db makes its data directory)")
	f.StringVar(&provider, "galera-provider", mariadb.GaleraProvider, "with --mariadbd and --start-cluster: Galera's provider library")
	return cmd
}
