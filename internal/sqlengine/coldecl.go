package sqlengine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/row"
)

// Column declarations go-mysql-server's types drop, kept by Lockstep:
//
//   - TIME's fractional digits. A column declared TIME holds whole
//     seconds, as in MySQL: a value with a fraction is rounded when
//     stored ('10:00:59.5' is 10:01:00), and a TIME(n) column's to n
//     digits. go-mysql-server has one TIME type, with microseconds, for
//     TIME and TIME(6) alike, and refuses TIME(1) to TIME(5): the
//     statement gives it TIME(6) for those. The storage column's Fsp: the
//     declared digits, 6 for a column whose declaration was not seen (a
//     table made before this was so).
//   - FLOAT(M,D) and DOUBLE(M,D) (MySQL's deprecated forms): a value is
//     rounded to D decimals when stored, and one that needs more than M
//     digits is out of range (1264, or the nearest value in range with a
//     warning outside strict mode). go-mysql-server reads them as FLOAT
//     and DOUBLE (and FLOAT(M,D) with M past 24 as DOUBLE): the
//     statement is given plain FLOAT or DOUBLE. The storage column's
//     Precision and Scale: M and D, 0 for a column without.
//
// The declarations are read from the statement: every parse of a
// statement that defines columns notes them (noteDeclared) on the
// session, and each command begins with none. A prepared statement's
// executions are not parsed, so COM_STMT_PREPARE and PREPARE of a
// statement declaring such a column are refused (1295). Then:
//
//   - newTableDef (and a temporary table) takes them for a new column;
//   - an ALTER TABLE that rewrites the table keeps the ones of the columns
//     it does not redefine (alter.go);
//   - toStorage rounds a value to its column's declaration, and
//     Session.checkWrite refuses (or clips) one out of a FLOAT(M,D)'s
//     range;
//   - the CREATE and ALTER TABLE statements logged, SHOW CREATE TABLE
//     and SHOW COLUMNS write the column as declared (columnDisplay), so
//     that a replica makes the column the row images are encoded for and
//     an ORM reads the type declared;
//   - a result's column definition carries a FLOAT(M,D)'s D, and a
//     TIME's digits, as its decimals, and a text result writes the
//     values with them ('13.3700', '10:00:00.000000' for a TIME(6))
//     (ColumnDecimals, used by the server);
//   - information_schema.COLUMNS describes them as declared
//     (declaredColumns).

// columnDecl is what a statement declares of a column beyond its
// go-mysql-server type.
type columnDecl struct {
	time  bool // a TIME, of fsp digits
	fsp   int
	float bool // a FLOAT(M,D) or DOUBLE(M,D)
	m, d  int
}

// noteDeclared notes the declarations of st, a statement parsed, when it
// defines a table's columns (at every such parse, nested or not: a
// statement of several has each parsed in turn), and gives
// go-mysql-server plain FLOAT and DOUBLE for FLOAT(M,D) and DOUBLE(M,D).
func noteDeclared(ctx *sql.Context, st ast.Statement) error {
	if len(ddlsOf(st)) == 0 {
		return nil
	}
	s := sessionOf(ctx)
	decl, err := declaredColumns(ctx, s, st)
	if err != nil {
		return err
	}
	if s != nil {
		s.declared = decl
	}
	return nil
}

