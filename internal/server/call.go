package server

import (
	"context"
	"errors"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/routine"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// A client's CALL of a stored procedure is run here, not by
// go-mysql-server: the procedure's body is interpreted (package
// routine) and each of its statements runs through the path a client's
// statement takes (the interceptors, the fast path, go-mysql-server),
// in the caller's session and transaction, with the procedure's
// database as the current one, its sql_mode, and, for SQL SECURITY
// DEFINER (the default), its definer's privileges.
//
// The answer to a CALL is the result sets its body produced, then an
// OK packet with the rows changed by its last statement, each with
// SERVER_MORE_RESULTS_EXISTS but the last. The protocol library (vitess)
// sends one result per call of the handler, and several only for a
// query it hands over as possibly several statements (ComMultiQuery,
// whose remainder it hands back for the next result). So the server has
// it do that for every client (ConnectionAuthenticated sets the
// capability on the library's side), refuses a second statement from a
// client that did not ask for CLIENT_MULTI_STATEMENTS (multiStatements),
// and answers a CALL with several results by returning callMarker as
// the remainder: the next call of ComMultiQuery sends the next result.
// A prepared CALL's execution is answered the same way with executions
// the wire layer injects (callPrepared).
//
// Invariants:
//
//   - The body runs whole before the first result is sent: its result
//     sets are held (at most maxCallResultBytes) in the connection's
//     pendingCall until sent. An error in the body comes after the
//     result sets before it, and ends the answer.
//   - A client without CLIENT_MULTI_RESULTS gets 1312 when the body
//     produces a result set, as from MySQL.
//   - Whatever the body does, the session's current database, sql_mode
//     and account are the caller's again when the CALL ends.

// callMarker is the remainder that stands for a CALL's next result. A
// client cannot send it: vitess hands it back only from the handler.
const callMarker = "\x00lockstep: the CALL's next result"

// maxCallResultBytes bounds the result sets a CALL holds until sent.
const maxCallResultBytes = 256 << 20

// maxCallDepth bounds CALLs nested in procedure bodies (MySQL's limit
// is the thread stack's).
const maxCallDepth = 256

// pendingCall is a CALL's answer still to send, and the rest of the
// client's query after it.
type pendingCall struct {
	results []*sqltypes.Result // the last one is the OK, unless err
	rest    string
	err     error // the body's error, sent after its result sets
}

// isCall reports whether query (bare of comments) is a CALL statement.
func isCall(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) > 5 && strings.EqualFold(q[:4], "call") && strings.ContainsRune(" \t\r\n`", rune(q[4]))
}

// nextCallResult sends the next result of the CALL being answered on c.
func (h *handler) nextCallResult(c *mysql.Conn, cb mysql.ResultSpoolFn) (string, error) {
	v, ok := h.calls.Load(c.ConnectionID)
	if !ok {
		return "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax")
	}
	p := v.(*pendingCall)
	if len(p.results) == 0 {
		h.calls.Delete(c.ConnectionID)
		return "", p.err
	}
	r := p.results[0]
	p.results = p.results[1:]
	if len(p.results) > 0 || p.err != nil {
		return callMarker, cb(r, true)
	}
	h.calls.Delete(c.ConnectionID)
	return p.rest, cb(r, p.rest != "")
}

// call answers query, a CALL statement (and, with multi, possibly more
// statements after it): the first result is sent through cb, and the
// remainder returned is callMarker while more are to come, else the
// rest of the query. Without multi (vitess's single-statement path,
// after a client turned its multiple statements off) the answer is one
// result (oneResult).
func (h *handler) call(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn, multi bool) (string, error) {
	st, end, err := ast.ParseOneWithOptions(ctx, query, h.s.sql.ParserOptionsFor(c.ConnectionID))
	if err != nil {
		return "", statementError(query, err)
	}
	stmt, ok := st.(*ast.Call)
	if !ok {
		return "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax")
	}
	rest := ""
	if end > 0 && end < len(query) {
		rest = strings.TrimSpace(query[end:])
	}
	if rest != "" && (!multi || !h.multiStatements(c)) {
		return "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", rest)
	}
	defer h.s.sql.RunningCall(c.ConnectionID, ctx, strings.TrimSpace(query[:end]))()
	env := &callEnv{h: h, c: c, multi: h.multiResults(c)}
	if !multi {
		return "", env.oneResult(env.run(ctx, stmt, nil), func(r *sqltypes.Result) error { return cb(r, false) })
	}
	err = statementError(query, env.run(ctx, stmt, nil))
	if len(env.results) == 0 {
		if err != nil {
			return "", err
		}
		return rest, cb(&sqltypes.Result{RowsAffected: env.affected}, rest != "")
	}
	h.calls.Store(c.ConnectionID, env.pending(err, rest))
	return callMarker, cb(env.results[0], true)
}

