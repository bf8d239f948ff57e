package sqlengine

import (
	"fmt"
	"github.com/lockstepdb/lockstep/internal/row"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The sql_mode flags that turn a warning of a data-changing statement into
// its error, as MySQL's strict error handler does. go-mysql-server accepts
// both and acts on neither: a division by zero became NULL and a zero date
// was stored, whatever the mode said.
//
//   - ERROR_FOR_DIVISION_BY_ZERO: a division (or MOD) by zero warns 1365
//     "Division by 0" and gives NULL; without the flag it gives NULL and no
//     warning. In strict mode (STRICT_TRANS_TABLES or STRICT_ALL_TABLES:
//     every Lockstep table is transactional) a data-changing statement
//     without IGNORE fails with 1365 instead, wherever the division is
//     (the values, an INSERT's SELECT, an UPDATE's SET or WHERE).
//   - NO_ZERO_DATE: a zero date or datetime ('0000-00-00') stored into a
//     column warns 1264 and is stored; in strict mode a statement without
//     IGNORE fails with 1292 instead. An UPDATE is judged by the values it
//     assigns, not by zero dates its rows already held.
//
// TRADITIONAL includes both. The statement's kind and its IGNORE are noted
// when it is parsed or a prepared statement is executed (noteStrictness,
// from noteStatement); the mode is read when a division by zero or a zero
// date is met, never on the path of statements that meet neither. A
// division's error is kept on the session (Warn) and returned by the
// arithmetic around it (strictArithmetic, put in front of every arithmetic
// expression as the statement is built: execexprs.go), by the next row the statement writes,
// or when the statement completes, so that the statement fails with it and
// is rolled back whichever comes first.
//
// Not applied: NO_ZERO_IN_DATE (a date with a zero month or day,
// '2020-00-01', is refused with 1292 in every mode, where MySQL stores it
// unless the flag and strict mode are both set), and NO_ZERO_DATE's check
// of a column's DEFAULT '0000-00-00' at CREATE TABLE (MySQL refuses it,
// 1067; here a row that takes that default is refused instead).

// strictStatement is what the current statement is, for strict mode.
type strictStatement struct {
	// changes: the statement changes data (INSERT, REPLACE, UPDATE,
	// DELETE, LOAD DATA, CREATE TABLE ... SELECT).
	changes bool
	// ignore: it has IGNORE (LOAD DATA LOCAL implies it, as in MySQL).
	ignore bool
	// upsert: it is an INSERT with ON DUPLICATE KEY UPDATE, whose
	// updates belong to the row just counted.
	upsert bool
	// rows counts the rows it has written, for the messages' "at row N".
	rows int64
	// err is a warning strict mode turned into the statement's error.
	err error
}

// noteStrictness records what statement st is, for strict mode.
func (s *Session) noteStrictness(st ast.Statement) {
	s.strict = strictStatement{}
	switch n := st.(type) {
	case *ast.Insert:
		s.strict = strictStatement{changes: true, ignore: n.Ignore != "", upsert: len(n.OnDup) > 0}
	case *ast.Update:
		s.strict = strictStatement{changes: true, ignore: n.Ignore != ""}
	case *ast.Delete:
		s.strict.changes = true
	case *ast.Load:
		s.strict = strictStatement{changes: true, ignore: n.IgnoreOrReplace == ast.IgnoreStr || bool(n.Local)}
	case *ast.DDL:
		s.strict.changes = n.OptSelect != nil
	}
}

func modeErrorForDivisionByZero(m *sql.SqlMode) bool {
	return m.ModeEnabled(sql.ErrorForDivisionByZero) || m.ModeEnabled(sql.Traditional)
}

func modeNoZeroDate(m *sql.SqlMode) bool {
	return m.ModeEnabled("NO_ZERO_DATE") || m.ModeEnabled(sql.Traditional)
}

// escalates says whether a warning strict mode covers is the statement's
// error under mode m.
func (s *Session) escalates(m *sql.SqlMode) bool {
	return s.strict.changes && !s.strict.ignore && m.Strict()
}

// divisionByZero is go-mysql-server's warning code for x/0, x DIV 0 and
// MOD(x, 0).
const divisionByZero = 1365

// Warn implements sql.Session: a division by zero is dropped, kept or made
// the statement's error as sql_mode says (see the top of the file).
func (s *Session) Warn(w *sql.Warning) {
	if w.Code == divisionByZero {
		m := s.sqlMode()
		switch {
		case !modeErrorForDivisionByZero(m):
			return
		case s.escalates(m):
			if s.strict.err == nil {
				s.strict.err = mysql.NewSQLError(divisionByZero, "22012", "Division by 0")
			}
			return
		}
	}
	s.BaseSession.Warn(w)
}

// strictError is the error strict mode made of one of the statement's
// warnings, or nil.
func (s *Session) strictError() error { return s.strict.err }

// checkWrite runs strict mode's checks on a row the statement writes: vals
// (with old, the row it replaces, for an UPDATE) into a table of schema
// sch and storage columns cols (a stored table's or a temporary one's).
func (s *Session) checkWrite(sch sql.Schema, cols []row.Column, old, vals sql.Row) error {
	if !s.strict.changes {
		return nil // ALTER TABLE copying rows, say: no values assigned
	}
	s.strict.rows++
	if s.strict.err != nil {
		return s.strict.err
	}
	if err := s.checkFloatRange(cols, vals); err != nil { // coldecl.go
		return err
	}
	var m *sql.SqlMode
	for i, col := range sch {
		if i >= len(vals) || !isZeroDate(col.Type, vals[i]) || (old != nil && i < len(old) && isZeroDate(col.Type, old[i])) {
			continue
		}
		if m == nil {
			if m = s.sqlMode(); !modeNoZeroDate(m) {
				return nil
			}
		}
		if s.escalates(m) {
			kind, zero := "date", "0000-00-00"
			if col.Type.Type() != sqltypes.Date {
				kind, zero = "datetime", "0000-00-00 00:00:00"
			}
			return mysql.NewSQLError(mysql.ERTruncatedWrongValue, "22007",
				"Incorrect %s value: '%s' for column '%s' at row %d", kind, zero, col.Name, s.strict.rows)
		}
		s.BaseSession.Warn(&sql.Warning{Level: "Warning", Code: mysql.ERWarnDataOutOfRange,
			Message: fmt.Sprintf("Out of range value for column '%s' at row %d", col.Name, s.strict.rows)})
	}
	return nil
}

// isZeroDate says whether v, a value of a column of type t, is the zero
// date of a DATE, DATETIME or TIMESTAMP column.
func isZeroDate(t sql.Type, v any) bool {
	tm, ok := v.(time.Time)
	return ok && tm.Equal(types.ZeroTime) && types.IsTime(t)
}

// strictArithmetic is an arithmetic expression (+, -, *, /, DIV, MOD)
// that returns the statement's error as soon as strict mode made a
// division by zero in it one (Warn), so that the statement fails with
// 1365 before anything else looks at the NULL (a NOT NULL column's check
// would have answered 1048 first). Only the root of an arithmetic tree is
// wrapped: go-mysql-server's nested divisions look at each other to keep
// their intermediate precision.
type strictArithmetic struct {
	valueWrapper
}

var _ sql.Expression = (*strictArithmetic)(nil)

func isArithmetic(e sql.Expression) bool {
	switch e.(type) {
	case *expression.Div, *expression.IntDiv, *expression.Mod, *expression.Arithmetic:
		return true
	}
	return false
}

// asStrictArithmetic wraps e if it is arithmetic.
func asStrictArithmetic(e sql.Expression) (*strictArithmetic, bool) {
	if !isArithmetic(e) {
		return nil, false
	}
	return &strictArithmetic{valueWrapper: wrap(e)}, true
}

// wrapArithmeticArgs wraps e's arithmetic children, unless e is arithmetic
// itself (or already wrapped).
func wrapArithmeticArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if _, done := e.(*strictArithmetic); done || isArithmetic(e) {
		return e, transform.SameTree, nil
	}
	return replaceChildren(ctx, e, func(_ int, c sql.Expression) sql.Expression {
		if d, ok := asStrictArithmetic(c); ok {
			return d
		}
		return nil
	})
}

func (d *strictArithmetic) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(d, len(children), 1)
	}
	return &strictArithmetic{valueWrapper: wrap(children[0])}, nil
}

func (d *strictArithmetic) Eval(ctx *sql.Context, r sql.Row) (any, error) {
	v, err := d.Child.Eval(ctx, r)
	if err == nil && v == nil {
		if s := sessionOf(ctx); s != nil && s.strict.err != nil {
			return nil, s.strict.err
		}
	}
	return v, err
}
