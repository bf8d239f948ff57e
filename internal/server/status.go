package server

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
)

// statusRegistry adds the server's own status variables, read live from the
// commit pipeline and the lock manager, to GMS's registry (which keeps the
// Com_* and Questions counters). It replaces sql.StatusVariables.
type statusRegistry struct {
	sql.StatusVariableRegistry
	live map[string]func() any
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
			"Binlog_commits":                        st.Commits.Load,
			"Binlog_group_commits":                  st.Groups.Load,
			"Binlog_group_commit_trigger_count":     st.TriggerCount.Load,
			"Binlog_group_commit_trigger_timeout":   st.TriggerTimeout.Load,
			"Binlog_group_commit_trigger_lock_wait": st.TriggerLockWait.Load,
			"Binlog_bytes_written":                  st.BytesWritten.Load,
			"Lockstep_binlog_fsyncs":                st.Fsyncs.Load,
			"Lockstep_binlog_fsync_microseconds":    func() uint64 { return st.FsyncNanos.Load() / 1000 },
			"Lockstep_binlog_rotations":             st.RotateCount.Load,
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
	for name, f := range r.live {
		m[name] = liveValue(name, f())
	}
	return m
}

func (r *statusRegistry) NewSessionMap() map[string]sql.StatusVarValue {
	m := r.StatusVariableRegistry.NewSessionMap()
	for name := range r.live {
		delete(m, name) // global-only here (Uptime is session-scoped in GMS)
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
