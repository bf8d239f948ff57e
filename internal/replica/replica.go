// Package replica makes a Lockstep server a replica: a receiver (the IO
// thread) that streams the source's binlog into a relay log, and an applier
// (the SQL thread) that applies its row events straight to storage, in
// parallel, committing through the server's own commit pipeline under the
// source's GTIDs.
//
// Invariants:
//
//   - The replica's position is its own binlog's executed GTID set. Applied
//     transactions are in the binlog with the source's GTIDs, in source
//     order, so after a crash the store replays them and the receiver asks
//     the source for everything else: no gap, no double apply. The relay log
//     is never synced and is discarded at start.
//   - Commits become visible in source order (replica_preserve_commit_order
//     is always ON): every transaction reserves its place in the pipeline in
//     relay order, and the pipeline applies in reservation order.
//   - A transaction reads (to check that rows exist, and to find the index
//     entries of the row it replaces) only after every transaction it
//     depends on has reserved its place, and it sees their effects through
//     an overlay of submitted-but-not-yet-visible rows. The dependency
//     modes (LOGICAL_CLOCK, WRITESET, DATABASE) only decide how early a
//     transaction may read.
//
// The package knows nothing of SQL: DDL from the source is handed to an
// Executor.
package replica

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Executor runs a DDL statement from the source under the source's GTID.
type Executor interface {
	ExecDDL(q binlog.Query, g binlog.GTIDInfo) error
}

// Options wire a replica to its server.
type Options struct {
	Dir        string // data directory (relay log, source configuration)
	ServerID   uint32
	ServerUUID binlog.UUID
	Port       int // announced in COM_REGISTER_SLAVE
	Store      *storage.Engine
	Pipe       *commit.Pipeline
	Exec       Executor
	Logf       func(format string, args ...any)
	// CascadeParent, when set, reports whether a change of a row of the
	// table can change other rows through a foreign key's action.
	CascadeParent func(tableID uint64) bool
	// Clock is the replica's wall clock (nil: time.Now), read to measure
	// how far it is from its source's.
	Clock func() time.Time
}

// SourceConfig is what CHANGE REPLICATION SOURCE TO sets. It is kept in
// <datadir>/replica-source.json.
type SourceConfig struct {
	Host            string  `json:"host"`
	Port            int     `json:"port"`
	User            string  `json:"user"`
	Password        string  `json:"password"`
	AutoPosition    bool    `json:"auto_position"`
	LogFile         string  `json:"log_file,omitempty"`
	LogPos          uint64  `json:"log_pos,omitempty"`
	SSL             bool    `json:"ssl"`
	SSLVerify       bool    `json:"ssl_verify_server_cert"`
	SSLCA           string  `json:"ssl_ca,omitempty"`
	SSLCert         string  `json:"ssl_cert,omitempty"`
	SSLKey          string  `json:"ssl_key,omitempty"`
	HeartbeatPeriod float64 `json:"heartbeat_period"`
	ConnectRetry    int     `json:"connect_retry"`
	RetryCount      uint64  `json:"retry_count"`
}

// DefaultSource is the configuration CHANGE REPLICATION SOURCE TO starts
// from (MySQL's defaults, with auto-positioning on: Lockstep needs GTIDs).
func DefaultSource() SourceConfig {
	return SourceConfig{Port: 3306, AutoPosition: true, HeartbeatPeriod: 30, ConnectRetry: 60, RetryCount: 86400}
}

// Parallel types.
const (
	TypeLogicalClock = "LOGICAL_CLOCK"
	TypeWriteset     = "WRITESET"
	TypeDatabase     = "DATABASE"
)

// Settings are the replica's dynamic settings (global variables).
type Settings struct {
	Workers      atomic.Int64 // replica_parallel_workers
	Type         atomic.Value // string: replica_parallel_type
	SkipErrors   atomic.Value // string: replica_skip_errors ("OFF", "all", "1062,1032")
	NetTimeout   atomic.Int64 // replica_net_timeout, seconds
	SemiSync     atomic.Bool  // rpl_semi_sync_replica_enabled
	MaxRelaySize atomic.Int64 // max_relay_log_size (0: max_binlog_size)
}

