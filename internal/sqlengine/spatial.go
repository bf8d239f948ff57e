package sqlengine

// Spatial columns and SPATIAL indexes.
//
// A GEOMETRY, POINT, LINESTRING, POLYGON, MULTI... or GEOMETRYCOLLECTION
// column is stored as MySQL stores it and writes it to the binlog: a
// 4-byte little-endian SRID followed by the value's WKB, behind a 4-byte
// length (row.TypeGeometry). go-mysql-server's geometry values serialize to
// exactly those bytes, and are rebuilt from them when a row is read.
//
// A SPATIAL index is declared, checked (one NOT NULL spatial column, as
// MySQL requires), kept in the table's SQL metadata, shown by SHOW CREATE
// TABLE, SHOW INDEX and information_schema, and written to the binlog; but
// Lockstep keeps no R-tree for it. go-mysql-server may still choose it for
// a spatial condition (ST_Intersects, ST_Within, ST_Equals): the lookup
// then reads the whole table and the condition, which go-mysql-server
// always applies again above a spatial lookup, keeps the rows that match.
// Results are what MySQL returns; only the index's speed is missing (the
// README says so). Geometry columns are never keys of other indexes
// (1170, as in MySQL).

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// spatialMeta is one SPATIAL index in a table's SQL metadata.
type spatialMeta struct {
	Name    string `json:"name"`
	Column  int    `json:"column"`
	Comment string `json:"comment,omitempty"`
}

// tableSpatial reads the SPATIAL indexes of a table definition.
func tableSpatial(def *storage.TableDef) []spatialMeta {
	return loadMeta[spatialMeta](def, "spatial") // checks.go
}

// geometryKind is the kind of value a spatial column type holds.
func geometryKind(t sql.Type) row.GeometryKind {
	switch t.(type) {
	case types.PointType:
		return row.GeometryPoint
	case types.LineStringType:
		return row.GeometryLineString
	case types.PolygonType:
		return row.GeometryPolygon
	case types.MultiPointType:
		return row.GeometryMultiPoint
	case types.MultiLineStringType:
		return row.GeometryMultiLineString
	case types.MultiPolygonType:
		return row.GeometryMultiPolygon
	case types.GeomCollType:
		return row.GeometryCollection
	}
	return row.GeometryAny
}

// typeText is a column type as the SQL metadata keeps it: the type's own
// text, with a spatial column's SRID attribute, which the text leaves out.
func typeText(t sql.Type) string {
	if s, ok := t.(sql.SpatialColumnType); ok {
		if srid, defined := s.GetSpatialTypeSRID(); defined {
			return fmt.Sprintf("%s SRID %d", t.String(), srid)
		}
	}
	return t.String()
}

// geometryStorage is the stored form of a geometry value.
func geometryStorage(v any) (row.Value, bool) {
	if g, ok := v.(types.GeometryValue); ok {
		return g.Serialize(), true
	}
	return nil, false
}

// geometryValue rebuilds the geometry value of stored bytes. They were
// written from one (or by a MySQL source, in the same form); bytes that
// do not read as one are returned as they are, and any function given
// them fails with go-mysql-server's error.
func geometryValue(b []byte) any {
	g, _, err := types.GeometryType{}.Convert(context.Background(), b)
	if err != nil {
		return b
	}
	return g
}

// errGeometryKey refuses a geometry column in a key that is not SPATIAL:
// MySQL asks for a prefix length (ER_BLOB_KEY_WITHOUT_LENGTH), except on
// a POINT column, which it indexes whole; Lockstep does not (yet).
func errGeometryKey(c *row.Column) error {
	if c.Geometry == row.GeometryPoint {
		return errNotSupported("indexes other than SPATIAL on POINT columns")
	}
	return mysql.NewSQLError(1170, "42000", "BLOB/TEXT column '%s' used in key specification without a key length", c.Name)
}

// errSpatialNullable is MySQL's ER_SPATIAL_CANT_HAVE_NULL.
var errSpatialNullable = mysql.NewSQLError(1252, "42000", "All parts of a SPATIAL index must be NOT NULL")

// errSpatialColumn is MySQL's ER_SPATIAL_MUST_HAVE_GEOM_COL.
var errSpatialColumn = mysql.NewSQLError(1687, "42000", "A SPATIAL index may only contain a geometrical type column")

