package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// infoSchema is go-mysql-server's information_schema, corrected at its
// seam (the catalog's InfoSchema database, wrapped once by newEngine): a
// table it does not have is MySQL's 1109 "Unknown table 'X' in
// information_schema", not 1146. Tools tell a missing information_schema
// table by that number (mysqld_exporter skips a collector whose table the
// server lacks on 1109, and fails the whole scrape on any other error).
type infoSchema struct{ sql.Database }

func (d infoSchema) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	t, ok, err := d.Database.GetTableInsensitive(ctx, name)
	if err != nil || ok {
		return t, ok, err
	}
	return nil, false, mysql.NewSQLError(1109, "42S02", "Unknown table '%s' in information_schema", strings.ToUpper(name))
}
