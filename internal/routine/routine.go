// Package routine runs stored procedures: MySQL's compound statements
// (BEGIN ... END blocks, local variables, IF, CASE, loops and labels,
// cursors, condition handlers, SIGNAL and RESIGNAL) interpreted over
// the procedure's parsed body, with every SQL statement of the body run
// by the session that called it, as a client's statement would be.
//
// The interpreter knows no engine. What it needs from the session comes
// through Env: running a statement, sending a result set to the client,
// storing a value in a typed variable, calling another procedure. A
// statement of the body is run as text: the body's parsed form is
// printed again with every reference to a local variable or parameter
// replaced by its value as a literal (render), so the engine sees the
// statement MySQL would run with those values bound. Expressions the
// interpreter itself needs (a condition, a variable's new value, a
// CALL's arguments) are evaluated by the engine as a SELECT of them.
//
// Invariants:
//
//   - A name resolves to the innermost declaration in scope: the
//     block's own variables, then its enclosing blocks', then the
//     parameters. As in MySQL, a local variable hides a column of the
//     same name in the body's statements, except as the target of an
//     assignment in UPDATE ... SET.
//   - A condition raised by a statement goes to the innermost block in
//     scope with a handler for it, and there to the most specific one
//     (an error number, then a SQLSTATE, then a class), as in MySQL
//     (handle). A CONTINUE handler resumes after the statement that
//     raised it, wherever the handler was declared; an EXIT handler ends
//     its own block. A block running one of its handlers does not handle
//     that handler's conditions (its enclosing blocks may). A condition
//     no block handles ends the procedure (unhandled, which the blocks
//     it passes through do not look at again). An interrupted statement
//     (KILL QUERY) is never handled.
//   - Control flow (LEAVE, ITERATE, an EXIT handler) is Go control flow:
//     errors of the types leave, iterate and exitBlock travel up to the
//     labelled statement or the handler's block, never to the client
//     (Check refuses unknown labels when the procedure is made).
//   - Cursors are materialized when opened, as MySQL's are: FETCH reads
//     the rows the SELECT gave at OPEN.
package routine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Env is the session a procedure runs in.
type Env interface {
	// Exec runs one statement (its variables replaced by their values)
	// and returns its result, a result set's rows whole.
	Exec(ctx context.Context, query string) (*sqltypes.Result, error)
	// Send passes a result set of the body to the client.
	Send(r *sqltypes.Result) error
	// Assign converts v as it is stored in a variable (name) of type t.
	Assign(name string, t *ast.ColumnType, v sqltypes.Value) (sqltypes.Value, error)
	// Call runs CALL db.name with args (db empty: the current database).
	Call(ctx context.Context, db, name string, args []Arg) error
	// Warn adds a warning to the session.
	Warn(code int, msg string)
}

// Arg is an argument of a CALL: its value, and for an argument that is a
// variable, where an OUT or INOUT parameter's value goes back.
type Arg struct {
	Value sqltypes.Value
	Out   func(v sqltypes.Value) error // nil: not a variable
}

// Procedure is a stored procedure, parsed.
type Procedure struct {
	DB, Name string
	Params   []ast.ProcedureParam
	Body     ast.Statement
	// Invoker is SQL SECURITY INVOKER: the procedure runs with its
	// caller's privileges, not its definer's.
	Invoker bool
}

// Parse reads a CREATE PROCEDURE statement of database db.
func Parse(ctx context.Context, db, stmt string, ansiQuotes bool) (*Procedure, error) {
	stmt, _ = RewriteDo(stmt)
	st, err := ast.ParseWithOptions(ctx, stmt, ast.ParserOptions{AnsiQuotes: ansiQuotes})
	if err != nil {
		return nil, err
	}
	ddl, ok := st.(*ast.DDL)
	if !ok || ddl.ProcedureSpec == nil {
		return nil, fmt.Errorf("not a CREATE PROCEDURE statement")
	}
	spec := ddl.ProcedureSpec
	p := &Procedure{DB: db, Name: spec.ProcName.Name.String(), Params: spec.Params, Body: spec.Body}
	for _, c := range spec.Characteristics {
		if c.Type == ast.CharacteristicValue_SqlSecurityInvoker {
			p.Invoker = true
		}
	}
	return p, nil
}

