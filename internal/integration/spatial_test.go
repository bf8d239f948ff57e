package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// spatialSchema is a table of every geometry kind, with SPATIAL indexes.
const spatialSchema = `CREATE TABLE %s (
	id INT NOT NULL PRIMARY KEY,
	name VARCHAR(20),
	pos POINT NOT NULL,
	area POLYGON,
	path LINESTRING /*!80003 SRID 0 */,
	g GEOMETRY,
	mp MULTIPOINT, ml MULTILINESTRING, mpl MULTIPOLYGON, gc GEOMETRYCOLLECTION,
	shape GEOMETRY NOT NULL,
	SPATIAL KEY pos_k (pos),
	SPATIAL INDEX (shape) COMMENT 'outline'
)`

// spatialRows fill and change it.
var spatialRows = []string{
	`INSERT INTO %s (id, name, pos, area, path, g, shape) VALUES
		(1, 'origin', POINT(0, 0), ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'),
			ST_GeomFromText('LINESTRING(1.1 1.1,2.2 2.2)'), ST_GeomFromText('POINT(3 4)'), POINT(0, 0)),
		(2, 'far', POINT(100.5, -20.25), NULL, NULL, ST_GeomFromText('LINESTRING(0 0,1 1,2 0)'),
			ST_GeomFromText('POLYGON((90 -30,110 -30,110 -10,90 -10,90 -30))'))`,
	`INSERT INTO %s (id, name, pos, mp, ml, mpl, gc, shape) VALUES
		(3, 'multi', ST_GeomFromText('POINT(5 5)'), ST_GeomFromText('MULTIPOINT(1 1,2 2)'),
			ST_GeomFromText('MULTILINESTRING((0 0,1 1),(2 2,3 3))'),
			ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))'),
			ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1 1))'), POINT(5, 5))`,
	`INSERT INTO %s (id, name, pos, g, shape) VALUES (4, 'wkb', ST_GeomFromWKB(ST_AsBinary(POINT(7, 8))), ST_GeomFromText('POINT(-1 -1)'), POINT(7, 8))`,
	"UPDATE %s SET pos = POINT(2, 3), path = ST_GeomFromText('LINESTRING(0 0,5 5)') WHERE id = 1",
	"UPDATE %s SET g = NULL, area = ST_GeomFromText('POLYGON((0 0,4 0,4 4,0 0))') WHERE id = 3",
	"DELETE FROM %s WHERE id = 4",
}

// spatialQueries read it; Lockstep must answer each as MariaDB does.
var spatialQueries = []string{
	"SELECT id, name, ST_AsText(pos), ST_AsText(area), ST_AsText(path), ST_AsText(g), ST_AsText(shape) FROM %s ORDER BY id",
	// MariaDB writes MULTIPOINT(1 1,2 2) where MySQL writes
	// MULTIPOINT((1 1),(2 2)): compared as bytes.
	"SELECT id, HEX(mp), ST_AsText(ml), ST_AsText(mpl), ST_AsText(gc) FROM %s ORDER BY id",
	"SELECT id, HEX(pos), HEX(area), HEX(path), HEX(g), HEX(ST_AsBinary(shape)) FROM %s ORDER BY id",
	"SELECT id, ST_X(pos), ST_Y(pos), ST_SRID(pos), ST_GeometryType(g) FROM %s ORDER BY id",
	// Conditions a SPATIAL index could serve: the rows are the same.
	"SELECT id FROM %s WHERE ST_Intersects(pos, ST_GeomFromText('POLYGON((0 0,6 0,6 6,0 6,0 0))')) ORDER BY id",
	"SELECT id FROM %s WHERE ST_Within(pos, ST_GeomFromText('POLYGON((-1 -1,3 -1,3 4,-1 4,-1 -1))')) ORDER BY id",
	"SELECT id FROM %s WHERE ST_Intersects(shape, POINT(100, -20)) ORDER BY id",
	"SELECT id FROM %s WHERE ST_Contains(area, pos) ORDER BY id",
	"SELECT a.id, b.id FROM %[1]s a JOIN %[1]s b ON ST_Intersects(a.shape, b.pos) ORDER BY a.id, b.id",
	"SELECT id, ROUND(ST_Distance(pos, POINT(0, 0)), 6), ST_Length(path) FROM %s ORDER BY id",
}

