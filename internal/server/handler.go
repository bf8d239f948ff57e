package server

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// handler wraps GMS's protocol handler to keep MySQL error numbers that GMS
// loses: some GMS code paths (the planner's parse step among them) turn an
// error into text inside a generic 1105 error. The text of a MySQL error
// ends with "(errno N) (sqlstate S)", so the original is rebuilt from it.
//
// It also answers the binlog administration statements GMS does not know
// (FLUSH BINARY LOGS, PURGE BINARY LOGS, SHOW REPLICAS) before GMS sees
// them, serves dump commands (replication.go), and makes long statements
// of departed clients cancellable (track).
type handler struct {
	mysql.Handler
	s    *Server
	fast *fastPath
	// idBase is added to the connection ids of its listener. Every
	// listener numbers its connections from 1, but they share one
	// process list (and KILL), so the --mariadb-port listener's ids start
	// at mariadbConnIDBase instead.
	idBase uint32
	// calls holds, by connection, a CALL's answer being sent (call.go).
	calls *sync.Map // uint32 -> *pendingCall
}

// mariadbConnIDBase is where the --mariadb-port listener's connection ids
// start (the main port would need two billion connections to reach it).
const mariadbConnIDBase = 1 << 31

// wrapHandler wraps a listener's GMS handler. The listener's session
// manager, which the fast path needs, exists only once the listener does:
// bind sets it.
func (s *Server) wrapHandler(h mysql.Handler) (mysql.Handler, error) {
	hd := &handler{Handler: h, s: s, fast: &fastPath{s: s}, calls: new(sync.Map)}
	s.unbound = hd
	return hd, nil
}

// tableStatement matches statements whose privileges are table privileges.
var tableStatement = regexp.MustCompile(`(?i)^\s*(\(\s*)*(select|insert|update|delete|replace|with|table|create\s+table|drop\s+table|alter\s+table|truncate|rename\s+table|create\s+index|drop\s+index|create\s+(?:or\s+replace\s+)?(?:algorithm\s*=\s*\S+\s+)?(?:definer\s*=\s*\S+\s+)?(?:sql\s+security\s+\S+\s+)?view|drop\s+view|create\s+(?:definer\s*=\s*\S+\s+)?trigger|drop\s+trigger)\b`)

// deniedFor turns a privilege denial of a statement on tables into
// MySQL's ER_TABLEACCESS_DENIED_ERROR (1142); mysqlerr.Restore has made every
// denial 1227, which is right for global privileges (CREATE USER, KILL).
//
// A GRANT or REVOKE denied for want of the privilege (or its GRANT
// OPTION) at a database's level is 1044, at a table's 1142, naming the
// database or table as MySQL does; at the global level it stays 1227.
func deniedFor(query string, err error) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		return err
	}
	if se.Num == mysqlerr.DBAccessDenied && tableStatement.MatchString(query) {
		return tableDenied(query, se, err)
	}
	if se.Num != mysqlerr.SpecificAccessDenied || !strings.HasPrefix(se.Message, "command denied to user ") {
		return err
	}
	if tableStatement.MatchString(query) {
		return tableCommandDenied(query, se)
	}
	if m := grantTarget.FindStringSubmatch(bareStatement(query)); m != nil {
		who := strings.TrimPrefix(se.Message, "command denied to user ")
		db, table, _ := strings.Cut(strings.ReplaceAll(m[2], "`", ""), ".")
		switch {
		case table == "*" && db != "*":
			return mysql.NewSQLError(mysqlerr.DBAccessDenied, "42000", "Access denied for user %s to database '%s'", who, db)
		case table != "" && table != "*":
			return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "GRANT command denied to user %s for table '%s'", who, table)
		case table == "" && db != "*":
			return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "GRANT command denied to user %s for table '%s'", who, db)
		}
	}
	return err
}

// dbDenied is go-mysql-server's denial for a database the account holds
// nothing on.
var dbDenied = regexp.MustCompile(`^Access denied for user (\S+) to database '([^']*)'$`)

// tableDeniedMsg is its denial for a table (or view) the account holds
// nothing on in a database it holds something on.
var tableDeniedMsg = regexp.MustCompile(`^Access denied for user (\S+) to table '([^']*)'$`)