// MySQL's errors of stored programs.
const (
	erSpBadSQLState     = 1407 // ER_SP_BAD_SQLSTATE
	erSpFetchNoData     = 1329 // ER_SP_FETCH_NO_DATA
	erSpCursorOpen      = 1325 // ER_SP_CURSOR_ALREADY_OPEN
	erSpCursorNotOpen   = 1326 // ER_SP_CURSOR_NOT_OPEN
	erSpWrongNoOfFetch  = 1328 // ER_SP_WRONG_NO_OF_FETCH_ARGS
	erSpCaseNotFound    = 1339 // ER_SP_CASE_NOT_FOUND
	erSpWrongNoOfArgs   = 1318 // ER_SP_WRONG_NO_OF_ARGS
	erSpNotVarArg       = 1414 // ER_SP_NOT_VAR_ARG
	erTooManyRows       = 1172 // ER_TOO_MANY_ROWS
	erSignalWarn        = 1642 // ER_SIGNAL_WARN
	erSignalNotFound    = 1643 // ER_SIGNAL_NOT_FOUND
	erSignalException   = 1644 // ER_SIGNAL_EXCEPTION
	erResignalNoHandler = 1645 // ER_RESIGNAL_WITHOUT_ACTIVE_HANDLER
	erQueryInterrupted  = 1317 // ER_QUERY_INTERRUPTED
)

var errNoData = mysql.NewSQLError(erSpFetchNoData, "02000", "No data - zero rows fetched, selected, or processed")

// Run runs procedure p with args, which Env.Call has checked against its
// parameters' number. OUT and INOUT parameters' values go back through
// their Arg.Out when the body ends without an error.
func Run(ctx context.Context, env Env, p *Procedure, args []Arg) error {
	r := &run{env: env}
	top := &frame{vars: map[string]*variable{}}
	for i, prm := range p.Params {
		v := &variable{name: prm.Name, typ: prm.Type}
		if prm.Direction != ast.ProcedureParamDirection_Out {
			val, err := env.Assign(prm.Name, &v.typ, args[i].Value)
			if err != nil {
				return err
			}
			v.val = val
		} else {
			v.val = sqltypes.NULL
		}
		top.vars[strings.ToLower(prm.Name)] = v
	}
	err := r.exec(ctx, top, p.Body)
	var l *leave
	if errors.As(err, &l) {
		err = nil // LEAVE of the body's own label
	}
	var u *unhandled
	if errors.As(err, &u) {
		err = u.err
	}
	if err != nil {
		return err
	}
	for i, prm := range p.Params {
		if prm.Direction == ast.ProcedureParamDirection_In || args[i].Out == nil {
			continue
		}
		if err := args[i].Out(top.vars[strings.ToLower(prm.Name)].val); err != nil {
			return err
		}
	}
	return nil
}

// CheckArgs refuses a CALL of p with n arguments, or with an argument
// that is not a variable where a parameter is OUT or INOUT.
func CheckArgs(p *Procedure, args []Arg) error {
	if len(args) != len(p.Params) {
		return mysql.NewSQLError(erSpWrongNoOfArgs, "42000", "Incorrect number of arguments for PROCEDURE %s.%s; expected %d, got %d", p.DB, p.Name, len(p.Params), len(args))
	}
	for i, prm := range p.Params {
		if prm.Direction != ast.ProcedureParamDirection_In && args[i].Out == nil {
			return mysql.NewSQLError(erSpNotVarArg, "42000", "OUT or INOUT argument %d for routine %s.%s is not a variable or NEW pseudo-variable in BEFORE trigger", i+1, p.DB, p.Name)
		}
	}
	return nil
}

// run is one procedure's execution.
type run struct {
	env Env
}

// variable is a local variable or parameter.
type variable struct {
	name string
	typ  ast.ColumnType
	val  sqltypes.Value
}

// frame is a block's scope.
type frame struct {
	parent   *frame
	vars     map[string]*variable // lower-case name
	conds    map[string]*ast.DeclareCondition
	cursors  map[string]*cursor
	handlers []*ast.DeclareHandler
	// active is the condition the handler running in this frame
	// handles (RESIGNAL re-raises it).
	active *mysql.SQLError
}

type cursor struct {
	stmt ast.SelectStatement
	open bool
	rows [][]sqltypes.Value
}

