// Package bench runs the named experiments of `lockstep bench`: it starts
// the servers an experiment needs on loopback (Lockstep primaries and
// replicas from the lockstep binary itself, and MariaDB when it is
// installed and the experiment has a MariaDB counterpart), drives load
// with sysbench or the built-in generator (loadgen), and writes a results
// table (CSV and Markdown) and charts (PNG and SVG) into one directory.
//
// Every run is measured the same way: global status and the server's CPU
// time before and after the load, so TPS comes from the driver and group
// sizes, fsyncs and CPU per transaction from the server. With a replica,
// the replica's Binlog_commits over the same interval is its apply rate;
// whatever the primary committed beyond that is the backlog at the end,
// and the time until a marker row written after the load appears on the
// replica is the catch-up time.
//
// Servers live in the output directory (servers/) and are stopped when an
// experiment ends, also on error or Ctrl-C.
package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/lockstepdb/lockstep/internal/loopback"
)

// Options are the command's flags.
type Options struct {
	Binary    string // the lockstep binary that runs servers
	Out       string // results directory
	Duration  time.Duration
	Threads   []int
	Tables    int
	TableSize int
	Workload  string // "" = the experiment's default
	Driver    string // auto, sysbench, builtin
	Peer      string // auto (MariaDB when installed), none, mariadb (required)
	Workers   []int  // replica-lag: replica_parallel_workers values
	Appliers  []int  // cluster: wsrep_slave_threads values
	Delays    []int  // sync-delay: binlog_group_commit_sync_delay values (us)
	Counts    []int  // sync-delay: binlog_group_commit_sync_no_delay_count values
	Progress  io.Writer
	Command   string // the command line, for the report
	// DataDir holds the servers' directories ("": Out/servers); their
	// data is removed as each server stops unless KeepData (their logs
	// stay).
	DataDir  string
	KeepData bool
	// BasePort, if set, is the first of the ports the servers listen on,
	// taken in turn (0: ports the system gives).
	BasePort int
}

// Row is one measured run.
type Row struct {
	Server       string  // lockstep, mariadb
	Config       string  // the setting under test, e.g. "sync_binlog=1, flush=1"
	X            float64 // the swept value when it is not threads (delay, count)
	Threads      int
	TPS, QPS     float64
	P95ms        float64
	Errors       uint64
	CPUPerTrxUs  float64 // server CPU per transaction
	AvgGroup     float64 // transactions per binlog group commit (0: not reported)
	FsyncsPerTrx float64 // -1: not reported
	// With a replica:
	ReplicaRate    float64 // replica commits per second during the load
	BehindAtEnd    float64 // transactions the replica had not applied when the load stopped
	CatchUpSeconds float64 // from the end of the load until the replica had everything
	// A cluster's: the largest node's fraction of the run during which
	// flow control held commits back (-1: not a cluster).
	FCPaused float64
}

type experiment struct {
	name, about string
	workload    string // default workload
	peer        bool   // has a MariaDB counterpart
	run         func(ctx context.Context, r *runner) error
	charts      []chartSpec
}

// Experiments lists the experiments' names and descriptions.
func Experiments() [][2]string {
	var out [][2]string
	for _, e := range experiments {
		out = append(out, [2]string{e.name, e.about})
	}
	return out
}

