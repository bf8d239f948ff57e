package server

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// accountStatement answers the account statements go-mysql-server lacks
// (sqlengine.AccountStatement): GRANT and REVOKE of dynamic privileges,
// with the grantor's privileges checked here, SET ROLE, SET DEFAULT ROLE
// and RENAME USER.
func (s *Server) accountStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	return s.sessionStatement(c, query, sqlengine.MaybeAccountStatement, func(ctx *sql.Context) (bool, error) {
		return s.sql.AccountStatement(ctx, query, func(names []string) bool { return s.mayGrant(c, names) })
	})
}

// showCreateUser answers SHOW CREATE USER (sqlengine/showcreateuser.go).
func (s *Server) showCreateUser(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if !sqlengine.MaybeShowCreateUser(query) {
		return nil, false, nil
	}
	ctx, ok := s.sql.SessionContext(c.ConnectionID)
	if !ok {
		return nil, false, nil
	}
	column, stmt, handled, err := s.sql.ShowCreateUser(ctx, query)
	if !handled || err != nil {
		return nil, handled, err
	}
	return &sqltypes.Result{
		Fields: []*querypb.Field{{Name: column, Type: sqltypes.VarChar, Charset: 255}},
		Rows:   [][]sqltypes.Value{{sqltypes.NewVarChar(stmt)}},
	}, true, nil
}

// sessionStatement runs a statement the SQL layer answers itself on c's
// session: run reports whether query was one. maybe, a cheap test of the
// text, spares making a session context for every other statement.
func (s *Server) sessionStatement(c *mysql.Conn, query string, maybe func(string) bool, run func(*sql.Context) (bool, error)) (*sqltypes.Result, bool, error) {
	if !maybe(query) {
		return nil, false, nil
	}
	ctx, ok := s.sql.SessionContext(c.ConnectionID)
	if !ok {
		return nil, false, nil
	}
	handled, err := run(ctx)
	if !handled || err != nil {
		return nil, handled, err
	}
	return &sqltypes.Result{}, true, nil
}

// mayGrant reports whether c's account may grant or revoke names: it
// holds each with GRANT OPTION, or holds SUPER with GRANT OPTION.
func (s *Server) mayGrant(c *mysql.Conn, names []string) bool {
	set, ok := s.sql.ConnPrivileges(c)
	if !ok {
		return false
	}
	if set.Has(sql.PrivilegeType_Super, sql.PrivilegeType_GrantOption) {
		return true
	}
	withGrant := map[string]bool{}
	for _, d := range set.ToSliceDynamic(true) {
		withGrant[strings.ToLower(d)] = true
	}
	for _, n := range names {
		if !withGrant[n] {
			return false
		}
	}
	return true
}

// readLockStatement answers FLUSH TABLES WITH READ LOCK, and releases the
// global read lock on UNLOCK TABLES before go-mysql-server answers it
// (sqlengine.ReadLockStatement).
func (s *Server) readLockStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	return s.sessionStatement(c, query, sqlengine.MaybeReadLockStatement, func(ctx *sql.Context) (bool, error) {
		return s.sql.ReadLockStatement(ctx, query)
	})
}

// alterProcedureStatement answers ALTER PROCEDURE, which the parser does
// not know (sqlengine/alterprocedure.go).
func (s *Server) alterProcedureStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	return s.sessionStatement(c, query, sqlengine.MaybeAlterProcedure, func(ctx *sql.Context) (bool, error) {
		return s.sql.AlterProcedureStatement(ctx, query)
	})
}
