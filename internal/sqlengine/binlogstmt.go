package sqlengine

// The BINLOG statement. mysqlbinlog and mariadb-binlog print a binlog's
// row events as BINLOG '<base64>' statements, after one that holds the
// file's format description; piping their output into a server replays
// the rows (point-in-time recovery, moving data between servers).
// go-mysql-server parses the statement, decodes the base64 and hands each
// event to the catalog's BinlogConsumer, binlogConsumer below, which
// applies it to the session's transaction.
//
// The rules, as MySQL applies them:
//
//   - The statement needs SUPER, BINLOG_ADMIN or REPLICATION_APPLIER
//     (go-mysql-server checks it). The rows it changes also need the
//     table's INSERT, UPDATE or DELETE privilege, here as under MySQL's
//     PRIVILEGE_CHECKS_USER: the statement is not a way around them.
//   - A format description comes first (1609). Each session keeps the
//     last one, and the table maps, until the next format description:
//     the tools print a statement's table maps and rows in one BINLOG
//     statement, or split a long one over several.
//   - Only format descriptions, table maps and row events (1730).
//   - Rows are applied as a replica applies them: found by primary key
//     (without one, by the whole row), full images only, no triggers; a
//     row to change or delete that is not there is 1032, a duplicate
//     1062. Foreign-key actions do not run: a Lockstep binlog holds the
//     rows they changed. A MySQL or MariaDB binlog does not, so changing
//     a parent row of ON DELETE / ON UPDATE actions from one is refused
//     (1235), as the replica refuses it.
//   - The table map's column types must be the table's (1677): images
//     are decoded by the table's own columns.
//   - The rows join the session's transaction (between the BEGIN and
//     COMMIT the tools print around them) and are binlogged again under
//     this server's GTID. A statement's rows end with the rows event
//     flagged STMT_END_F; an error undoes the rows of the statement it
//     stopped, not the transaction's earlier ones.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/binlogreplication"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// binlogConsumer applies the events of BINLOG statements.
type binlogConsumer struct{ e *Engine }

var _ binlogreplication.BinlogConsumer = binlogConsumer{}

// binlogReplay is a session's BINLOG state: its last format description
// and the table maps since.
type binlogReplay struct {
	checksum bool // events end with a CRC32
	lockstep bool // the binlog is a Lockstep server's: it logs cascades
	maps     map[uint64]replayTable
	pid      uint64 // the query whose statement is open (txn.StatementBegin)
}

type replayTable struct {
	t   *Table
	src binlog.TableMap
}

// HasFormatDescription implements binlogreplication.BinlogConsumer. It is
// asked without the session, which holds the state: ProcessEvent checks.
func (binlogConsumer) HasFormatDescription() bool { return true }

// ProcessEvent implements binlogreplication.BinlogConsumer.
func (c binlogConsumer) ProcessEvent(ctx *sql.Context, ev mysql.BinlogEvent) error {
	s := sessionOf(ctx)
	if s == nil {
		return fmt.Errorf("lockstep: not a Lockstep session")
	}
	raw := ev.Bytes()
	if len(raw) < binlog.HeaderSize {
		return errBinlogEvent("an event shorter than its header")
	}
	h := binlog.ParseHeader(raw)
	if int(h.Size) != len(raw) {
		return errBinlogEvent(fmt.Sprintf("an event of %d bytes whose header says %d", len(raw), h.Size))
	}
	if h.Type == binlog.FormatDescriptionEvent {
		return s.replayFormat(raw)
	}
	r := s.replay
	if r == nil {
		return mysql.NewSQLError(1609, "HY000", "The BINLOG statement of type `%s` was not preceded by a format description BINLOG statement.", eventName(h.Type))
	}
	body := raw[binlog.HeaderSize:]
	if r.checksum {
		e, err := binlog.NextEvent(raw)
		if err != nil {
			return errBinlogEvent(err.Error())
		}
		body = e.Body()
	}
	if h.Type == binlog.TableMapEvent {
		return s.replayTableMap(ctx, body)
	}
	if _, ok := binlog.RowsKind(h.Type); ok {
		return s.replayRows(ctx, h.Type, body)
	}
	return mysql.NewSQLError(1730, "HY000", "Only Format_description_log_event and row events are allowed in BINLOG statements (but %s was provided)", eventName(h.Type))
}

func errBinlogEvent(what string) error {
	return mysql.NewSQLError(1610, "HY000", "Decoding of base64 string failed: %s", what)
}

func eventName(typ byte) string {
	switch typ {
	case binlog.TableMapEvent:
		return "Table_map"
	case binlog.QueryEvent:
		return "Query"
	}
	if k, ok := binlog.RowsKind(typ); ok {
		return eventNames[k]
	}
	return fmt.Sprintf("event type %d", typ)
}

// ioKind is the table I/O each kind of rows event counts as (tableio.go).
var ioKind = map[byte]int{
	binlog.WriteRowsEventV2:  ioInsert,
	binlog.UpdateRowsEventV2: ioUpdate,
	binlog.DeleteRowsEventV2: ioDelete,
}

var eventNames = map[byte]string{
	binlog.WriteRowsEventV2:  "Write_rows",
	binlog.UpdateRowsEventV2: "Update_rows",
	binlog.DeleteRowsEventV2: "Delete_rows",
}

// replayFormat starts the session's BINLOG state from a format
// description.
func (s *Session) replayFormat(raw []byte) error {
	alg, err := binlog.FormatChecksum(raw)
	if err != nil {
		return errBinlogEvent("a damaged format description")
	}
	if alg > 1 {
		return errBinlogEvent(fmt.Sprintf("checksum algorithm %d", alg))
	}
	if alg == 1 {
		if _, err := binlog.NextEvent(raw); err != nil {
			return errBinlogEvent(err.Error())
		}
	}
	// server version: after the header and the binlog version (2 bytes)
	ver := strings.ToLower(string(raw[binlog.HeaderSize+2 : binlog.HeaderSize+52]))
	s.replay = &binlogReplay{checksum: alg == 1, lockstep: strings.Contains(ver, "lockstep"), maps: map[uint64]replayTable{}}
	return nil
}

