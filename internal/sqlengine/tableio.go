package sqlengine

// Table I/O counts: performance_schema.table_io_waits_summary_by_table
// and table_io_waits_summary_by_index_usage, as MySQL's handler
// instrumentation (wait/io/table/sql/handler) fills them:
//
//   - a fetch per row a statement reads from a table, under the index
//     it was read by (PRIMARY for a primary key lookup or range), or
//     under no index (INDEX_NAME NULL) for a scan of the whole table;
//   - an insert, update or delete per row a statement writes, under no
//     index.
//
// table_lock_waits_summary_by_table counts, per table, the statements
// that read it (READ EXTERNAL) and those that wrote it (WRITE EXTERNAL):
// the locks MySQL's handler takes on an InnoDB table once per statement.
// LOCK TABLES is not counted there (its READ and WRITE columns are 0), nor
// are the MyISAM lock kinds, which InnoDB does not take.
//
// Counted, not timed: the SUM/MIN/AVG/MAX_TIMER columns are 0, which is
// what MySQL shows for an instrument whose setup_instruments TIMED is
// NO. Rows count when a statement reads or writes them, also if the
// statement or its transaction is rolled back later (so does MySQL).
// The counts are those of client statements (and triggers and BINLOG
// statements they run); the replica's and a cluster member's appliers
// write below the SQL layer and are not counted. A table's counts start
// again after DDL changes it, and TRUNCATE TABLE on any of the three
// summaries starts every count of all three again.
//
// A session counts a run of rows of one table and index in its own
// fields (noteIO) and adds them to the shared counters when the table or
// index changes and at the end of each statement (flushIO): a shared
// atomic per row would be one more contended cache line on every read.

import (
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/lockstepdb/lockstep/internal/storage"
)

// The kinds of table I/O.
const (
	ioFetch = iota
	ioInsert
	ioUpdate
	ioDelete
	ioKinds
)

// The index slots of a table's counts: no index, the primary key, then
// each secondary index by its position.
const (
	ioNoIndex = 0
	ioPrimary = 1
)

// tableIO are the counts of one version of one table.
type tableIO struct {
	def    *storage.TableDef
	counts [][ioKinds]atomic.Uint64 // by index slot
	// readLocks and writeLocks count the statements that read the table
	// and those that wrote it: table_lock_waits_summary_by_table's READ
	// EXTERNAL and WRITE EXTERNAL, the table locks MySQL's handler takes
	// for InnoDB once per statement and table.
	readLocks, writeLocks atomic.Uint64
}

// tableIOs are the engine's counts, by table id.
type tableIOs struct {
	on bool // performance_schema is ON: set before the server serves
	m  sync.Map
}

// EnableTableIO turns the counting on and registers the two summaries
// (performance_schema ON).
func (e *Engine) EnableTableIO() {
	e.io.on = true
	e.registerTableIO()
}

// ioOf returns t's counts, made again when DDL gave it a new definition.
func (e *Engine) ioOf(st *storage.Table) *tableIO {
	if v, ok := e.io.m.Load(st.Def.ID); ok {
		if io := v.(*tableIO); io.def == st.Def {
			return io
		}
	}
	io := &tableIO{def: st.Def, counts: make([][ioKinds]atomic.Uint64, 2+len(st.Def.Indexes))}
	e.io.m.Store(st.Def.ID, io)
	return io
}

// ioSlot is the slot of a partition's reads: index is -1 for the primary
// key, else a position in Def.Indexes.
func ioSlot(index int, whole bool) int {
	switch {
	case whole:
		return ioNoIndex
	case index < 0:
		return ioPrimary
	}
	return 2 + index
}

// noteIO counts n operations of kind on slot of table st.
func (s *Session) noteIO(st *storage.Table, slot, kind int, n uint64) {
	if !s.eng.io.on {
		return
	}
	if s.ioRun.def != st.Def || s.ioRun.slot != slot || s.ioRun.kind != kind {
		s.flushIO()
		s.ioRun = ioRun{def: st.Def, table: st, slot: slot, kind: kind}
	}
	s.ioRun.n += n
}

// noteTableUse records that the session's statement reads (or writes)
// table st, for the table lock counts added at the statement's end.
func (s *Session) noteTableUse(st *storage.Table, write bool) {
	if !s.eng.io.on {
		return
	}
	if s.tablesUsed == nil {
		s.tablesUsed = map[*storage.Table]bool{}
	}
	if write || !s.tablesUsed[st] {
		s.tablesUsed[st] = write
	}
}

// flushTableUse adds the statement's table locks to the shared counts.
func (s *Session) flushTableUse() {
	for st, write := range s.tablesUsed {
		if write {
			s.eng.ioOf(st).writeLocks.Add(1)
		} else {
			s.eng.ioOf(st).readLocks.Add(1)
		}
	}
	clear(s.tablesUsed)
}

// ioRun is a session's run of uncounted operations.
type ioRun struct {
	def   *storage.TableDef
	table *storage.Table
	slot  int
	kind  int
	n     uint64
}

// flushIO adds the session's run to the shared counts.
func (s *Session) flushIO() {
	if s.ioRun.n > 0 {
		io := s.eng.ioOf(s.ioRun.table)
		if s.ioRun.slot < len(io.counts) {
			io.counts[s.ioRun.slot][s.ioRun.kind].Add(s.ioRun.n)
		}
	}
	s.ioRun = ioRun{}
}