// declaredColumns are the declarations of the columns st defines, by
// lower-case name (nil if none). CREATE TABLE ... LIKE takes its source
// table's.
func declaredColumns(ctx *sql.Context, s *Session, st ast.Statement) (map[string]columnDecl, error) {
	var out map[string]columnDecl
	set := func(name string, d columnDecl) {
		if out == nil {
			out = map[string]columnDecl{}
		}
		out[strings.ToLower(name)] = d
	}
	for _, d := range ddlsOf(st) {
		if d == nil {
			continue
		}
		if d.OptLike != nil && len(d.OptLike.LikeTables) == 1 && s != nil {
			like := d.OptLike.LikeTables[0]
			db := like.DbQualifier.String()
			if db == "" {
				db = ctx.GetCurrentDatabase()
			}
			if t, ok := s.eng.store.Table(db, like.Name.String()); ok {
				for _, c := range t.Def.Columns {
					switch {
					case c.Type == row.TypeTime2:
						set(c.Name, columnDecl{time: true, fsp: c.Fsp})
					case isFloatColumn(c) && c.Precision > 0:
						set(c.Name, columnDecl{float: true, m: c.Precision, d: c.Scale})
					}
				}
			}
		}
		if d.TableSpec == nil {
			continue
		}
		for _, c := range d.TableSpec.Columns {
			name := c.Name.String()
			switch t := strings.ToLower(c.Type.Type); {
			case t == "time":
				fsp := 0
				if c.Type.Length != nil {
					n, err := strconv.Atoi(string(c.Type.Length.Val))
					if err != nil {
						continue
					}
					fsp = n
				}
				set(name, columnDecl{time: true, fsp: fsp})
				if fsp >= 1 && fsp < maxTimePrecision {
					// go-mysql-server refuses TIME(1) to TIME(5): it gets
					// TIME(6), the column keeps its digits.
					c.Type.Length = ast.NewIntVal([]byte(strconv.Itoa(maxTimePrecision)))
				}
			case isFloatTypeName(t) && c.Type.Scale != nil && c.Type.Length != nil:
				m, err1 := strconv.Atoi(string(c.Type.Length.Val))
				dd, err2 := strconv.Atoi(string(c.Type.Scale.Val))
				if err1 != nil || err2 != nil {
					continue
				}
				if err := checkFloatMD(name, m, dd); err != nil {
					return nil, err
				}
				set(name, columnDecl{float: true, m: m, d: dd})
				// go-mysql-server gets the plain type.
				c.Type.Length, c.Type.Scale = nil, nil
			}
		}
	}
	return out, nil
}

// declaresBeyondTypes says whether decl holds a declaration a new column
// would not have without it: a FLOAT(M,D), a TIME of fewer than six
// digits. (A prepared CREATE or ALTER TABLE with one is refused: its
// executions are not parsed again.)
func declaresBeyondTypes(decl map[string]columnDecl) bool {
	for _, d := range decl {
		if d.float || (d.time && d.fsp != 6) {
			return true
		}
	}
	return false
}

// isFloatTypeName says whether t (lower case) names FLOAT or DOUBLE.
func isFloatTypeName(t string) bool {
	switch t {
	case "float", "double", "real", "double precision", "float4", "float8":
		return true
	}
	return false
}

// isFloatColumn says whether c is a FLOAT or DOUBLE column.
func isFloatColumn(c row.Column) bool { return c.Type == row.TypeFloat || c.Type == row.TypeDouble }

// checkFloatMD refuses a FLOAT(M,D) or DOUBLE(M,D) MySQL refuses.
func checkFloatMD(col string, m, d int) error {
	switch {
	case d > 30:
		return mysql.NewSQLError(1425, "42000", "Too big scale %d specified for column '%s'. Maximum is 30.", d, col) // ER_TOO_BIG_SCALE
	case m > 255:
		return mysql.NewSQLError(1426, "42000", "Too big precision %d specified for column '%s'. Maximum is 255.", m, col) // ER_TOO_BIG_PRECISION
	case m < d || m < 1:
		return mysql.NewSQLError(1427, "42000", "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '%s').", col) // ER_M_BIGGER_THAN_D
	}
	return nil
}

// declaredColumn is the current statement's declaration of column name.
func declaredColumn(ctx *sql.Context, name string) (columnDecl, bool) {
	if s := sessionOf(ctx); s != nil {
		d, ok := s.declared[strings.ToLower(name)]
		return d, ok
	}
	return columnDecl{}, false
}

// applyDeclared gives rc, the storage column of a new column named name,
// what the current statement declares of it: a TIME's digits (6 when
// not declared), a FLOAT(M,D)'s M and D.
func applyDeclared(ctx *sql.Context, rc *row.Column, name string) {
	d, ok := declaredColumn(ctx, name)
	switch {
	case rc.Type == row.TypeTime2:
		rc.Fsp = 6
		if ok && d.time && d.fsp >= 0 && d.fsp <= 6 {
			rc.Fsp = d.fsp
		}
	case isFloatColumn(*rc) && ok && d.float:
		rc.Precision, rc.Scale = d.m, d.d
	}
}

// keepDeclared gives nc, a column of a table rewritten from old column
// oc, oc's declaration when the statement does not declare the column
// and both are of its kind.
func keepDeclared(ctx *sql.Context, nc *row.Column, oc row.Column) {
	if _, ok := declaredColumn(ctx, nc.Name); ok {
		return
	}
	switch {
	case nc.Type == row.TypeTime2 && oc.Type == row.TypeTime2:
		nc.Fsp = oc.Fsp
	case nc.Type == oc.Type && isFloatColumn(*nc):
		nc.Precision, nc.Scale = oc.Precision, oc.Scale
	}
}

