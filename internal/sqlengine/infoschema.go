package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// infoSchema is go-mysql-server's information_schema, corrected at its
// seam (the catalog's InfoSchema database, wrapped once by newEngine):
//
//   - A table it does not have is MySQL's 1109 "Unknown table 'X' in
//     information_schema", not 1146. Tools tell a missing
//     information_schema table by that number (mysqld_exporter skips a
//     collector whose table the server lacks on 1109, and fails the whole
//     scrape on any other error).
//   - INNODB_METRICS and INNODB_TABLESPACES have MySQL 8's name and
//     columns (go-mysql-server's had lower-case names and columns, which
//     the exporter, comparing MySQL's upper-case ones, did not find) and
//     no rows: there is no InnoDB, so no InnoDB metric is enabled and no
//     tablespace exists.
//   - COLUMNS describes columns as declared (coldecl.go's
//     declaredColumns, which corrects its rows as they are read).
//   - ROUTINES lists every database's stored procedures from the
//     catalog, with each one's own sql_mode (routines.go): go-mysql-server's
//     planned each procedure's body in the current database and left
//     out those it could not plan (all of them with no current
//     database), and gave the session's sql_mode.
type infoSchema struct {
	sql.Database
	own map[string]sql.Table // lower-case name -> Lockstep's table
}

func newInfoSchema(e *Engine, gms sql.Database) infoSchema {
	d := infoSchema{Database: gms, own: map[string]sql.Table{}}
	str := func(n int64) sql.Type { return types.MustCreateStringWithDefaults(sqltypes.VarChar, n) }
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable}
	}
	none := func(*sql.Context) ([]sql.Row, error) { return nil, nil }
	dt := types.Datetime
	d.own["innodb_metrics"] = newSystemTable("information_schema", "INNODB_METRICS", sql.Schema{
		col("NAME", str(193), false), col("SUBSYSTEM", str(193), false), col("COUNT", types.Int64, false),
		col("MAX_COUNT", types.Int64, true), col("MIN_COUNT", types.Int64, true), col("AVG_COUNT", types.Float64, true),
		col("COUNT_RESET", types.Int64, false), col("MAX_COUNT_RESET", types.Int64, true), col("MIN_COUNT_RESET", types.Int64, true),
		col("AVG_COUNT_RESET", types.Float64, true), col("TIME_ENABLED", dt, true), col("TIME_DISABLED", dt, true),
		col("TIME_ELAPSED", types.Int64, true), col("TIME_RESET", dt, true), col("STATUS", str(193), false),
		col("TYPE", str(193), false), col("COMMENT", str(193), false),
	}, none)
	d.own["innodb_tablespaces"] = newSystemTable("information_schema", "INNODB_TABLESPACES", sql.Schema{
		col("SPACE", types.Uint32, false), col("NAME", str(655), false), col("FLAG", types.Uint32, false),
		col("ROW_FORMAT", str(22), true), col("PAGE_SIZE", types.Uint32, false), col("ZIP_PAGE_SIZE", types.Uint32, false),
		col("SPACE_TYPE", str(10), true), col("FS_BLOCK_SIZE", types.Uint32, false), col("FILE_SIZE", types.Uint64, false),
		col("ALLOCATED_SIZE", types.Uint64, false), col("AUTOEXTEND_SIZE", types.Uint64, false),
		col("SERVER_VERSION", str(10), true), col("SPACE_VERSION", types.Uint32, true), col("ENCRYPTION", str(1), true),
		col("STATE", str(10), true),
	}, none)
	if t, ok, err := gms.GetTableInsensitive(sql.NewEmptyContext(), "routines"); err == nil && ok {
		d.own["routines"] = newSystemTable("information_schema", "ROUTINES", t.Schema(sql.NewEmptyContext()).Copy(), e.routinesRows)
	}
	return d
}

func (d infoSchema) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if t, ok := d.own[strings.ToLower(name)]; ok {
		return t, true, nil
	}
	t, ok, err := d.Database.GetTableInsensitive(ctx, name)
	if err != nil || ok {
		return t, ok, err
	}
	return nil, false, mysql.NewSQLError(1109, "42S02", "Unknown table '%s' in information_schema", strings.ToUpper(name))
}

func (d infoSchema) GetTableNames(ctx *sql.Context) ([]string, error) {
	names, err := d.Database.GetTableNames(ctx)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		if t, ok := d.own[strings.ToLower(n)]; ok {
			names[i] = t.Name()
		}
	}
	return names, nil
}
