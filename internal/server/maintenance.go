package server

import (
	"context"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// maintenanceStatement answers CHECK, CHECKSUM, ANALYZE, OPTIMIZE and
// REPAIR TABLE (sqlengine.TableMaintenance), which go-mysql-server does
// not parse.
func (s *Server) maintenanceStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	op := sqlengine.MaintenanceOp(query)
	if op == "" {
		return nil, false, nil
	}
	rows, err := s.sql.TableMaintenance(context.Background(), c.ConnectionID, op, query)
	if err != nil {
		return nil, true, err
	}
	res := &sqltypes.Result{}
	if op == "checksum" {
		res.Fields = []*querypb.Field{{Name: "Table", Type: sqltypes.VarChar, Charset: 255}, {Name: "Checksum", Type: sqltypes.Uint64, Charset: 63}}
		for _, r := range rows {
			v := sqltypes.NULL
			if r.Checksum != nil {
				v = sqltypes.NewUint64(*r.Checksum)
			}
			res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(r.Table), v})
		}
		return res, true, nil
	}
	for _, name := range []string{"Table", "Op", "Msg_type", "Msg_text"} {
		res.Fields = append(res.Fields, &querypb.Field{Name: name, Type: sqltypes.VarChar, Charset: 255})
	}
	for _, r := range rows {
		res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(r.Table), sqltypes.NewVarChar(r.Op),
			sqltypes.NewVarChar(r.MsgType), sqltypes.NewVarChar(r.MsgText)})
	}
	return res, true, nil
}