// inScope is what name (any case) stands for in f or its enclosing
// scopes, the innermost first, in the table of each that in picks.
func inScope[T any](f *frame, name string, in func(*frame) map[string]T) (T, bool) {
	name = strings.ToLower(name)
	for ; f != nil; f = f.parent {
		if v, ok := in(f)[name]; ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}

func (f *frame) lookup(name string) *variable {
	v, _ := inScope(f, name, func(g *frame) map[string]*variable { return g.vars })
	return v
}

func (f *frame) cursor(name string) *cursor {
	c, _ := inScope(f, name, func(g *frame) map[string]*cursor { return g.cursors })
	return c
}

func (f *frame) condition(name string) *ast.DeclareCondition {
	c, _ := inScope(f, name, func(g *frame) map[string]*ast.DeclareCondition { return g.conds })
	return c
}

func (f *frame) activeCondition() *mysql.SQLError {
	for ; f != nil; f = f.parent {
		if f.active != nil {
			return f.active
		}
	}
	return nil
}

// leave and iterate carry LEAVE and ITERATE to their labelled statement.
type leave struct{ label string }
type iterate struct{ label string }

func (l *leave) Error() string   { return "LEAVE " + l.label }
func (i *iterate) Error() string { return "ITERATE " + i.label }

// exec runs one statement of the body in scope f.
func (r *run) exec(ctx context.Context, f *frame, st ast.Statement) error {
	if err := ctx.Err(); err != nil {
		return mysql.NewSQLError(erQueryInterrupted, "70100", "Query execution was interrupted")
	}
	switch s := st.(type) {
	case *ast.BeginEndBlock:
		err := r.block(ctx, f, s.Statements)
		return endOf(s.Label, err)
	case *ast.Declare:
		return r.declare(ctx, f, s)
	case *ast.Set:
		return r.set(ctx, f, s)
	case *ast.IfStatement:
		for _, c := range s.Conditions {
			ok, err := r.truth(ctx, f, c.Expr)
			if err != nil {
				return err
			}
			if ok {
				return r.list(ctx, f, c.Statements)
			}
		}
		return r.list(ctx, f, s.Else)
	case *ast.CaseStatement:
		for _, c := range s.Cases {
			cond := c.Case
			if s.Expr != nil {
				cond = &ast.ComparisonExpr{Operator: ast.EqualStr, Left: s.Expr, Right: c.Case}
			}
			ok, err := r.truth(ctx, f, cond)
			if err != nil {
				return err
			}
			if ok {
				return r.list(ctx, f, c.Statements)
			}
		}
		if s.Else == nil {
			return mysql.NewSQLError(erSpCaseNotFound, "20000", "Case not found for CASE statement")
		}
		return r.list(ctx, f, s.Else)
	case *ast.While:
		return r.loop(ctx, f, s.Label, s.Statements, s.Condition, nil)
	case *ast.Repeat:
		return r.loop(ctx, f, s.Label, s.Statements, nil, s.Condition)
	case *ast.Loop:
		return r.loop(ctx, f, s.Label, s.Statements, nil, nil)
	case *ast.Leave:
		return &leave{strings.ToLower(s.Label)}
	case *ast.Iterate:
		return &iterate{strings.ToLower(s.Label)}
	case *ast.OpenCursor:
		c := f.cursor(s.Name)
		if c == nil {
			return undeclaredCursor(s.Name)
		}
		if c.open {
			return mysql.NewSQLError(erSpCursorOpen, "24000", "Cursor is already open")
		}
		res, err := r.env.Exec(ctx, render(f, c.stmt))
		if err != nil {
			return err
		}
		c.rows, c.open = res.Rows, true
		return nil
	case *ast.FetchCursor:
		c := f.cursor(s.Name)
		if c == nil {
			return undeclaredCursor(s.Name)
		}
		if !c.open {
			return mysql.NewSQLError(erSpCursorNotOpen, "24000", "Cursor is not open")
		}
		if len(c.rows) == 0 {
			return errNoData
		}
		row := c.rows[0]
		if len(row) != len(s.Variables) {
			return mysql.NewSQLError(erSpWrongNoOfFetch, "HY000", "Incorrect number of FETCH variables")
		}
		c.rows = c.rows[1:]
		for i, name := range s.Variables {
			if err := r.assign(f, name, row[i]); err != nil {
				return err
			}
		}
		return nil
	case *ast.CloseCursor:
		c := f.cursor(s.Name)
		if c == nil {
			return undeclaredCursor(s.Name)
		}
		if !c.open {
			return mysql.NewSQLError(erSpCursorNotOpen, "24000", "Cursor is not open")
		}
		c.open, c.rows = false, nil
		return nil
	case *ast.Signal:
		return r.signal(ctx, f, s, nil)
	case *ast.Resignal:
		active := f.activeCondition()
		if active == nil {
			return mysql.NewSQLError(erResignalNoHandler, "0K000", "RESIGNAL when handler not active")
		}
		return r.signal(ctx, f, &s.Signal, active)
	case *ast.Call:
		return r.call(ctx, f, s)
	case *ast.Select:
		if s.Into != nil && len(s.Into.Variables) > 0 {
			return r.selectInto(ctx, f, s)
		}
		if isDo(s) {
			_, err := r.env.Exec(ctx, render(f, st)) // DO: its rows dropped
			return err
		}
	}
	res, err := r.env.Exec(ctx, render(f, st))
	if err != nil {
		return err
	}
	if len(res.Fields) > 0 {
		return r.env.Send(res)
	}
	return nil
}

// endOf ends a labelled block or loop: a LEAVE of its label is done.
func endOf(label string, err error) error {
	var l *leave
	if label != "" && errors.As(err, &l) && l.label == strings.ToLower(label) {
		return nil
	}
	return err
}

func undeclaredCursor(name string) error {
	return mysql.NewSQLError(1324, "42000", "Undefined CURSOR: %s", name) // ER_SP_CURSOR_MISMATCH
}

// list runs statements in scope f (an IF's or a loop's: no scope of
// their own), handling their conditions.
func (r *run) list(ctx context.Context, f *frame, sts ast.Statements) error {
	for _, st := range sts {
		if err := r.handle(ctx, f, r.exec(ctx, f, st)); err != nil {
			return err
		}
	}
	return nil
}

// block runs a BEGIN ... END block's statements in a scope of their
// own.
func (r *run) block(ctx context.Context, parent *frame, sts ast.Statements) error {
	f := &frame{parent: parent, vars: map[string]*variable{}}
	err := r.list(ctx, f, sts)
	var x *exitBlock
	if errors.As(err, &x) && x.frame == f {
		return nil // an EXIT handler declared here ran
	}
	return err
}

// unhandled is a condition no handler in scope took: the blocks it
// passes through on its way out do not look again.
type unhandled struct{ err error }

func (u *unhandled) Error() string { return u.err.Error() }
func (u *unhandled) Unwrap() error { return u.err }

// exitBlock ends the block of frame, whose EXIT handler ran.
type exitBlock struct{ frame *frame }

func (x *exitBlock) Error() string { return "EXIT handler" }

// handle runs the handler in scope f for the condition err raised by a
// statement run in f, the innermost block's first: a CONTINUE handler
// lets the statements after it run (nil), an EXIT handler ends its
// block (exitBlock). A block running one of its handlers does not
// handle that handler's conditions (its enclosing blocks may). A
// condition with no handler goes out unhandled.
func (r *run) handle(ctx context.Context, f *frame, err error) error {
	if err == nil {
		return nil
	}
	var u *unhandled
	var l *leave
	var it *iterate
	var x *exitBlock
	if errors.As(err, &u) || errors.As(err, &l) || errors.As(err, &it) || errors.As(err, &x) {
		return err
	}
	for g := f; g != nil; g = g.parent {
		if g.active != nil {
			continue // running one of its handlers: not for its conditions
		}
		h, cond := g.handlerFor(ctx, err)
		if h == nil {
			continue
		}
		g.active = cond
		herr := r.handle(ctx, g, r.exec(ctx, g, h.Statement))
		g.active = nil
		if herr != nil {
			return herr
		}
		if h.Action == ast.DeclareHandlerAction_Exit {
			return &exitBlock{g}
		}
		return nil
	}
	return &unhandled{err}
}

// handlerFor is f's handler for err, and err as a condition; nil if
// none handles it.
func (f *frame) handlerFor(ctx context.Context, err error) (*ast.DeclareHandler, *mysql.SQLError) {
	if len(f.handlers) == 0 || ctx.Err() != nil {
		return nil, nil
	}
	var l *leave
	var it *iterate
	if errors.As(err, &l) || errors.As(err, &it) {
		return nil, nil
	}
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%s", err.Error())
	}
	if se.Num == erQueryInterrupted {
		return nil, nil
	}
	// MySQL prefers the most specific handler: an error number, then a
	// SQLSTATE, then a class.
	best, rank := (*ast.DeclareHandler)(nil), 0
	for _, h := range f.handlers {
		for _, c := range h.ConditionValues {
			if n := f.matches(c, se); n > rank {
				best, rank = h, n
			}
		}
	}
	return best, se
}