// pending is what follows the first of e's result sets: the others,
// then the OK and rest (the query after the CALL), or, if the body ended
// with err, err (and nothing of rest), as MySQL sends them.
func (e *callEnv) pending(err error, rest string) *pendingCall {
	p := &pendingCall{results: e.results[1:], err: err}
	if err == nil {
		p.results = append(p.results, &sqltypes.Result{RowsAffected: e.affected})
		p.rest = rest
	}
	return p
}

// callPrepared answers the execution of a prepared CALL. The protocol
// library answers an execution with one result; the rest of a CALL's
// answer (its other result sets and the OK, or the error after them) is
// sent as parts of the same reply (protocol.Conn.ContinueExecute): the
// library reads a COM_STMT_EXECUTE of callPartStmt next, answered by
// nextCallPart. Where that cannot be done (a cursor asked for, a
// connection the server did not wrap), the answer is one result
// (oneResult).
func (h *handler) callPrepared(ctx context.Context, c *mysql.Conn, p *mysql.PrepareData, cb func(*sqltypes.Result) error) error {
	st, _, err := ast.ParseOneWithOptions(ctx, p.PrepareStmt, h.s.sql.ParserOptionsFor(c.ConnectionID))
	if err != nil {
		return statementError(p.PrepareStmt, err)
	}
	stmt, ok := st.(*ast.Call)
	if !ok {
		return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax")
	}
	binds := make(map[string]sqltypes.Value, len(p.BindVars))
	for name, bv := range p.BindVars {
		v, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return err
		}
		binds[name] = v
	}
	defer h.s.sql.RunningCall(c.ConnectionID, ctx, p.PrepareStmt)()
	env := &callEnv{h: h, c: c, multi: h.multiResults(c)}
	err = statementError(p.PrepareStmt, env.run(ctx, stmt, binds))
	w, wrapped := c.Conn.(*protocol.Conn)
	if !wrapped || w.CursorRequested() {
		return env.oneResult(err, cb)
	}
	if len(env.results) == 0 {
		if err != nil {
			return err
		}
		return cb(&sqltypes.Result{RowsAffected: env.affected})
	}
	h.calls.Store(c.ConnectionID, env.pending(err, ""))
	if _, ok := c.PrepareData[callPartStmt]; !ok {
		c.PrepareData[callPartStmt] = &mysql.PrepareData{StatementID: callPartStmt, PrepareStmt: "CALL"}
	}
	w.ContinueExecute(callPartStmt)
	c.StatusFlags |= mysql.ServerMoreResultsExists
	return cb(env.results[0])
}

// callPartStmt is the statement id of the executions that send a
// prepared CALL's further results (the library numbers the client's
// statements from 1 up).
const callPartStmt = 1<<32 - 1

// nextCallPart sends the next part of the prepared CALL being answered
// on c: a result set or the OK, with SERVER_MORE_RESULTS_EXISTS and
// another part to follow unless it is the last, or the error that ended
// the CALL.
func (h *handler) nextCallPart(c *mysql.Conn, cb func(*sqltypes.Result) error) error {
	v, ok := h.calls.Load(c.ConnectionID)
	w, wrapped := c.Conn.(*protocol.Conn)
	if !ok || !wrapped {
		return mysql.NewSQLError(mysqlerr.UnknownStmtHandler, "HY000", "Unknown prepared statement handler (%d) given to mysqld_stmt_execute", uint32(callPartStmt))
	}
	p := v.(*pendingCall)
	if len(p.results) == 0 {
		h.calls.Delete(c.ConnectionID)
		c.StatusFlags &^= mysql.ServerMoreResultsExists
		return p.err
	}
	r := p.results[0]
	p.results = p.results[1:]
	if len(p.results) > 0 || p.err != nil {
		w.ContinueExecute(callPartStmt)
	} else {
		h.calls.Delete(c.ConnectionID)
		c.StatusFlags &^= mysql.ServerMoreResultsExists
	}
	return cb(r)
}

