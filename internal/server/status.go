package server

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// statusRegistry adds the server's own status variables, read live from the
// commit pipeline and the lock manager, to GMS's registry (which keeps the
// Com_* and Questions counters). It replaces sql.StatusVariables.
//
// go-mysql-server declares every status variable MySQL has (683), and
// keeps a few of them: the rest would read 0 forever, which monitoring
// takes for a fact (no rows read, no bytes sent), and two of them differ
// only by a dot (validate_password.dictionary_file_words_count), which
// mysqld_exporter refuses outright. SHOW STATUS lists only what some part
// of the server maintains: the live ones and maintainedStatus.
// flushServerStatus is the server's part of FLUSH STATUS: as in MySQL,
// Max_used_connections becomes the connections open now.
func flushServerStatus(uint32) {
	if r, ok := sql.StatusVariables.(*statusRegistry); ok {
		_, threads, _ := r.GetGlobal("Threads_connected")
		r.SetGlobal("Max_used_connections", threads)
	}
}

type statusRegistry struct {
	sql.StatusVariableRegistry
	live map[string]func() any

	sessionOnce sync.Once
	sessionVars []sql.StatusVariable // what NewSessionMap makes
}

// maintainedStatus are the registry's variables that something counts:
// go-mysql-server (connections, threads, slow queries, Questions and
// the Com_ counters of its statements) and Lockstep (transaction ends,
// the fast path's statements, prepared-statement commands).
var maintainedStatus = map[string]bool{
	"Aborted_connects": true, "Connections": true, "Max_used_connections": true,
	"Threads_connected": true, "Threads_running": true, "Slow_queries": true,
	"Questions": true, "Com_select": true, "Com_insert": true, "Com_update": true,
	"Com_delete": true, "Com_commit": true, "Com_rollback": true,
	"Com_stmt_prepare": true, "Com_stmt_execute": true, "Com_stmt_close": true,
	"Com_stmt_reset": true,
}

func installStatus(p *commit.Pipeline, l *lock.Manager, start time.Time, extra ...func(map[string]func() any)) {
	ls := &l.Stats
	counters := map[string]func() uint64{
		"Uptime":                        func() uint64 { return uint64(time.Since(start) / time.Second) },
		"Innodb_row_lock_waits":         ls.Waits.Load,
		"Innodb_row_lock_current_waits": func() uint64 { return uint64(max(ls.Current.Load(), 0)) },
		"Innodb_row_lock_time":          func() uint64 { return ls.WaitNanos.Load() / 1e6 },
		"Innodb_deadlocks":              ls.Deadlocks.Load,
		"Lockstep_lock_wait_timeouts":   ls.Timeouts.Load,
	}
	if p != nil { // a cluster member has no commit pipeline
		st := &p.Stats
		for k, f := range map[string]func() uint64{
			"Binlog_commits":                                   st.Commits.Load,
			"Binlog_group_commits":                             st.Groups.Load,
			"Binlog_group_commit_trigger_count":                st.TriggerCount.Load,
			"Binlog_group_commit_trigger_timeout":              st.TriggerTimeout.Load,
			"Binlog_group_commit_trigger_lock_wait":            st.TriggerLockWait.Load,
			"Binlog_bytes_written":                             st.BytesWritten.Load,
			"Lockstep_binlog_fsyncs":                           st.Fsyncs.Load,
			"Lockstep_binlog_fsync_microseconds":               func() uint64 { return st.FsyncNanos.Load() / 1000 },
			"Lockstep_binlog_fsync_trx_in_commit":              st.InCommitAtSync.Load,
			"Lockstep_binlog_group_commit_gathers":             st.GatherWaits.Load,
			"Lockstep_binlog_group_commit_gather_microseconds": func() uint64 { return st.GatherNanos.Load() / 1000 },
			"Lockstep_binlog_rotations":                        st.RotateCount.Load,
		} {
			counters[k] = f
		}
	}
	live := map[string]func() any{}
	for k, f := range counters {
		live[k] = func() any { return f() }
	}
	for _, e := range extra {
		e(live)
	}
	base := sql.StatusVariables
	if r, ok := base.(*statusRegistry); ok {
		base = r.StatusVariableRegistry
	}
	sql.StatusVariables = &statusRegistry{StatusVariableRegistry: base, live: live}
}