// tableDenied gives a statement on a table of a database the account
// holds nothing on MySQL's 1142 (go-mysql-server: 1044, naming the
// database), with the command and the table MySQL names: "SELECT command
// denied to user 'u'@'h' for table 't'".
func tableDenied(query string, se *mysql.SQLError, err error) error {
	st, _, perr := sqlengine.ParseOne(context.Background(), query, ast.ParserOptions{})
	if perr != nil {
		return err
	}
	if m := tableDeniedMsg.FindStringSubmatch(se.Message); m != nil {
		return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user %s for table '%s'", deniedCommandOn(st, m[2]), m[1], m[2])
	}
	m := dbDenied.FindStringSubmatch(se.Message)
	if m == nil {
		return err
	}
	table := firstTable(st, m[2])
	if table == "" {
		return err
	}
	return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user %s for table '%s'", deniedCommandOn(st, table), m[1], table)
}

// tableCommandDenied gives a statement on tables denied at the
// database's level (CREATE TABLE, CREATE VIEW: go-mysql-server's "command
// denied to user 'u'@'h'") MySQL's 1142, naming the command and the
// statement's first table.
func tableCommandDenied(query string, se *mysql.SQLError) error {
	who := strings.TrimPrefix(se.Message, "command denied to user ")
	st, _, err := sqlengine.ParseOne(context.Background(), query, ast.ParserOptions{})
	table := ""
	if ddl, ok := st.(*ast.DDL); ok && err == nil {
		switch {
		case ddl.ViewSpec != nil:
			table = ddl.ViewSpec.ViewName.Name.String()
		case len(ddl.FromViews) > 0:
			table = ddl.FromViews[0].Name.String()
		}
	}
	if err == nil && table == "" {
		table = firstTable(st, "")
	}
	if table == "" {
		return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s", se.Message)
	}
	return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user %s for table '%s'", deniedCommandOn(st, table), who, table)
}

// firstTable is the name of the first table st names (in database db,
// or unqualified, when db is not ""), or "".
func firstTable(st ast.Statement, db string) string {
	table := ""
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		if tn, ok := node.(ast.TableName); ok && table == "" && !tn.Name.IsEmpty() {
			if q := tn.DbQualifier.String(); db == "" || q == "" || strings.EqualFold(q, db) {
				table = tn.Name.String()
			}
		}
		return table == "", nil
	}, st)
	return table
}

// deniedCommandOn is the privilege MySQL names when it denies st on
// table: for CREATE TRIGGER, TRIGGER or the command of the body's
// statement on it; otherwise deniedCommand's.
func deniedCommandOn(st ast.Statement, table string) string {
	if cmd, ok := sqlengine.TriggerDeniedCommand(st, table); ok {
		return cmd
	}
	return deniedCommand(st)
}

// deniedCommand is the privilege MySQL names when it denies st.
func deniedCommand(st ast.Statement) string {
	switch n := st.(type) {
	case *ast.Insert:
		return "INSERT"
	case *ast.Update:
		return "UPDATE"
	case *ast.Delete:
		return "DELETE"
	case *ast.DDL:
		switch strings.ToLower(n.Action) {
		case ast.CreateStr:
			if n.ViewSpec != nil {
				return "CREATE VIEW"
			}
			return "CREATE"
		case ast.DropStr, ast.TruncateStr:
			return "DROP"
		case ast.AlterStr, ast.RenameStr:
			return "ALTER"
		}
	case *ast.AlterTable:
		return "ALTER"
	}
	return "SELECT"
}

// grantTarget is the object of GRANT/REVOKE privileges ON object TO/FROM.
var grantTarget = regexp.MustCompile(`(?is)^\s*(grant|revoke)\s.+?\son\s+(?:table\s+)?(\S+)\s+(?:to|from)\s`)

// track makes the statement about to run cancellable by the disconnect
// watchdog (see protocol.Conn.closedByPeer).
func track(ctx context.Context, c *mysql.Conn) (context.Context, func()) {
	w, ok := c.Conn.(*protocol.Conn)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := sqlengine.StatementContext(ctx)
	w.StatementStarted(cancel)
	return ctx, func() {
		w.StatementEnded()
		cancel()
	}
}

// yieldAfterStatement gives the connection's Go processor to the other
// goroutines that are ready once a statement has been answered, before
// the connection reads its next one.
//
// Without it, a busy server was unfair among its connections: a
// connection whose client answered at once kept its processor, while
// goroutines whose sockets had become readable waited until a processor
// ran out of work to poll the network. With 16 sysbench clients on two
// cores, half of oltp_read_only's transactions took 0.6 ms and the rest
// up to 40 ms. Yielding after each statement costs a pass through the
// scheduler; measured against not yielding (docs/BENCHMARKS.md, "Reads"),
// the p95 at 64 threads fell by a third and throughput did not drop.
func yieldAfterStatement() { runtime.Gosched() }