func (s *Session) replayTableMap(ctx *sql.Context, body []byte) error {
	m, err := binlog.ParseTableMap(body)
	if err != nil {
		return errBinlogEvent(err.Error())
	}
	e := s.eng
	st, ok := e.store.Table(m.DB, m.Table)
	if !ok {
		return mysql.NewSQLError(1146, "42S02", "Table '%s.%s' doesn't exist", m.DB, m.Table)
	}
	own, err := binlog.ParseTableMap(st.Ref().Map)
	if err != nil {
		return err
	}
	if msg := binlog.ColumnMismatch(own, m); msg != "" {
		return mysql.NewSQLError(1677, "HY000", "%s", msg)
	}
	d, ok := e.store.Database(m.DB)
	if !ok {
		return sql.ErrDatabaseNotFound.New(m.DB)
	}
	t, err := e.sqlTable(ctx, &Database{e: e, name: d.Name, coll: sql.CollationID(d.Collation)}, st)
	if err != nil {
		return err
	}
	s.replay.maps[m.TableID] = replayTable{t: t, src: m}
	return nil
}

// replayPrivilege is the privilege each kind of rows event needs.
var replayPrivilege = map[byte]sql.PrivilegeType{
	binlog.WriteRowsEventV2:  sql.PrivilegeType_Insert,
	binlog.UpdateRowsEventV2: sql.PrivilegeType_Update,
	binlog.DeleteRowsEventV2: sql.PrivilegeType_Delete,
}

func (s *Session) replayRows(ctx *sql.Context, typ byte, body []byte) error {
	r := s.replay
	rows, err := binlog.ParseRows(typ, body)
	if err != nil {
		return errBinlogEvent(err.Error())
	}
	kind, _ := binlog.RowsKind(typ)
	rt, ok := r.maps[rows.TableID]
	if !ok {
		return mysql.NewSQLError(1105, "HY000", "The %s event for table id %d was not preceded by its Table_map", eventNames[kind], rows.TableID)
	}
	tab := rt.t
	def := tab.st.Def
	if rows.NCols != len(def.Columns) {
		return mysql.NewSQLError(1677, "HY000", "The %s event for %s.%s has %d columns, the table %d", eventNames[kind], def.DB, def.Name, rows.NCols, len(def.Columns))
	}
	if priv := replayPrivilege[kind]; !s.holdsOnTable(ctx, priv, def.DB, def.Name) { // droptables.go
		c := ctx.Session.Client()
		return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'",
			strings.ToUpper(priv.String()), c.User, c.Address, def.Name)
	}
	if kind != binlog.WriteRowsEventV2 && rows.Flags&binlog.RowsFlagNoForeignKeyChecks == 0 && !r.lockstep && s.eng.CascadeParent(def.ID) {
		return mysql.NewSQLError(1235, "42000", "This version of Lockstep doesn't yet support applying the ON DELETE / ON UPDATE actions of foreign keys referencing %s.%s from a MySQL or MariaDB binlog (it does not have the rows those actions change)", def.DB, def.Name)
	}
	_, tx, err := tab.beginWrite(ctx)
	if err != nil {
		return err
	}
	if r.pid != ctx.Pid() {
		tx.StatementBegin() // a no-op while a split statement is open
		r.pid = ctx.Pid()
	}
	if err := s.applyRows(ctx, tx, tab, kind, rows.Data); err != nil {
		tx.StatementRollback()
		r.pid = 0
		return err
	}
	if rows.Flags&binlog.RowsFlagStmtEnd != 0 {
		tx.StatementComplete()
		r.pid = 0
	}
	return nil
}

// applyRows applies the row images of one rows event.
func (s *Session) applyRows(ctx *sql.Context, tx *txn.Txn, tab *Table, kind byte, data []byte) error {
	st := tab.st
	image := func() ([]row.Value, error) {
		vals, n, err := row.DecodeImage(data, st.Def.Columns, nil)
		if err != nil {
			return nil, errBinlogEvent(err.Error())
		}
		data = data[n:]
		return vals, nil
	}
	ed := editor{tab}
	for len(data) > 0 {
		var before, after []row.Value
		var err error
		if kind != binlog.WriteRowsEventV2 {
			if before, err = image(); err != nil {
				return err
			}
		}
		if kind != binlog.DeleteRowsEventV2 {
			if after, err = image(); err != nil {
				return err
			}
		}
		s.noteIO(st, ioNoIndex, ioKind[kind], 1)
		s.noteTableUse(st, true)
		switch kind {
		case binlog.WriteRowsEventV2:
			err = tx.Insert(st, after)
		case binlog.UpdateRowsEventV2:
			err = tx.Update(st, before, after)
		case binlog.DeleteRowsEventV2:
			var found bool
			if found, err = tx.Delete(st, before); err == nil && !found {
				err = txn.ErrRowNotFound
			}
		}
		if errors.Is(err, txn.ErrRowNotFound) {
			return mysql.NewSQLError(1032, "HY000", "Can't find record in '%s'", st.Def.Name)
		}
		if err != nil {
			var dup *storage.DuplicateKeyError
			if errors.As(err, &dup) {
				return ed.writeError(s, err, after)
			}
			return s.afterError(err)
		}
		if after != nil {
			s.eng.autoinc.observe(tab, after)
		}
	}
	return nil
}