// floatLimit is the largest value a FLOAT(m,d) holds: m-d nines before
// the point and d after, computed as roundFloat computes its values, so
// that a value clipped to it rounds to itself again.
func floatLimit(m, d int) float64 {
	return (math.Pow10(m) - 1) / math.Pow10(d)
}

// roundFloat is v rounded to c's D decimals (as MySQL's rint) and within
// its range, for a FLOAT(M,D) or DOUBLE(M,D) column c; out says it was
// past the range.
func roundFloat(c *row.Column, v float64) (r float64, out bool) {
	if c.Precision == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v, false
	}
	p := math.Pow10(c.Scale)
	r = math.RoundToEven(v*p) / p
	if lim := floatLimit(c.Precision, c.Scale); math.Abs(r) > lim {
		return math.Copysign(lim, r), true
	}
	if r == 0 {
		r = 0 // not -0
	}
	return r, false
}

// checkFloatRange is the check strict mode makes of a value written to a
// FLOAT(M,D) or DOUBLE(M,D) column: an error, a warning, or nil.
func (s *Session) checkFloatRange(cols []row.Column, vals sql.Row) error {
	for i := range cols {
		c := &cols[i]
		if !isFloatColumn(*c) || c.Precision == 0 || i >= len(vals) {
			continue
		}
		var v float64
		switch x := vals[i].(type) {
		case float32:
			v = float64(x)
		case float64:
			v = x
		default:
			continue
		}
		if _, out := roundFloat(c, v); !out {
			continue
		}
		if s.escalates(s.sqlMode()) {
			return mysql.NewSQLError(mysql.ERWarnDataOutOfRange, "22003", "Out of range value for column '%s' at row %d", c.Name, s.strict.rows)
		}
		s.BaseSession.Warn(&sql.Warning{Level: "Warning", Code: mysql.ERWarnDataOutOfRange,
			Message: fmt.Sprintf("Out of range value for column '%s' at row %d", c.Name, s.strict.rows)})
	}
	return nil
}

// ColumnDecimals is the decimals MySQL gives column col of db.table in a
// result of connection connID, where go-mysql-server's type does not: a
// FLOAT(M,D)'s D (its values are written with D decimals), a TIME's
// fractional digits. go-mysql-server names a result column by its alias
// and its table by the table's alias: a name the statement gives as an
// alias (noteResultNames) is not looked up, lest it be another column's.
func (e *Engine) ColumnDecimals(connID uint32, db, table, col string) (int, bool) {
	var cols []row.Column
	if v, ok := e.sessions.Load(connID); ok {
		s := v.(*Session)
		if a := s.resultAliases; a[strings.ToLower(table)] || a[strings.ToLower(col)] {
			return 0, false
		}
		if t, ok := s.tempTable(db, table); ok {
			cols = t.cols // a temporary table hides the table of its name
		}
	}
	if cols == nil {
		t, ok := e.store.Table(db, table)
		if !ok {
			return 0, false
		}
		cols = t.Def.Columns
	}
	for _, c := range cols {
		if strings.EqualFold(c.Name, col) {
			switch {
			case isFloatColumn(c) && c.Precision > 0:
				return c.Scale, true
			case c.Type == row.TypeTime2:
				return c.Fsp, true
			}
			return 0, false
		}
	}
	return 0, false
}

// noteResultNames records the aliases of st's columns and tables, if it
// is a SELECT (see ColumnDecimals).
func (s *Session) noteResultNames(st ast.Statement) {
	clear(s.resultAliases)
	sel, ok := st.(*ast.Select)
	if !ok {
		return
	}
	note := func(name string) {
		if name == "" {
			return
		}
		if s.resultAliases == nil {
			s.resultAliases = map[string]bool{}
		}
		s.resultAliases[strings.ToLower(name)] = true
	}
	for _, e := range sel.SelectExprs {
		if ae, ok := e.(*ast.AliasedExpr); ok && !ae.As.IsEmpty() {
			if cn, ok := ae.Expr.(*ast.ColName); !ok || !cn.Name.EqualString(ae.As.String()) {
				note(ae.As.String())
			}
		}
	}
	var tables func(te ast.TableExpr)
	tables = func(te ast.TableExpr) {
		switch t := te.(type) {
		case *ast.AliasedTableExpr:
			note(t.As.String())
		case *ast.JoinTableExpr:
			tables(t.LeftExpr)
			tables(t.RightExpr)
		case *ast.ParenTableExpr:
			for _, e := range t.Exprs {
				tables(e)
			}
		}
	}
	for _, te := range sel.From {
		tables(te)
	}
}