// matches ranks how specifically handler condition c matches se: 3 an
// error number, 2 a SQLSTATE, 1 a class, 0 not at all.
func (f *frame) matches(c ast.DeclareHandlerCondition, se *mysql.SQLError) int {
	class := ""
	if len(se.State) >= 2 {
		class = se.State[:2]
	}
	switch c.ValueType {
	case ast.DeclareHandlerCondition_MysqlErrorCode:
		if c.MysqlErrorCode != nil && string(c.MysqlErrorCode.Val) == fmt.Sprint(se.Num) {
			return 3
		}
	case ast.DeclareHandlerCondition_SqlState:
		if c.String == se.State {
			return 2
		}
	case ast.DeclareHandlerCondition_ConditionName:
		d := f.condition(c.String)
		if d == nil {
			return 0
		}
		if d.SqlStateValue != "" && d.SqlStateValue == se.State {
			return 2
		}
		if d.MysqlErrorCode != nil && string(d.MysqlErrorCode.Val) == fmt.Sprint(se.Num) {
			return 3
		}
	case ast.DeclareHandlerCondition_NotFound:
		if class == "02" {
			return 1
		}
	case ast.DeclareHandlerCondition_SqlException:
		if class != "00" && class != "01" && class != "02" {
			return 1
		}
	}
	return 0
}

