// Package workload runs consistency workloads against MySQL-protocol
// servers (Lockstep, MariaDB, Galera) and checks what they promise: no
// acknowledged write lost, invariants kept, no isolation anomaly the level
// in use forbids. It is the engine of `lockstep workload`.
//
// A run has clients (one session each, spread over the endpoints) that
// repeat one workload's transaction until the run's time is up, while an
// optional fault schedule kills, pauses and restarts the servers the run
// started itself. Every transaction's outcome is recorded, as the client
// saw it:
//
//   - ok: COMMIT (or the autocommit statement) returned success;
//   - fail: the server refused it (an error before or at COMMIT that is
//     a MySQL error: deadlock, lock wait timeout, certification), so
//     nothing of it may ever be visible;
//   - info: the connection broke before the outcome was known (a killed
//     server), so it may or may not have committed.
//
// After the run, the servers are given time to come back and the workload
// checks the history against the final state. Histories and the report
// are kept on disk for inspection.
package workload

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Config describes a run.
type Config struct {
	// Endpoints are host:port addresses (or net(host:port), net a dialer
	// registered with the MySQL driver); clients are spread over them.
	Endpoints []string
	User      string
	Password  string
	// Database is created if missing and holds the workload's tables.
	Database string
	Clients  int
	Duration time.Duration
	// Isolation is the sessions' transaction_isolation (MySQL's spelling,
	// e.g. REPEATABLE-READ); empty leaves the server's default.
	Isolation string
	// Expect is the level the history is judged against (list-append and
	// register); empty derives it from Isolation (see expectedLevel).
	Expect string
	// Dir receives the history and the report.
	Dir  string
	Seed int64
	// Progress, if set, gets a status line every second.
	Progress io.Writer
	// Faults, if set, injects faults into the servers the run started.
	Faults *Faults
	// Settle bounds the wait for every endpoint to answer after the run.
	Settle time.Duration
	// Replication, if set, is the replica set the run started (Endpoints
	// then reach its primary): the checks add that its servers converged.
	Replication *ReplicaSet
}

