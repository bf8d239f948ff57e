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
			r = append(r, l.GTID, zero(l.OriginalCommit), zero(l.ImmediateCommit), zero(l.StartApply), zero(l.EndApply))
			r = append(r, a.GTID, zero(a.OriginalCommit), zero(a.ImmediateCommit), zero(a.StartApply))
			r = append(r, uint64(0), int32(0), "", zeroTimestamp, uint64(0), int32(0), "", zeroTimestamp)
			rows = append(rows, r)
		}
		return rows, nil
	})
}

// zeroTimestamp is how a timestamp that was never set is shown.
var zeroTimestamp = types.ZeroTime