// interceptors is the chain of the statements Lockstep answers itself,
// in the order they are tried: SET gtid_next and what follows it, replica
// control and status, binlog administration (package admin), then the
// server's own.
func (s *Server) interceptors() protocol.Chain {
	return protocol.Chain{s.adm.GTIDNextStatement, s.adm.ReplicaStatement, s.adm.BinlogStatement, s.killStatement, s.accountStatement, s.showCreateUser, s.readLockStatement, s.backupLockStatement, s.shutdownStatement, s.reloadTLS, s.cloneStatement, s.engineStatement, s.maintenanceStatement, s.componentStatement, s.sqlPrepareLimit, s.txnEndStatement, s.alterProcedureStatement}
}

// intercept runs the interceptors for both query entry points; handled
// reports whether query was one of their statements. They see the query
// without its comments (bareStatement), as MySQL's parser would.
func (s *Server) intercept(c *mysql.Conn, query string) (res *sqltypes.Result, handled bool, err error) {
	return s.chain.Run(c, bareStatement(query))
}

func (h *handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) error {
	return h.comQuery(ctx, c, query, cb, true)
}

// comQuery is ComQuery; mayCall is false when the caller knows query is
// not a CALL (ComMultiQuery checked).
func (h *handler) comQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn, mayCall bool) (err error) {
	if _, ok := c.Conn.(*protocol.Conn); ok {
		// COM_SET_OPTION turned the client's multiple statements off,
		// and vitess with them its calls of ComMultiQuery, which a CALL
		// needs: on again from the next query (call.go).
		c.Capabilities |= mysql.CapabilityClientMultiStatements
	}
	defer yieldAfterStatement()
	defer h.s.afterStatement(c, query)
	if t := h.s.statementStart(c); t != nil {
		inner := cb
		cb = func(r *sqltypes.Result, more bool) error { t.result(r); return inner(r, more) }
		text := query // as the client sent it
		defer func() { h.s.statementEnd(c, t, text, err) }()
	}
	query, _ = h.s.sql.ClientText(c.ConnectionID, query) // its literals as MySQL reads them
	if res, ok, err := h.s.intercept(c, query); ok {
		if err != nil {
			return err
		}
		return cb(res, false)
	}
	query, err = rewriteSetNames(query)
	if err != nil {
		return err
	}
	ctx, done := track(ctx, c)
	defer done()
	call := mayCall && isCall(bareStatement(query))
	if h.s.member == nil && !call {
		return h.query(ctx, c, query, cb)
	}
	if err := h.s.refuseDetached(c, query); err != nil {
		return err
	}
	if err := h.s.causalWait(ctx, c, query); err != nil {
		return err
	}
	if call {
		_, err := h.call(ctx, c, query, cb, false)
		return err
	}
	inTrx := h.s.sql.InTransaction(c.ConnectionID)
	for attempt := 0; ; attempt++ {
		sent := false
		send := func(r *sqltypes.Result, more bool) error {
			sent = true
			return cb(r, more)
		}
		err := h.query(ctx, c, query, send)
		if sent || !h.s.retryAutocommit(c, err, attempt, inTrx) {
			return err
		}
	}
}

// query runs one statement: on the fast path if it takes it, else
// through go-mysql-server.
func (h *handler) query(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) error {
	cb = textResults(h.s.sql, c, query, cb)
	return h.s.limitStatement(ctx, c, query, func(ctx context.Context) error {
		if ok, err := h.fast.query(ctx, h.Handler, c, query, nil, nil, func(r *sqltypes.Result) error { return cb(r, false) }); ok {
			return statementError(query, err)
		}
		return statementError(query, h.Handler.ComQuery(ctx, c, query, cb))
	})
}

