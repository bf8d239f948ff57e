package server

import (
	"context"
	"strings"
	"sync"

	gmsserver "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// fastPath puts the SQL layer's fast path (sqlengine/fastpath.go) in front
// of GMS's handler: a statement of a recognised shape is parsed once,
// executed without planning and answered here; anything else, and any
// statement the fast path gives up on, continues to GMS unchanged.
//
// Text queries are planned once per shape (literals lifted out; see
// sqlengine.PlanCache). Prepared statements are planned once, at COM_STMT_PREPARE, and each
// COM_STMT_EXECUTE only binds values. GMS prepares them too, so that it
// can take over an execution the fast path gives up on.
type fastPath struct {
	s  *Server
	sm *gmsserver.SessionManager
	// prepared: connection id -> *connStatements.
	prepared sync.Map
	// plans caches text queries' plans by shape.
	plans sqlengine.PlanCache
}

// connStatements are one connection's prepared fast plans by statement id.
// Only the connection's own goroutine touches them.
type connStatements struct {
	byID map[uint32]preparedPlan
}

type preparedPlan struct {
	data *mysql.PrepareData // the statement the plan was made for
	plan *sqlengine.FastPlan
}

// parse parses one statement with the connection's parser options; ok is
// false on a syntax error (GMS reports it) or when query holds more than
// one statement.
func (f *fastPath) parse(ctx context.Context, h mysql.Handler, c *mysql.Conn, query string) (ast.Statement, bool) {
	opts, err := h.ParserOptionsForConnection(c)
	if err != nil {
		return nil, false
	}
	st, n, err := sqlengine.ParseOne(ctx, query, opts)
	if err != nil || strings.TrimSpace(strings.TrimRight(strings.TrimSpace(query[n:]), ";")) != "" {
		return nil, false
	}
	return st, true
}

// query runs a text-protocol statement on the fast path. handled is false
// when the statement must go to GMS (nothing has been done then).
func (f *fastPath) query(ctx context.Context, h mysql.Handler, c *mysql.Conn, query string, binds map[string]*querypb.BindVariable, plan *sqlengine.FastPlan, cb func(*sqltypes.Result) error) (handled bool, err error) {
	if f.sm == nil {
		return false, nil
	}
	sctx, err := f.sm.NewContextWithQuery(ctx, c, query)
	if err != nil {
		return false, nil
	}
	if plan == nil {
		var ok bool
		if plan, binds, ok = f.plans.Plan(ctx, query, sqlengine.ParserOptions(sctx)); !ok {
			return false, nil
		}
	}
	sctx, err = sctx.ProcessList.BeginQuery(sctx, query)
	if err != nil {
		return false, nil
	}
	defer sctx.ProcessList.EndQuery(sctx)
	if err := sql.SessionCommandBegin(sctx.Session); err != nil {
		return false, nil
	}
	defer sql.SessionCommandEnd(sctx.Session)
	sctx.Session.ClearWarnings()

	res, handled, err := f.s.sql.ExecFast(sctx, plan, binds)
	if !handled {
		return false, nil
	}
	setStatusFlags(sctx, c)
	if err != nil {
		return true, err
	}
	return true, cb(res)
}

// setStatusFlags sets the autocommit and in-transaction flags of the
// statement's reply, as GMS's handler does.
func setStatusFlags(ctx *sql.Context, c *mysql.Conn) {
	if v, err := ctx.GetSessionVariable(ctx, sql.AutoCommitSessionVar); err == nil {
		if on, err := sql.ConvertToBool(ctx, v); err == nil && on {
			c.StatusFlags |= uint16(mysql.ServerStatusAutocommit)
		} else if err == nil {
			c.StatusFlags &^= uint16(mysql.ServerStatusAutocommit)
		}
	}
	if ctx.GetTransaction() != nil {
		c.StatusFlags |= uint16(mysql.ServerInTransaction)
	} else {
		c.StatusFlags &^= uint16(mysql.ServerInTransaction)
	}
}

// prepare plans a statement being prepared, if it has a fast shape.
func (f *fastPath) prepare(ctx context.Context, h mysql.Handler, c *mysql.Conn, query string, p *mysql.PrepareData) {
	v, _ := f.prepared.LoadOrStore(c.ConnectionID, &connStatements{byID: map[uint32]preparedPlan{}})
	cs := v.(*connStatements)
	// Forget statements the client has closed (COM_STMT_CLOSE does not
	// reach the handler).
	for id := range cs.byID {
		if _, open := c.PrepareData[id]; !open {
			delete(cs.byID, id)
		}
	}
	st, ok := f.parse(ctx, h, c, query)
	if !ok {
		return
	}
	if plan := sqlengine.PlanFast(st); plan != nil {
		cs.byID[p.StatementID] = preparedPlan{data: p, plan: plan}
	}
}

// planFor returns the fast plan of a prepared statement, or nil.
func (f *fastPath) planFor(c *mysql.Conn, p *mysql.PrepareData) *sqlengine.FastPlan {
	v, ok := f.prepared.Load(c.ConnectionID)
	if !ok {
		return nil
	}
	pp, ok := v.(*connStatements).byID[p.StatementID]
	if !ok || pp.data != p {
		return nil
	}
	return pp.plan
}

func (f *fastPath) forget(connID uint32) { f.prepared.Delete(connID) }

// fastPathStatus adds Lockstep_fastpath_statements (statements the fast
// path ran) and Lockstep_fastpath_fallbacks (recognised statements it
// handed to GMS) to SHOW STATUS.
func (s *Server) fastPathStatus(live map[string]func() any) {
	live["Lockstep_fastpath_statements"] = func() any { return s.sql.Fast.Executed.Load() }
	live["Lockstep_fastpath_fallbacks"] = func() any { return s.sql.Fast.Fallbacks.Load() }
}
