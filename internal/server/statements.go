package server

// Each statement a client runs is measured for the slow query log
// (slowlog.go) and for performance_schema's summary by digest
// (events_statements_summary_by_digest, internal/digest): its time, the
// time it waited for row locks, the rows it sent, read and changed, its
// warnings and whether it failed. With the slow log off and
// --performance-schema=OFF a statement costs one atomic load here.
//
// The summary's times are performance_schema's picoseconds; columns for
// what Lockstep does not have or does not count (temporary tables on
// disk, sort merge passes, full joins, scans without an index, CPU time,
// memory, a secondary engine) are 0.

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/digest"
)

// maxDigestLength is max_digest_length: the digest text's length.
const maxDigestLength = 1024

// stmtTimer is one statement being measured.
type stmtTimer struct {
	start              time.Time
	schema             string // the current database when it started
	lockWait, rowsRead int64
	rowsSent, affected uint64
}

// statementStart starts measuring a statement of c, or returns nil when
// nothing wants it measured.
func (s *Server) statementStart(c *mysql.Conn) *stmtTimer {
	if !s.slow.on.Load() && s.digests == nil {
		return nil
	}
	db, lw, rr := s.sql.StatementStart(c.ConnectionID)
	return &stmtTimer{start: time.Now(), schema: db, lockWait: lw, rowsRead: rr}
}

// result counts a result sent to the client: its rows, or the rows an
// OK packet says were changed.
func (t *stmtTimer) result(r *sqltypes.Result) {
	if t == nil || r == nil {
		return
	}
	t.rowsSent += uint64(len(r.Rows))
	if len(r.Fields) == 0 {
		t.affected += r.RowsAffected // an OK packet's
	}
}

// statementEnd hands the statement that ended with err to the slow log
// and the digest summary.
func (s *Server) statementEnd(c *mysql.Conn, t *stmtTimer, query string, err error) {
	if t == nil {
		return
	}
	took := time.Since(t.start)
	lw, rr, warnings := s.sql.StatementEnd(c.ConnectionID)
	s.slowWrite(c, t, query, took, lw, rr)
	if m := s.stmtMetrics.Load(); m != nil {
		m.Ended(took, uint64(max(rr-t.rowsRead, 0)), t.rowsSent, t.affected)
	}
	if s.digests == nil {
		return
	}
	s.digests.Record(digest.Statement{
		Schema: t.schema, Query: query, Start: t.start, Wait: took, LockWait: time.Duration(lw - t.lockWait),
		Error: err != nil, Warnings: warnings,
		RowsAffected: t.affected, RowsSent: t.rowsSent, RowsExamined: uint64(max(rr-t.rowsRead, 0)),
	})
}

// registerDigestTable registers
// performance_schema.events_statements_summary_by_digest in MySQL 8.0's
// shape.
func (s *Server) registerDigestTable() {
	if s.digests == nil {
		return
	}
	u64 := func(name string) *sql.Column { return &sql.Column{Name: name, Type: types.Uint64} }
	ts := types.MustCreateDatetimeType(sqltypes.Timestamp, 6)
	text := types.LongText
	sch := sql.Schema{
		{Name: "SCHEMA_NAME", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 64), Nullable: true},
		{Name: "DIGEST", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 64), Nullable: true},
		{Name: "DIGEST_TEXT", Type: text, Nullable: true},
	}
	counted := []string{"COUNT_STAR", "SUM_TIMER_WAIT", "MIN_TIMER_WAIT", "AVG_TIMER_WAIT", "MAX_TIMER_WAIT",
		"SUM_LOCK_TIME", "SUM_ERRORS", "SUM_WARNINGS", "SUM_ROWS_AFFECTED", "SUM_ROWS_SENT", "SUM_ROWS_EXAMINED"}
	zero := []string{"SUM_CREATED_TMP_DISK_TABLES", "SUM_CREATED_TMP_TABLES", "SUM_SELECT_FULL_JOIN",
		"SUM_SELECT_FULL_RANGE_JOIN", "SUM_SELECT_RANGE", "SUM_SELECT_RANGE_CHECK", "SUM_SELECT_SCAN",
		"SUM_SORT_MERGE_PASSES", "SUM_SORT_RANGE", "SUM_SORT_ROWS", "SUM_SORT_SCAN", "SUM_NO_INDEX_USED",
		"SUM_NO_GOOD_INDEX_USED", "SUM_CPU_TIME", "MAX_CONTROLLED_MEMORY", "MAX_TOTAL_MEMORY", "COUNT_SECONDARY"}
	for _, n := range append(counted, zero...) {
		sch = append(sch, u64(n))
	}
	sch = append(sch,
		&sql.Column{Name: "FIRST_SEEN", Type: ts},
		&sql.Column{Name: "LAST_SEEN", Type: ts},
		u64("QUANTILE_95"), u64("QUANTILE_99"), u64("QUANTILE_999"),
		&sql.Column{Name: "QUERY_SAMPLE_TEXT", Type: text, Nullable: true},
		&sql.Column{Name: "QUERY_SAMPLE_SEEN", Type: ts},
		u64("QUERY_SAMPLE_TIMER_WAIT"),
	)
	s.sql.AddTruncatableSystemTable("performance_schema", "events_statements_summary_by_digest", sch, func(*sql.Context) ([]sql.Row, error) {
		seen := func(t time.Time) time.Time {
			if t.IsZero() {
				return zeroTimestamp
			}
			return t.UTC()
		}
		var rows []sql.Row
		for _, r := range s.digests.Rows() {
			var schema, dig, text, sample any
			if r.Schema != "" {
				schema = r.Schema
			}
			if r.Digest != "" {
				dig, text, sample = r.Digest, r.Text, r.Sample
			}
			avg := uint64(0)
			if r.Count > 0 {
				avg = r.SumWait / r.Count
			}
			row := sql.Row{schema, dig, text, r.Count, r.SumWait, r.MinWait, avg, r.MaxWait,
				r.SumLockTime, r.Errors, r.Warnings, r.Affected, r.Sent, r.Examined}
			for range zero {
				row = append(row, uint64(0))
			}
			row = append(row, seen(r.FirstSeen), seen(r.LastSeen), r.Q95, r.Q99, r.Q999, sample, seen(r.SampleSeen), r.SampleWait)
			rows = append(rows, row)
		}
		return rows, nil
	}, s.digests.Reset)
}