// loop runs a WHILE (pre set), REPEAT (post set) or LOOP (neither).
func (r *run) loop(ctx context.Context, f *frame, label string, body ast.Statements, pre, post ast.Expr) error {
	label = strings.ToLower(label)
	for {
		if ctx.Err() != nil {
			return mysql.NewSQLError(erQueryInterrupted, "70100", "Query execution was interrupted")
		}
		if pre != nil {
			ok, err := r.truth(ctx, f, pre)
			if err != nil || !ok {
				return err
			}
		}
		err := r.list(ctx, f, body)
		var it *iterate
		if errors.As(err, &it) && it.label == label {
			// ITERATE starts the body again: a WHILE's condition is
			// checked first, a REPEAT's UNTIL is not (MySQL jumps to the
			// start of the body).
			continue
		} else if err != nil {
			return endOf(label, err)
		}
		if post != nil {
			ok, err := r.truth(ctx, f, post)
			if err != nil || ok {
				return err
			}
		}
	}
}

func (r *run) declare(ctx context.Context, f *frame, d *ast.Declare) error {
	switch {
	case d.Variables != nil:
		val := sqltypes.NULL
		if def := d.Variables.VarType.Default; def != nil {
			v, err := r.eval(ctx, f, def)
			if err != nil {
				return err
			}
			val = v
		}
		for _, n := range d.Variables.Names {
			v := &variable{name: n.String(), typ: d.Variables.VarType}
			v.typ.Default = nil
			conv, err := r.env.Assign(v.name, &v.typ, val)
			if err != nil {
				return err
			}
			v.val = conv
			f.vars[n.Lowered()] = v
		}
	case d.Condition != nil:
		if f.conds == nil {
			f.conds = map[string]*ast.DeclareCondition{}
		}
		f.conds[strings.ToLower(d.Condition.Name)] = d.Condition
	case d.Cursor != nil:
		if f.cursors == nil {
			f.cursors = map[string]*cursor{}
		}
		f.cursors[strings.ToLower(d.Cursor.Name)] = &cursor{stmt: d.Cursor.SelectStmt}
	case d.Handler != nil:
		f.handlers = append(f.handlers, d.Handler)
	}
	return nil
}

// set runs SET: local variables are assigned here, the rest (user and
// system variables) by the engine, one at a time in their order.
func (r *run) set(ctx context.Context, f *frame, s *ast.Set) error {
	for _, e := range s.Exprs {
		if e.Scope == ast.SetScope_None && e.Name != nil && e.Name.Qualifier.IsEmpty() {
			if v := f.lookup(e.Name.Name.String()); v != nil {
				val, err := r.eval(ctx, f, e.Expr)
				if err != nil {
					return err
				}
				conv, err := r.env.Assign(v.name, &v.typ, val)
				if err != nil {
					return err
				}
				v.val = conv
				continue
			}
		}
		if _, err := r.env.Exec(ctx, render(f, &ast.Set{Exprs: ast.SetVarExprs{e}})); err != nil {
			return err
		}
	}
	return nil
}