// registerTableIO registers the two summaries in MySQL 8.0's shape.
func (e *Engine) registerTableIO() {
	name := func(n string, nullable bool) *sql.Column {
		return &sql.Column{Name: n, Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 64), Nullable: nullable}
	}
	u64 := func(n string) *sql.Column { return &sql.Column{Name: n, Type: types.Uint64} }
	measures := func() sql.Schema {
		var sch sql.Schema
		for _, m := range []string{"STAR", "READ", "WRITE", "FETCH", "INSERT", "UPDATE", "DELETE"} {
			suffix := "_" + m
			if m == "STAR" {
				suffix = "_WAIT"
			}
			sch = append(sch, u64("COUNT_"+m), u64("SUM_TIMER"+suffix), u64("MIN_TIMER"+suffix),
				u64("AVG_TIMER"+suffix), u64("MAX_TIMER"+suffix))
		}
		return sch
	}
	// measured is the 35 columns of one row's counts (and its zero
	// timers).
	measured := func(c *[ioKinds]atomic.Uint64) sql.Row {
		f, i, u, d := c[ioFetch].Load(), c[ioInsert].Load(), c[ioUpdate].Load(), c[ioDelete].Load()
		var row sql.Row
		for _, n := range []uint64{f + i + u + d, f, i + u + d, f, i, u, d} {
			row = append(row, n, uint64(0), uint64(0), uint64(0), uint64(0))
		}
		return row
	}
	reset := func() {
		e.io.m.Range(func(k, _ any) bool {
			e.io.m.Delete(k)
			return true
		})
	}
	// each calls fn with every table and its counts.
	each := func(ctx *sql.Context, fn func(st *storage.Table, io *tableIO)) {
		if s := sessionOf(ctx); s != nil {
			s.flushIO() // the reader's own statement so far
			s.flushTableUse()
		}
		for _, d := range e.store.Databases() {
			for _, st := range e.store.Tables(d.Name) {
				fn(st, e.ioOf(st))
			}
		}
	}
	byTable := append(sql.Schema{name("OBJECT_TYPE", true), name("OBJECT_SCHEMA", true), name("OBJECT_NAME", true)}, measures()...)
	e.AddTruncatableSystemTable("performance_schema", "table_io_waits_summary_by_table", byTable, func(ctx *sql.Context) ([]sql.Row, error) {
		var rows []sql.Row
		each(ctx, func(st *storage.Table, io *tableIO) {
			var sum [ioKinds]atomic.Uint64
			for i := range io.counts {
				for k := range ioKinds {
					sum[k].Add(io.counts[i][k].Load())
				}
			}
			rows = append(rows, append(sql.Row{"TABLE", st.Def.DB, st.Def.Name}, measured(&sum)...))
		})
		return rows, nil
	}, reset)
	var locks sql.Schema
	lockKinds := []string{"READ_NORMAL", "READ_WITH_SHARED_LOCKS", "READ_HIGH_PRIORITY", "READ_NO_INSERT", "READ_EXTERNAL",
		"WRITE_ALLOW_WRITE", "WRITE_CONCURRENT_INSERT", "WRITE_LOW_PRIORITY", "WRITE_NORMAL", "WRITE_EXTERNAL"}
	for _, m := range append([]string{"STAR", "READ", "WRITE"}, lockKinds...) {
		suffix := "_" + m
		if m == "STAR" {
			suffix = "_WAIT"
		}
		locks = append(locks, u64("COUNT_"+m), u64("SUM_TIMER"+suffix), u64("MIN_TIMER"+suffix),
			u64("AVG_TIMER"+suffix), u64("MAX_TIMER"+suffix))
	}
	byLock := append(sql.Schema{name("OBJECT_TYPE", true), name("OBJECT_SCHEMA", true), name("OBJECT_NAME", true)}, locks...)
	e.AddTruncatableSystemTable("performance_schema", "table_lock_waits_summary_by_table", byLock, func(ctx *sql.Context) ([]sql.Row, error) {
		var rows []sql.Row
		each(ctx, func(st *storage.Table, io *tableIO) {
			r, w := io.readLocks.Load(), io.writeLocks.Load()
			row := sql.Row{"TABLE", st.Def.DB, st.Def.Name}
			// STAR, READ, WRITE, then the ten kinds: all but READ
			// EXTERNAL (the fifth) and WRITE EXTERNAL (the tenth) are 0.
			for _, n := range []uint64{r + w, r, w, 0, 0, 0, 0, r, 0, 0, 0, 0, w} {
				row = append(row, n, uint64(0), uint64(0), uint64(0), uint64(0))
			}
			rows = append(rows, row)
		})
		return rows, nil
	}, reset)
	byIndex := append(sql.Schema{name("OBJECT_TYPE", true), name("OBJECT_SCHEMA", true), name("OBJECT_NAME", true), name("INDEX_NAME", true)}, measures()...)
	e.AddTruncatableSystemTable("performance_schema", "table_io_waits_summary_by_index_usage", byIndex, func(ctx *sql.Context) ([]sql.Row, error) {
		var rows []sql.Row
		each(ctx, func(st *storage.Table, io *tableIO) {
			for slot := range io.counts {
				var index any // NULL: no index
				switch {
				case slot == ioPrimary && st.Keyless():
					continue // no primary key: its hidden key is no index
				case slot == ioPrimary:
					index = "PRIMARY"
				case slot > ioPrimary:
					index = st.Def.Indexes[slot-2].Name
				}
				rows = append(rows, append(sql.Row{"TABLE", st.Def.DB, st.Def.Name, index}, measured(&io.counts[slot])...))
			}
		})
		return rows, nil
	}, reset)
}
