package routine

import (
	"context"
	"errors"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// scope is a frame holding the given variables.
func scope(vars map[string]sqltypes.Value) *frame {
	f := &frame{vars: map[string]*variable{}}
	for name, v := range vars {
		f.vars[name] = &variable{name: name, val: v}
	}
	return f
}

// TestRender: a statement of a body is printed with its variables'
// values as literals of their kind, the target of an UPDATE's SET and
// qualified or unknown names left alone, and result columns named as
// written.
func TestRender(t *testing.T) {
	f := scope(map[string]sqltypes.Value{
		"n":   sqltypes.NewInt64(-5),
		"u":   sqltypes.NewUint64(18446744073709551615),
		"d":   sqltypes.MakeTrusted(sqltypes.Decimal, []byte("12.50")),
		"x":   sqltypes.NewFloat64(1.5),
		"s":   sqltypes.NewVarChar(`it's a \ test`),
		"b":   sqltypes.MakeTrusted(sqltypes.VarBinary, []byte{0, 0xff}),
		"e":   sqltypes.MakeTrusted(sqltypes.VarBinary, nil),
		"z":   sqltypes.NULL,
		"bit": sqltypes.MakeTrusted(sqltypes.Bit, []byte{1, 2}),
		"dt":  sqltypes.MakeTrusted(sqltypes.Datetime, []byte("2024-01-02 03:04:05")),
		"tm":  sqltypes.MakeTrusted(sqltypes.Time, []byte("-01:02:03.500000")),
		"day": sqltypes.MakeTrusted(sqltypes.Date, []byte("2024-02-29")),
	})
	for _, tc := range []struct{ in, want string }{
		{"SELECT * FROM t WHERE id = n AND k = u", "select * from t where id = (-5) and k = (18446744073709551615)"},
		{"SELECT -n AS a, 1-n AS b, - d AS c", "select -(-5) a, 1 - (-5) b, -(12.50) c"},
		{"SELECT a FROM t GROUP BY a, n ORDER BY bit LIMIT bit", "select a from t group by a, ((-5) + 0) order by ((258) + 0) asc limit 258"},
		{"SELECT d, x", "select (12.50) as `d`, (1.5e0) as `x`"},
		{"SELECT s", "select 'it\\'s a \\\\ test' as `s`"},
		{"SELECT b, e, z", "select X'00ff' as `b`, CONVERT('', binary) as `e`, null as `z`"},
		{"SELECT bit + 0 AS v", "select (258) + 0 v"},
		{"SELECT LENGTH(s), other FROM t", "select LENGTH('it\\'s a \\\\ test') as `LENGTH(s)`, other from t"},
		{"UPDATE t SET n = n + 1 WHERE t.n = n", "update t set n = (-5) + 1 where t.n = (-5)"},
		{"INSERT INTO t (n, s) VALUES (n, s)", "insert into t(n, s) values ((-5), 'it\\'s a \\\\ test')"},
		{"SELECT @n, n FROM t ORDER BY n", "select @n, (-5) as `n` from t order by ((-5) + 0) asc"},
		{"DELETE FROM t WHERE dt < dt", "delete from t where CAST('2024-01-02 03:04:05' as datetime) < CAST('2024-01-02 03:04:05' as datetime)"},
		{"SELECT tm + 0 AS a, day AS b", "select CAST('-01:02:03.500000' as time(6)) + 0 a, CAST('2024-02-29' as date) as b"},
	} {
		st, err := ast.Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := render(f, st); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if _, err := ast.Parse(render(f, st)); err != nil {
			t.Errorf("%s: the rendered statement does not parse: %v", tc.in, err)
		}
	}
}

func parseProcedure(t *testing.T, body string) *ast.ProcedureSpec {
	t.Helper()
	st, err := ast.Parse("CREATE PROCEDURE p(IN a INT, OUT b INT) " + body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return st.(*ast.DDL).ProcedureSpec
}

// TestCheck: what the interpreter does not run is refused when the
// procedure is made, with MySQL's error where MySQL refuses it too.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		body string
		num  int // 0: accepted
	}{
		{"BEGIN DECLARE CONTINUE HANDLER FOR 1062, SQLSTATE '23000', NOT FOUND, SQLEXCEPTION SET b = 1; END", 0},
		{"l: LOOP LEAVE l; END LOOP", 0},
		{"b1: BEGIN w: WHILE a > 0 DO ITERATE w; END WHILE; LEAVE b1; END", 0},
		{"BEGIN DECLARE CONTINUE HANDLER FOR SQLWARNING SET b = 1; END", mysql.ERNotSupportedYet},
		{"BEGIN DECLARE UNDO HANDLER FOR SQLEXCEPTION SET b = 1; END", mysql.ERNotSupportedYet},
		{"BEGIN LEAVE nowhere; END", 1308},
		{"b1: BEGIN ITERATE b1; END", 1308}, // ITERATE names loops only
		{"BEGIN RETURN 1; END", 1313},
		{"BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN LEAVE nowhere; END; END", 1308},
	} {
		err := Check(parseProcedure(t, tc.body))
		var se *mysql.SQLError
		switch {
		case tc.num == 0 && err != nil:
			t.Errorf("%s: refused: %v", tc.body, err)
		case tc.num != 0 && (!errors.As(err, &se) || se.Num != tc.num):
			t.Errorf("%s: %v, want error %d", tc.body, err, tc.num)
		}
	}
}

