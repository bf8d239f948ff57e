package sqlengine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// sqlMeta is what the SQL layer keeps in storage.TableDef.SQL: enough to
// rebuild the GMS schema after a restart (types and defaults as SQL text,
// re-parsed by GMS).
type sqlMeta struct {
	Columns     []colMeta   `json:"columns"`
	Comment     string      `json:"comment,omitempty"`
	ForeignKeys []fkMeta    `json:"foreign_keys,omitempty"` // foreignkeys.go
	Checks      []checkMeta `json:"checks,omitempty"`       // checks.go
}

type colMeta struct {
	Type          string `json:"type"`
	Default       string `json:"default,omitempty"`
	OnUpdate      string `json:"on_update,omitempty"`
	AutoIncrement bool   `json:"auto_increment,omitempty"`
	Comment       string `json:"comment,omitempty"`
	// Generated is a generated column's expression (go-mysql-server's
	// text of it); Virtual says VIRTUAL rather than STORED.
	Generated string `json:"generated,omitempty"`
	Virtual   bool   `json:"virtual,omitempty"`
}

// newTableDef builds the storage definition of a new table.
func newTableDef(ctx *sql.Context, cat sql.Catalog, id uint64, db, name string, sch sql.PrimaryKeySchema, coll sql.CollationID, comment string) (*storage.TableDef, error) {
	def := &storage.TableDef{ID: id, DB: db, Name: name, PK: append([]int(nil), sch.PkOrdinals...), Collation: uint16(coll), NextIndex: 1}
	meta := sqlMeta{Comment: comment}
	for _, c := range sch.Schema {
		rc, err := storageColumn(c)
		if err != nil {
			return nil, err
		}
		applyDeclared(ctx, &rc, c.Name) // coldecl.go
		def.Columns = append(def.Columns, rc)
		cm := colMeta{Type: typeText(c.Type), AutoIncrement: c.AutoIncrement, Comment: c.Comment}
		if st, ok := c.Type.(sql.StringType); ok && !strings.Contains(strings.ToUpper(cm.Type), "COLLATE") && !isBinaryString(c.Type) {
			cm.Type += " COLLATE " + st.Collation().Name()
		}
		if c.Default != nil {
			cm.Default = c.Default.String()
		}
		if c.OnUpdate != nil {
			cm.OnUpdate = c.OnUpdate.String()
		}
		if c.Generated != nil {
			cm.Generated, cm.Virtual = generatedText(c.Generated), isVirtual(c)
		}
		// The table is reopened from these strings: one that does not
		// parse back would make it unreadable, so refuse it now.
		for _, e := range []string{cm.Default, cm.OnUpdate} {
			if e == "" {
				continue
			}
			if _, err := parseColumnDefault(ctx, cat, e); err != nil {
				return nil, errNotSupported(fmt.Sprintf("the DEFAULT or ON UPDATE expression %s of column `%s` (%v)", e, c.Name, err))
			}
		}
		meta.Columns = append(meta.Columns, cm)
	}
	for _, i := range def.PK {
		switch def.Columns[i].Type {
		case row.TypeJSON:
			return nil, errJSONKey(def.Columns[i].Name)
		case row.TypeGeometry:
			return nil, errGeometryKey(&def.Columns[i])
		}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	def.SQL = b
	return def, nil
}

// gmsSchema rebuilds the GMS schema of a stored table.
func gmsSchema(ctx *sql.Context, cat sql.Catalog, def *storage.TableDef) (sql.PrimaryKeySchema, error) {
	var meta sqlMeta
	if err := json.Unmarshal(def.SQL, &meta); err != nil {
		return sql.PrimaryKeySchema{}, fmt.Errorf("table %s: bad SQL metadata: %w", def.Name, err)
	}
	if len(meta.Columns) != len(def.Columns) {
		return sql.PrimaryKeySchema{}, fmt.Errorf("table %s: SQL metadata has %d columns, storage %d", def.Name, len(meta.Columns), len(def.Columns))
	}
	isPK := map[int]bool{}
	for _, i := range def.PK {
		isPK[i] = true
	}
	sch := make(sql.Schema, len(def.Columns))
	for i, rc := range def.Columns {
		cm := meta.Columns[i]
		typ, err := planbuilder.ParseColumnTypeString(cm.Type)
		if err != nil {
			return sql.PrimaryKeySchema{}, fmt.Errorf("table %s column %s: type %q: %w", def.Name, rc.Name, cm.Type, err)
		}
		c := &sql.Column{
			Name:           rc.Name,
			Type:           typ,
			Nullable:       rc.Nullable,
			Source:         def.Name,
			DatabaseSource: def.DB,
			PrimaryKey:     isPK[i],
			AutoIncrement:  cm.AutoIncrement,
			Comment:        cm.Comment,
		}
		if cm.AutoIncrement {
			c.Extra = "auto_increment"
		}
		if cm.Generated != "" {
			// Virtual stays false, VIRTUAL or not: the value is stored
			// (generated.go), and go-mysql-server would otherwise read the
			// table through a wrapper that computes the column again and
			// hides the table's CHECK constraints. Extra says which it is.
			c.Generated = generatedValue(cm.Generated, typ, rc.Nullable)
			c.Extra = "STORED GENERATED"
			if cm.Virtual {
				c.Extra = virtualGenerated
			}
		}
		if cm.Default != "" {
			d, err := parseColumnDefault(ctx, cat, cm.Default)
			if err != nil {
				return sql.PrimaryKeySchema{}, fmt.Errorf("table %s column %s: default %q: %w", def.Name, rc.Name, cm.Default, err)
			}
			d.OutType, d.ReturnNil = typ, rc.Nullable
			c.Default = d
		}
		if cm.OnUpdate != "" {
			d, err := parseColumnDefault(ctx, cat, cm.OnUpdate)
			if err != nil {
				return sql.PrimaryKeySchema{}, fmt.Errorf("table %s column %s: on update %q: %w", def.Name, rc.Name, cm.OnUpdate, err)
			}
			d.OutType, d.ReturnNil = typ, rc.Nullable
			c.OnUpdate = d
		}
		sch[i] = c
	}
	return sql.NewPrimaryKeySchema(sch, def.PK...), nil
}

// columnsOf resolves index column names to positions.
func columnsOf(def *storage.TableDef, cols []sql.IndexColumn) ([]int, error) {
	out := make([]int, 0, len(cols))
	for _, ic := range cols {
		if ic.Length > 0 {
			return nil, errNotSupported("index prefix lengths")
		}
		found := -1
		for i, c := range def.Columns {
			if strings.EqualFold(c.Name, ic.Name) {
				found = i
			}
		}
		if found < 0 {
			return nil, sql.ErrKeyColumnDoesNotExist.New(ic.Name)
		}
		switch def.Columns[found].Type {
		case row.TypeJSON:
			return nil, errJSONKey(def.Columns[found].Name)
		case row.TypeBlob:
			return nil, errNotSupported("indexes on BLOB/TEXT columns without a prefix")
		case row.TypeGeometry:
			return nil, errGeometryKey(&def.Columns[found])
		}
		out = append(out, found)
	}
	return out, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// parseColumnDefault turns a stored DEFAULT or ON UPDATE expression back
// into GMS's form. It does what planbuilder.StringToColumnDefaultValue does,
// which in this GMS version formats the parsed expression with %s before
// parsing it again, and so fails on any default that is not a literal
// (CURRENT_TIMESTAMP, (UUID()), (1 + 2)).
func parseColumnDefault(ctx *sql.Context, cat sql.Catalog, s string) (*sql.ColumnDefaultValue, error) {
	stmt, err := sqlparser.Parse("SELECT " + s)
	if err != nil {
		return nil, err
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || len(sel.SelectExprs) != 1 {
		return nil, fmt.Errorf("default %q is not one expression", s)
	}
	ae, ok := sel.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return nil, fmt.Errorf("default %q is not an expression", s)
	}
	node, _, _, _, err := planbuilder.New(ctx, cat, nil).Parse("SELECT "+s, nil, false)
	if err != nil {
		return nil, err
	}
	proj, ok := node.(*plan.Project)
	if !ok || len(proj.Projections) != 1 {
		return nil, fmt.Errorf("default %q did not plan as one expression", s)
	}
	e := proj.Projections[0]
	if a, ok := e.(*expression.Alias); ok {
		e = a.Child
	}
	_, paren := ae.Expr.(*sqlparser.ParenExpr)
	var literal bool
	switch x := e.(type) {
	case *expression.UnaryMinus:
		_, literal = x.Child.(*expression.Literal)
	case *expression.UnresolvedFunction:
	default:
		literal = len(e.Children()) == 0 && !strings.HasPrefix(s, "(")
	}
	return planbuilder.ExpressionToColumnDefaultValue(e, literal, paren), nil
}