// Report is the outcome of a run.
type Report struct {
	Workload  string   `json:"workload"`
	Endpoints []string `json:"endpoints"`
	// Servers are the addresses of the servers a replica set the run
	// started is made of (its clients reach them through Endpoints).
	Servers   []string      `json:"servers,omitempty"`
	Isolation string        `json:"isolation"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	OK        int64         `json:"ok"`
	Fail      int64         `json:"fail"`
	Info      int64         `json:"info"`
	Faults    []string      `json:"faults"`
	// SkippedFaults are faults asked for that could not be injected, and
	// why.
	SkippedFaults []string `json:"skipped_faults,omitempty"`
	Checks        []Check  `json:"checks"`
	// LongestStall is the longest time during the run in which no
	// transaction committed on any endpoint (how long writes stopped,
	// under faults), and StallEndedAt when it ended, from the start.
	LongestStall time.Duration `json:"longest_stall_ns"`
	StallEndedAt time.Duration `json:"stall_ended_at_ns"`
	// Valid is false when any check failed.
	Valid bool `json:"valid"`
}

// Check is one verdict of a workload's checker.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// String renders the report for humans.
func (r *Report) String() string {
	var b strings.Builder
	verdict := "VALID"
	if !r.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(&b, "%s: %s after %v against %s (isolation %s)\n", r.Workload, verdict, r.Elapsed.Round(time.Millisecond),
		strings.Join(r.Endpoints, ","), orDefault(r.Isolation, "server default"))
	fmt.Fprintf(&b, "  transactions: %d ok, %d fail, %d info (outcome unknown)\n", r.OK, r.Fail, r.Info)
	if len(r.Faults) > 0 {
		fmt.Fprintf(&b, "  faults: %d (%s)\n", len(r.Faults), summarizeFaults(r.Faults))
	}
	if r.LongestStall > 0 {
		fmt.Fprintf(&b, "  longest time without a commit: %v, ending %.1fs into the run\n", r.LongestStall.Round(time.Millisecond), r.StallEndedAt.Seconds())
	}
	for _, s := range r.SkippedFaults {
		fmt.Fprintf(&b, "  SKIPPED fault: %s\n", s)
	}
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", mark, c.Name, strings.ReplaceAll(strings.TrimRight(c.Detail, "\n"), "\n", "\n       "))
	}
	return b.String()
}

func summarizeFaults(fs []string) string {
	n := map[string]int{}
	var order []string
	for _, f := range fs {
		kind, _, _ := strings.Cut(f, " ")
		if n[kind] == 0 {
			order = append(order, kind)
		}
		n[kind]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// workload is one kind of transaction and its checker.
type workload interface {
	// setup creates the tables (on the first endpoint; replication or the
	// cluster carries them to the others).
	setup(ctx context.Context, db *sql.DB) error
	// step runs one transaction for client c and records its outcome.
	step(ctx context.Context, c *client) error
	// check judges the history against the final state and writes its
	// history to dir.
	check(ctx context.Context, r *run) ([]Check, error)
}

// Names lists the workloads.
func Names() []string { return []string{"acked-writes", "bank", "list-append", "register"} }

func newWorkload(name string, cfg *Config) (workload, error) {
	switch name {
	case "acked-writes":
		return &ackedWrites{}, nil
	case "bank":
		return newBank(), nil
	case "list-append":
		return newListAppend(), nil
	case "register":
		return newRegister(), nil
	}
	return nil, fmt.Errorf("unknown workload %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// run is the state of one run, shared by its clients.
type run struct {
	cfg   Config
	start time.Time
	dbs   []*sql.DB // one pool per endpoint, for setup and checks

	ok, fail, info atomic.Int64
	faultsMu       sync.Mutex
	faults         []string

	// lastOK is when a transaction last committed (Unix ns); stall and
	// stallEnd the longest time without one and when it ended.
	lastOK          atomic.Int64
	stallMu         sync.Mutex
	stall, stallEnd time.Duration
}

func (r *run) noteFault(f string) {
	r.faultsMu.Lock()
	r.faults = append(r.faults, f)
	r.faultsMu.Unlock()
}

// now is nanoseconds since the run started, the histories' clock.
func (r *run) now() int64 { return int64(time.Since(r.start)) }

// client is one session.
type client struct {
	id  int
	r   *run
	db  *sql.DB // one connection
	rnd *rand.Rand
}

// outcome classifies err, the result of a transaction whose COMMIT (or
// autocommit statement) was sent if committing is true.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeFail
	outcomeInfo
)

// erErrorDuringCommit is MySQL's 1180, ER_ERROR_DURING_COMMIT.
const erErrorDuringCommit = 1180

func classify(err error, committing bool) outcome {
	if err == nil {
		return outcomeOK
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if me.Number == erErrorDuringCommit && committing {
			// A cluster member that could not learn its commit's outcome
			// in time: it may still commit.
			return outcomeInfo
		}
		return outcomeFail // the server answered: refused
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return outcomeFail // no connection: nothing was sent
	}
	if !committing {
		return outcomeFail // nothing was committed before COMMIT was sent
	}
	return outcomeInfo // the connection broke: the outcome is unknown
}

// pause slows a client down after a transaction that did not commit
// because the server is unreachable, so that a down server is not
// hammered with connection attempts.
func (c *client) backoff(ctx context.Context, o outcome, err error) {
	if o == outcomeOK || err == nil {
		return
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return // the server answered
	}
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

// done counts a transaction's outcome and, when the server could not be
// reached, waits a little before the next.
func (c *client) done(ctx context.Context, o outcome, err error) {
	c.r.counted(o)
	c.backoff(ctx, o, err)
}

func (r *run) counted(o outcome) {
	switch o {
	case outcomeOK:
		r.ok.Add(1)
		now := time.Now()
		prev := r.lastOK.Swap(now.UnixNano())
		if prev == 0 {
			prev = r.start.UnixNano()
		}
		if gap := time.Duration(now.UnixNano() - prev); gap > 0 {
			r.stallMu.Lock()
			if gap > r.stall {
				r.stall, r.stallEnd = gap, now.Sub(r.start)
			}
			r.stallMu.Unlock()
		}
	case outcomeFail:
		r.fail.Add(1)
	default:
		r.info.Add(1)
	}
}

// transaction runs body between BEGIN and COMMIT on c's connection.
// It returns the outcome and the error that decided it.
func (c *client) transaction(ctx context.Context, body func(tx *sql.Tx) error) (outcome, error) {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return outcomeFail, err
	}
	if err := body(tx); err != nil {
		_ = tx.Rollback()
		return classify(err, false), err
	}
	err = tx.Commit()
	return classify(err, true), err
}

// dsn is the go-sql-driver DSN of an endpoint.
func (cfg *Config) dsn(endpoint, db string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = cfg.User, cfg.Password, "tcp", endpoint, db
	if i := strings.IndexByte(endpoint, '('); i > 0 && strings.HasSuffix(endpoint, ")") {
		// net(addr): a dialer registered with the driver under net (a
		// server in a network namespace, see StartClusterInNamespaces).
		c.Net, c.Addr = endpoint[:i], endpoint[i+1:len(endpoint)-1]
	}
	c.Timeout, c.ReadTimeout, c.WriteTimeout = 5*time.Second, 30*time.Second, 30*time.Second
	c.InterpolateParams = true
	if cfg.Isolation != "" {
		c.Params = map[string]string{"transaction_isolation": "'" + cfg.Isolation + "'"}
	}
	return c.FormatDSN()
}

// Run runs workload name as cfg says and returns its report, written also
// to cfg.Dir (report.txt and report.json) beside the history.
func Run(ctx context.Context, name string, cfg Config) (*Report, error) {
	w, err := newWorkload(name, &cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no endpoint")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Database == "" {
		cfg.Database = "lockstep_workload"
	}
	if cfg.Settle == 0 {
		cfg.Settle = 2 * time.Minute
	}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(os.TempDir(), fmt.Sprintf("lockstep-workload-%s-%d", name, time.Now().Unix()))
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.Faults != nil && cfg.Faults.Seed == 0 {
		// The schedule follows the run's seed, given or drawn: a zero
		// seed would give every run the same schedule.
		cfg.Faults.Seed = cfg.Seed
	}
	r := &run{cfg: cfg}
	defer func() {
		for _, db := range r.dbs {
			db.Close()
		}
	}()
	for _, ep := range cfg.Endpoints {
		db, err := sql.Open("mysql", cfg.dsn(ep, ""))
		if err != nil {
			return nil, err
		}
		r.dbs = append(r.dbs, db)
	}
	if err := waitAll(ctx, r.dbs, cfg.Settle); err != nil {
		return nil, err
	}
	if _, err := r.dbs[0].ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+cfg.Database+"`"); err != nil {
		return nil, fmt.Errorf("creating database %s: %w", cfg.Database, err)
	}
	setupDB, err := sql.Open("mysql", cfg.dsn(cfg.Endpoints[0], cfg.Database))
	if err != nil {
		return nil, err
	}
	err = w.setup(ctx, setupDB)
	setupDB.Close()
	if err != nil {
		return nil, fmt.Errorf("setting up %s: %w", name, err)
	}

	r.start = time.Now()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	clientErrs := make(chan error, cfg.Clients)
	for i := 0; i < cfg.Clients; i++ {
		db, err := sql.Open("mysql", cfg.dsn(cfg.Endpoints[i%len(cfg.Endpoints)], cfg.Database))
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		c := &client{id: i, r: r, db: db, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer db.Close()
			for runCtx.Err() == nil {
				if err := w.step(runCtx, c); err != nil {
					clientErrs <- fmt.Errorf("client %d: %w", c.id, err)
					cancel()
					return
				}
			}
		}()
	}
	stopFaults := func() {}
	if cfg.Faults != nil {
		stopFaults = cfg.Faults.start(runCtx, r)
	}
	stopProgress := r.progress(runCtx)
	wg.Wait()
	stopFaults()
	stopProgress()
	close(clientErrs)
	if err := <-clientErrs; err != nil {
		return nil, err
	}
	elapsed := time.Since(r.start)
	if last := r.lastOK.Load(); last != 0 {
		// Writes that stopped and never came back before the end.
		if gap := time.Since(time.Unix(0, last)); gap > r.stall {
			r.stall, r.stallEnd = gap, elapsed
		}
	}

	// Every server back (a fault schedule ends by restarting what it
	// stopped) before the final reads. One that stays down is a failed
	// check, reported with what the run recorded: what it held cannot
	// be checked.
	var checks []Check
	if err := waitAll(ctx, r.dbs, cfg.Settle); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("after the run: %w", err)
		}
		checks = append(checks, Check{Name: "servers answer after the run", OK: false,
			Detail: fmt.Sprintf("%v (waited %v); nothing else could be checked", err, cfg.Settle)})
	} else {
		var err error
		if checks, err = w.check(ctx, r); err != nil {
			return nil, fmt.Errorf("checking %s: %w", name, err)
		}
		if cfg.Replication != nil {
			checks = append(checks, cfg.Replication.converged(ctx, cfg.Database))
		}
	}
	r.stallMu.Lock()
	stall, stallEnd := r.stall, r.stallEnd
	r.stallMu.Unlock()
	rep := &Report{Workload: name, Endpoints: cfg.Endpoints, Isolation: cfg.Isolation, Elapsed: elapsed,
		OK: r.ok.Load(), Fail: r.fail.Load(), Info: r.info.Load(), Faults: r.faults, Checks: checks, Valid: true,
		LongestStall: stall, StallEndedAt: stallEnd}
	if cfg.Faults != nil {
		rep.SkippedFaults = cfg.Faults.Skipped
	}
	if cfg.Replication != nil {
		for _, s := range cfg.Replication.Servers {
			rep.Servers = append(rep.Servers, s.Endpoint())
		}
	}
	for _, c := range checks {
		rep.Valid = rep.Valid && c.OK
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "report.txt"), []byte(rep.String()), 0o644); err != nil {
		return rep, err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	return rep, os.WriteFile(filepath.Join(cfg.Dir, "report.json"), b, 0o644)
}

