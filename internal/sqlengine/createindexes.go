package sqlengine

// A CREATE TABLE's own indexes, in the table it creates.
//
// go-mysql-server creates a table, then each of its secondary indexes
// (CreateIndex), then its foreign keys and checks, so each used to be a
// catalog change and a binlog transaction of its own: a crash between
// them left the table without its later indexes, and a replica of a MySQL
// or MariaDB source, which must apply one source transaction as one,
// refused any CREATE TABLE with an inline KEY. Lockstep reads the
// statement's KEY and UNIQUE KEY clauses itself (the session keeps the
// statement being run) and creates the table with those indexes in one
// catalog change; go-mysql-server's CreateIndex calls for them then find
// them there (claimIndex) and change nothing. An index whose columns it
// cannot take as they are (a prefix length, a BLOB) is left to
// go-mysql-server's path and its error.
//
// The names are MySQL's (and go-mysql-server's): an index without a name
// takes its first column's, then _2, _3...

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// noteCreate remembers the CREATE TABLE being run (nil for any other
// statement), and forgets the indexes a previous one left unclaimed.
func (s *Session) noteCreate(st ast.Statement) {
	s.createSpec, s.createLike = nil, nil
	clear(s.embedded)
	clear(s.embeddedSpatial)
	d, ok := st.(*ast.DDL)
	switch {
	case !ok || d.Action != ast.CreateStr:
	case d.TableSpec != nil && d.OptLike == nil:
		s.createSpec = d
	case d.OptLike != nil && len(d.OptLike.LikeTables) == 1:
		s.createLike = d
	}
}

// likeSpatial returns the SPATIAL indexes of the table a CREATE TABLE ...
// LIKE being run copies, if it creates table db.name. go-mysql-server
// copies a table's indexes as plain ones (it drops SPATIAL): they are
// made with the table and claimed by column (claimSpatial).
func (s *Session) likeSpatial(ctx *sql.Context, db, name string) []spatialMeta {
	d := s.createLike
	if d == nil || !strings.EqualFold(d.Table.Name.String(), name) {
		return nil
	}
	if q := d.Table.DbQualifier.String(); q != "" && !strings.EqualFold(q, db) {
		return nil
	}
	like := d.OptLike.LikeTables[0]
	ldb := like.DbQualifier.String()
	if ldb == "" {
		ldb = ctx.GetCurrentDatabase()
	}
	t, ok := s.eng.store.Table(ldb, like.Name.String())
	if !ok {
		return nil
	}
	return tableSpatial(t.Def)
}

// createIndexes returns the secondary indexes of the CREATE TABLE being
// run, if it creates table db.name, under def (whose columns are set):
// the indexes storage keeps, and the SPATIAL ones (spatial.go). ok is
// false when any of them is one go-mysql-server's path must make. An index
// the table cannot have is an error before the table is made (a geometry
// in a plain key, say): go-mysql-server's path would find it only after,
// and leave the table.
func (s *Session) createIndexes(db, name string, def *storage.TableDef) (ixs []storage.IndexDef, spatial []spatialMeta, ok bool, err error) {
	d := s.createSpec
	if d == nil || !strings.EqualFold(d.Table.Name.String(), name) {
		return nil, nil, false, nil
	}
	if q := d.Table.DbQualifier.String(); q != "" && !strings.EqualFold(q, db) {
		return nil, nil, false, nil
	}
	taken := map[string]bool{}
	for _, ix := range d.TableSpec.Indexes {
		if ix.Info != nil && !ix.Info.Primary && ix.Info.Name.String() != "" {
			taken[strings.ToLower(ix.Info.Name.String())] = true
		}
	}
	for _, ix := range d.TableSpec.Indexes {
		if ix.Info == nil || ix.Info.Primary {
			continue
		}
		if ix.Info.Fulltext || ix.Info.Vector || len(ix.Columns) == 0 {
			return nil, nil, false, nil
		}
		var cols []sql.IndexColumn
		for _, c := range ix.Columns {
			if c.Length != nil {
				return nil, nil, false, nil
			}
			cols = append(cols, sql.IndexColumn{Name: c.Column.String()})
		}
		var pos []int
		if ix.Info.Spatial {
			var col int
			col, err = spatialColumn(def, cols)
			pos = []int{col}
		} else {
			pos, err = columnsOf(def, cols)
		}
		if err != nil {
			return nil, nil, false, err
		}
		name := ix.Info.Name.String()
		if name == "" {
			name = def.Columns[pos[0]].Name
			for i := 2; taken[strings.ToLower(name)]; i++ {
				name = def.Columns[pos[0]].Name + "_" + strconv.Itoa(i)
			}
		}
		taken[strings.ToLower(name)] = true
		comment := ""
		for _, o := range ix.Options {
			if strings.EqualFold(o.Name, "comment") && o.Value != nil {
				comment = string(o.Value.Val)
			}
		}
		if ix.Info.Spatial {
			spatial = append(spatial, spatialMeta{Name: name, Column: pos[0], Comment: comment})
			continue
		}
		ixs = append(ixs, storage.IndexDef{ID: uint32(len(ixs) + 1), Name: name, Columns: pos, Unique: ix.Info.Unique, Comment: comment})
	}
	return ixs, spatial, true, nil
}

// claimSpatial is claimIndex for a SPATIAL index on column col.
func (s *Session) claimSpatial(id uint64, col int) bool {
	for i, c := range s.embeddedSpatial[id] {
		if c == col {
			s.embeddedSpatial[id] = slices.Delete(s.embeddedSpatial[id], i, i+1)
			return true
		}
	}
	return false
}

// claimIndex reports whether an index go-mysql-server asks to create on
// table id, with these columns, is one the statement's CREATE TABLE made
// already; it is then claimed, so that two alike are matched one to one.
func (s *Session) claimIndex(id uint64, cols []int, unique bool) bool {
	for i, ix := range s.embedded[id] {
		if ix.Unique == unique && slices.Equal(ix.Columns, cols) {
			s.embedded[id] = slices.Delete(s.embedded[id], i, i+1)
			return true
		}
	}
	return false
}