// assign stores val in the local variable name.
func (r *run) assign(f *frame, name string, val sqltypes.Value) error {
	v := f.lookup(name)
	if v == nil {
		return mysql.NewSQLError(1327, "42000", "Undeclared variable: %s", name) // ER_SP_UNDECLARED_VAR
	}
	conv, err := r.env.Assign(v.name, &v.typ, val)
	if err != nil {
		return err
	}
	v.val = conv
	return nil
}

// selectInto runs SELECT ... INTO variables: one row is stored, none is
// the NOT FOUND condition (a warning unless handled), more is 1172.
func (r *run) selectInto(ctx context.Context, f *frame, s *ast.Select) error {
	into := s.Into
	q := *s
	q.Into = nil
	res, err := r.env.Exec(ctx, render(f, &q))
	if err != nil {
		return err
	}
	if len(res.Rows) > 1 {
		return mysql.NewSQLError(erTooManyRows, "42000", "Result consisted of more than one row")
	}
	if len(res.Fields) != len(into.Variables) {
		return mysql.NewSQLError(mysql.ERWrongNumberOfColumnsInSelect, "21000", "The used SELECT statements have a different number of columns")
	}
	if len(res.Rows) == 0 {
		if f.handles(ctx, errNoData) {
			return errNoData
		}
		r.env.Warn(erSpFetchNoData, errNoData.Message)
		return nil
	}
	for i, n := range into.Variables {
		name := n.String()
		if strings.HasPrefix(name, "@") {
			set := &ast.Set{Exprs: ast.SetVarExprs{{Scope: ast.SetScope_User, Name: &ast.ColName{Name: ast.NewColIdent(strings.TrimPrefix(name, "@"))}, Expr: literal(res.Rows[0][i])}}}
			if _, err := r.env.Exec(ctx, ast.String(set)); err != nil {
				return err
			}
			continue
		}
		if err := r.assign(f, name, res.Rows[0][i]); err != nil {
			return err
		}
	}
	return nil
}

// handles reports whether a block in scope f has a handler for err.
func (f *frame) handles(ctx context.Context, err error) bool {
	for ; f != nil; f = f.parent {
		if f.active != nil {
			continue
		}
		if h, _ := f.handlerFor(ctx, err); h != nil {
			return true
		}
	}
	return false
}

// signal raises the condition SIGNAL (or RESIGNAL of active) names.
func (r *run) signal(ctx context.Context, f *frame, s *ast.Signal, active *mysql.SQLError) error {
	state, num, msg := "", 0, ""
	if active != nil {
		state, num, msg = active.State, active.Num, active.Message
	}
	if s.ConditionName != "" {
		d := f.condition(s.ConditionName)
		if d == nil {
			return mysql.NewSQLError(1319, "42000", "Undefined CONDITION: %s", s.ConditionName) // ER_SP_COND_MISMATCH
		}
		if d.SqlStateValue == "" {
			return mysql.NewSQLError(1646, "HY000", "SIGNAL/RESIGNAL can only use a CONDITION defined with SQLSTATE") // ER_SIGNAL_BAD_CONDITION_TYPE
		}
		state, num, msg = d.SqlStateValue, 0, ""
	} else if s.SqlStateValue != "" {
		state, num, msg = s.SqlStateValue, 0, ""
	}
	if len(state) != 5 || strings.HasPrefix(state, "00") {
		return mysql.NewSQLError(erSpBadSQLState, "42000", "Bad SQLSTATE: '%s'", state)
	}
	class := state[:2]
	if num == 0 {
		switch class {
		case "01":
			num, msg = erSignalWarn, "Unhandled user-defined warning condition"
		case "02":
			num, msg = erSignalNotFound, "Unhandled user-defined not found condition"
		default:
			num, msg = erSignalException, "Unhandled user-defined exception condition"
		}
	}
	for _, info := range s.Info {
		v, err := r.eval(ctx, f, info.Value)
		if err != nil {
			return err
		}
		switch info.ConditionItemName {
		case ast.SignalConditionItemName_MessageText:
			msg = v.ToString()
		case ast.SignalConditionItemName_MysqlErrno:
			var n int
			if _, err := fmt.Sscan(v.ToString(), &n); err != nil || n <= 0 || n > 65535 {
				return mysql.NewSQLError(1231, "42000", "Variable 'MYSQL_ERRNO' can't be set to the value of '%s'", v.ToString()) // ER_WRONG_VALUE_FOR_VAR
			}
			num = n
		}
	}
	cond := mysql.NewSQLError(num, state, "%s", msg)
	if (class == "01" || class == "02") && !f.handles(ctx, cond) {
		r.env.Warn(num, msg) // unhandled, a warning or NOT FOUND is noted
		return nil
	}
	return cond
}