func (h *handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) (rest string, err error) {
	if query == callMarker {
		return h.nextCallResult(c, cb) // a CALL's next result (call.go)
	}
	if !h.multiStatements(c) && !isCall(bareStatement(query)) {
		// A client that did not ask for several statements: vitess
		// calls here only so that a CALL can answer with several results.
		return "", h.comQuery(ctx, c, query, cb, false)
	}
	defer yieldAfterStatement()
	defer h.s.afterStatement(c, query)
	if t := h.s.statementStart(c); t != nil {
		inner := cb
		cb = func(r *sqltypes.Result, more bool) error { t.result(r); return inner(r, more) }
		// The statement run is what precedes the rest.
		text := query
		defer func() { h.s.statementEnd(c, t, strings.TrimSuffix(text, rest), err) }()
	}
	query, undo := h.s.sql.ClientText(c.ConnectionID, query) // its literals as MySQL reads them
	if undo != nil {
		// The rest goes back as the client sent it: its statements are
		// read under the mode they meet.
		defer func() { rest = undo(rest) }()
	}
	if res, ok, err := h.s.intercept(c, query); ok {
		if err != nil {
			return "", err
		}
		return "", cb(res, false)
	}
	query, err = rewriteSetNames(query)
	if err != nil {
		return "", err
	}
	ctx, done := track(ctx, c)
	defer done()
	if err := h.s.refuseDetached(c, query); err != nil {
		return "", err
	}
	if err := h.s.causalWait(ctx, c, query); err != nil {
		return "", err
	}
	if isCall(bareStatement(query)) {
		return h.call(ctx, c, query, cb, true)
	}
	cb = textResults(h.s.sql, c, query, cb)
	err = h.s.limitStatement(ctx, c, query, func(ctx context.Context) error {
		// The fast path takes a query of one statement (parse checks).
		if ok, err := h.fast.query(ctx, h.Handler, c, query, nil, nil, func(r *sqltypes.Result) error { return cb(r, false) }); ok {
			return statementError(query, err)
		}
		var err error
		rest, err = h.Handler.ComMultiQuery(ctx, c, query, cb)
		return statementError(query, err)
	})
	return rest, err
}

// ComInitDB is USE from the protocol (mysql -D, a driver's database).
func (h *handler) ComInitDB(c *mysql.Conn, db string) error {
	// The mysql database escapes go-mysql-server's check (sqlengine's
	// CheckDatabaseAccess).
	if strings.EqualFold(db, "mysql") {
		if ctx, ok := h.s.sql.SessionContext(c.ConnectionID); ok {
			if err := sqlengine.CheckDatabaseAccess(ctx, db); err != nil {
				return err
			}
		}
	}
	return mysqlerr.Restore(h.Handler.ComInitDB(c, db))
}

func (h *handler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, p *mysql.PrepareData) ([]*querypb.Field, error) {
	h.s.sql.CountStatus(c.ConnectionID, "Com_stmt_prepare")
	if err := h.s.admitPrepare(c, p); err != nil {
		return nil, err
	}
	var f []*querypb.Field
	key, err := h.s.sql.PrepareProtocol(c.ConnectionID, func() (err error) {
		f, err = h.Handler.ComPrepare(ctx, c, query, p)
		return err
	})
	w, _ := c.Conn.(*protocol.Conn)
	if w != nil {
		w.StmtKept(p.StatementID, key)
	}
	if h.s.dos.prepared(c, p, err != nil) {
		f = nil // a DO: no result columns (prepareddo.go)
	}
	if err == nil {
		h.fast.prepare(ctx, h.Handler, c, query, p)
	} else {
		delete(c.PrepareData, p.StatementID) // vitess keeps a statement that failed
		if w != nil {
			w.StmtClosed(p.StatementID)
		}
	}
	fixFieldTypes(f)
	return f, statementError(query, err)
}

func (h *handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, p *mysql.PrepareData, cb func(*sqltypes.Result) error) (err error) {
	if p.StatementID == callPartStmt {
		return h.nextCallPart(c, binaryResults(h.s.sql, c, cb)) // call.go
	}
	h.s.sql.CountStatus(c.ConnectionID, "Com_stmt_execute")
	defer yieldAfterStatement()
	defer h.s.afterStatement(c, p.PrepareStmt)
	cb = binaryResults(h.s.sql, c, cb)
	if h.s.dos.is(c, p) {
		cb = okOnly(cb)
	}
	if t := h.s.statementStart(c); t != nil {
		inner := cb
		cb = func(r *sqltypes.Result) error { t.result(r); return inner(r) }
		defer func() { h.s.statementEnd(c, t, p.PrepareStmt, err) }()
	}
	ctx, done := track(ctx, c)
	defer done()
	call := isCall(bareStatement(p.PrepareStmt))
	if h.s.member == nil && !call {
		return h.execute(ctx, c, p, cb)
	}
	if err := h.s.refuseDetached(c, p.PrepareStmt); err != nil {
		return err
	}
	if err := h.s.causalWait(ctx, c, p.PrepareStmt); err != nil {
		return err
	}
	if call {
		return h.callPrepared(ctx, c, p, cb) // call.go
	}
	inTrx := h.s.sql.InTransaction(c.ConnectionID)
	for attempt := 0; ; attempt++ {
		sent := false
		send := func(r *sqltypes.Result) error {
			sent = true
			return cb(r)
		}
		err := h.execute(ctx, c, p, send)
		if sent || !h.s.retryAutocommit(c, err, attempt, inTrx) {
			return err
		}
	}
}