// oneResult answers a CALL that ran with err with one result: its error,
// else its one result set (without the OK that would follow it), else
// its OK; a CALL that produced several result sets is refused (1235)
// before any is sent.
func (e *callEnv) oneResult(err error, cb func(*sqltypes.Result) error) error {
	if err != nil {
		return err
	}
	switch len(e.results) {
	case 0:
		return cb(&sqltypes.Result{RowsAffected: e.affected})
	case 1:
		return cb(e.results[0])
	}
	return mysqlerr.NotSupported("more than one result set from a CALL answered with one result (a client that turned multiple statements off, or a prepared CALL with a cursor)")
}

// run runs a client's CALL stmt, its placeholders' values in binds.
func (e *callEnv) run(ctx context.Context, stmt *ast.Call, binds map[string]sqltypes.Value) error {
	if stmt.AsOf != nil {
		return mysqlerr.NotSupported("CALL ... AS OF")
	}
	args, err := routine.Args(ctx, e, stmt.Params, binds)
	if err != nil {
		return err
	}
	return e.Call(ctx, stmt.ProcName.Qualifier.String(), stmt.ProcName.Name.String(), args)
}

// multiStatements and multiResults are the client's flags (all on for a
// connection the server did not wrap).
func (h *handler) multiStatements(c *mysql.Conn) bool {
	if w, ok := c.Conn.(*protocol.Conn); ok {
		return w.MultiStatements()
	}
	return c.Capabilities&mysql.CapabilityClientMultiStatements != 0
}

func (h *handler) multiResults(c *mysql.Conn) bool {
	if w, ok := c.Conn.(*protocol.Conn); ok {
		return w.MultiResults()
	}
	return true
}

// callEnv is the session a CALL's procedures run in (routine.Env).
type callEnv struct {
	h     *handler
	c     *mysql.Conn
	multi bool // the client takes result sets
	// results are the result sets produced, held until sent; size their
	// rows' bytes.
	results []*sqltypes.Result
	size    int
	// affected is the rows changed by the last statement run.
	affected uint64
	// stack are the procedures running, outermost first (db.name).
	stack []string
}

var _ routine.Env = (*callEnv)(nil)

// Exec runs a statement of a body as a client's statement runs.
func (e *callEnv) Exec(ctx context.Context, query string) (*sqltypes.Result, error) {
	var out *sqltypes.Result
	collect := func(r *sqltypes.Result, _ bool) error {
		if out == nil {
			cp := *r
			cp.Rows = nil
			out = &cp
		}
		// The engine may reuse the rows' buffers once this returns.
		for _, row := range r.Rows {
			own := make([]sqltypes.Value, len(row))
			for i, v := range row {
				own[i] = sqltypes.MakeTrusted(v.Type(), append([]byte(nil), v.Raw()...))
				if v.IsNull() {
					own[i] = sqltypes.NULL
				}
			}
			out.Rows = append(out.Rows, own)
		}
		return nil
	}
	if err := e.h.inner(ctx, e.c, query, collect); err != nil {
		return nil, err
	}
	if out == nil {
		out = &sqltypes.Result{}
	}
	if len(out.Fields) == 0 {
		e.affected = out.RowsAffected
	} else {
		e.affected = 0
	}
	return out, nil
}

// inner runs one statement of a procedure's body: the interceptors, then
// the fast path or go-mysql-server.
func (h *handler) inner(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) error {
	if res, ok, err := h.s.intercept(c, query); ok {
		if err != nil {
			return err
		}
		return cb(res, false)
	}
	query, err := rewriteSetNames(query)
	if err != nil {
		return err
	}
	return h.query(ctx, c, query, cb)
}

