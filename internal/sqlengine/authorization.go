package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// go-mysql-server's statement authorization, corrected at its seam (the
// global authorization handler factory, wrapped once at start):
//
//   - SHOW [FULL] PROCESSLIST needs no privilege, as in MySQL: an account
//     without PROCESS sees its own connections only (processes.go);
//     go-mysql-server refused the statement to it instead.
func init() {
	sql.SetAuthorizationHandlerFactory(authorizationFactory{base: sql.GetAuthorizationHandlerFactory()})
}

type authorizationFactory struct {
	base sql.AuthorizationHandlerFactory
}

func (f authorizationFactory) CreateHandler(cat sql.Catalog) sql.AuthorizationHandler {
	return authorization{f.base.CreateHandler(cat)}
}

type authorization struct{ sql.AuthorizationHandler }

func (a authorization) HandleAuth(ctx *sql.Context, state sql.AuthorizationQueryState, auth ast.AuthInformation) error {
	if auth.AuthType == ast.AuthType_PROCESS {
		return nil
	}
	return a.AuthorizationHandler.HandleAuth(ctx, state, auth)
}
