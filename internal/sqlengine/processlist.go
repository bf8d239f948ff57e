package sqlengine

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// processList keeps the server's connections and what each is running:
// SHOW PROCESSLIST, the process tables of information_schema and
// performance_schema, and KILL read it; every statement writes it twice
// (when it begins and when it ends).
//
// go-mysql-server's own list keeps all of that under one lock. Under
// load on a small machine the operating system preempts the thread that
// holds it, and every other statement then waits at its beginning or end:
// Go's mutex profile of sysbench oltp_read_only at 16 threads put two
// thirds of the server's lock waiting there. Here every connection has
// its own lock and the connections are in a sync.Map, so statements of
// different connections never wait for each other; only a listing or a
// KILL visits them one by one.
//
// Invariants: a connection's entry exists from AddConnection (replaced by
// ConnectionReady) to RemoveConnection; a running statement's pid maps to
// its connection's entry (byPid) from BeginQuery to EndQuery; Kill is set
// while a statement or an operation runs, and calling it cancels that.
type processList struct {
	conns sync.Map // uint32 connection id -> *process
	byPid pidIndex
}

// pidIndex maps running statements' pids to their connections' entries.
// Every statement adds a new pid, which a sync.Map serves under its one
// lock: the index is split by pid into shards with a lock each.
type pidIndex struct{ shards [64]pidShard }

type pidShard struct {
	mu sync.Mutex
	m  map[uint64]*process
}

func (x *pidIndex) shard(pid uint64) *pidShard { return &x.shards[pid%uint64(len(x.shards))] }

