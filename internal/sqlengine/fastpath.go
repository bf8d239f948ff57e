package sqlengine

// The fast path runs the statements OLTP applications send most (point,
// IN-list and primary-key range reads, single-row INSERT, UPDATE and DELETE
// by key, transaction control), with or without bind variables, straight
// against the transaction layer: no GMS planning, no analyzer, no
// expression trees. Everything else goes to GMS, in the same session and
// transaction.
//
// Invariants:
//
//   - Same semantics as GMS, by construction rather than by imitation. The
//     fast path only executes what it can execute exactly: an operand is
//     used only when GMS's own type conversion takes it losslessly (an
//     integer literal for an integer column, a string of valid UTF-8 that
//     fits a text column); row writes go through the table editors GMS
//     uses (unique checks, binlog rows, AUTO_INCREMENT), reads through the
//     same transaction calls and lock modes as the GMS scan path, results
//     through GMS's types. Anything doubtful (a value needing coercion, a
//     NULL key, arithmetic that would overflow, a privilege check that
//     fails) makes it give up, before anything is written, with
//     errFallback; the caller then runs the statement through GMS, which
//     produces MySQL's result, warning or error.
//   - Giving up leaves no trace: a transaction the fast path opened for an
//     autocommit statement is rolled back (it holds at most locks GMS will
//     take again), and an explicit transaction's statement is rolled back
//     to its start.
//   - Transactions follow GMS's protocol on the session: a statement joins
//     the open transaction (ctx.GetTransaction) or starts one; under
//     autocommit (and outside BEGIN) it commits at the end. BEGIN, COMMIT
//     and ROLLBACK do what GMS's nodes do, so the two paths can alternate
//     freely within one transaction.

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/txn"
	goerrors "gopkg.in/src-d/go-errors.v1"
)

// FastStats counts statements by the path that ran them.
type FastStats struct {
	// Executed counts statements the fast path ran (successfully or with
	// an error from storage: a duplicate key, a lock wait timeout).
	Executed atomic.Uint64
	// Fallbacks counts statements of a recognised shape that it handed to
	// GMS (a value needing coercion, an unsupported column, ...).
	Fallbacks atomic.Uint64
}

// errFallback: this statement must run through GMS.
var errFallback = errors.New("fast path: fall back to GMS")

// ExecFast runs p in ctx's session. handled is false when the statement
// must run through GMS instead; nothing has changed then.
func (e *Engine) ExecFast(ctx *sql.Context, p *FastPlan, binds map[string]*querypb.BindVariable) (res *sqltypes.Result, handled bool, err error) {
	s := sessionOf(ctx)
	if s == nil || s.replGTID != nil || s.gtidNext != nil {
		return nil, false, nil
	}
	if v, err := s.BaseSession.GetSessionVariable(ctx, "lockstep_fast_path"); err == nil && !isOn(v) {
		return nil, false, nil
	}
	// The statement before may have named tables with capitals; this one
	// names its table as stored (tablecase.go).
	if len(s.tableCase) > 0 {
		clear(s.tableCase)
	}
	switch p.kind {
	case fastBegin, fastCommit, fastRollback:
		res, err = e.fastTxnControl(ctx, s, p.kind)
		e.Fast.Executed.Add(1)
		return res, true, err
	}
	if p.kind == fastSetAutocommit {
		res, err = e.fastSetAutocommit(ctx, s, p, binds)
		if err == errFallback {
			e.Fast.Fallbacks.Add(1)
			return nil, false, nil
		}
		e.Fast.Executed.Add(1)
		return res, true, err
	}
	res, err = e.fastStatement(ctx, s, p, binds)
	if err == errFallback {
		e.Fast.Fallbacks.Add(1)
		return nil, false, nil
	}
	e.Fast.Executed.Add(1)
	if err != nil {
		return nil, true, sql.CastSQLError(err)
	}
	return res, true, nil
}

// fastTxnControl is GMS's START TRANSACTION, COMMIT and ROLLBACK.
func (e *Engine) fastTxnControl(ctx *sql.Context, s *Session, k fastKind) (*sqltypes.Result, error) {
	sql.IncrementStatusVariable(ctx, "Questions", 1)
	ok := &sqltypes.Result{}
	// GMS tracks these as row-returning statements with no rows.
	info := ctx.GetLastQueryInfo()
	info.RowCount.Store(-1)
	info.FoundRows.Store(0)
	cur := ctx.GetTransaction()
	switch k {
	case fastBegin:
		if cur != nil {
			if err := s.CommitTransaction(ctx, cur); err != nil {
				return nil, err
			}
		}
		t, err := s.StartTransaction(ctx, sql.ReadWrite)
		if err != nil {
			return nil, err
		}
		ctx.SetTransaction(t)
		ctx.SetIgnoreAutoCommit(true)
	case fastCommit:
		if cur != nil {
			if err := s.CommitTransaction(ctx, cur); err != nil {
				return nil, err
			}
		}
		ctx.SetIgnoreAutoCommit(false)
		ctx.SetTransaction(nil)
	case fastRollback:
		// GMS starts a transaction for the ROLLBACK statement itself, so
		// it always counts one.
		if err := s.Rollback(ctx, cur); err != nil {
			return nil, err
		}
		ctx.SetIgnoreAutoCommit(false)
		ctx.SetTransaction(nil)
	}
	return ok, nil
}

// fastSetAutocommit is GMS's SET autocommit: the statement runs in a
// transaction like any other (joining the open one or starting one), sets
// the variable, and then, as GMS decides whether to commit only after the
// SET has run, commits that transaction when autocommit is now on outside
// BEGIN. So switching from 0 to 1 commits the open transaction, as in
// MySQL, and switching to 0 leaves the statement's transaction open as
// the session's explicit one.
func (e *Engine) fastSetAutocommit(ctx *sql.Context, s *Session, p *FastPlan, binds map[string]*querypb.BindVariable) (*sqltypes.Result, error) {
	v, ok := (&fastExec{ctx: ctx, binds: binds}).operand(p.autocommit)
	if !ok {
		return nil, errFallback
	}
	var on int8
	switch x := v.(type) {
	case int64:
		if x != 0 && x != 1 {
			return nil, errFallback // GMS reports the invalid value
		}
		on = int8(x)
	case string:
		switch {
		case strings.EqualFold(x, "ON"):
			on = 1
		case strings.EqualFold(x, "OFF"):
		default:
			return nil, errFallback
		}
	default:
		return nil, errFallback
	}
	sql.IncrementStatusVariable(ctx, "Questions", 1)
	if ctx.GetTransaction() == nil {
		t, err := s.StartTransaction(ctx, sql.ReadWrite)
		if err != nil {
			return nil, err
		}
		ctx.SetTransaction(t)
	}
	if err := ctx.SetSessionVariable(ctx, sql.AutoCommitSessionVar, on); err != nil {
		return nil, err
	}
	// GMS tracks SET as a statement returning one (OK) row.
	info := ctx.GetLastQueryInfo()
	info.RowCount.Store(-1)
	info.FoundRows.Store(1)
	if on == 1 && !ctx.GetIgnoreAutoCommit() {
		t := ctx.GetTransaction()
		if err := s.CommitTransaction(ctx, t); err != nil {
			return nil, err
		}
		ctx.SetTransaction(nil)
	}
	return &sqltypes.Result{}, nil
}