// Replica is the replication controller of one server.
type Replica struct {
	o        Options
	Settings Settings

	mu         sync.Mutex
	configured bool
	src        SourceConfig
	relay      *relayLog
	io         *receiver
	sql        *applier
	retrieved  binlog.GTIDSet // complete transactions written to the relay log
	// lastQueued and queueing are the transaction the receiver last wrote
	// to the relay log whole, and the one it is writing (GTID empty:
	// none), for replication_connection_status.
	lastQueued, queueing TrxState
	execPos              execPosition // last applied source position (file/position mode)
	recvEnd              execPosition // source position after the last transaction in the relay log

	errMu      sync.Mutex
	ioErrno    uint16
	ioErr      string
	ioErrTime  time.Time
	sqlErrno   uint16
	sqlErr     string
	sqlErrTime time.Time

	Stats ApplyStats

	// sourceLogsCascades: the source is a Lockstep server, whose binlog
	// has the row changes of foreign keys' actions (MySQL 8's and
	// MariaDB's do not: their replicas make them).
	sourceLogsCascades atomic.Bool
}

type execPosition struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
}

const sourceFile = "replica-source.json"
const positionFile = "replica-position.json"

// New loads the stored source configuration, if any.
func New(o Options) (*Replica, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	r := &Replica{o: o}
	r.Settings.Workers.Store(4)
	r.Settings.Type.Store(TypeLogicalClock)
	r.Settings.SkipErrors.Store("OFF")
	r.Settings.NetTimeout.Store(60)
	b, err := atomicfile.ReadChecked(vfs.Default, filepath.Join(o.Dir, sourceFile))
	switch {
	case err == nil:
		r.src = DefaultSource()
		if err := json.Unmarshal(b, &r.src); err != nil {
			return nil, fmt.Errorf("%s: %w", sourceFile, err)
		}
		r.configured = true
	case !oserror.IsNotExist(err):
		return nil, err
	}
	if b, err := atomicfile.ReadChecked(vfs.Default, filepath.Join(o.Dir, positionFile)); err == nil {
		if err := json.Unmarshal(b, &r.execPos); err != nil {
			return nil, fmt.Errorf("%s: %w", positionFile, err)
		}
	} else if !oserror.IsNotExist(err) {
		return nil, err
	}
	if err := removeRelayFiles(o.Dir); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Replica) logf(format string, args ...any) { r.o.Logf(format, args...) }

// applyLag is the applier's Seconds_Behind_Source as of now, and
// whether the SQL thread runs at all.
func (r *Replica) applyLag(now time.Time) (time.Duration, bool) {
	r.mu.Lock()
	running := r.sql != nil
	r.mu.Unlock()
	if !running {
		return 0, false
	}
	return r.Stats.Lag(now), true
}

// now is the replica's wall clock (Options.Clock).
func (r *Replica) now() time.Time {
	if r.o.Clock != nil {
		return r.o.Clock()
	}
	return time.Now()
}

// Configured reports whether a source is set.
func (r *Replica) Configured() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configured
}

// Source returns the configured source.
func (r *Replica) Source() SourceConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src
}

