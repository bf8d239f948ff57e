package sqlengine

import (
	"context"

	"github.com/dolthub/go-mysql-server/sql"
)

// The process list as MySQL shows it: an account without the PROCESS
// privilege sees only its own connections (go-mysql-server shows every
// connection, with the text of its statement, to anyone, and so leaks
// other accounts' statements, passwords in ALTER USER included). The view
// is installed in every query context (NewContext), so SHOW PROCESSLIST
// and information_schema.PROCESSLIST both go through it.

// NewContext is go-mysql-server's context factory with the process list
// seen through processView, and the query time the session's SET
// timestamp fixed.
func (e *Engine) NewContext(ctx context.Context, opts ...sql.ContextOption) *sql.Context {
	c := sql.NewContext(ctx, opts...)
	applySessionTime(c) // sessiontime.go
	if s := sessionOf(c); s != nil {
		s.viewDB = "" // a new statement (views.go)
		s.triggerDB, s.planningTriggers = "", false
	}
	if c.ProcessList != nil {
		if _, ok := c.ProcessList.(processView); !ok {
			c.ProcessList = processView{ProcessList: c.ProcessList, eng: e, ctx: c}
		}
	}
	return c
}

type processView struct {
	sql.ProcessList
	eng *Engine
	ctx *sql.Context
}

// Processes lists the connections the session may see, their statements
// with passwords replaced by '<secret>' (RedactSecrets), as in MySQL.
func (v processView) Processes() []sql.Process {
	all := v.ProcessList.Processes()
	seeAll := v.ctx.Session == nil || v.eng.canSeeAllProcesses(v.ctx)
	me := ""
	if !seeAll {
		me = v.ctx.Session.Client().User
	}
	var out []sql.Process
	for _, p := range all {
		if seeAll || p.User == me {
			p.Query = RedactSecrets(p.Query)
			out = append(out, p)
		}
	}
	return out
}

// SetConnectionCommand shows connection connID in the process list as
// running command, as MySQL shows a replica's dump ("Binlog Dump GTID").
func (e *Engine) SetConnectionCommand(connID uint32, command string) {
	if l, ok := e.GMS.ProcessList.(*processList); ok {
		l.SetCommand(connID, command)
	}
}

// canSeeAllProcesses reports whether the session's account holds PROCESS.
func (e *Engine) canSeeAllProcesses(ctx *sql.Context) bool {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	return superless(ctx, func() bool {
		return db.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, sql.PrivilegeType_Process))
	})
}
