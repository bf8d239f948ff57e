package server

import (
	"path/filepath"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// performance_schema's file I/O summaries, for the binlog files:
// file_summary_by_event_name and events_waits_summary_global_by_event_name
// have one event, wait/io/file/sql/binlog (MySQL's name for it), and
// file_summary_by_instance a row per binlog file listed. Writes and syncs
// are counted and timed (picoseconds, as MySQL's timers) by the binlog
// (binlog.FileIO); reads are not, and their columns are 0: dump threads
// read the files on their own. Pebble's files are not instrumented, and
// have no rows. The counts are since the server started; a purged file's
// stay in the event's totals and leave the instances.

// binlogEvent is MySQL's instrument name for binlog file I/O.
const binlogEvent = "wait/io/file/sql/binlog"

func (s *Server) registerFileIOTables() {
	u64 := func(n string) *sql.Column { return &sql.Column{Name: n, Type: types.Uint64} }
	timers := func(suffix string) sql.Schema {
		return sql.Schema{u64("SUM_TIMER_" + suffix), u64("MIN_TIMER_" + suffix), u64("AVG_TIMER_" + suffix), u64("MAX_TIMER_" + suffix)}
	}
	name := func(n string, size int64) *sql.Column {
		return &sql.Column{Name: n, Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, size)}
	}
	ps := func(ns uint64) uint64 { return ns * 1000 }
	dir, err := filepath.Abs(s.cfg.DataDir)
	if err != nil {
		dir = s.cfg.DataDir
	}
	avg := func(sum, n uint64) uint64 {
		if n == 0 {
			return 0
		}
		return sum / n
	}
	// summary is the 22 columns after an event or file's name: all
	// operations, reads (none counted), writes, and syncs as MISC.
	summarySchema := func() sql.Schema {
		sch := append(sql.Schema{u64("COUNT_STAR")}, timers("WAIT")...)
		sch = append(append(append(sch, u64("COUNT_READ")), timers("READ")...), u64("SUM_NUMBER_OF_BYTES_READ"))
		sch = append(append(append(sch, u64("COUNT_WRITE")), timers("WRITE")...), u64("SUM_NUMBER_OF_BYTES_WRITE"))
		return append(append(sch, u64("COUNT_MISC")), timers("MISC")...)
	}
	summary := func(f binlog.FileIO) sql.Row {
		n, sum := f.Writes+f.Syncs, f.WriteNanos+f.SyncNanos
		lo, hi := f.MinWrite, max(f.MaxWrite, f.MaxSync)
		if f.Writes == 0 || f.Syncs > 0 && f.MinSync < lo {
			lo = f.MinSync
		}
		return sql.Row{
			n, ps(sum), ps(lo), ps(avg(sum, n)), ps(hi),
			uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0),
			f.Writes, ps(f.WriteNanos), ps(f.MinWrite), ps(avg(f.WriteNanos, f.Writes)), ps(f.MaxWrite), f.WriteBytes,
			f.Syncs, ps(f.SyncNanos), ps(f.MinSync), ps(avg(f.SyncNanos, f.Syncs)), ps(f.MaxSync),
		}
	}
	s.sql.AddSystemTable("performance_schema", "file_summary_by_event_name", append(sql.Schema{name("EVENT_NAME", 128)}, summarySchema()...),
		func(*sql.Context) ([]sql.Row, error) {
			return []sql.Row{append(sql.Row{binlogEvent}, summary(s.blog.IO())...)}, nil
		})
	s.sql.AddSystemTable("performance_schema", "file_summary_by_instance",
		append(sql.Schema{name("FILE_NAME", 512), name("EVENT_NAME", 128), u64("OBJECT_INSTANCE_BEGIN")}, summarySchema()...),
		func(*sql.Context) ([]sql.Row, error) {
			var rows []sql.Row
			for _, f := range s.blog.Files() {
				rows = append(rows, append(sql.Row{filepath.Join(dir, f.Name), binlogEvent, uint64(f.Num)}, summary(f.IO)...))
			}
			return rows, nil
		})
	s.sql.AddSystemTable("performance_schema", "events_waits_summary_global_by_event_name",
		append(sql.Schema{name("EVENT_NAME", 128), u64("COUNT_STAR")}, timers("WAIT")...),
		func(*sql.Context) ([]sql.Row, error) {
			return []sql.Row{append(sql.Row{binlogEvent}, summary(s.blog.IO())[:5]...)}, nil
		})
}
