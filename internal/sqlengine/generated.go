package sqlengine

// Generated columns (GENERATED ALWAYS AS (expr) VIRTUAL | STORED).
//
// go-mysql-server computes them: on INSERT and UPDATE it evaluates the
// expression and hands the table the full row. Lockstep stores every
// column's value, VIRTUAL ones too (so they stay indexable and a row image
// is the whole row, as MySQL logs it), and keeps the expression's text in
// the table's SQL metadata; the table's schema gives it back to
// go-mysql-server unresolved, to be resolved against the table when a
// statement uses it, as it does with a CREATE TABLE's own. The schema
// marks no column Virtual: go-mysql-server would read such a table through
// a wrapper that computes the column again on every read and that hides
// the table's CHECK constraints (they were silently not enforced). The
// column's Extra ("VIRTUAL GENERATED") keeps what it was declared as, for
// SHOW CREATE TABLE and information_schema (isVirtual).
//
// The fast path takes no write on such a table (writesNeedGMS).
//
// ALTER TABLE rewrites a table with generated columns when their values
// carry over (keepsGenerated); adding one, or changing its expression,
// would need its values computed row by row in the rewrite and is
// refused with 1235.

import (
	"bytes"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// virtualGenerated is the Extra of a VIRTUAL generated column.
const virtualGenerated = "VIRTUAL GENERATED"

// isVirtual says whether c is a VIRTUAL generated column: declared so in
// the statement (Virtual) or read from a table (Extra; see gmsSchema).
func isVirtual(c *sql.Column) bool {
	return c.Generated != nil && (c.Virtual || c.Extra == virtualGenerated)
}

// generatedText is the text kept for a generated column's expression.
func generatedText(g *sql.ColumnDefaultValue) string {
	s := g.String()
	if !strings.HasPrefix(s, "(") {
		s = "(" + s + ")"
	}
	return s
}

// generatedValue is a stored generated expression as go-mysql-server
// takes it in a table's schema: unresolved, resolved per statement.
func generatedValue(expr string, typ sql.Type, nullable bool) *sql.ColumnDefaultValue {
	g := sql.NewUnresolvedColumnDefaultValue(expr)
	g.OutType, g.ReturnNil, g.Literal, g.Parenthesized = typ, nullable, false, true
	return g
}

// keepsGenerated refuses a rewrite of old into sch (new column i from old
// column sources[i], -1 for the added one) that adds a generated column
// or changes a generated column's expression: the rewrite copies values,
// it does not compute them.
func keepsGenerated(old *storage.TableDef, sch sql.Schema, sources []int) error {
	var meta sqlMeta
	if err := jsonUnmarshal(old.SQL, &meta); err != nil {
		return err
	}
	for i, c := range sch {
		if c.Generated == nil {
			continue
		}
		src := sources[i]
		if src < 0 || src >= len(meta.Columns) {
			return errNotSupported("adding a generated column with ALTER TABLE")
		}
		if was := meta.Columns[src]; was.Generated != generatedText(c.Generated) || was.Virtual != isVirtual(c) {
			return errNotSupported("making a column generated or changing its expression with ALTER TABLE")
		}
	}
	return nil
}

// writesNeedGMS reports whether writes to the table must go through
// go-mysql-server: it has CHECK constraints (checks.go) or generated
// columns, which the fast path neither checks nor computes.
func writesNeedGMS(def *storage.TableDef) bool {
	return bytes.Contains(def.SQL, []byte(`"generated"`)) || len(tableChecks(def)) > 0
}