// spatialErrors are statements both refuse with the same error number.
var spatialErrors = []struct {
	q   string
	num uint16
}{
	{"INSERT INTO %s (id, pos, shape) VALUES (9, 'not a geometry', POINT(0, 0))", 1416},
	{"INSERT INTO %s (id, pos, shape) VALUES (9, NULL, POINT(0, 0))", 1048},
	{"CREATE SPATIAL INDEX g_k ON %s (g)", 1252},
}

// TestSpatialAgainstMariaDB: geometry columns of every kind and SPATIAL
// indexes, made, filled, changed and read on Lockstep as on MariaDB 10.11
// (the same answers to the same statements, SHOW INDEX included), kept
// across a restart, and replicated: a MariaDB replica of the Lockstep
// primary ends with the table MariaDB makes from the same statements.
func TestSpatialAgainstMariaDB(t *testing.T) {
	mport := fixedPort(t)
	dir := t.TempDir()
	s := startServer(t, dir, "--mariadb-port", strconv.Itoa(mport))
	src := s.db("")
	m := startMariaDB(t, 2)
	mdb := m.db()
	followLockstep(t, mdb, mport)
	mustExec(t, mdb, "CREATE DATABASE direct")
	mustExec(t, src, "CREATE DATABASE geo")
	mustExec(t, src, fmt.Sprintf(spatialSchema, "geo.t"))
	mustExec(t, mdb, fmt.Sprintf(spatialSchema, "direct.t"))
	for _, q := range spatialRows {
		mustExec(t, src, fmt.Sprintf(q, "geo.t"))
		mustExec(t, mdb, fmt.Sprintf(q, "direct.t"))
	}
	for _, e := range spatialErrors {
		for _, side := range []struct {
			db    *sql.DB
			table string
		}{{src, "geo.t"}, {mdb, "direct.t"}} {
			_, err := side.db.Exec(fmt.Sprintf(e.q, side.table))
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != e.num {
				t.Errorf("%s on %s: %v, want error %d", e.q, side.table, err, e.num)
			}
		}
	}
	compare := func(when string) {
		t.Helper()
		for _, q := range spatialQueries {
			l, r := tableText(t, src, fmt.Sprintf(q, "geo.t")), tableText(t, mdb, fmt.Sprintf(q, "direct.t"))
			if l != r {
				t.Errorf("%s: %s\nLockstep:\n%s\nMariaDB:\n%s", when, q, l, r)
			}
		}
		// The indexes, as SHOW INDEX lists them (MariaDB's cardinality
		// and sub-part differ by engine: not compared).
		if l, r := indexList(t, src, "geo.t"), indexList(t, mdb, "direct.t"); l != r {
			t.Errorf("%s: SHOW INDEX\nLockstep:\n%s\nMariaDB:\n%s", when, l, r)
		}
	}
	// CREATE TABLE ... LIKE copies the SPATIAL indexes.
	mustExec(t, src, "CREATE TABLE geo.t2 LIKE geo.t")
	mustExec(t, mdb, "CREATE TABLE direct.t2 LIKE direct.t")
	if l, r := indexList(t, src, "geo.t2"), indexList(t, mdb, "direct.t2"); l != r {
		t.Errorf("CREATE TABLE ... LIKE: SHOW INDEX\nLockstep:\n%s\nMariaDB:\n%s", l, r)
	}
	compare("before a restart")
	s.stop()
	s.start()
	src = s.db("")
	compare("after a restart")

	// The replica: wait for everything the primary wrote.
	waitMariaDBReplica(t, src, mdb, 60*time.Second)
	for _, q := range spatialQueries[:3] {
		l, r := tableText(t, mdb, fmt.Sprintf(q, "geo.t")), tableText(t, mdb, fmt.Sprintf(q, "direct.t"))
		if l != r {
			t.Errorf("replica: %s\nreplicated:\n%s\nMariaDB's own:\n%s", q, l, r)
		}
	}
	for _, table := range []string{"t", "t2"} {
		if l, r := indexList(t, mdb, "geo."+table), indexList(t, mdb, "direct."+table); l != r {
			t.Errorf("replica: SHOW INDEX of %s\nreplicated:\n%s\nMariaDB's own:\n%s", table, l, r)
		}
	}
}

// indexList is SHOW INDEX of table: each index's name, column, type and
// comment, one line each.
func indexList(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var out []string
	for _, ix := range queryMaps(t, db, "SHOW INDEX FROM "+table) {
		out = append(out, strings.Join([]string{ix["Key_name"], ix["Column_name"], ix["Index_type"], ix["Index_comment"]}, "|"))
	}
	return strings.Join(out, "\n")
}