// Error is a replication statement error with a MySQL error number.
type Error struct {
	Code uint16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// ChangeSource applies CHANGE REPLICATION SOURCE TO. Threads must be
// stopped (MySQL allows some changes while running; Lockstep asks for a
// stop, which is always safe).
func (r *Replica) ChangeSource(change func(*SourceConfig) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.io != nil || r.sql != nil {
		return &Error{3021, "This operation cannot be performed with a running replica io thread; run STOP REPLICA first."}
	}
	c := r.src
	if !r.configured {
		c = DefaultSource()
	}
	oldHost, oldPort := c.Host, c.Port
	if err := change(&c); err != nil {
		return err
	}
	if c.AutoPosition && c.LogFile != "" {
		return &Error{1776, "Parameters SOURCE_LOG_FILE, SOURCE_LOG_POS, RELAY_LOG_FILE and RELAY_LOG_POS cannot be set when SOURCE_AUTO_POSITION is active."}
	}
	if c.Host != oldHost || c.Port != oldPort || c.LogFile != "" {
		// A new source or an explicit position: forget the old position.
		r.execPos = execPosition{File: c.LogFile, Pos: uint32(c.LogPos)}
		if err := r.savePositionLocked(); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := atomicfile.WriteChecked(vfs.Default, filepath.Join(r.o.Dir, sourceFile), b); err != nil {
		return err
	}
	r.src, r.configured = c, true
	r.retrieved = binlog.GTIDSet{}
	return nil
}

// Start starts the IO and/or SQL thread (START REPLICA [IO_THREAD]
// [SQL_THREAD]). Threads already running are left alone (MySQL warns).
func (r *Replica) Start(io, sqlThread bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.configured || r.src.Host == "" {
		return &Error{13117, "Replica failed to initialize applier metadata structure from the repository: no source configured; use CHANGE REPLICATION SOURCE TO"}
	}
	if r.io == nil && r.sql == nil {
		// Both threads start from stopped: begin a fresh relay log and
		// fetch everything not executed (relay_log_recovery).
		if r.relay != nil {
			r.relay.close()
		}
		max := r.Settings.MaxRelaySize.Load()
		if max <= 0 {
			max = r.o.Pipe.Config().MaxBinlogSize.Load()
		}
		rl, err := openRelay(r.o.Dir, max)
		if err != nil {
			return err
		}
		r.relay = rl
		r.retrieved = binlog.GTIDSet{}
		r.recvEnd = execPosition{}
		r.Stats.resetRelay()
	}
	if io && r.io == nil {
		r.clearIOError()
		rc := &receiver{r: r, src: r.src, stop: make(chan struct{}), done: make(chan struct{})}
		r.io = rc
		go rc.run()
	}
	if sqlThread && r.sql == nil {
		r.clearSQLError()
		r.Stats.clearErrors()
		a := newApplier(r, r.relay)
		r.sql = a
		go a.run()
	}
	return nil
}

// Stop stops the IO and/or SQL thread and waits for them.
func (r *Replica) Stop(io, sqlThread bool) {
	r.mu.Lock()
	rc, a := r.io, r.sql
	if !io {
		rc = nil
	}
	if !sqlThread {
		a = nil
	}
	r.mu.Unlock()
	if rc != nil {
		rc.close()
	}
	if a != nil {
		a.close()
	}
	r.mu.Lock()
	if rc != nil && r.io == rc {
		r.io = nil
	}
	if a != nil && r.sql == a {
		r.sql = nil
	}
	r.mu.Unlock()
}

// ioStopped is called by a receiver that stopped on its own (fatal error).
func (r *Replica) ioStopped(rc *receiver) {
	r.mu.Lock()
	if r.io == rc {
		r.io = nil
	}
	r.mu.Unlock()
}

func (r *Replica) sqlStopped(a *applier) {
	r.mu.Lock()
	if r.sql == a {
		r.sql = nil
	}
	r.mu.Unlock()
}

// Reset is RESET REPLICA [ALL].
func (r *Replica) Reset(all bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.io != nil || r.sql != nil {
		return &Error{3021, "This operation cannot be performed with a running replica; run STOP REPLICA first."}
	}
	if r.relay != nil {
		r.relay.close()
		r.relay = nil
	}
	if err := removeRelayFiles(r.o.Dir); err != nil {
		return err
	}
	r.retrieved = binlog.GTIDSet{}
	r.execPos = execPosition{}
	os.Remove(filepath.Join(r.o.Dir, positionFile))
	r.clearIOError()
	r.clearSQLError()
	if all {
		r.configured = false
		r.src = SourceConfig{}
		if err := os.Remove(filepath.Join(r.o.Dir, sourceFile)); err != nil && !os.IsNotExist(err) {
			return err
		}
	} else if r.configured {
		r.src.LogFile, r.src.LogPos = "", 0
	}
	return nil
}

// Close stops both threads.
func (r *Replica) Close() {
	r.Stop(true, true)
	r.mu.Lock()
	if r.relay != nil {
		r.relay.close()
		r.relay = nil
	}
	r.mu.Unlock()
}

// SemiSyncEnabled is rpl_semi_sync_replica_enabled.
func (r *Replica) SemiSyncEnabled() bool { return r.Settings.SemiSync.Load() }

// NetTimeout is replica_net_timeout in seconds.
func (r *Replica) NetTimeout() int64 { return max(r.Settings.NetTimeout.Load(), 1) }

// gtidsForSource is what the receiver asks the source to skip: executed
// transactions plus those already complete in the relay log.
func (r *Replica) gtidsForSource() binlog.GTIDSet {
	g := r.o.Pipe.GTIDExecuted()
	r.mu.Lock()
	g.AddSet(r.retrieved)
	r.mu.Unlock()
	return g
}

// resumePosition is where a file/position receiver starts: after the last
// applied transaction, or the configured position.
func (r *Replica) resumePosition(src SourceConfig) (string, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recvEnd.File != "" {
		return r.recvEnd.File, uint64(r.recvEnd.Pos)
	}
	if r.execPos.File != "" {
		return r.execPos.File, uint64(r.execPos.Pos)
	}
	return src.LogFile, max(src.LogPos, 4)
}

func (r *Replica) savePositionLocked() error {
	b, _ := json.Marshal(r.execPos)
	return atomicfile.WriteChecked(vfs.Default, filepath.Join(r.o.Dir, positionFile), b)
}

// saveExecPosition records the source position of applied transactions
// (file/position mode resumes from it; GTIDs skip anything applied twice).
func (r *Replica) saveExecPosition(file string, pos uint32) {
	if file == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execPos = execPosition{File: file, Pos: pos}
	if err := r.savePositionLocked(); err != nil {
		r.logf("saving replica position: %v", err)
	}
}

// writeRelay is the receiver's writer goroutine: events to the relay log,
// flushed whenever the queue runs dry.
func (r *Replica) writeRelay(events <-chan []byte) error {
	r.mu.Lock()
	rl := r.relay
	r.mu.Unlock()
	var asm assembler
	var failed error
	var cur *relayTrx // the transaction being queued
	var curStart time.Time
	for ev := range events {
		if failed != nil {
			continue
		}
		if err := rl.append(ev, !asm.inTrx); err != nil {
			failed = &ioError{code: 13122, fatal: true, msg: fmt.Sprintf("Relay log write failure: %v", err)}
			continue
		}
		t, err := asm.add(ev)
		if err != nil {
			// The applier reports unsupported streams with the details;
			// the receiver keeps going.
			continue
		}
		if t != nil {
			last := trxState(t, curStart)
			if t != cur {
				last.Start = time.Now() // one event: queued as it began
			}
			last.End = time.Now()
			cur = nil
			r.mu.Lock()
			r.retrieved.Add(t.GTID.SID, t.GTID.GNO)
			r.recvEnd = execPosition{File: t.SourceFile, Pos: t.SourceEnd}
			r.lastQueued, r.queueing = last, TrxState{}
			r.mu.Unlock()
			r.Stats.Retrieved.Add(1)
		} else if asm.cur != nil && asm.cur != cur {
			cur, curStart = asm.cur, time.Now()
			r.mu.Lock()
			r.queueing = trxState(cur, curStart)
			r.mu.Unlock()
		}
		if len(events) == 0 {
			if err := rl.flush(); err != nil {
				failed = &ioError{code: 13122, fatal: true, msg: fmt.Sprintf("Relay log write failure: %v", err)}
			}
		}
	}
	if failed == nil {
		if err := rl.flush(); err != nil {
			failed = err
		}
	}
	return failed
}

func (r *Replica) setIOError(code uint16, msg string) {
	r.errMu.Lock()
	r.ioErrno, r.ioErr, r.ioErrTime = code, msg, time.Now()
	r.errMu.Unlock()
}

func (r *Replica) clearIOError() { r.setIOError(0, "") }

func (r *Replica) setSQLError(code uint16, msg string) {
	r.errMu.Lock()
	r.sqlErrno, r.sqlErr, r.sqlErrTime = code, msg, time.Now()
	r.errMu.Unlock()
}

func (r *Replica) clearSQLError() { r.setSQLError(0, "") }

// skipError reports whether replica_skip_errors covers code.
func (r *Replica) skipError(code uint16) bool {
	s, _ := r.Settings.SkipErrors.Load().(string)
	if s == "" || strings.EqualFold(s, "OFF") {
		return false
	}
	if strings.EqualFold(s, "all") {
		return true
	}
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && uint16(n) == code {
			return true
		}
	}
	return false
}

// Status is SHOW REPLICA STATUS.
type Status struct {
	Source SourceConfig
	// LastQueued and Queueing are the transactions last written whole to
	// the relay log and being written (GTID empty: none), with the start
	// and end of their queueing.
	LastQueued, Queueing TrxState
	// Heartbeats counts the source's heartbeats since the receiver
	// started; LastHeartbeat is the last one's time.
	Heartbeats        uint64
	LastHeartbeat     time.Time
	IOState           string
	IORunning         string // Yes, Connecting, No
	SQLRunning        bool
	SQLState          string
	SourceLogFile     string
	ReadSourceLogPos  uint32
	RelayLogFile      string
	RelayLogPos       int64
	ExecSourceLogFile string
	ExecSourceLogPos  uint32
	RelayLogSpace     int64
	SecondsBehind     int64 // -1 for NULL
	IOErrno, SQLErrno uint16
	IOError, SQLError string
	IOErrorTime       time.Time
	SQLErrorTime      time.Time
	SourceServerID    uint32
	SourceUUID        string
	RetrievedGTIDs    string
	ExecutedGTIDs     string
}

// Status returns the replica's state; ok is false when no source was ever
// configured (SHOW REPLICA STATUS is then empty).
func (r *Replica) Status(now time.Time) (Status, bool) {
	r.mu.Lock()
	st := Status{Source: r.src, SecondsBehind: -1}
	ok := r.configured
	rc, a, rl := r.io, r.sql, r.relay
	st.RetrievedGTIDs = r.retrieved.String()
	st.LastQueued, st.Queueing = r.lastQueued, r.queueing
	r.mu.Unlock()
	if !ok {
		return st, false
	}
	st.Source.Password = ""
	st.IORunning = "No"
	if rc != nil {
		st.IOState = rc.State()
		st.IORunning = "Connecting"
		if rc.connected.Load() {
			st.IORunning = "Yes"
		}
		rc.posMu.Lock()
		st.SourceLogFile, st.ReadSourceLogPos = rc.sourceFile, rc.readPos
		st.SourceServerID, st.SourceUUID = rc.sourceID, rc.sourceUUID
		rc.posMu.Unlock()
		st.Heartbeats = rc.Heartbeats.Load()
		if ns := rc.Heartbeat.Load(); ns > 0 {
			st.LastHeartbeat = time.Unix(0, ns)
		}
	}
	if rl != nil {
		pub, _, _ := rl.Published()
		st.RelayLogFile, st.RelayLogPos = relayName(pub.File), pub.Pos
		st.RelayLogSpace = rl.Space()
	}
	st.ExecSourceLogFile, st.ExecSourceLogPos = r.Stats.ExecPosition()
	if a != nil {
		st.SQLRunning = true
		st.SQLState = a.State()
		caughtUp := r.Stats.Pending() == 0
		if !caughtUp || rc != nil {
			st.SecondsBehind = int64(r.Stats.Lag(now) / time.Second)
		}
	}
	r.errMu.Lock()
	st.IOErrno, st.IOError, st.IOErrorTime = r.ioErrno, r.ioErr, r.ioErrTime
	st.SQLErrno, st.SQLError, st.SQLErrorTime = r.sqlErrno, r.sqlErr, r.sqlErrTime
	r.errMu.Unlock()
	if st.IOErrno == 0 {
		st.IOErrorTime = time.Time{}
	}
	if st.SQLErrno == 0 {
		st.SQLErrorTime = time.Time{}
	}
	st.ExecutedGTIDs = r.o.Pipe.GTIDVisible().String()
	return st, true
}