// maxTime is TIME's largest value, 838:59:59.
const maxTime = 838*time.Hour + 59*time.Minute + 59*time.Second

// roundTime is d rounded to fsp fractional digits, half away from zero,
// as MySQL stores a TIME(fsp) value, within TIME's range.
func roundTime(d time.Duration, fsp int) time.Duration {
	if fsp >= 6 || fsp < 0 {
		return d
	}
	unit := time.Microsecond
	for range 6 - fsp {
		unit *= 10
	}
	neg := d < 0
	if neg {
		d = -d
	}
	q := d / unit
	if (d%unit)*2 >= unit {
		q++
	}
	d = min(q*unit, maxTime)
	if neg {
		d = -d
	}
	return d
}

// roundTimespan is v, a go-mysql-server TIME value, rounded to fsp.
func roundTimespan(v any, fsp int) any {
	ts, ok := v.(types.Timespan)
	if !ok || fsp >= 6 {
		return v
	}
	return types.Timespan(roundTime(time.Duration(ts)*time.Microsecond, fsp) / time.Microsecond)
}

// columnDisplay is c, a column of a table whose storage column is rc,
// with the type MySQL shows for it where go-mysql-server's differs: `time`
// for a TIME of whole seconds, `float(7,4)`.
func columnDisplay(c *sql.Column, rc row.Column) *sql.Column {
	text, ok := declaredTypeText(rc)
	if !ok {
		return c
	}
	cc := *c
	cc.Type = displayType{columnType: c.Type, text: text}
	return &cc
}

// declaredTypeText is the type of rc as MySQL writes it, where
// go-mysql-server writes another.
func declaredTypeText(rc row.Column) (string, bool) {
	switch {
	case rc.Type == row.TypeTime2 && rc.Fsp != 6:
		return timeTypeText(rc.Fsp), true
	case rc.Type == row.TypeFloat && rc.Precision > 0:
		return fmt.Sprintf("float(%d,%d)", rc.Precision, rc.Scale), true
	case rc.Type == row.TypeDouble && rc.Precision > 0:
		return fmt.Sprintf("double(%d,%d)", rc.Precision, rc.Scale), true
	}
	return "", false
}

// timeTypeText is MySQL's name of a TIME type with fsp digits.
func timeTypeText(fsp int) string {
	if fsp == 0 {
		return "time"
	}
	return "time(" + strconv.Itoa(fsp) + ")"
}

// displayType is a type written otherwise than go-mysql-server writes it,
// for statements' and SHOW CREATE TABLE's text only.
type displayType struct {
	columnType
	text string
}

func (t displayType) String() string { return t.text }

// showCreateDeclared builds SHOW CREATE TABLE n with each column
// columnDisplay writes otherwise written so, or returns nil when the table
// has none.
func (b boundedTopN) showCreateDeclared(ctx *sql.Context, n *plan.ShowCreateTable, r sql.Row) (sql.RowIter, error) {
	if n.IsView {
		return nil, nil
	}
	var cols []row.Column
	var sch sql.Schema
	if t := lockstepTable(n.Child); t != nil {
		cols, sch = t.st.Def.Columns, t.sch.Schema
	} else {
		transform.Inspect(n.Child, func(c sql.Node) bool {
			if tt, ok := readTable(c).(*tempTable); ok {
				cols, sch = tt.cols, tt.sch.Schema
			}
			return cols == nil
		})
	}
	var fix []string
	for i, c := range cols {
		text, ok := declaredTypeText(c)
		if !ok || i >= len(sch) {
			continue
		}
		fix = append(fix, "\n  "+quoteIdent(c.Name)+" "+sch[i].Type.String(), "\n  "+quoteIdent(c.Name)+" "+text)
	}
	if len(fix) == 0 {
		return nil, nil
	}
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	return &rewrittenText{RowIter: it, col: 1, r: strings.NewReplacer(fix...)}, nil
}