// Run runs the named experiment and writes its report into o.Out.
func Run(ctx context.Context, name string, o Options) error {
	i := slices.IndexFunc(experiments, func(e experiment) bool { return e.name == name })
	if i < 0 {
		var names []string
		for _, e := range experiments {
			names = append(names, e.name)
		}
		return fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(names, ", "))
	}
	e := experiments[i]
	if o.Workload == "" {
		o.Workload = e.workload
	}
	if len(o.Threads) == 0 || o.Tables < 1 || o.TableSize < 1 || o.Duration < time.Second {
		return errors.New("--threads, --tables and --table-size must be set, --duration at least 1s")
	}
	drv, err := pickDriver(o.Driver)
	if err != nil {
		return err
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	r := &runner{o: o, drv: drv, exp: e}
	switch o.Peer {
	case "none":
	case "", "auto":
		r.withMariaDB = e.peer && mariadbInstalled()
		if e.peer && !r.withMariaDB {
			r.notef("MariaDB is not installed (apt-get install mariadb-server): Lockstep runs alone.")
		}
	case "mariadb":
		if !e.peer {
			return fmt.Errorf("experiment %s has no MariaDB counterpart (its settings are Lockstep's own)", e.name)
		}
		if !mariadbInstalled() {
			return errors.New("--peer=mariadb, but mariadbd is not installed (apt-get install mariadb-server)")
		}
		r.withMariaDB = true
	default:
		return fmt.Errorf("invalid value %q for --peer (expected auto, none or mariadb)", o.Peer)
	}
	if !e.peer && o.Peer != "none" {
		r.notef("%s measures Lockstep's own settings; MariaDB has no counterpart and does not run.", e.name)
	}
	defer r.stopAll()
	fmt.Fprintf(o.Progress, "lockstep bench %s: %s\nload: %s %s, %d tables x %d rows, %v per run; results in %s\n",
		e.name, e.about, drv.Name(), o.Workload, o.Tables, o.TableSize, o.Duration, o.Out)
	started := time.Now()
	runErr := e.run(ctx, r)
	if r.bar != nil {
		r.bar.Finish()
		fmt.Fprintln(o.Progress)
	}
	if len(r.rows) == 0 {
		if runErr == nil {
			runErr = errors.New("no run completed")
		}
		return runErr
	}
	if err := r.report(started, runErr); err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "wrote %s\n", filepath.Join(o.Out, "results.md"))
	return runErr
}

// runner carries one experiment's state.
type runner struct {
	o           Options
	drv         driver
	exp         experiment
	withMariaDB bool
	servers     []server
	nextID      int
	rows        []Row
	notes       []string
	marker      int // the last marker row written (ids are per primary, and each primary starts empty)
	bar         *progressbar.ProgressBar
	nextPort    int // with BasePort: the next port to give
}

func (r *runner) notef(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, n)
	r.say("note: %s", n)
}

// say prints a line of progress, clearing the progress bar's line first.
func (r *runner) say(format string, args ...any) {
	if r.bar != nil {
		r.bar.Clear()
	}
	fmt.Fprintf(r.o.Progress, format+"\n", args...)
}

func (r *runner) stopAll() {
	for _, s := range r.servers {
		r.stopOne(s)
	}
	r.servers = nil
}

// stop stops the given servers now.
func (r *runner) stop(ss ...server) {
	for _, s := range ss {
		r.stopOne(s)
		r.servers = slices.DeleteFunc(r.servers, func(x server) bool { return x == s })
	}
}

// stopOne stops s and, unless KeepData, removes its data (a run's
// servers held gigabytes); its logs stay.
func (r *runner) stopOne(s server) {
	s.Stop()
	if r.o.KeepData {
		return
	}
	for _, p := range s.DataPaths() {
		if err := os.RemoveAll(p); err != nil {
			r.notef("could not remove %s: %v", p, err)
		}
	}
}

func (r *runner) serverDir(kind string) string {
	r.nextID++
	base := r.o.DataDir
	if base == "" {
		base = filepath.Join(r.o.Out, "servers")
	}
	return filepath.Join(base, fmt.Sprintf("%s-%d", kind, r.nextID))
}

// port gives a server a port: the next from BasePort, or one the system
// has free.
func (r *runner) port() (int, error) {
	if r.o.BasePort == 0 {
		return loopback.Port()
	}
	if r.nextPort == 0 {
		r.nextPort = r.o.BasePort
	}
	p := r.nextPort
	r.nextPort++
	if p > 65535 {
		return 0, fmt.Errorf("--base-port %d: out of ports", r.o.BasePort)
	}
	return p, nil
}

// lockstep starts a Lockstep server with mysqld-style options.
func (r *runner) lockstep(serverID int, opts ...string) (*lockstepServer, error) {
	port, err := r.port()
	if err != nil {
		return nil, err
	}
	httpPort, err := r.port()
	if err != nil {
		return nil, err
	}
	s, err := startLockstep(r.o.Binary, r.serverDir("lockstep"), serverID, port, httpPort, opts...)
	if err != nil {
		return nil, fmt.Errorf("starting lockstep: %w", err)
	}
	r.servers = append(r.servers, s)
	return s, nil
}

