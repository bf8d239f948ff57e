package sqlengine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/row"
)

// A column declared TIME holds whole seconds, as in MySQL: a value with a
// fraction is rounded when stored ('10:00:59.5' is 10:01:00).
// go-mysql-server has one TIME type, with microseconds, for TIME and
// TIME(6) alike (TIME(1) to TIME(5) it refuses), so the declaration is
// read from the statement (note, once per statement: Session.timeFsp)
// and kept in the catalog as the storage column's Fsp: 0 for TIME, 6 for
// TIME(6) and for a column whose declaration was not seen (a table made
// before, or by a prepared CREATE TABLE).
//
//   - toStorage rounds a value to its column's Fsp, for stored and
//     temporary tables alike;
//   - an ALTER TABLE that rewrites the table keeps the Fsp of the columns
//     it does not redefine (alter.go);
//   - the CREATE and ALTER TABLE statements logged, and SHOW CREATE
//     TABLE, say `time` for such a column (timeDisplay), so that a
//     replica makes the same column the row images are encoded for;
//   - go-mysql-server still describes the column as TIME(6) elsewhere
//     (information_schema, result metadata).

// noteTimeFsp notes the TIME declarations of st, a statement parsed,
// when it defines a table's columns: at every such parse, nested or not
// (a statement of several has each parsed in turn), so that no statement
// defines columns with another's.
func noteTimeFsp(ctx *sql.Context, st ast.Statement) {
	if len(ddlsOf(st)) == 0 {
		return
	}
	if s := sessionOf(ctx); s != nil {
		s.timeFsp = s.declaredTimeFsp(ctx, st)
	}
}

// declaredTimeFsp are the fractional digits of the TIME columns st
// defines, by lower-case name (nil if none): 0 for TIME, n for TIME(n).
// CREATE TABLE ... LIKE takes its source table's.
func (s *Session) declaredTimeFsp(ctx *sql.Context, st ast.Statement) map[string]int {
	var out map[string]int
	set := func(name string, fsp int) {
		if out == nil {
			out = map[string]int{}
		}
		out[strings.ToLower(name)] = fsp
	}
	for _, d := range ddlsOf(st) {
		if d == nil {
			continue
		}
		if d.OptLike != nil && len(d.OptLike.LikeTables) == 1 {
			like := d.OptLike.LikeTables[0]
			db := like.DbQualifier.String()
			if db == "" {
				db = ctx.GetCurrentDatabase()
			}
			if t, ok := s.eng.store.Table(db, like.Name.String()); ok {
				for _, c := range t.Def.Columns {
					if c.Type == row.TypeTime2 {
						set(c.Name, c.Fsp)
					}
				}
			}
		}
		if d.TableSpec == nil {
			continue
		}
		for _, c := range d.TableSpec.Columns {
			if !strings.EqualFold(c.Type.Type, "time") {
				continue
			}
			fsp := 0
			if c.Type.Length != nil {
				n, err := strconv.Atoi(string(c.Type.Length.Val))
				if err != nil {
					continue
				}
				fsp = n
			}
			set(c.Name.String(), fsp)
		}
	}
	return out
}

// timeColumnFsp is the Fsp of a new TIME column named name: its
// declaration's in the current statement, else 6.
func timeColumnFsp(ctx *sql.Context, name string) int {
	if s := sessionOf(ctx); s != nil {
		if fsp, ok := s.timeFsp[strings.ToLower(name)]; ok && fsp >= 0 && fsp <= 6 {
			return fsp
		}
	}
	return 6
}

// timeDeclared says whether the current statement declares a TIME
// column named name.
func timeDeclared(ctx *sql.Context, name string) bool {
	s := sessionOf(ctx)
	if s == nil {
		return false
	}
	_, ok := s.timeFsp[strings.ToLower(name)]
	return ok
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

// timeDisplay is c, a column of a table whose storage column is rc, with
// the type MySQL shows for it: `time` for a TIME of whole seconds.
func timeDisplay(c *sql.Column, rc row.Column) *sql.Column {
	if rc.Type != row.TypeTime2 || rc.Fsp == 6 {
		return c
	}
	cc := *c
	cc.Type = displayType{columnType: c.Type, text: timeTypeText(rc.Fsp)}
	return &cc
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

// showCreateTimes builds SHOW CREATE TABLE n with each TIME column of
// whole seconds (or fewer than six digits) written as MySQL writes it, or
// returns nil when the table has none.
func (b boundedTopN) showCreateTimes(ctx *sql.Context, n *plan.ShowCreateTable, r sql.Row) (sql.RowIter, error) {
	if n.IsView {
		return nil, nil
	}
	var t *Table
	transform.Inspect(n.Child, func(c sql.Node) bool {
		if tt, ok := readTable(c).(*Table); ok {
			t = tt
		}
		return t == nil
	})
	if t == nil {
		return nil, nil
	}
	var fix []string
	for _, c := range t.st.Def.Columns {
		if c.Type == row.TypeTime2 && c.Fsp != 6 {
			fix = append(fix, "\n  "+quoteIdent(c.Name)+" time(6)", "\n  "+quoteIdent(c.Name)+" "+timeTypeText(c.Fsp))
		}
	}
	if len(fix) == 0 {
		return nil, nil
	}
	ctx = ctx.WithContext(context.WithValue(ctx, showCreateKey{}, n))
	it, err := b.base.Build(ctx, n, r)
	if err != nil {
		return nil, err
	}
	return &rewrittenText{RowIter: it, col: 1, r: strings.NewReplacer(fix...)}, nil
}

// showCreateKey marks the SHOW CREATE TABLE the hook builds through
// go-mysql-server (which asks the hook first again).
type showCreateKey struct{}

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