func TestAfterKeyword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CREATE PROCEDURE p() SELECT 1", "p() SELECT 1"},
		{"create definer = `a b`@`%` procedure `x`.`p`(IN v INT) BEGIN END", "`x`.`p`(IN v INT) BEGIN END"},
		{"/* c */ CREATE DEFINER='u'@'h' PROCEDURE p() SELECT 'procedure'", "p() SELECT 'procedure'"},
	} {
		got, ok := AfterKeyword(tc.in, ast.PROCEDURE)
		if !ok || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := AfterKeyword("CREATE TABLE t (a INT)", ast.PROCEDURE); ok {
		t.Error("found PROCEDURE in a CREATE TABLE")
	}
}

// TestHandlerChoice: of a block's handlers the most specific one takes
// a condition (an error number before a SQLSTATE before a class), a
// condition name stands for what it was declared for, and an
// interrupted statement is never handled.
func TestHandlerChoice(t *testing.T) {
	spec := parseProcedure(t, `BEGIN
		DECLARE dup CONDITION FOR 1062;
		DECLARE EXIT HANDLER FOR SQLEXCEPTION SET b = 1;
		DECLARE EXIT HANDLER FOR SQLSTATE '23000' SET b = 2;
		DECLARE EXIT HANDLER FOR dup SET b = 3;
		DECLARE EXIT HANDLER FOR NOT FOUND SET b = 4;
	END`)
	f := &frame{vars: map[string]*variable{}}
	r := &run{}
	for _, st := range spec.Body.(*ast.BeginEndBlock).Statements {
		if err := r.declare(context.Background(), f, st.(*ast.Declare)); err != nil {
			t.Fatal(err)
		}
	}
	which := func(err error) string {
		h, _ := f.handlerFor(context.Background(), err)
		if h == nil {
			return "none"
		}
		return ast.String(h.Statement)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{mysql.NewSQLError(1062, "23000", "dup"), "set b = 3"},
		{mysql.NewSQLError(1452, "23000", "fk"), "set b = 2"},
		{mysql.NewSQLError(1146, "42S02", "no table"), "set b = 1"},
		{errNoData, "set b = 4"},
		{mysql.NewSQLError(1642, "01000", "warning"), "none"},
		{errors.New("not a MySQL error"), "set b = 1"},
		{mysql.NewSQLError(erQueryInterrupted, "70100", "interrupted"), "none"},
		{&leave{"l"}, "none"},
	} {
		if got := which(tc.err); got != tc.want {
			t.Errorf("%v: handler %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestCheckArgs: a CALL gives every parameter an argument, and a
// variable where the parameter is OUT or INOUT.
func TestCheckArgs(t *testing.T) {
	p := &Procedure{DB: "d", Name: "p", Params: parseProcedure(t, "SELECT 1").Params}
	out := func(sqltypes.Value) error { return nil }
	for _, tc := range []struct {
		args []Arg
		num  int
	}{
		{[]Arg{{}, {Out: out}}, 0},
		{[]Arg{{Out: out}, {Out: out}}, 0},
		{[]Arg{{}}, 1318},
		{[]Arg{{}, {}}, 1414},
	} {
		err := CheckArgs(p, tc.args)
		var se *mysql.SQLError
		if (tc.num == 0) != (err == nil) || (err != nil && (!errors.As(err, &se) || se.Num != tc.num)) {
			t.Errorf("%d args: %v, want error %d", len(tc.args), err, tc.num)
		}
	}
}