// mariadb starts a MariaDB server with extra my.cnf lines.
func (r *runner) mariadb(serverID int, extra ...string) (*mariadbServer, error) {
	port, err := r.port()
	if err != nil {
		return nil, err
	}
	s, err := startMariaDB(r.serverDir("mariadb"), serverID, port, extra...)
	if err != nil {
		return nil, fmt.Errorf("starting mariadb: %w", err)
	}
	r.servers = append(r.servers, s)
	return s, nil
}

// setGlobal runs SET GLOBAL for each "name=value".
func setGlobal(ctx context.Context, s server, assignments ...string) error {
	db, err := s.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, a := range assignments {
		if _, err := db.ExecContext(ctx, "SET GLOBAL "+a); err != nil {
			return fmt.Errorf("%s: SET GLOBAL %s: %w", s.Label(), a, err)
		}
	}
	return nil
}

// replicate points replica at primary and starts it.
func replicate(ctx context.Context, replica, primary server) error {
	db, err := replica.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	var stmts []string
	if replica.Label() == "mariadb" {
		stmts = []string{fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", primary.Port()),
			"START SLAVE"}
	} else {
		stmts = []string{fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1", primary.Port()),
			"START REPLICA"}
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s replica: %s: %w", replica.Label(), q, err)
		}
	}
	return nil
}

// prepare loads the sbtest tables on primary and, when a replica is
// given, waits until it has them too.
func (r *runner) prepare(ctx context.Context, primary, replica server) error {
	r.say("preparing %d x %d rows on %s", r.o.Tables, r.o.TableSize, primary.Label())
	if err := r.drv.Prepare(ctx, primary, r.o); err != nil {
		return err
	}
	db, err := primary.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE sbtest.bench_marker (id INT PRIMARY KEY)"); err != nil {
		return err
	}
	if replica != nil {
		_, err := r.catchUp(ctx, primary, replica, 30*time.Minute)
		return err
	}
	return nil
}