// spatialColumn checks that columns can carry a SPATIAL index and returns
// the position of the one column.
func spatialColumn(def *storage.TableDef, cols []sql.IndexColumn) (int, error) {
	if len(cols) != 1 {
		return 0, mysql.NewSQLError(1070, "42000", "Too many key parts specified; max 1 parts allowed")
	}
	if cols[0].Length > 0 {
		return 0, mysql.NewSQLError(1089, "HY000", "Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys")
	}
	for i, c := range def.Columns {
		if !strings.EqualFold(c.Name, cols[0].Name) {
			continue
		}
		if c.Type != row.TypeGeometry {
			return 0, errSpatialColumn
		}
		if c.Nullable {
			return 0, errSpatialNullable
		}
		return i, nil
	}
	return 0, sql.ErrKeyColumnDoesNotExist.New(cols[0].Name)
}

// spatialIndexText is the index clause of a SPATIAL index, as SHOW CREATE
// TABLE and the binlog write it.
func spatialIndexText(def *storage.TableDef, ix spatialMeta) string {
	s := fmt.Sprintf("SPATIAL KEY %s (%s)", quoteIdent(ix.Name), quoteIdent(def.Columns[ix.Column].Name))
	if ix.Comment != "" {
		s += " COMMENT " + stringLiteral(ix.Comment)
	}
	return s
}

// indexNameTaken reports whether def has an index (of any kind) named name.
func indexNameTaken(def *storage.TableDef, name string) bool {
	for _, ix := range def.Indexes {
		if strings.EqualFold(ix.Name, name) {
			return true
		}
	}
	for _, ix := range tableSpatial(def) {
		if strings.EqualFold(ix.Name, name) {
			return true
		}
	}
	return false
}

// createSpatialIndex adds a SPATIAL index to the table (CREATE SPATIAL
// INDEX, ALTER TABLE ... ADD SPATIAL INDEX, or a CREATE TABLE's own, which
// the table was made with and is only claimed here).
func (t *Table) createSpatialIndex(ctx *sql.Context, def sql.IndexDef) error {
	cur := t.current().Def
	col, err := spatialColumn(cur, def.Columns)
	if err != nil {
		return err
	}
	if s := sessionOf(ctx); s != nil && s.claimSpatial(cur.ID, col) {
		t.st = t.current()
		return nil
	}
	if indexNameTaken(cur, def.Name) {
		return sql.ErrDuplicateKey.New(def.Name)
	}
	ix := spatialMeta{Name: def.Name, Column: col, Comment: def.Comment}
	nd := cloneDef(cur)
	if err := storeMeta(nd, "spatial", append(tableSpatial(cur), ix)); err != nil {
		return err
	}
	stmt := fmt.Sprintf("ALTER TABLE %s ADD %s", quoteIdent(nd.Name), spatialIndexText(nd, ix))
	if err := t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "alter_table", TableID: nd.ID, Table: nd}, []uint64{nd.ID}); err != nil {
		return err
	}
	t.st = t.current()
	return nil
}

// dropSpatialIndex drops the SPATIAL index named name; ok is false when
// the table has none of that name.
func (t *Table) dropSpatialIndex(ctx *sql.Context, name string) (ok bool, err error) {
	cur := t.current().Def
	all := tableSpatial(cur)
	for i, ix := range all {
		if !strings.EqualFold(ix.Name, name) {
			continue
		}
		nd := cloneDef(cur)
		if err := storeMeta(nd, "spatial", append(all[:i:i], all[i+1:]...)); err != nil {
			return true, err
		}
		stmt := fmt.Sprintf("ALTER TABLE %s DROP INDEX %s", quoteIdent(nd.Name), quoteIdent(ix.Name))
		return true, t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "alter_table", TableID: nd.ID, Table: nd}, []uint64{nd.ID})
	}
	return false, nil
}

// carrySpatial moves old's SPATIAL indexes into nd, a new definition of
// the table whose columns are at newAt (-1: dropped). An index on a
// dropped column goes, as in MySQL; one whose column is no longer a NOT
// NULL geometry is refused.
func carrySpatial(old, nd *storage.TableDef, newAt []int) error {
	var out []spatialMeta
	for _, ix := range tableSpatial(old) {
		at := newAt[ix.Column]
		if at < 0 {
			continue
		}
		switch c := nd.Columns[at]; {
		case c.Type != row.TypeGeometry:
			return errSpatialColumn
		case c.Nullable:
			return errSpatialNullable
		}
		ix.Column = at
		out = append(out, ix)
	}
	return storeMeta(nd, "spatial", out)
}