// Send holds a result set of the body for the client.
func (e *callEnv) Send(r *sqltypes.Result) error {
	if !e.multi {
		name := ""
		if len(e.stack) > 0 {
			name = e.stack[len(e.stack)-1]
		}
		return mysql.NewSQLError(1312, "0A000", "PROCEDURE %s can't return a result set in the given context", name) // ER_SP_BADSELECT
	}
	for _, row := range r.Rows {
		for _, v := range row {
			e.size += len(v.Raw()) + 8
		}
	}
	if e.size > maxCallResultBytes {
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "The result sets of a CALL are held in memory until sent, at most %d MiB: this one has more", maxCallResultBytes>>20)
	}
	e.results = append(e.results, r)
	return nil
}

func (e *callEnv) Assign(name string, t *ast.ColumnType, v sqltypes.Value) (sqltypes.Value, error) {
	return e.h.s.sql.Assign(e.c.ConnectionID, name, t, v)
}

func (e *callEnv) Warn(code int, msg string) { e.h.s.sql.Warn(e.c.ConnectionID, code, msg) }

// Call runs procedure db.name (db empty: the current database's) with
// args: the caller's EXECUTE privilege checked, then the body run in
// the procedure's database, under its sql_mode, as its definer unless
// it is SQL SECURITY INVOKER.
func (e *callEnv) Call(ctx context.Context, db, name string, args []routine.Arg) (err error) {
	id := e.c.ConnectionID
	eng := e.h.s.sql
	if db == "" {
		db = eng.CurrentDatabase(id)
		if db == "" {
			return mysql.NewSQLError(mysql.ERNoDb, "3D000", "No database selected")
		}
	}
	sp, ok, err := eng.StoredProcedure(db, name)
	if err != nil {
		return err
	}
	if !ok {
		return mysql.NewSQLError(mysql.ERSPDoesNotExist, "42000", "PROCEDURE %s.%s does not exist", db, name)
	}
	if err := eng.CheckProcedureExecute(id, sp.DB, sp.Name); err != nil {
		return err
	}
	full := strings.ToLower(sp.DB + "." + sp.Name)
	running := 0
	for _, r := range e.stack {
		if r == full {
			running++
		}
	}
	if running > 0 {
		// Recursion: as deep as max_sp_recursion_depth allows.
		v, _ := eng.SessionVariable(id, "max_sp_recursion_depth")
		if depth := sqlengine.IntValue(v); int64(running) > depth {
			return mysql.NewSQLError(1456, "HY000", "Recursive limit %d (as set by the max_sp_recursion_depth variable) was exceeded for routine %s", depth, sp.Name) // ER_SP_RECURSION_LIMIT
		}
	}
	if len(e.stack) >= maxCallDepth {
		return mysql.NewSQLError(1436, "HY000", "Thread stack overrun: CALLs nested more than %d deep", maxCallDepth) // ER_STACK_OVERRUN_NEED_MORE
	}
	p, err := routine.Parse(ctx, sp.DB, sp.Statement, strings.Contains(strings.ToUpper(sp.SQLMode), "ANSI_QUOTES"))
	if err != nil {
		return err
	}
	if err := routine.CheckArgs(p, args); err != nil {
		return err
	}
	if !p.Invoker {
		restore, err := eng.RunAs(id, sp.Definer)
		if err != nil {
			return err
		}
		defer restore()
	}
	defer eng.UseDatabase(id, sp.DB)()
	v, _ := eng.SessionVariable(id, "sql_mode")
	if mode, _ := v.(string); !sameMode(mode, sp.SQLMode) {
		if _, err := e.Exec(ctx, "SET SESSION sql_mode = "+ast.String(ast.NewStrVal([]byte(sp.SQLMode)))); err != nil {
			return err
		}
		defer func() {
			// Not a statement of the body: the CALL's OK keeps the rows
			// its last statement changed.
			affected := e.affected
			_, rerr := e.Exec(context.WithoutCancel(ctx), "SET SESSION sql_mode = "+ast.String(ast.NewStrVal([]byte(mode))))
			e.affected = affected
			if rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	e.stack = append(e.stack, full)
	defer func() { e.stack = e.stack[:len(e.stack)-1] }()
	err = routine.Run(ctx, e, p, args)
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) {
		err = mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%s", err.Error())
	}
	return err
}

// sameMode reports whether sql_mode values a and b set the same flags.
func sameMode(a, b string) bool {
	return sql.NewSqlModeFromString(a).String() == sql.NewSqlModeFromString(b).String()
}