// catchUp writes a marker row on primary and waits until replica has it.
func (r *runner) catchUp(ctx context.Context, primary, replica server, limit time.Duration) (time.Duration, error) {
	pdb, err := primary.DB("sbtest")
	if err != nil {
		return 0, err
	}
	defer pdb.Close()
	rdb, err := replica.DB("sbtest")
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	r.marker++
	start := time.Now()
	if _, err := pdb.ExecContext(ctx, "INSERT INTO bench_marker VALUES (?)", r.marker); err != nil {
		return 0, err
	}
	var lastCheck, ioFailingSince time.Time
	for {
		var n int
		err := rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM bench_marker WHERE id = ?", r.marker).Scan(&n)
		if err == nil && n == 1 {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		// A replica that stopped will never catch up: say why at once
		// instead of waiting out the limit.
		if time.Since(lastCheck) >= time.Second {
			lastCheck = time.Now()
			if st, err := replicaStatus(ctx, rdb); err == nil {
				var failing time.Duration
				if n := st["Last_IO_Errno"]; n != "" && n != "0" {
					if ioFailingSince.IsZero() {
						ioFailingSince = time.Now()
					}
					failing = time.Since(ioFailingSince)
				} else {
					ioFailingSince = time.Time{}
				}
				if err := replicaBroken(st, failing); err != nil {
					return 0, fmt.Errorf("%s replica stopped: %w", replica.Label(), err)
				}
			}
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("%s replica did not catch up within %v (%v)", replica.Label(), limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// plan tells the progress bar how many runs are coming.
func (r *runner) plan(runs int) {
	total := int64(runs) * int64(r.o.Duration/time.Second)
	if r.bar == nil {
		r.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(r.o.Progress),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionShowDescriptionAtLineEnd())
		return
	}
	r.bar.ChangeMax64(r.bar.GetMax64() + total)
}

// measure runs the load at threads on primary (with replica, if any,
// replicating from it) and records a row.
func (r *runner) measure(ctx context.Context, primary, replica server, config string, x float64, threads int) (Row, error) {
	row := Row{Server: primary.Label(), Config: config, X: x, Threads: threads, FsyncsPerTrx: -1, FCPaused: -1}
	g, _ := primary.(*group)
	paused := func() ([]float64, error) { // each node's wsrep_flow_control_paused_ns
		var out []float64
		for _, m := range g.members {
			db, err := m.DB("")
			if err != nil {
				return nil, err
			}
			out = append(out, statusNumber(ctx, db, "wsrep_flow_control_paused_ns"))
			db.Close()
		}
		return out, nil
	}
	var paused0 []float64
	if g != nil {
		var err error
		if paused0, err = paused(); err != nil {
			return row, err
		}
	}
	pdb, err := primary.DB("")
	if err != nil {
		return row, err
	}
	defer pdb.Close()
	var rdb *sql.DB
	if replica != nil {
		if rdb, err = replica.DB(""); err != nil {
			return row, err
		}
		defer rdb.Close()
	}
	before, err := globalStatus(ctx, pdb)
	if err != nil {
		return row, err
	}
	var rBefore map[string]float64
	if rdb != nil {
		if rBefore, err = globalStatus(ctx, rdb); err != nil {
			return row, err
		}
	}
	cpu0 := cpuOf(primary)
	if r.bar != nil {
		r.bar.Describe(fmt.Sprintf("%s %s, %d threads", primary.Label(), config, threads))
	}
	last := time.Now()
	l, err := r.drv.Run(ctx, primary, r.o, r.o.Workload, threads, r.o.Duration, func(uint64) {
		if r.bar != nil && time.Since(last) >= 900*time.Millisecond {
			last = time.Now()
			r.bar.Add(1)
		}
	})
	if err != nil {
		return row, err
	}
	cpu1 := cpuOf(primary)
	if g != nil {
		paused1, err := paused()
		if err != nil {
			return row, err
		}
		row.FCPaused = 0
		for i := range paused1 {
			if paused0[i] >= 0 && paused1[i] >= 0 && l.Elapsed > 0 {
				row.FCPaused = max(row.FCPaused, (paused1[i]-paused0[i])/float64(l.Elapsed.Nanoseconds()))
			}
		}
	}
	after, err := globalStatus(ctx, pdb)
	if err != nil {
		return row, err
	}
	var rAfter map[string]float64
	if rdb != nil {
		if rAfter, err = globalStatus(ctx, rdb); err != nil {
			return row, err
		}
	}
	row.TPS, row.QPS, row.P95ms, row.Errors = l.TPS, l.QPS, l.P95ms, l.Errors
	d := func(m0, m1 map[string]float64, k string) float64 { return m1[k] - m0[k] }
	commits := d(before, after, "binlog_commits")
	if groups := d(before, after, "binlog_group_commits"); groups > 0 {
		row.AvgGroup = commits / groups
	}
	if _, ok := after["lockstep_binlog_fsyncs"]; ok && commits > 0 {
		row.FsyncsPerTrx = d(before, after, "lockstep_binlog_fsyncs") / commits
	} else if _, ok := after["innodb_data_fsyncs"]; ok && commits > 0 {
		// MariaDB has no binlog fsync counter: InnoDB's, plus one binlog
		// fsync per group under sync_binlog=1.
		f := d(before, after, "innodb_data_fsyncs")
		var sb int
		pdb.QueryRowContext(ctx, "SELECT @@sync_binlog").Scan(&sb)
		if sb == 1 {
			f += d(before, after, "binlog_group_commits")
		}
		row.FsyncsPerTrx = f / commits
	}
	if trx := l.TPS * l.Elapsed.Seconds(); trx > 0 {
		row.CPUPerTrxUs = (cpu1 - cpu0) / trx * 1e6
	}
	if rdb != nil {
		applied := d(rBefore, rAfter, "binlog_commits")
		row.ReplicaRate = applied / l.Elapsed.Seconds()
		row.BehindAtEnd = max(commits-applied, 0)
		wait, err := r.catchUp(ctx, primary, replica, 30*time.Minute)
		if err != nil {
			return row, err
		}
		row.CatchUpSeconds = wait.Seconds()
	}
	r.rows = append(r.rows, row)
	return row, nil
}

// IntList parses a comma-separated list of non-negative integers ("1,4,16").
func IntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a list of non-negative integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}