// rewrittenText is its rows with the string in column col rewritten.
type rewrittenText struct {
	sql.RowIter
	col int
	r   *strings.Replacer
}

func (w *rewrittenText) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := w.RowIter.Next(ctx)
	if err != nil || len(row) <= w.col {
		return row, err
	}
	if s, ok := row[w.col].(string); ok {
		row = row.Copy()
		row[w.col] = w.r.Replace(s)
	}
	return row, nil
}

// showColumnsDeclared builds SHOW [FULL] COLUMNS (DESCRIBE) n with the
// Type of each column columnDisplay writes otherwise written so (ORMs
// read a table's columns from it), or returns nil when the table has
// none.
func (b boundedTopN) showColumnsDeclared(ctx *sql.Context, n *plan.ShowColumns, r sql.Row) (sql.RowIter, error) {
	if beingBuilt(ctx, n) {
		return nil, nil
	}
	t := lockstepTable(n.Child)
	if t == nil {
		return nil, nil
	}
	fix := map[string]string{}
	for _, c := range t.st.Def.Columns {
		if text, ok := declaredTypeText(c); ok {
			fix[strings.ToLower(c.Name)] = text
		}
	}
	if len(fix) == 0 {
		return nil, nil
	}
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	return &declaredTypes{RowIter: it, fix: fix}, nil
}

// declaredTypes is SHOW COLUMNS' rows (Field, Type, ...) with the types
// in fix, by lower-case field name.
type declaredTypes struct {
	sql.RowIter
	fix map[string]string
}

func (d *declaredTypes) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := d.RowIter.Next(ctx)
	if err != nil || len(row) < 2 {
		return row, err
	}
	if name, ok := row[0].(string); ok {
		if text, ok := d.fix[strings.ToLower(name)]; ok {
			row = row.Copy()
			row[1] = text
		}
	}
	return row, nil
}

// declaredColumns is information_schema.COLUMNS with the columns
// described as declared: COLUMN_TYPE as columnDisplay writes it, a
// TIME's digits as its DATETIME_PRECISION, a FLOAT(M,D)'s or
// DOUBLE(M,D)'s M and D as its NUMERIC_PRECISION and NUMERIC_SCALE. The
// table's rows are corrected as they are read (the table itself stays
// go-mysql-server's, which its planner recognizes by type).
func (b boundedTopN) declaredColumns(ctx *sql.Context, n *plan.ResolvedTable, ct *information_schema.ColumnsTable, r sql.Row) (sql.RowIter, error) {
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	s := sessionOf(ctx)
	if s == nil {
		return it, nil
	}
	sch := ct.Schema(ctx)
	at := func(name string) int { return sch.IndexOfColName(name) }
	if len(n.Schema(ctx)) != len(sch) {
		return it, nil // not the table's whole rows
	}
	return &declaredColumnRows{RowIter: it, e: s.eng,
		schema: at("TABLE_SCHEMA"), table: at("TABLE_NAME"), column: at("COLUMN_NAME"), typ: at("COLUMN_TYPE"),
		precision: at("NUMERIC_PRECISION"), scale: at("NUMERIC_SCALE"), fsp: at("DATETIME_PRECISION")}, nil
}

type declaredColumnRows struct {
	sql.RowIter
	e                                                 *Engine
	schema, table, column, typ, precision, scale, fsp int
}

func (r *declaredColumnRows) Next(ctx *sql.Context) (sql.Row, error) {
	out, err := r.RowIter.Next(ctx)
	if err != nil || r.schema < 0 || r.table < 0 || r.column < 0 || r.typ < 0 || r.precision < 0 || r.scale < 0 || r.fsp < 0 {
		return out, err
	}
	db, _ := out[r.schema].(string)
	table, _ := out[r.table].(string)
	col, _ := out[r.column].(string)
	t, ok := r.e.store.Table(db, table)
	if !ok {
		return out, nil
	}
	for _, c := range t.Def.Columns {
		if !strings.EqualFold(c.Name, col) {
			continue
		}
		switch {
		case c.Type == row.TypeTime2:
			out = out.Copy()
			out[r.typ], out[r.fsp] = timeTypeText(c.Fsp), c.Fsp
		case isFloatColumn(c) && c.Precision > 0:
			text, _ := declaredTypeText(c)
			out = out.Copy()
			out[r.typ], out[r.precision], out[r.scale] = text, c.Precision, c.Scale
		}
		break
	}
	return out, nil
}