// call runs a CALL of the body: its arguments are evaluated here, a
// local variable given for an OUT or INOUT parameter gets its value
// back, and a user variable is set with SET.
func (r *run) call(ctx context.Context, f *frame, c *ast.Call) error {
	args, err := args(ctx, r.env, f, c.Params, nil)
	if err != nil {
		return err
	}
	return r.env.Call(ctx, c.ProcName.Qualifier.String(), c.ProcName.Name.String(), args)
}

// Args evaluates a client's CALL's arguments, its placeholders' values
// in binds (a prepared CALL's): their values, and for a user variable
// where an OUT or INOUT parameter's value goes back.
func Args(ctx context.Context, env Env, params []ast.Expr, binds map[string]sqltypes.Value) ([]Arg, error) {
	return args(ctx, env, nil, params, binds)
}

// args evaluates a CALL's arguments in scope (nil for a client's CALL).
func args(ctx context.Context, env Env, scope *frame, params []ast.Expr, binds map[string]sqltypes.Value) ([]Arg, error) {
	if len(params) == 0 {
		return nil, nil
	}
	exprs := make(ast.SelectExprs, len(params))
	for i, p := range params {
		exprs[i] = &ast.AliasedExpr{Expr: p}
	}
	res, err := env.Exec(ctx, renderBound(scope, binds, &ast.Select{SelectExprs: exprs}))
	if err != nil {
		return nil, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != len(params) {
		return nil, fmt.Errorf("CALL arguments: %d rows", len(res.Rows))
	}
	args := make([]Arg, len(params))
	for i, p := range params {
		args[i].Value = res.Rows[0][i]
		col, ok := p.(*ast.ColName)
		if !ok || !col.Qualifier.IsEmpty() {
			continue
		}
		name := col.Name.String()
		if v := scope.lookup(name); v != nil {
			args[i].Out = func(val sqltypes.Value) error {
				conv, err := env.Assign(v.name, &v.typ, val)
				if err == nil {
					v.val = conv
				}
				return err
			}
		} else if strings.HasPrefix(name, "@") && !strings.HasPrefix(name, "@@") {
			user := strings.TrimPrefix(name, "@")
			args[i].Out = func(val sqltypes.Value) error {
				set := &ast.Set{Exprs: ast.SetVarExprs{{Scope: ast.SetScope_User, Name: &ast.ColName{Name: ast.NewColIdent(user)}, Expr: literal(val)}}}
				_, err := env.Exec(ctx, ast.String(set))
				return err
			}
		}
	}
	return args, nil
}

// eval is the value of expression e in scope f.
func (r *run) eval(ctx context.Context, f *frame, e ast.Expr) (sqltypes.Value, error) {
	res, err := r.env.Exec(ctx, render(f, &ast.Select{SelectExprs: ast.SelectExprs{&ast.AliasedExpr{Expr: e}}}))
	if err != nil {
		return sqltypes.Value{}, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return sqltypes.Value{}, fmt.Errorf("an expression gave %d rows", len(res.Rows))
	}
	return res.Rows[0][0], nil
}

// truth is whether condition e holds in scope f: true, not false nor
// NULL, as MySQL's IF and WHILE take it.
func (r *run) truth(ctx context.Context, f *frame, e ast.Expr) (bool, error) {
	v, err := r.eval(ctx, f, &ast.IsExpr{Operator: ast.IsTrueStr, Expr: &ast.ParenExpr{Expr: e}})
	if err != nil {
		return false, err
	}
	return v.ToString() == "1" || strings.EqualFold(v.ToString(), "true"), nil
}
