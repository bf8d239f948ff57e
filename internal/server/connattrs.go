package server

// Connection attributes: the key-value pairs a client sends in its
// handshake response (CLIENT_CONNECT_ATTRS: _client_name, _os, _pid,
// program_name, and the application's own), which MySQL shows in
// performance_schema.session_connect_attrs and
// session_account_connect_attrs. vitess reads them and drops them; the
// wire layer sees the response in plain text (TLS ends below it, see
// package protocol) and keeps them on the connection.

import (
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/protocol"
)

// connAttrsOf are the attributes of the open connections, by id.
type connAttrsOf struct{ m sync.Map } // uint32 -> []protocol.ConnAttr

// registerConnAttrsTables registers
// performance_schema.session_connect_attrs (every connection the reader
// may see) and session_account_connect_attrs (those of its own account),
// in MySQL 8.0's shape.
func (s *Server) registerConnAttrsTables() {
	sch := func() sql.Schema {
		return sql.Schema{
			{Name: "PROCESSLIST_ID", Type: types.Uint32},
			{Name: "ATTR_NAME", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 32)},
			{Name: "ATTR_VALUE", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 1024), Nullable: true},
			{Name: "ORDINAL_POSITION", Type: types.Int32, Nullable: true},
		}
	}
	rows := func(own bool) func(ctx *sql.Context) ([]sql.Row, error) {
		return func(ctx *sql.Context) ([]sql.Row, error) {
			var out []sql.Row
			me := ctx.Session.Client().User
			for _, p := range ctx.ProcessList.Processes() { // whom the reader may see
				if own && p.User != me {
					continue
				}
				v, ok := s.connAttrs.m.Load(p.Connection)
				if !ok {
					continue
				}
				for i, a := range v.([]protocol.ConnAttr) {
					out = append(out, sql.Row{p.Connection, a.Name, a.Value, int32(i)})
				}
			}
			return out, nil
		}
	}
	s.sql.AddSystemTable("performance_schema", "session_connect_attrs", sch(), rows(false))
	s.sql.AddSystemTable("performance_schema", "session_account_connect_attrs", sch(), rows(true))
}