// execute runs a prepared statement: on the fast path if it takes it,
// else through go-mysql-server.
func (h *handler) execute(ctx context.Context, c *mysql.Conn, p *mysql.PrepareData, cb func(*sqltypes.Result) error) error {
	if err := h.s.sql.CheckExecute(c.ConnectionID, p.PrepareStmt); err != nil {
		return err
	}
	return h.s.limitStatement(ctx, c, p.PrepareStmt, func(ctx context.Context) error {
		if plan := h.fast.planFor(c, p); plan != nil {
			if ok, err := h.fast.query(ctx, h.Handler, c, p.PrepareStmt, p.BindVars, plan, cb); ok {
				return statementError(p.PrepareStmt, err)
			}
		}
		return statementError(p.PrepareStmt, h.Handler.ComStmtExecute(ctx, c, p, cb))
	})
}

// ComResetConnection uncounts the connection's prepared statements, which
// the protocol library drops after it, and reads the new session's
// timeouts and causal-read setting.
func (h *handler) ComResetConnection(c *mysql.Conn) error {
	h.calls.Delete(c.ConnectionID)
	w, ok := c.Conn.(*protocol.Conn)
	if ok {
		w.StmtsClosed()
	}
	err := h.Handler.ComResetConnection(c)
	if ok && err == nil {
		h.s.refreshTimeouts(c, w) // the new session's settings
	}
	return err
}

// ConnectionClosed forgets the connection's COM_REGISTER_SLAVE, if any.
func (h *handler) ConnectionClosed(c *mysql.Conn) {
	h.calls.Delete(c.ConnectionID)
	if w, ok := c.Conn.(*protocol.Conn); ok {
		w.StmtsClosed()
	}
	h.s.source.Forget(c.ConnectionID)
	h.s.sessionClosed(c)
	h.s.sql.ReleaseReadLock(c.ConnectionID)
	h.s.connAttrs.m.Delete(c.ConnectionID)
	h.fast.forget(c.ConnectionID)
	h.s.dos.forget(c.ConnectionID)
	h.Handler.ConnectionClosed(c)
}

// ConnectionAuthenticated lets the wire wrapper parse dump commands from
// now on (see protocol.Conn.LoggedIn).
//
// It also enforces max_connections' reserved slot: past the limit only an
// account with SUPER or CONNECTION_ADMIN stays; then offline_mode and
// max_user_connections (admitSession).
func (h *handler) ConnectionAuthenticated(c *mysql.Conn) error {
	if w, ok := c.Conn.(*protocol.Conn); ok {
		if w.OverLimit() && !h.s.sql.Holds(c, sqlengine.NeedConnectionAdmin) {
			return mysql.NewSQLError(mysql.ERConCount, "08004", "Too many connections")
		}
		if err := h.s.admitSession(c); err != nil {
			return err
		}
		if attrs := w.LoggedIn(c.ConnectionID); attrs != nil {
			h.s.connAttrs.m.Store(c.ConnectionID, attrs)
		}
		if err := h.Handler.ConnectionAuthenticated(c); err != nil {
			return err
		}
		h.s.startTimeouts(c, w)
		// vitess hands every query to ComMultiQuery, where a CALL can
		// answer with several results (call.go).
		c.Capabilities |= mysql.CapabilityClientMultiStatements
		return nil
	}
	return h.Handler.ConnectionAuthenticated(c)
}

// NewConnection advertises autocommit in the handshake: sessions start with
// autocommit on, but GMS sets the status flags only after a query, and
// clients such as PyMySQL trust the handshake's flags (with them clear, it
// skips SET autocommit=0 and its rollbacks silently do nothing).
func (h *handler) NewConnection(c *mysql.Conn) {
	c.ConnectionID += h.idBase // before the handshake announces it
	if w, ok := c.Conn.(*protocol.Conn); ok {
		w.Attach(c) // executions with many parameters (protocol/manyparams.go)
	}
	h.Handler.NewConnection(c)
	c.StatusFlags |= uint16(mysql.ServerStatusAutocommit)
}