func liveValue(name string, v any) sql.StatusVarValue {
	if s, ok := v.(string); ok {
		return &sql.ImmutableStatusVarValue{
			Var: &sql.MySQLStatusVariable{Name: name, Scope: sql.StatusVariableScope_Global, Type: types.Text, Default: ""},
			Val: s,
		}
	}
	return &sql.ImmutableStatusVarValue{
		Var: &sql.MySQLStatusVariable{Name: name, Scope: sql.StatusVariableScope_Global, Type: types.Uint64, Default: uint64(0)},
		Val: v,
	}
}

func (r *statusRegistry) NewGlobalMap() map[string]sql.StatusVarValue {
	m := r.StatusVariableRegistry.NewGlobalMap()
	for name := range m {
		if !maintainedStatus[name] {
			delete(m, name)
		}
	}
	for name, f := range r.live {
		m[name] = liveValue(name, f())
	}
	return m
}

// NewSessionMap makes a session's status variables: the maintained ones
// of session scope, without the live ones, which are global-only here
// (Uptime is session-scoped in GMS). Every session and every throwaway
// context go-mysql-server makes (one per Alias.String, say) gets one, so
// it is built from the kept variables alone, not by copying all of
// go-mysql-server's few hundred and deleting most: that copy was over
// half of the planning time of a long UNION.
func (r *statusRegistry) NewSessionMap() map[string]sql.StatusVarValue {
	r.sessionOnce.Do(func() {
		for name, v := range r.StatusVariableRegistry.NewSessionMap() {
			if _, live := r.live[name]; !live && maintainedStatus[name] {
				r.sessionVars = append(r.sessionVars, v.Variable())
			}
		}
	})
	m := make(map[string]sql.StatusVarValue, len(r.sessionVars))
	for _, v := range r.sessionVars {
		switch d := v.GetDefault().(type) {
		case atomic.Uint64:
			m[v.GetName()] = &sql.MutableStatusVarValue{Var: v, Val: &d}
		default:
			m[v.GetName()] = &sql.ImmutableStatusVarValue{Var: v, Val: d}
		}
	}
	return m
}

func (r *statusRegistry) GetGlobal(name string) (sql.StatusVariable, any, bool) {
	if f, ok := r.live[name]; ok {
		v := liveValue(name, f())
		return v.Variable(), v.Value(), true
	}
	return r.StatusVariableRegistry.GetGlobal(name)
}

// trafficStatus adds the client traffic counters: bytes over every client
// connection, and Queries, which counts what Questions does here (no
// stored programs run statements of their own).
func (s *Server) trafficStatus(live map[string]func() any) {
	live["Bytes_received"] = func() any { return s.traffic.Received.Load() }
	live["Bytes_sent"] = func() any { return s.traffic.Sent.Load() }
	live["Queries"] = func() any {
		if r, ok := sql.StatusVariables.(*statusRegistry); ok {
			_, v, _ := r.StatusVariableRegistry.GetGlobal("Questions")
			return v
		}
		return uint64(0)
	}
}

// statistics is the answer to COM_STATISTICS (mysqladmin status), in
// MySQL's words, with the figures Lockstep keeps: MySQL's Opens, Flush
// tables and Open tables count its table cache, which Lockstep does not
// have, and are left out (as MariaDB leaves Flush tables out).
func (s *Server) statistics() string {
	get := func(name string) uint64 {
		_, v, _ := sql.StatusVariables.GetGlobal(name)
		return uint64(sqlengine.IntValue(v))
	}
	uptime := get("Uptime")
	questions := get("Questions")
	qps := 0.0
	if uptime > 0 {
		qps = float64(questions) / float64(uptime)
	}
	return fmt.Sprintf("Uptime: %d  Threads: %d  Questions: %d  Slow queries: %d  Queries per second avg: %.3f",
		uptime, get("Threads_connected"), questions, get("Slow_queries"), qps)
}
