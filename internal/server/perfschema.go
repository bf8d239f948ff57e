package server

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// performance_schema.replication_applier_status_by_worker, in MySQL 8's
// shape: one row per applier worker (worker 0 is the coordinator, which
// applies by itself with replica_parallel_workers 0 or 1, and runs DDL).
// "Last applied" is a transaction that has become visible; "applying" is
// one the worker holds until it hands it to the commit pipeline. Retries do
// not exist here (transient errors are not retried), so their columns are
// 0 and empty, and THREAD_ID is NULL: workers are goroutines, not threads
// with performance_schema ids. Unset timestamps are MySQL's zero value.
func (s *Server) registerPerformanceSchema() {
	str := func(n int64) sql.Type { return types.MustCreateStringWithDefaults(sqltypes.VarChar, n) }
	ts := types.MustCreateDatetimeType(sqltypes.Timestamp, 6)
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable}
	}
	trxCols := func(prefix string, end bool) []*sql.Column {
		cols := []*sql.Column{
			col(prefix, str(57), false),
			col(prefix+"_ORIGINAL_COMMIT_TIMESTAMP", ts, false),
			col(prefix+"_IMMEDIATE_COMMIT_TIMESTAMP", ts, false),
			col(prefix+"_START_APPLY_TIMESTAMP", ts, false),
		}
		if end {
			cols = append(cols, col(prefix+"_END_APPLY_TIMESTAMP", ts, false))
		}
		return cols
	}
	retryCols := func(prefix string) []*sql.Column {
		return []*sql.Column{
			col(prefix+"_RETRIES_COUNT", types.Uint64, false),
			col(prefix+"_LAST_TRANSIENT_ERROR_NUMBER", types.Int32, false),
			col(prefix+"_LAST_TRANSIENT_ERROR_MESSAGE", str(1024), true),
			col(prefix+"_LAST_TRANSIENT_ERROR_TIMESTAMP", ts, false),
		}
	}
	sch := sql.Schema{
		col("CHANNEL_NAME", str(64), false),
		col("WORKER_ID", types.Uint64, false),
		col("THREAD_ID", types.Uint64, true),
		col("SERVICE_STATE", str(3), false),
		col("LAST_ERROR_NUMBER", types.Int32, false),
		col("LAST_ERROR_MESSAGE", str(1024), false),
		col("LAST_ERROR_TIMESTAMP", ts, false),
	}
	sch = append(sch, trxCols("LAST_APPLIED_TRANSACTION", true)...)
	sch = append(sch, trxCols("APPLYING_TRANSACTION", false)...)
	sch = append(sch, retryCols("LAST_APPLIED_TRANSACTION")...)
	sch = append(sch, retryCols("APPLYING_TRANSACTION")...)

	s.sql.AddSystemTable("performance_schema", "replication_applier_status_by_worker", sch, func(*sql.Context) ([]sql.Row, error) {
		st, ok := s.repl.Status(time.Now())
		if !ok {
			return nil, nil
		}
		state := "OFF"
		if st.SQLRunning {
			state = "ON"
		}
		zero := func(t time.Time) time.Time {
			if t.IsZero() {
				return zeroTimestamp
			}
			return t.UTC()
		}
		var rows []sql.Row
		for id, w := range s.repl.Stats.Workers() {
			ws := w.State(id)
			r := sql.Row{"", uint64(id), nil, state, int32(ws.ErrCode), ws.ErrMsg, zero(ws.ErrTime)}
			l, a := ws.Last, ws.Applying
			r = append(r, l.GTID, zero(l.OriginalCommit), zero(l.ImmediateCommit), zero(l.Start), zero(l.End))
			r = append(r, a.GTID, zero(a.OriginalCommit), zero(a.ImmediateCommit), zero(a.Start))
			r = append(r, uint64(0), int32(0), "", zeroTimestamp, uint64(0), int32(0), "", zeroTimestamp)
			rows = append(rows, r)
		}
		return rows, nil
	})

	// replication_connection_status: the receiver (the I/O thread).
	conn := sql.Schema{
		col("CHANNEL_NAME", str(64), false),
		col("GROUP_NAME", str(36), false),
		col("SOURCE_UUID", str(36), false),
		col("THREAD_ID", types.Uint64, true),
		col("SERVICE_STATE", str(10), false),
		col("COUNT_RECEIVED_HEARTBEATS", types.Uint64, false),
		col("LAST_HEARTBEAT_TIMESTAMP", ts, false),
		col("RECEIVED_TRANSACTION_SET", types.LongText, false),
		col("LAST_ERROR_NUMBER", types.Int32, false),
		col("LAST_ERROR_MESSAGE", str(1024), false),
		col("LAST_ERROR_TIMESTAMP", ts, false),
		col("LAST_QUEUED_TRANSACTION", str(57), false),
		col("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", ts, false),
		col("LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", ts, false),
		col("LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP", ts, false),
		col("LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP", ts, false),
		col("QUEUEING_TRANSACTION", str(57), false),
		col("QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", ts, false),
		col("QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", ts, false),
		col("QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP", ts, false),
	}
	s.sql.AddSystemTable("performance_schema", "replication_connection_status", conn, func(*sql.Context) ([]sql.Row, error) {
		st, ok := s.repl.Status(time.Now())
		if !ok {
			return nil, nil
		}
		state := map[string]string{"Yes": "ON", "Connecting": "CONNECTING"}[st.IORunning]
		if state == "" {
			state = "OFF"
		}
		l, q := st.LastQueued, st.Queueing
		return []sql.Row{{"", "", st.SourceUUID, nil, state, st.Heartbeats, zeroOr(st.LastHeartbeat), st.RetrievedGTIDs,
			int32(st.IOErrno), st.IOError, zeroOr(st.IOErrorTime),
			l.GTID, zeroOr(l.OriginalCommit), zeroOr(l.ImmediateCommit), zeroOr(l.Start), zeroOr(l.End),
			q.GTID, zeroOr(q.OriginalCommit), zeroOr(q.ImmediateCommit), zeroOr(q.Start)}}, nil
	})
	// replication_applier_status: the applier (the SQL thread) as a whole.
	s.sql.AddSystemTable("performance_schema", "replication_applier_status", sql.Schema{
		col("CHANNEL_NAME", str(64), false),
		col("SERVICE_STATE", str(3), false),
		col("REMAINING_DELAY", types.Uint32, true),
		col("COUNT_TRANSACTIONS_RETRIES", types.Uint64, false),
	}, func(*sql.Context) ([]sql.Row, error) {
		st, ok := s.repl.Status(time.Now())
		if !ok {
			return nil, nil
		}
		state := "OFF"
		if st.SQLRunning {
			state = "ON"
		}
		// No SOURCE_DELAY (NULL: no delay), and the applier does not
		// retry transactions (a failed one stops it).
		return []sql.Row{{"", state, nil, uint64(0)}}, nil
	})
}