// add maps pid to p unless pid is already running; it reports whether it
// did.
func (x *pidIndex) add(pid uint64, p *process) bool {
	s := x.shard(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, used := s.m[pid]; used {
		return false
	}
	if s.m == nil {
		s.m = map[uint64]*process{}
	}
	s.m[pid] = p
	return true
}

func (x *pidIndex) get(pid uint64) *process {
	s := x.shard(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[pid]
}

// remove forgets pid if it maps to p (any entry if p is nil).
func (x *pidIndex) remove(pid uint64, p *process) {
	s := x.shard(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.m[pid]; ok && (p == nil || q == p) {
		delete(s.m, pid)
	}
}

var _ sql.ProcessList = (*processList)(nil)

type process struct {
	mu sync.Mutex
	p  sql.Process
	// borrowed says that p.Kill is the cancel function of a context
	// made by StatementContext, which its maker calls when the
	// statement is over: EndQuery leaves it alone.
	borrowed bool
	// call is the CALL running on the connection (RunningCall), shown,
	// and killed by KILL QUERY, between its body's statements.
	call *runningCall
}

type runningCall struct {
	query   string
	started time.Time
	cancel  context.CancelFunc
}

// statementCtx is a statement's cancellable context, made by
// StatementContext before the statement's sql.Context exists.
type statementCtx struct {
	context.Context
	cancel context.CancelFunc
}

// statementCtxKey finds a statementCtx among a context's ancestors.
type statementCtxKey struct{}

func (c *statementCtx) Value(key any) any {
	if key == (statementCtxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// StatementContext returns a cancellable context for the statement about
// to run on a connection, and its cancel function, which the caller
// calls once the statement is over. BeginQuery gives KILL QUERY this
// context's cancel function instead of deriving a cancellable context of
// its own from it (a channel and an entry in this context's children
// for every statement, about 2% of a point select's CPU).
func StatementContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	return &statementCtx{Context: ctx, cancel: cancel}, cancel
}

func newProcessList() *processList { return &processList{} }

func (l *processList) get(connID uint32) *process {
	v, ok := l.conns.Load(connID)
	if !ok {
		return nil
	}
	return v.(*process)
}

// Processes returns a copy of every connection's state.
func (l *processList) Processes() []sql.Process {
	var out []sql.Process
	l.conns.Range(func(_, v any) bool {
		p := v.(*process)
		p.mu.Lock()
		c := p.p
		c.Progress = copyProgress(p.p.Progress)
		p.mu.Unlock()
		out = append(out, c)
		return true
	})
	return out
}

func copyProgress(m map[string]sql.TableProgress) map[string]sql.TableProgress {
	out := make(map[string]sql.TableProgress, len(m))
	for name, tp := range m {
		tp.PartitionsProgress = maps.Clone(tp.PartitionsProgress)
		out[name] = tp
	}
	return out
}

// AddConnection registers a connection that has not logged in yet.
func (l *processList) AddConnection(id uint32, addr string) {
	sql.StatusVariables.IncrementGlobal("Threads_connected", 1)
	l.conns.Store(id, &process{p: sql.Process{Connection: id, Command: sql.ProcessCommandConnect,
		Host: addr, User: "unauthenticated user", StartedAt: time.Now()}})
}

// ConnectionReady records a connection that has logged in, idle. Its
// host stays the address it connected from (AddConnection's), as MySQL
// shows it (host:port), not the host part of the account it logged in as.
func (l *processList) ConnectionReady(sess sql.Session) {
	host := sess.Client().Address
	if p := l.get(sess.ID()); p != nil {
		p.mu.Lock()
		if p.p.Host != "" {
			host = p.p.Host
		}
		p.mu.Unlock()
	}
	l.conns.Store(sess.ID(), &process{p: sql.Process{Connection: sess.ID(), Command: sql.ProcessCommandSleep,
		Host: host, User: sess.Client().User, StartedAt: time.Now(), Database: sess.GetCurrentDatabase()}})
}

// RemoveConnection forgets a connection, cancelling what it runs.
func (l *processList) RemoveConnection(connID uint32) {
	v, ok := l.conns.LoadAndDelete(connID)
	if !ok {
		return
	}
	sql.StatusVariables.IncrementGlobal("Threads_connected", -1)
	p := v.(*process)
	p.mu.Lock()
	kill, pid := p.p.Kill, p.p.QueryPid
	p.mu.Unlock()
	if kill != nil {
		kill()
	}
	if pid != 0 {
		l.byPid.remove(pid, p)
	}
}

var errNotRegistered = errors.New("internal error: connection not registered with process list")

// BeginQuery marks the session's connection as running query and returns
// the statement's context, which KILL QUERY (Kill) cancels.
func (l *processList) BeginQuery(ctx *sql.Context, query string) (*sql.Context, error) {
	if ctx.IsInterpreted() {
		return ctx, nil
	}
	p := l.get(ctx.Session.ID())
	if p == nil {
		return nil, errNotRegistered
	}
	pid := ctx.Pid()
	if !l.byPid.add(pid, p) {
		return nil, sql.ErrPidAlreadyUsed.New(pid)
	}
	sql.StatusVariables.IncrementGlobal("Threads_running", 1)
	var cancel context.CancelFunc
	sc, borrowed := ctx.Value(statementCtxKey{}).(*statementCtx)
	if borrowed {
		cancel = sc.cancel
	} else {
		var qctx context.Context
		qctx, cancel = context.WithCancel(ctx)
		ctx = ctx.WithContext(qctx)
	}
	p.mu.Lock()
	p.p.Command, p.p.Query, p.p.QueryPid, p.p.StartedAt, p.p.Kill, p.p.Progress = sql.ProcessCommandQuery, query, pid, time.Now(), cancel, nil
	if c := p.call; c != nil {
		p.p.Query, p.p.StartedAt = c.query, c.started // a statement of its body
	}
	p.borrowed = borrowed
	p.mu.Unlock()
	return ctx, nil
}

// EndQuery marks the connection idle again and cancels the statement's
// context; a statement past long_query_time counts in Slow_queries.
func (l *processList) EndQuery(ctx *sql.Context) {
	if ctx.IsInterpreted() {
		return
	}
	pid := ctx.Pid()
	l.byPid.remove(pid, nil)
	p := l.get(ctx.Session.ID())
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.p.QueryPid != pid {
		p.mu.Unlock()
		return
	}
	took := time.Since(p.p.StartedAt)
	kill := p.p.Kill
	if p.borrowed {
		kill = nil // its maker cancels it (StatementContext)
	}
	p.p.Command, p.p.Query, p.p.QueryPid, p.p.StartedAt, p.p.Kill, p.p.Progress = sql.ProcessCommandSleep, "", 0, time.Now(), nil, nil
	p.borrowed = false
	if c := p.call; c != nil {
		p.p.Command, p.p.Query, p.p.StartedAt, p.p.Kill = sql.ProcessCommandQuery, c.query, c.started, c.cancel
		p.borrowed = true
	}
	p.mu.Unlock()
	sql.StatusVariables.IncrementGlobal("Threads_running", -1)
	if kill != nil {
		kill()
	}
	if lq := longQueryTime(); lq > 0 && took.Seconds() > lq {
		sql.IncrementStatusVariable(ctx, "Slow_queries", 1)
	}
}

// longQueryTime is long_query_time in seconds (0 if it cannot be read).
func longQueryTime() float64 {
	_, v, ok := sql.SystemVariables.GetGlobal("long_query_time")
	if !ok {
		return 0
	}
	f, _ := v.(float64)
	return f
}

// BeginOperation starts a cancellable operation of the connection that
// is not a statement (it leaves Command as it is).
func (l *processList) BeginOperation(ctx *sql.Context) (*sql.Context, error) {
	if ctx.IsInterpreted() {
		return ctx, nil
	}
	p := l.get(ctx.Session.ID())
	if p == nil {
		return nil, errNotRegistered
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p.Kill != nil {
		return nil, errors.New("internal error: attempt to begin operation on connection which was already running one")
	}
	sub, cancel := ctx.NewSubContext()
	p.p.Kill = cancel
	return sub, nil
}

// EndOperation cancels and forgets the connection's operation.
func (l *processList) EndOperation(ctx *sql.Context) {
	if ctx.IsInterpreted() {
		return
	}
	if p := l.get(ctx.Session.ID()); p != nil {
		p.mu.Lock()
		kill := p.p.Kill
		p.p.Kill = nil
		p.mu.Unlock()
		if kill != nil {
			kill()
		}
	}
}

// SetCommand shows the connection as running command (a connection a
// replica's binlog dump took over: "Binlog Dump GTID"), with time counted
// from now.
func (l *processList) SetCommand(connID uint32, command string) {
	if p := l.get(connID); p != nil {
		p.mu.Lock()
		p.p.Command, p.p.StartedAt = sql.ProcessCommand(command), time.Now()
		p.mu.Unlock()
	}
}

// Kill cancels what the connection runs.
func (l *processList) Kill(connID uint32) {
	if p := l.get(connID); p != nil {
		p.mu.Lock()
		kill := p.p.Kill
		p.mu.Unlock()
		if kill != nil {
			kill()
		}
	}
}

// progress runs fn on the progress of the statement with pid, if it is
// still running.
func (l *processList) progress(pid uint64, fn func(m map[string]sql.TableProgress)) {
	p := l.byPid.get(pid)
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.p.QueryPid == pid {
		if p.p.Progress == nil {
			p.p.Progress = map[string]sql.TableProgress{}
		}
		fn(p.p.Progress)
	}
	p.mu.Unlock()
}

// tableOf is table name's progress in m, new (of unknown total) if none.
func tableOf(m map[string]sql.TableProgress, name string) sql.TableProgress {
	if tp, ok := m[name]; ok {
		return tp
	}
	return sql.NewTableProgress(name, -1)
}

// partitionOf is a partition's progress in tp, new (of unknown total) if
// none.
func partitionOf(tp sql.TableProgress, name string) sql.PartitionProgress {
	if pp, ok := tp.PartitionsProgress[name]; ok {
		return pp
	}
	return sql.PartitionProgress{Progress: sql.Progress{Name: name, Total: -1}}
}

func (l *processList) AddTableProgress(pid uint64, name string, total int64) {
	l.progress(pid, func(m map[string]sql.TableProgress) {
		tp := tableOf(m, name)
		tp.Total = total
		m[name] = tp
	})
}

func (l *processList) UpdateTableProgress(pid uint64, name string, delta int64) {
	l.progress(pid, func(m map[string]sql.TableProgress) {
		tp := tableOf(m, name)
		tp.Done += delta
		m[name] = tp
	})
}

func (l *processList) RemoveTableProgress(pid uint64, name string) {
	l.progress(pid, func(m map[string]sql.TableProgress) { delete(m, name) })
}

// The partition calls change only a table that has progress already.

func (l *processList) AddPartitionProgress(pid uint64, table, partition string, total int64) {
	l.progress(pid, func(m map[string]sql.TableProgress) {
		if tp, ok := m[table]; ok {
			pp := partitionOf(tp, partition)
			pp.Total = total
			tp.PartitionsProgress[partition] = pp
		}
	})
}

func (l *processList) UpdatePartitionProgress(pid uint64, table, partition string, delta int64) {
	l.progress(pid, func(m map[string]sql.TableProgress) {
		if tp, ok := m[table]; ok {
			pp := partitionOf(tp, partition)
			pp.Done += delta
			tp.PartitionsProgress[partition] = pp
		}
	})
}

func (l *processList) RemovePartitionProgress(pid uint64, table, partition string) {
	l.progress(pid, func(m map[string]sql.TableProgress) {
		if tp, ok := m[table]; ok {
			delete(tp.PartitionsProgress, partition)
		}
	})
}

// RunningCall shows connection connID as running query, a CALL whose
// statement context is ctx (StatementContext), until end is called:
// during and between the statements of the procedure's body SHOW
// PROCESSLIST shows the CALL, and KILL QUERY stops it.
func (e *Engine) RunningCall(connID uint32, ctx context.Context, query string) (end func()) {
	l, ok := e.GMS.ProcessList.(*processList)
	sc, borrowed := ctx.Value(statementCtxKey{}).(*statementCtx)
	if !ok || !borrowed {
		return func() {}
	}
	p := l.get(connID)
	if p == nil {
		return func() {}
	}
	c := &runningCall{query: query, started: time.Now(), cancel: sc.cancel}
	p.mu.Lock()
	p.call = c
	p.p.Command, p.p.Query, p.p.StartedAt, p.p.Kill = sql.ProcessCommandQuery, query, c.started, c.cancel
	p.borrowed = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.call = nil
		if p.p.QueryPid == 0 {
			p.p.Command, p.p.Query, p.p.StartedAt, p.p.Kill = sql.ProcessCommandSleep, "", time.Now(), nil
		}
		p.borrowed = false
		p.mu.Unlock()
	}
}