// waitAll waits until every pool answers a ping, at most timeout.
func waitAll(ctx context.Context, dbs []*sql.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i, db := range dbs {
		for {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := db.PingContext(pctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("endpoint %d does not answer: %w", i+1, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// progress prints a status line every second until stopped.
func (r *run) progress(ctx context.Context) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintln(r.cfg.Progress)
				return
			case <-ctx.Done():
				fmt.Fprintln(r.cfg.Progress)
				return
			case <-t.C:
				r.faultsMu.Lock()
				nf := len(r.faults)
				r.faultsMu.Unlock()
				el := time.Since(r.start).Truncate(time.Second)
				fmt.Fprintf(r.cfg.Progress, "\r%v/%v  ok %d  fail %d  info %d  faults %d   ", el, r.cfg.Duration,
					r.ok.Load(), r.fail.Load(), r.info.Load(), nf)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// checkConn opens a session on endpoint for a final check that sees
// every transaction acknowledged anywhere before it: on a cluster member
// (Lockstep's or Galera) it waits, up to a minute, until the member says
// wsrep_ready ON (back in the primary component after the faults) and
// sets wsrep_sync_wait = 1; a server without those reads its own commits
// anyway. close releases it.
func (r *run) checkConn(ctx context.Context, endpoint string) (c *sql.Conn, close func(), err error) {
	db, err := sql.Open("mysql", r.cfg.dsn(endpoint, r.cfg.Database))
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*sql.Conn, func(), error) {
		db.Close()
		return nil, nil, err
	}
	// A member has wsrep_on ON; a server without the variable, or a
	// MariaDB built with Galera and not running it (wsrep_on OFF,
	// wsrep_ready OFF for good), is not one.
	var on sql.NullString
	member := db.QueryRowContext(ctx, "SELECT @@global.wsrep_on").Scan(&on) == nil &&
		(on.String == "1" || strings.EqualFold(on.String, "ON"))
	deadline := time.Now().Add(time.Minute)
	for member {
		var name, ready string
		err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &ready)
		if errors.Is(err, sql.ErrNoRows) {
			break // not a cluster member
		}
		if err == nil && ready == "ON" {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("%s is not ready for the final check after a minute (wsrep_ready %q, %v)", endpoint, ready, err))
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, err = db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	_, err = c.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1")
	if me := (*mysql.MySQLError)(nil); err != nil && (!errors.As(err, &me) || me.Number != 1193) {
		c.Close()
		return fail(err)
	}
	return c, func() { c.Close(); db.Close() }, nil
}