// zeroOr is t in UTC, or the zero timestamp if t was never set.
func zeroOr(t time.Time) time.Time {
	if t.IsZero() {
		return zeroTimestamp
	}
	return t.UTC()
}

// zeroTimestamp is how a timestamp that was never set is shown.
var zeroTimestamp = types.ZeroTime

// registerProcessTables registers performance_schema.processlist and
// performance_schema.threads in MySQL 8.0's shape, from the connections
// the reading session may see (all of them with PROCESS, its own
// otherwise, statements' passwords redacted: sqlengine's process view),
// as information_schema.PROCESSLIST shows them. Every thread listed is a
// client connection (FOREGROUND): replication and commit work runs in
// goroutines that have no thread of their own. THREAD_ID is the
// connection's id, and columns of instruments Lockstep does not have
// (memory, resource groups, OS thread ids) are NULL or 0.
func (s *Server) registerProcessTables() {
	str := func(n int64) sql.Type { return types.MustCreateStringWithDefaults(sqltypes.VarChar, n) }
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable}
	}
	// state is what information_schema.PROCESSLIST shows as STATE.
	state := func(p sql.Process) string {
		if p.Command == sql.ProcessCommandQuery {
			return "executing"
		}
		return ""
	}
	nullable := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	s.sql.AddSystemTable("performance_schema", "processlist", sql.Schema{
		col("ID", types.Uint64, false),
		col("USER", str(32), true),
		col("HOST", str(261), true),
		col("DB", str(64), true),
		col("COMMAND", str(16), true),
		col("TIME", types.Int64, true),
		col("STATE", str(64), true),
		col("INFO", types.LongText, true),
		col("EXECUTION_ENGINE", str(9), true),
	}, func(ctx *sql.Context) ([]sql.Row, error) {
		var rows []sql.Row
		for _, p := range ctx.ProcessList.Processes() {
			rows = append(rows, sql.Row{uint64(p.Connection), p.User, p.Host, nullable(p.Database), string(p.Command),
				int64(p.Seconds()), state(p), nullable(p.Query), "PRIMARY"})
		}
		return rows, nil
	})
	s.sql.AddSystemTable("performance_schema", "threads", sql.Schema{
		col("THREAD_ID", types.Uint64, false),
		col("NAME", str(128), false),
		col("TYPE", str(10), false),
		col("PROCESSLIST_ID", types.Uint64, true),
		col("PROCESSLIST_USER", str(32), true),
		col("PROCESSLIST_HOST", str(255), true),
		col("PROCESSLIST_DB", str(64), true),
		col("PROCESSLIST_COMMAND", str(16), true),
		col("PROCESSLIST_TIME", types.Int64, true),
		col("PROCESSLIST_STATE", str(64), true),
		col("PROCESSLIST_INFO", types.LongText, true),
		col("PARENT_THREAD_ID", types.Uint64, true),
		col("ROLE", str(64), true),
		col("INSTRUMENTED", str(3), false),
		col("HISTORY", str(3), false),
		col("CONNECTION_TYPE", str(16), true),
		col("THREAD_OS_ID", types.Uint64, true),
		col("RESOURCE_GROUP", str(64), true),
		col("EXECUTION_ENGINE", str(9), true),
		col("CONTROLLED_MEMORY", types.Uint64, false),
		col("MAX_CONTROLLED_MEMORY", types.Uint64, false),
		col("TOTAL_MEMORY", types.Uint64, false),
		col("MAX_TOTAL_MEMORY", types.Uint64, false),
		col("TELEMETRY_ACTIVE", str(3), false),
	}, func(ctx *sql.Context) ([]sql.Row, error) {
		var rows []sql.Row
		for _, p := range ctx.ProcessList.Processes() {
			rows = append(rows, sql.Row{uint64(p.Connection), "thread/sql/one_connection", "FOREGROUND", uint64(p.Connection),
				p.User, p.Host, nullable(p.Database), string(p.Command), int64(p.Seconds()), state(p), nullable(p.Query),
				nil, nil, "YES", "YES", "TCP/IP", nil, nil, "PRIMARY", uint64(0), uint64(0), uint64(0), uint64(0), "NO"})
		}
		return rows, nil
	})
}
