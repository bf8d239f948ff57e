package protocol

import (
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// Interceptor answers a statement Lockstep handles itself, before
// go-mysql-server would: handled reports whether query was one of its
// statements (and res or err is its answer).
type Interceptor func(c *mysql.Conn, query string) (res *sqltypes.Result, handled bool, err error)

// Chain is the server's interceptors, in the order they are tried. Both
// query entry points (COM_QUERY and the multi-statement form) run the
// same chain, so that no statement is intercepted on one and not the
// other. The first interceptor that handles a statement answers it.
type Chain []Interceptor

// Run offers query to each interceptor in turn.
func (ch Chain) Run(c *mysql.Conn, query string) (res *sqltypes.Result, handled bool, err error) {
	for _, f := range ch {
		if res, ok, err := f(c, query); ok {
			return res, true, err
		}
	}
	return nil, false, nil
}