// fastStatement runs a statement that reads or writes a table.
func (e *Engine) fastStatement(ctx *sql.Context, s *Session, p *FastPlan, binds map[string]*querypb.BindVariable) (*sqltypes.Result, error) {
	// The fast path's writes never have IGNORE (strictmode.go). The
	// statement is the command's: a column default parsed while its
	// table is resolved must not replace what is noted of it (note).
	s.strict = strictStatement{changes: p.kind != fastSelect}
	s.noted = true
	db := p.db
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	if _, temp := s.tempTable(db, p.table); temp {
		return nil, errFallback // the session's temporary table hides it: GMS
	}
	st, ok := e.store.Table(db, p.table)
	if !ok {
		return nil, errFallback // no such table, or a system table: GMS
	}
	if p.kind != fastSelect && (e.involvedInForeignKeys(st.Def.ID) || writesNeedGMS(st.Def) || e.store.HasTriggers(st.Def.ID)) {
		// go-mysql-server checks foreign keys and CHECK constraints,
		// computes generated columns and runs triggers.
		return nil, errFallback
	}
	dd, _ := e.store.Database(db)
	t, err := e.sqlTable(ctx, &Database{e: e, name: dd.Name, coll: sql.CollationID(dd.Collation)}, st)
	if err != nil {
		return nil, errFallback
	}
	x := &fastExec{e: e, ctx: ctx, s: s, p: p, t: t, binds: binds}
	if !x.allowed() {
		return nil, errFallback
	}
	// Everything that can make the statement fall back without touching
	// storage is settled before the transaction starts.
	if err := x.prepare(); err != nil {
		return nil, err
	}

	started := false
	if ctx.GetTransaction() == nil {
		tr, err := s.StartTransaction(ctx, sql.ReadWrite)
		if err != nil {
			return nil, err
		}
		ctx.SetTransaction(tr)
		started = true
	}
	autocommit := !ctx.GetIgnoreAutoCommit() && autocommitOn(ctx)
	tx := s.txn(ctx)
	if started && autocommit && x.readsOnce() {
		tx.ReadOnce()
	}
	tx.StatementBegin()
	res, err := x.run(tx)
	if err != errFallback {
		e.countStatement(ctx, p.kind)
	}
	if err != nil {
		if !tx.Ended() {
			tx.StatementRollback()
		}
		if err == errFallback && started {
			// GMS will start its own transaction for the statement.
			if !tx.HasWrites() {
				tx.Rollback()
				s.tx = nil
			}
			ctx.SetTransaction(nil)
			return nil, errFallback
		}
		if autocommit && err != errFallback {
			s.endAutocommit(ctx)
		}
		return nil, err
	}
	tx.StatementComplete()
	if autocommit {
		t := ctx.GetTransaction()
		ctx.SetTransaction(nil)
		if err := s.CommitTransaction(ctx, t); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// endAutocommit ends an autocommit statement's transaction after an error
// (its changes are already rolled back; this releases its locks).
func (s *Session) endAutocommit(ctx *sql.Context) {
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
	ctx.SetTransaction(nil)
}

func autocommitOn(ctx *sql.Context) bool {
	v, err := ctx.GetSessionVariable(ctx, "autocommit")
	return err == nil && isOn(v)
}

func (e *Engine) countStatement(ctx *sql.Context, k fastKind) {
	sql.IncrementStatusVariable(ctx, "Questions", 1)
	switch k {
	case fastSelect:
		sql.IncrementStatusVariable(ctx, "Com_select", 1)
	case fastInsert:
		sql.IncrementStatusVariable(ctx, "Com_insert", 1)
	case fastUpdate:
		sql.IncrementStatusVariable(ctx, "Com_update", 1)
	case fastDelete:
		sql.IncrementStatusVariable(ctx, "Com_delete", 1)
	}
}

// fastExec is one execution of a plan against one table.
type fastExec struct {
	e     *Engine
	ctx   *sql.Context
	s     *Session
	p     *FastPlan
	t     *Table
	binds map[string]*querypb.BindVariable

	// resolved by prepare
	access   accessPath
	proj     []int // SELECT: projected columns
	aggCols  []int // SELECT of aggregates: each item's column (-1: COUNT(*))
	limit    int64 // -1: none
	sortCol  int   // SELECT: sort the rows by this column (-1: key order)
	sortDesc bool
	want     []bool // SELECT: the columns it reads (nil: all)
	sets     []resolvedSet
	insert   sql.Row
	autoin   int // INSERT: AUTO_INCREMENT column, or -1
}

type resolvedSet struct {
	col   int
	arith byte
	val   any // the converted operand
}

func (x *fastExec) allowed() bool {
	mdb := x.e.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return true
	}
	var priv sql.PrivilegeType
	switch x.p.kind {
	case fastSelect:
		priv = sql.PrivilegeType_Select
	case fastInsert:
		priv = sql.PrivilegeType_Insert
	case fastUpdate:
		priv = sql.PrivilegeType_Update
	case fastDelete:
		priv = sql.PrivilegeType_Delete
	}
	subject := sql.PrivilegeCheckSubject{Database: x.t.db.name, Table: x.t.Name()}
	has := func(p sql.PrivilegeType) bool {
		return mdb.UserHasPrivileges(x.ctx, sql.NewPrivilegedOperation(subject, p))
	}
	// SUPER does not stand for table privileges (authorization.go): an
	// account that holds it without every object privilege is checked
	// without it.
	if set := x.e.sessionPrivileges(x.ctx); set.Has(sql.PrivilegeType_Super) && !set.Has(objectPrivileges...) {
		has = func(p sql.PrivilegeType) bool {
			return withoutSuper(x.ctx, func() bool { return mdb.UserHasPrivileges(x.ctx, sql.NewPrivilegedOperation(subject, p)) })
		}
	}
	if !has(priv) {
		return false
	}
	// A locking read needs one of DELETE, LOCK TABLES, UPDATE
	// (checkLockingRead gives the error).
	if x.p.kind == fastSelect && x.p.lock != 0 && !mayLock(x.ctx, x.s, subject) {
		return false
	}
	// REPLACE deletes the rows it conflicts with.
	if x.p.replace && !has(sql.PrivilegeType_Delete) {
		return false
	}
	// UPDATE ... WHERE and SET col = col + n read the table too.
	if x.p.kind == fastUpdate || x.p.kind == fastDelete {
		return has(sql.PrivilegeType_Select)
	}
	return true
}

// column finds a column by name (case-insensitive, as MySQL's are).
func (x *fastExec) column(name string) int {
	for i, c := range x.t.sch.Schema {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// prepare resolves names, converts operands and chooses the access path.
func (x *fastExec) prepare() error {
	for _, c := range x.t.sch.Schema {
		if c.Generated != nil || c.Virtual {
			return errFallback
		}
		if x.p.kind == fastUpdate && c.OnUpdate != nil {
			return errFallback
		}
	}
	switch x.p.kind {
	case fastInsert:
		return x.prepareInsert()
	case fastSelect:
		defer x.wantColumns()
		if x.p.star {
			x.proj = make([]int, len(x.t.sch.Schema))
			for i := range x.proj {
				x.proj[i] = i
			}
		}
		for _, it := range x.p.items {
			c := -1
			if it.agg == 0 || it.col != "" {
				if c = x.column(it.col); c < 0 {
					return errFallback // GMS reports the unknown column
				}
			}
			if it.agg == 's' && !types.IsInteger(x.t.sch.Schema[c].Type) {
				return errFallback // GMS's SUM of other types converts values
			}
			if x.p.aggs {
				x.aggCols = append(x.aggCols, c)
			} else {
				x.proj = append(x.proj, c)
			}
		}
		x.limit = -1
		if x.p.limit != nil {
			v, ok := x.operand(*x.p.limit)
			n, isInt := asInt64(v)
			if !ok || !isInt || n < 0 {
				return errFallback
			}
			x.limit = n
		}
	case fastUpdate:
		for _, set := range x.p.sets {
			c := x.column(set.col)
			if c < 0 {
				return errFallback
			}
			col := x.t.sch.Schema[c]
			rs := resolvedSet{col: c, arith: set.arith}
			if set.arith != 0 {
				// col = col +/- integer: signed integer columns only.
				if !types.IsSigned(col.Type) {
					return errFallback
				}
				v, ok := x.operand(set.val)
				n, isInt := v.(int64)
				if !ok || !isInt {
					return errFallback
				}
				rs.val = n
			} else {
				v, ok := x.value(col, set.val)
				if !ok || (v == nil && !col.Nullable) {
					return errFallback
				}
				rs.val = v
			}
			x.sets = append(x.sets, rs)
		}
	}
	return x.chooseAccess()
}

// wantColumns marks the columns a SELECT reads: projected, aggregated,
// sorted on, and compared after a text key lookup.
func (x *fastExec) wantColumns() {
	x.want = make([]bool, len(x.t.sch.Schema))
	for _, c := range x.proj {
		x.want[c] = true
	}
	for _, c := range x.aggCols {
		if c >= 0 {
			x.want[c] = true
		}
	}
	if x.sortCol >= 0 {
		x.want[x.sortCol] = true
	}
	for _, c := range x.access.checks {
		x.want[c.col] = true
	}
}

// operand returns a literal's or bind variable's value: int64, uint64,
// string, or nil for NULL.
func (x *fastExec) operand(o fastOperand) (any, bool) {
	lit := o.lit
	if o.param != "" {
		bv, ok := x.binds[o.param]
		if !ok {
			return nil, false
		}
		v, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return nil, false
		}
		if lit, err = ast.ExprFromValue(v); err != nil {
			return nil, false
		}
	}
	switch l := lit.(type) {
	case *ast.NullVal:
		return nil, !o.neg
	case *ast.SQLVal:
		switch l.Type {
		case ast.IntVal:
			if n, err := strconv.ParseInt(string(l.Val), 10, 64); err == nil {
				if o.neg {
					if n == math.MinInt64 {
						return nil, false
					}
					n = -n
				}
				return n, true
			}
			if n, err := strconv.ParseUint(string(l.Val), 10, 64); err == nil && !o.neg {
				return n, true
			}
		case ast.StrVal:
			if !o.neg {
				return string(l.Val), true
			}
		}
	}
	return nil, false
}

// value converts an operand to a column's type, accepting only lossless
// conversions GMS would make without a warning or an error. NULL is
// returned as nil with ok set; callers decide whether it is acceptable.
func (x *fastExec) value(col *sql.Column, o fastOperand) (any, bool) {
	v, ok := x.operand(o)
	if !ok || v == nil {
		return nil, ok
	}
	switch lit := v.(type) {
	case int64, uint64:
		if !types.IsInteger(col.Type) {
			return nil, false
		}
		out, inRange, err := col.Type.Convert(x.ctx, lit)
		if err != nil || inRange != sql.InRange {
			return nil, false
		}
		return out, true
	case string:
		if !plainText(col.Type) || !utf8.ValidString(lit) {
			return nil, false
		}
		st := col.Type.(sql.StringType)
		if int64(utf8.RuneCountInString(lit)) > st.MaxCharacterLength() {
			return nil, false
		}
		out, _, err := col.Type.Convert(x.ctx, lit)
		if err != nil {
			return nil, false
		}
		return out, true
	}
	return nil, false
}

// plainText: CHAR, VARCHAR and TEXT columns in a UTF-8 character set.
func plainText(t sql.Type) bool {
	if !types.IsText(t) || types.IsBinaryType(t) || types.IsEnum(t) || types.IsSet(t) {
		return false
	}
	st, ok := t.(sql.StringType)
	if !ok {
		return false
	}
	cs := st.Collation().CharacterSet()
	return cs == sql.CharacterSet_utf8mb4 || cs == sql.CharacterSet_utf8mb3
}

// accessPath is how the statement's rows are found.
type accessPath struct {
	kind    accessKind
	index   int      // the secondary index of accessPoints or accessIndexRange, else -1
	keys    [][]byte // accessPoints: whole keys, ascending and distinct
	lo, hi  []byte   // accessRange, accessIndexRange
	checks  []check  // string equalities to confirm with GMS's comparison
	empty   bool     // the conditions cannot match (lo >= hi)
	ordered bool     // rows come out in the ORDER BY's order
}

type accessKind uint8

const (
	accessPoints     accessKind = iota // primary keys, or one unique index key
	accessRange                        // a primary key range
	accessIndexRange                   // a range of a secondary index's entries
)

type check struct {
	col int
	val any
}

// chooseAccess turns the WHERE clause into key lookups: every primary key
// column equal to a value (or the one PK column IN a list), every column
// of a unique index equal to a non-NULL value, a range over the first
// primary key column, or (for a plain SELECT) an equality or range over
// the first column of a secondary index. Conditions on any other column
// make it fall back.
func (x *fastExec) chooseAccess() error {
	byCol := map[int][]fastCond{}
	for _, c := range x.p.where {
		i := x.column(c.col)
		if i < 0 {
			return errFallback
		}
		byCol[i] = append(byCol[i], c)
	}
	def := x.t.st.Def
	eqs := func(cols []int) ([]row.Value, bool) {
		if len(byCol) != len(cols) {
			return nil, false
		}
		vals := make([]row.Value, len(def.Columns))
		for _, c := range cols {
			cs := byCol[c]
			if len(cs) != 1 || cs[0].op != condEq {
				return nil, false
			}
			sv, ok := x.keyValue(c, cs[0].ops[0])
			if !ok {
				return nil, false
			}
			vals[c] = sv
		}
		return vals, true
	}
	x.access.index = -1
	if vals, ok := eqs(def.PK); ok && len(def.PK) > 0 {
		k, err := x.t.st.RowKey(nil, vals)
		if err != nil {
			return errFallback
		}
		x.access.kind, x.access.keys, x.access.ordered = accessPoints, [][]byte{k}, true
		return x.checkOrder()
	}
	for i, ix := range def.Indexes {
		if !ix.Unique {
			continue
		}
		if vals, ok := eqs(ix.Columns); ok {
			sel := make([]row.Value, len(ix.Columns))
			for j, c := range ix.Columns {
				sel[j] = vals[c]
			}
			k, err := x.t.st.KeyOf(x.t.st.IndexPrefix(i), ix.Columns, sel)
			if err != nil {
				return errFallback
			}
			x.access.kind, x.access.index, x.access.keys, x.access.ordered = accessPoints, i, [][]byte{k}, true
			return x.checkOrder()
		}
	}
	if len(def.PK) == 0 || len(byCol) != 1 {
		return errFallback
	}
	pk := def.PK[0]
	cs, ok := byCol[pk]
	if !ok {
		return x.chooseIndexRange(byCol)
	}
	if !types.IsInteger(x.t.sch.Schema[pk].Type) {
		return errFallback // ranges and lists over text keys: GMS
	}
	if len(cs) == 1 && cs[0].op == condIn && len(def.PK) == 1 {
		seen := map[string]bool{}
		for _, o := range cs[0].ops {
			sv, ok := x.keyValue(pk, o)
			if !ok {
				return errFallback
			}
			vals := make([]row.Value, len(def.Columns))
			vals[pk] = sv
			k, err := x.t.st.RowKey(nil, vals)
			if err != nil {
				return errFallback
			}
			if !seen[string(k)] {
				seen[string(k)] = true
				x.access.keys = append(x.access.keys, k)
			}
		}
		sortKeys(x.access.keys)
		x.access.kind, x.access.ordered = accessPoints, true
		return x.checkOrder()
	}
	// A range over the first primary key column.
	lo, hi, ok := x.keyRange(x.t.st.PrimaryPrefix(), pk, cs)
	if !ok {
		return errFallback
	}
	x.access.kind, x.access.lo, x.access.hi, x.access.ordered = accessRange, lo, hi, true
	x.access.empty = string(lo) >= string(hi)
	return x.checkOrder()
}

// chooseIndexRange reads a plain SELECT's rows through the one secondary
// index that starts with the WHERE clause's one (integer) column. The rows
// come in the index's order, (column, primary key), as they do when GMS
// reads the same index. If two indexes start with the column, GMS's choice
// between them (and so the order) is not predictable here: fall back.
func (x *fastExec) chooseIndexRange(byCol map[int][]fastCond) error {
	if x.p.kind != fastSelect || x.p.lock != 0 {
		return errFallback
	}
	c := -1
	for col := range byCol {
		c = col // the only one
	}
	cs := byCol[c]
	if !types.IsInteger(x.t.sch.Schema[c].Type) {
		return errFallback
	}
	ix := -1
	for i, d := range x.t.st.Def.Indexes {
		if d.Columns[0] == c {
			if ix >= 0 {
				return errFallback
			}
			ix = i
		}
	}
	if ix < 0 {
		return errFallback
	}
	if len(cs) == 1 && cs[0].op == condEq {
		// col = v: the range of entries starting with v.
		cs = []fastCond{{col: cs[0].col, op: condBetween, ops: []fastOperand{cs[0].ops[0], cs[0].ops[0]}}}
	}
	pfx := x.t.st.IndexPrefix(ix)
	lo, hi, ok := x.keyRange(pfx, c, cs)
	if !ok {
		return errFallback
	}
	if string(lo) == string(pfx) {
		// No lower bound: NULL entries (which sort first) never match.
		lo = append(lo, 0x01)
	}
	x.access.kind, x.access.index, x.access.lo, x.access.hi, x.access.ordered = accessIndexRange, ix, lo, hi, true
	x.access.empty = string(lo) >= string(hi)
	return x.checkOrder()
}

// keyRange turns comparisons of column c into the key range [lo, hi)
// under pfx, where c is the first column of the keys.
func (x *fastExec) keyRange(pfx []byte, c int, cs []fastCond) (lo, hi []byte, ok bool) {
	def := x.t.st.Def
	lo, hi = append([]byte(nil), pfx...), row.PrefixEnd(pfx)
	bound := func(o fastOperand, upper, inclusive bool) bool {
		sv, ok := x.keyValue(c, o)
		if !ok {
			return false
		}
		k, err := row.AppendKey(append([]byte(nil), pfx...), &def.Columns[c], sv, x.e.coll)
		if err != nil {
			return false
		}
		switch {
		case !upper && inclusive: // >= k
			if string(k) > string(lo) {
				lo = k
			}
		case !upper: // > k: past every key starting with k
			if e := row.PrefixEnd(k); string(e) > string(lo) {
				lo = e
			}
		case inclusive: // <= k
			if e := row.PrefixEnd(k); string(e) < string(hi) {
				hi = e
			}
		default: // < k
			if string(k) < string(hi) {
				hi = k
			}
		}
		return true
	}
	for _, c := range cs {
		ok := true
		switch c.op {
		case condBetween:
			ok = bound(c.ops[0], false, true) && bound(c.ops[1], true, true)
		case condGE:
			ok = bound(c.ops[0], false, true)
		case condGT:
			ok = bound(c.ops[0], false, false)
		case condLE:
			ok = bound(c.ops[0], true, true)
		case condLT:
			ok = bound(c.ops[0], true, false)
		default:
			ok = false
		}
		if !ok {
			return nil, nil, false
		}
	}
	return lo, hi, true
}

// checkOrder settles ORDER BY and DISTINCT. Rows come in key order; an
// ORDER BY on the first primary key column ascending needs nothing more,
// and any other is a stable sort of the matched rows, which is what GMS's
// Sort does with the same input (ties keep key order). With LIMIT the
// sort must be on a unique column (GMS uses a TopN heap whose ties come
// out in another order), and DISTINCT is taken only as DISTINCT col ...
// ORDER BY col over an integer or text column, deduplicated after the
// sort as GMS does.
func (x *fastExec) checkOrder() error {
	x.sortCol = -1
	o := x.p.order
	if o == nil {
		if x.p.distinct && !x.singleRow() {
			return errFallback
		}
		return nil
	}
	c := x.column(o.col)
	if c < 0 {
		return errFallback
	}
	if x.singleRow() {
		return nil
	}
	pk := x.t.st.Def.PK
	if x.access.index < 0 && !o.desc && len(pk) > 0 && c == pk[0] && !x.p.distinct {
		return nil
	}
	if x.access.kind == accessIndexRange && !o.desc && c == x.t.st.Def.Indexes[x.access.index].Columns[0] && !x.p.distinct {
		return nil // index order; GMS reads the index in order instead of sorting
	}
	unique := len(pk) == 1 && c == pk[0]
	if x.p.limit != nil && !unique {
		return errFallback
	}
	if x.p.distinct && (len(x.proj) != 1 || x.proj[0] != c ||
		!(types.IsInteger(x.t.sch.Schema[c].Type) || plainText(x.t.sch.Schema[c].Type))) {
		return errFallback
	}
	x.sortCol, x.sortDesc = c, o.desc
	return nil
}

// readsOnce: a plain SELECT whose rows come from one storage read (one
// primary key, or one range scan), so that, alone in its transaction, it
// needs no snapshot.
func (x *fastExec) readsOnce() bool {
	if x.p.kind != fastSelect || x.p.lock != 0 || x.access.index >= 0 || x.access.kind == accessIndexRange {
		return false
	}
	return x.access.kind == accessRange || len(x.access.keys) == 1
}

// singleRow: the access path finds at most one row.
func (x *fastExec) singleRow() bool {
	return x.access.kind == accessPoints && len(x.access.keys) == 1
}

// keyValue converts a WHERE operand for a key column; NULL falls back.
// Text equalities are also confirmed on the row with GMS's comparison.
func (x *fastExec) keyValue(c int, o fastOperand) (row.Value, bool) {
	col := x.t.sch.Schema[c]
	v, ok := x.value(col, o)
	if !ok || v == nil {
		return nil, false
	}
	sv, err := toStorage(x.ctx, &x.t.st.Def.Columns[c], col.Type, v)
	if err != nil || sv == nil {
		return nil, false
	}
	if !types.IsInteger(col.Type) {
		x.access.checks = append(x.access.checks, check{col: c, val: v})
	}
	return sv, true
}

func sortKeys(ks [][]byte) {
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && string(ks[j]) < string(ks[j-1]); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
}

func (x *fastExec) run(tx *txn.Txn) (*sqltypes.Result, error) {
	switch x.p.kind {
	case fastSelect:
		return x.runSelect(tx)
	case fastUpdate:
		return x.runUpdate(tx)
	case fastDelete:
		return x.runDelete(tx)
	case fastInsert:
		return x.runInsert(tx)
	}
	return nil, errFallback
}

// rows calls fn with each matching row (decoded to GMS values) in key
// order, reading as the GMS scan path does for the same lock mode.
func (x *fastExec) rows(tx *txn.Txn, mode lock.Mode, fn func(sql.Row) (more bool, err error)) error {
	t := x.t
	// The shared metadata lock, and the check that no DDL replaced the
	// table since it was resolved.
	if _, _, err := t.begin(x.ctx); err != nil {
		return err
	}
	var scratch []row.Value
	var slab rowSlab
	slot := ioSlot(x.access.index, t.st.Keyless())
	x.s.noteTableUse(t.st, false)
	emit := func(img []byte) (bool, error) {
		x.s.rowsRead.Add(1)
		x.s.noteIO(t.st, slot, ioFetch, 1)
		r, err := t.toSQLRowSome(img, &scratch, x.want, &slab)
		if err != nil {
			return false, err
		}
		for _, c := range x.access.checks {
			cmp, err := t.sch.Schema[c.col].Type.Compare(x.ctx, r[c.col], c.val)
			if err != nil {
				return false, err
			}
			if cmp != 0 {
				return true, nil
			}
		}
		return fn(r)
	}
	a := &x.access
	if a.empty {
		return nil
	}
	if a.kind == accessRange || a.kind == accessIndexRange {
		// An index range is read consistently only (chooseIndexRange):
		// its entries and their rows come from the same read view.
		var it *txn.Iter
		var err error
		if mode != 0 && a.kind == accessRange {
			it, err = tx.LockingScan(a.lo, a.hi, mode)
		} else {
			it, err = tx.Scan(a.lo, a.hi)
		}
		if err != nil {
			return x.s.afterError(err)
		}
		defer it.Close()
		for it.Next() {
			img := it.KV().Value
			if a.kind == accessIndexRange {
				var found bool
				if img, found, err = tx.Get(img); err != nil {
					return x.s.afterError(err)
				} else if !found {
					continue
				}
			}
			more, err := emit(img)
			if err != nil || !more {
				return err
			}
		}
		return x.s.afterError(it.Err())
	}
	for _, key := range a.keys {
		if a.index >= 0 {
			var rowKey []byte
			var found bool
			var err error
			if mode != 0 {
				rowKey, found, err = tx.GetLatest(key)
				if err == nil && !found {
					err = tx.LockGap(key, txn.Wait) // as the GMS path (pointIter)
				}
			} else {
				rowKey, found, err = tx.Get(key)
			}
			if err != nil {
				return x.s.afterError(err)
			}
			if !found {
				continue
			}
			key = rowKey
		}
		var img []byte
		var found bool
		var err error
		if mode != 0 {
			img, found, err = tx.GetLocked(key, mode)
		} else {
			img, found, err = tx.Get(key)
		}
		if err != nil {
			return x.s.afterError(err)
		}
		if !found {
			continue
		}
		more, err := emit(img)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func (x *fastExec) runSelect(tx *txn.Txn) (*sqltypes.Result, error) {
	if x.p.aggs {
		return x.runAggregate(tx)
	}
	sch := x.t.sch.Schema
	res := &sqltypes.Result{Fields: x.fields()}
	info := x.ctx.GetLastQueryInfo()
	info.RowCount.Store(-1)
	if x.limit == 0 {
		info.FoundRows.Store(0)
		return res, nil
	}
	var rows []sql.Row
	err := x.rows(tx, x.p.lock, func(r sql.Row) (bool, error) {
		rows = append(rows, r)
		return x.sortCol >= 0 || x.limit < 0 || int64(len(rows)) < x.limit, nil
	})
	if err != nil {
		return nil, err
	}
	if x.sortCol >= 0 {
		if rows, err = x.sortRows(rows); err != nil {
			return nil, err
		}
		if x.limit >= 0 && int64(len(rows)) > x.limit {
			rows = rows[:x.limit]
		}
	}
	// The result's values share one array, and the bytes of its integers
	// and text one buffer, instead of two allocations a value.
	res.Rows = make([][]sqltypes.Value, len(rows))
	vals := make([]sqltypes.Value, len(rows)*len(x.proj))
	size := 0
	for _, r := range rows {
		for _, c := range x.proj {
			if s, ok := r[c].(string); ok {
				size += len(s)
			} else {
				size += 20 // an integer's digits; other values go elsewhere
			}
		}
	}
	buf := make([]byte, 0, size)
	rc := x.ctx.GetCharacterSetResults()
	for n, r := range rows {
		out := vals[n*len(x.proj) : (n+1)*len(x.proj) : (n+1)*len(x.proj)]
		for i, c := range x.proj {
			var err error
			if out[i], buf, err = appendValue(x.ctx, rc, sch[c].Type, r[c], buf); err != nil {
				return nil, err
			}
		}
		res.Rows[n] = out
	}
	info.FoundRows.Store(int64(len(res.Rows)))
	return res, nil
}

// appendValue is typ.SQL(ctx, nil, v), the value as the client receives
// it, with the bytes of an integer or of utf8mb4 text sent as stored
// appended to buf (returned grown) instead of allocated on their own. rc
// is the session's character_set_results.
func appendValue(ctx *sql.Context, rc sql.CharacterSetID, typ sql.Type, v any, buf []byte) (sqltypes.Value, []byte, error) {
	start := len(buf)
	switch t := typ.(type) {
	case types.NumberTypeImpl_:
		if sqltypes.IsFloat(t.Type()) {
			break
		}
		if i, ok := asInt64(v); ok {
			buf = strconv.AppendInt(buf, i, 10)
		} else if u, ok := v.(uint64); ok {
			buf = strconv.AppendUint(buf, u, 10)
		} else {
			break
		}
		return sqltypes.MakeTrusted(t.Type(), buf[start:len(buf):len(buf)]), buf, nil
	case types.StringType:
		s, ok := v.(string)
		cs := t.Collation().CharacterSet()
		if rc == sql.CharacterSet_Unspecified || rc == sql.CharacterSet_binary {
			rc = cs
		}
		if ok && rc == cs && cs == sql.CharacterSet_utf8mb4 && !types.IsBinaryType(t) {
			buf = append(buf, s...)
			return sqltypes.MakeTrusted(t.Type(), buf[start:len(buf):len(buf)]), buf, nil
		}
	}
	if v == nil {
		return sqltypes.NULL, buf, nil
	}
	val, err := typ.SQL(ctx, nil, v)
	return val, buf, err
}

// sortRows sorts stably by sortCol as GMS's Sorter does (NULLs first
// ascending, last descending), then drops DISTINCT duplicates. Text
// compares as GMS's StringType.Compare does (rune weights, then the
// shorter first), skipping the weight lookup for identical runes.
func (x *fastExec) sortRows(rows []sql.Row) ([]sql.Row, error) {
	c, typ := x.sortCol, x.t.sch.Schema[x.sortCol].Type
	var sortErr error
	var sorter *runeWeights
	if plainText(typ) {
		sorter = weightsFor(typ.(sql.StringType).Collation())
	}
	cmp := func(a, b any) int {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		case b == nil:
			return 1
		}
		if sorter != nil {
			as, aok := a.(string)
			bs, bok := b.(string)
			if aok && bok {
				n, ok := compareText(sorter, as, bs)
				if !ok && sortErr == nil {
					sortErr = errFallback // malformed text: GMS reports it
				}
				return n
			}
		}
		n, err := typ.Compare(x.ctx, a, b)
		if err != nil && sortErr == nil {
			sortErr = err
		}
		return n
	}
	// Sort the values with their positions (a tie keeps the order of
	// arrival, as a stable sort would), then put the rows in that order:
	// pdqsort over small items, not a stable merge that swaps rows
	// through reflection.
	type item struct {
		v   any
		pos int
	}
	items := make([]item, len(rows))
	for i, r := range rows {
		items[i] = item{r[c], i}
	}
	slices.SortFunc(items, func(a, b item) int {
		n := cmp(a.v, b.v)
		if x.sortDesc {
			n = -n
		}
		if n == 0 {
			return a.pos - b.pos
		}
		return n
	})
	sorted := make([]sql.Row, len(rows))
	for i, it := range items {
		sorted[i] = rows[it.pos]
	}
	rows = sorted
	if x.p.distinct {
		// DISTINCT keeps the first row of each value, strings compared
		// by their collation (distinct.go). The sort put equal values
		// next to each other, in their order of arrival.
		out := rows[:0]
		for i, r := range rows {
			if i == 0 || cmp(out[len(out)-1][c], r[c]) != 0 {
				out = append(out, r)
			}
		}
		rows = out
	}
	return rows, sortErr
}

// runAggregate computes SUM and COUNT items over the matched rows: SUM of
// an integer column exactly, as a DECIMAL (sumavg.go), NULL for no
// values; COUNT(col) counts non-NULL values.
func (x *fastExec) runAggregate(tx *txn.Txn) (*sqltypes.Result, error) {
	sums := make([]exactSumOf, len(x.aggCols))
	counts := make([]int64, len(x.aggCols))
	err := x.rows(tx, x.p.lock, func(r sql.Row) (bool, error) {
		for i, c := range x.aggCols {
			if c >= 0 && r[c] == nil {
				continue
			}
			counts[i]++
			if x.p.items[i].agg == 's' {
				if err := sums[i].add(x.ctx, r[c]); err != nil {
					return false, err
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	cols := make([]*sql.Column, len(x.aggCols))
	out := make([]sqltypes.Value, len(x.aggCols))
	for i, it := range x.p.items {
		cols[i] = &sql.Column{Name: it.name, Type: types.Int64}
		v := any(counts[i])
		if it.agg == 's' {
			cols[i].Type, _ = exactResultType(x.ctx, x.t.sch.Schema[x.aggCols[i]].Type, false)
			cols[i].Nullable = true // NULL over no values
			v = nil
			if counts[i] > 0 {
				v = sums[i].value()
			}
		}
		if v == nil {
			out[i] = sqltypes.NULL
			continue
		}
		if out[i], err = cols[i].Type.SQL(x.ctx, nil, v); err != nil {
			return nil, err
		}
	}
	info := x.ctx.GetLastQueryInfo()
	info.RowCount.Store(-1)
	info.FoundRows.Store(1)
	return &sqltypes.Result{Fields: fieldsOf(x.ctx, cols), Rows: [][]sqltypes.Value{out}}, nil
}

// fields describes the projected columns.
func (x *fastExec) fields() []*querypb.Field {
	source := x.t.Name()
	if x.p.alias != "" {
		source = x.p.alias
	}
	cols := make([]*sql.Column, len(x.proj))
	for i, c := range x.proj {
		col := *x.t.sch.Schema[c]
		col.Source, col.DatabaseSource = source, x.t.db.name
		if i < len(x.p.items) {
			it := x.p.items[i]
			col.Name = it.name
			if it.aliased {
				col.Source, col.DatabaseSource, col.PrimaryKey, col.AutoIncrement = "", "", false, false
			}
		}
		cols[i] = &col
	}
	return fieldsOf(x.ctx, cols)
}

// fieldsOf describes result columns as GMS's handler does.
func fieldsOf(ctx *sql.Context, cols []*sql.Column) []*querypb.Field {
	charSetResults := ctx.GetCharacterSetResults()
	out := make([]*querypb.Field, len(cols))
	for i, c := range cols {
		charset := uint32(sql.Collation_Default.CharacterSet())
		if ct, ok := c.Type.(sql.TypeWithCollation); ok {
			charset = uint32(ct.Collation().CharacterSet())
		}
		if types.IsBinaryType(c.Type) {
			charset = uint32(sql.Collation_binary)
		} else if charSetResults != sql.CharacterSet_Unspecified {
			charset = uint32(charSetResults)
		}
		var flags querypb.MySqlFlag
		if !c.Nullable {
			flags |= querypb.MySqlFlag_NOT_NULL_FLAG
		}
		if c.AutoIncrement {
			flags |= querypb.MySqlFlag_AUTO_INCREMENT_FLAG
		}
		if c.PrimaryKey {
			flags |= querypb.MySqlFlag_PRI_KEY_FLAG
		}
		if types.IsUnsigned(c.Type) {
			flags |= querypb.MySqlFlag_UNSIGNED_FLAG
		}
		f := &querypb.Field{
			Name: c.Name, OrgName: c.Name, Table: c.Source, OrgTable: c.Source, Database: c.DatabaseSource,
			Type: c.Type.Type(), Charset: charset, ColumnLength: c.Type.MaxTextResponseByteLength(ctx),
			Flags: uint32(flags),
		}
		if types.IsDecimal(c.Type) {
			f.Decimals = uint32(c.Type.(sql.DecimalType).Scale())
		} else if types.IsDatetimeType(c.Type) {
			f.Decimals = uint32(c.Type.(sql.DatetimeType).Precision())
		}
		out[i] = f
	}
	return out
}

// matched reads the rows a write statement changes, locked exclusively.
func (x *fastExec) matched(tx *txn.Txn) ([]sql.Row, error) {
	var out []sql.Row
	err := x.rows(tx, lock.Exclusive, func(r sql.Row) (bool, error) {
		out = append(out, r)
		return true, nil
	})
	return out, err
}

func (x *fastExec) runUpdate(tx *txn.Txn) (*sqltypes.Result, error) {
	if x.access.kind != accessPoints {
		return nil, errFallback // range updates: GMS
	}
	rows, err := x.matched(tx)
	if err != nil {
		return nil, err
	}
	ed := editor{x.t}
	sch := x.t.sch.Schema
	exact := exactSchema(sch)
	changed := 0
	for _, old := range rows {
		nr := old.Copy()
		for _, set := range x.sets {
			v := set.val
			if set.arith != 0 {
				if v, err = x.arith(sch[set.col], old[set.col], set.arith, set.val.(int64)); err != nil {
					return nil, err
				}
			}
			nr[set.col] = v
		}
		eq, err := old.Equals(x.ctx, nr, exact)
		if err != nil {
			return nil, err
		}
		if eq {
			continue // a change of case alone is a change (exactupdate.go)
		}
		if err := ed.Update(x.ctx, old, nr); err != nil {
			return nil, err
		}
		changed++
	}
	affected := changed
	if x.ctx.Client().Capabilities&clientFoundRows != 0 {
		affected = len(rows)
	}
	info := x.ctx.GetLastQueryInfo()
	info.FoundRows.Store(int64(len(rows)))
	info.RowCount.Store(int64(affected))
	return &sqltypes.Result{
		RowsAffected: uint64(affected),
		Info:         "Rows matched: " + strconv.Itoa(len(rows)) + "  Changed: " + strconv.Itoa(changed) + "  Warnings: 0",
	}, nil
}

// clientFoundRows is CLIENT_FOUND_ROWS: affected rows count matched rows.
const clientFoundRows = 1 << 1

// arith computes col +/- n for a signed integer column, falling back on
// NULL and on any result GMS would not store as is.
func (x *fastExec) arith(col *sql.Column, cur any, op byte, n int64) (any, error) {
	if cur == nil {
		return nil, errFallback
	}
	a, ok := asInt64(cur)
	if !ok {
		return nil, errFallback
	}
	var r int64
	if op == '+' {
		r = a + n
		if (n > 0 && r < a) || (n < 0 && r > a) {
			return nil, errFallback
		}
	} else {
		r = a - n
		if (n > 0 && r > a) || (n < 0 && r < a) {
			return nil, errFallback
		}
	}
	out, inRange, err := col.Type.Convert(x.ctx, r)
	if err != nil || inRange != sql.InRange {
		return nil, errFallback
	}
	return out, nil
}

func (x *fastExec) runDelete(tx *txn.Txn) (*sqltypes.Result, error) {
	if x.access.kind != accessPoints {
		return nil, errFallback
	}
	rows, err := x.matched(tx)
	if err != nil {
		return nil, err
	}
	ed := editor{x.t}
	for _, r := range rows {
		if err := ed.Delete(x.ctx, r); err != nil {
			return nil, err
		}
	}
	x.ctx.GetLastQueryInfo().RowCount.Store(int64(len(rows)))
	return &sqltypes.Result{RowsAffected: uint64(len(rows))}, nil
}

// prepareInsert maps the VALUES row onto the table's columns. A column
// left out gets NULL or its literal default; an omitted AUTO_INCREMENT
// column, NULL or 0 for one, NULL for a NOT NULL column, or an expression
// default falls back.
func (x *fastExec) prepareInsert() error {
	sch := x.t.sch.Schema
	if len(x.p.values) > len(sch) || x.p.cols == nil && len(x.p.values) != len(sch) {
		return errFallback
	}
	x.insert = make(sql.Row, len(sch))
	set := make([]bool, len(sch))
	x.autoin = -1
	for i, o := range x.p.values {
		c := i
		if x.p.cols != nil {
			if c = x.column(x.p.cols[i]); c < 0 || set[c] {
				return errFallback
			}
		}
		set[c] = true
		col := sch[c]
		v, ok := x.value(col, o)
		if !ok || (v == nil && !col.Nullable) {
			return errFallback
		}
		if col.AutoIncrement {
			n, isInt := asInt64(v)
			if !isInt || n <= 0 {
				return errFallback
			}
			x.autoin = c
		}
		x.insert[c] = v
	}
	for c, col := range sch {
		if set[c] {
			continue
		}
		if col.AutoIncrement || !col.Default.IsLiteral() {
			return errFallback
		}
		v, err := col.Default.Eval(x.ctx, nil)
		if err != nil || (v == nil && !col.Nullable) {
			return errFallback
		}
		x.insert[c] = v
	}
	x.access.index = -1
	return nil
}

func (x *fastExec) runInsert(tx *txn.Txn) (*sqltypes.Result, error) {
	t := x.t
	if _, _, err := t.beginWrite(x.ctx); err != nil {
		return nil, err
	}
	var id uint64
	if x.autoin >= 0 {
		// As GMS's insert does: move the counter past an explicit value
		// before writing.
		if _, err := t.GetNextAutoIncrementValue(x.ctx, x.insert[x.autoin]); err != nil {
			return nil, err
		}
		n, _ := asInt64(x.insert[x.autoin])
		id = uint64(n)
	}
	if x.p.replace {
		return x.runReplace()
	}
	if err := (editor{t}).Insert(x.ctx, x.insert); err != nil {
		return nil, err
	}
	x.ctx.GetLastQueryInfo().RowCount.Store(1)
	return &sqltypes.Result{RowsAffected: 1, InsertID: id}, nil
}

// runReplace is GMS's REPLACE of one row: insert it; while that fails on
// a primary or unique key, delete the row it conflicts with and retry.
// It counts, as MySQL does, the row inserted and every row deleted (a row
// that replaced two is three: replacecount.go), and reports the session's
// LAST_INSERT_ID() as the insert id.
func (x *fastExec) runReplace() (*sqltypes.Result, error) {
	ed := editor{x.t}
	affected := 1
	for {
		err := ed.Insert(x.ctx, x.insert)
		if err == nil {
			break
		}
		if !sql.ErrPrimaryKeyViolation.Is(err) && !sql.ErrUniqueKeyViolation.Is(err) {
			return nil, err
		}
		var ue sql.UniqueKeyError
		if e, ok := err.(*goerrors.Error); !ok {
			return nil, err
		} else if ue, ok = e.Cause().(sql.UniqueKeyError); !ok || ue.Existing == nil {
			return nil, err
		}
		if err := ed.Delete(x.ctx, ue.Existing); err != nil {
			return nil, err
		}
		affected++
	}
	info := x.ctx.GetLastQueryInfo()
	info.RowCount.Store(int64(affected))
	return &sqltypes.Result{RowsAffected: uint64(affected), InsertID: uint64(info.LastInsertId.Load())}, nil
}

// asInt64 reads a GMS integer value that fits in an int64.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n <= 1<<63-1 {
			return int64(n), true
		}
	}
	return 0, false
}

// runeWeights is a collation's rune weights (its sql.CollationSorter),
// with those of ASCII in a table: GMS looks most of them up in a map,
// which made weight lookups a visible share of sorting text.
type runeWeights struct {
	ascii [utf8.RuneSelf]int32
	fn    sql.CollationSorter
}

var weightTables sync.Map // sql.CollationID -> *runeWeights

func weightsFor(c sql.CollationID) *runeWeights {
	if w, ok := weightTables.Load(c); ok {
		return w.(*runeWeights)
	}
	w := &runeWeights{fn: c.Sorter()}
	for r := range w.ascii {
		w.ascii[r] = w.fn(rune(r))
	}
	v, _ := weightTables.LoadOrStore(c, w)
	return v.(*runeWeights)
}

func (w *runeWeights) weight(r rune) int32 {
	if r < utf8.RuneSelf {
		return w.ascii[r]
	}
	return w.fn(r)
}

// compareText is GMS's StringType.Compare for UTF-8 text: rune by rune
// by collation weight, then the one with bytes left is greater. ok is false
// for malformed UTF-8.
func compareText(w *runeWeights, a, b string) (int, bool) {
	for len(a) > 0 && len(b) > 0 {
		if a[0] == b[0] && a[0] < utf8.RuneSelf {
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra == utf8.RuneError && na <= 1 || rb == utf8.RuneError && nb <= 1 {
			return 0, false
		}
		if ra != rb {
			if wa, wb := w.weight(ra), w.weight(rb); wa < wb {
				return -1, true
			} else if wa > wb {
				return 1, true
			}
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) < len(b):
		return -1, true
	case len(a) > len(b):
		return 1, true
	}
	return 0, true
}
