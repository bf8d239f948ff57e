package sqlengine

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		in, shape, lits string // lits: values joined by |; shape "-": not normalised
		ansi            bool
	}{
		{in: "SELECT c FROM sbtest1 WHERE id=42", shape: "SELECT c FROM sbtest1 WHERE id=?", lits: "42"},
		{in: "select * from t where id in (1, 22,333) limit 5", shape: "select * from t where id in (?, ?,?) limit ?", lits: "1|22|333|5"},
		{in: "UPDATE t SET c='ab c', k=k+1 WHERE id=-7", shape: "UPDATE t SET c=?, k=k+? WHERE id=-?", lits: "ab c|1|7"},
		{in: `INSERT INTO t2 VALUES (18446744073709551615, "x")`, shape: "INSERT INTO t2 VALUES (?, ?)", lits: "18446744073709551615|x"},
		{in: "SELECT `c1`, `2x` FROM `t 3` WHERE id = 4", shape: "SELECT `c1`, `2x` FROM `t 3` WHERE id = ?", lits: "4"},
		{in: `SELECT "c" FROM t WHERE id = 4`, shape: `SELECT "c" FROM t WHERE id = ?`, lits: "4", ansi: true},
		{in: "SELECT 1t.c FROM 1t WHERE id=1", shape: "SELECT 1t.c FROM 1t WHERE id=?", lits: "1"},
		{in: "SELECT * FROM t WHERE c = _utf8mb4'x'", shape: "-"},
		{in: "SELECT * FROM t WHERE c = _latin1 'x'", shape: "-"},
		{in: "SELECT * FROM t WHERE c = X'41'", shape: "-"},
		{in: "SELECT * FROM t WHERE c = 'it''s'", shape: "-"},
		{in: `SELECT * FROM t WHERE c = 'a\'b'`, shape: "-"},
		{in: `SELECT * FROM t WHERE c = 'a\\b'`, shape: "-"},
		{in: `SELECT * FROM t WHERE c = "a\nb"`, shape: "-"},
		{in: "SELECT * FROM t WHERE id = 1.5", shape: "-"},
		{in: "SELECT * FROM t WHERE id = 1e3", shape: "-"},
		{in: "SELECT * FROM t WHERE id = 0x1f", shape: "-"},
		{in: "SELECT * FROM t WHERE id = 99999999999999999999", shape: "-"},
		{in: "SELECT * FROM t /* c */ WHERE id = 1", shape: "-"},
		{in: "SELECT * FROM t WHERE id = 1 -- c", shape: "-"},
		{in: "SELECT * FROM t WHERE id = 1 # c", shape: "-"},
		{in: "SELECT * FROM t WHERE id = ?", shape: "-"},
		{in: "SELECT * FROM t WHERE id = :x", shape: "-"},
		{in: "SELECT * FROM t WHERE c = 'open", shape: "-"},
	} {
		shapeBytes, lits, ok := normalize(nil, nil, c.in, c.ansi)
		shape, binds := string(shapeBytes), bindLiterals(lits)
		if c.shape == "-" {
			if ok {
				t.Errorf("%s: normalised to %q; want it left alone", c.in, shape)
			}
			continue
		}
		var vals []string
		for i := range lits {
			v, err := sqltypes.BindVariableToValue(binds[bindName(i)])
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, v.ToString())
		}
		if !ok || shape != c.shape || strings.Join(vals, "|") != c.lits {
			t.Errorf("%s:\n got %v %q %q\nwant %q %q", c.in, ok, shape, strings.Join(vals, "|"), c.shape, c.lits)
		}
	}
}

// TestPlanCacheSameAsParse: a cached shape with its literals bound plans
// to the same operands as parsing the query whole.
func TestPlanCacheSameAsParse(t *testing.T) {
	var c PlanCache
	ctx := context.Background()
	for _, q := range []string{
		"SELECT c FROM t WHERE id = 5",
		"SELECT c FROM t WHERE id = 6",
		"SELECT c FROM t WHERE id BETWEEN -3 AND 'x' ORDER BY c LIMIT 2",
		"UPDATE t SET k = k + 3, c = 'y' WHERE id = 9",
		"INSERT INTO t (id, c) VALUES (1, 'z')",
		"SELECT k FROM t WHERE id = 1 ORDER BY 1",
	} {
		p, binds, ok := c.Plan(ctx, q, ast.ParserOptions{})
		whole, _, wok := planText(ctx, q, ast.ParserOptions{})
		if ok != wok {
			t.Fatalf("%s: cached ok=%v, parsed ok=%v", q, ok, wok)
		}
		if !ok {
			continue
		}
		x := &fastExec{p: p, binds: binds}
		y := &fastExec{p: whole}
		if got, want := describe(x), describe(y); got != want {
			t.Errorf("%s:\ncached %s\nparsed %s", q, got, want)
		}
	}
	if c.n != 5 {
		t.Errorf("cache holds %d shapes, want 5 (two queries share one)", c.n)
	}
}

// describe renders a plan's operands as values.
func describe(x *fastExec) string {
	var b strings.Builder
	op := func(o fastOperand) {
		v, ok := x.operand(o)
		fmt.Fprintf(&b, "%v/%v ", v, ok)
	}
	for _, w := range x.p.where {
		fmt.Fprintf(&b, "%s%d:", w.col, w.op)
		for _, o := range w.ops {
			op(o)
		}
	}
	for _, s := range x.p.sets {
		fmt.Fprintf(&b, "%s%c:", s.col, s.arith)
		op(s.val)
	}
	for _, o := range x.p.values {
		op(o)
	}
	if x.p.limit != nil {
		op(*x.p.limit)
	}
	return b.String()
}

// TestCompareText checks the fast path's text comparison against GMS's
// StringType.Compare on random strings over a small alphabet with case,
// accents and multi-byte runes, for several collations.
func TestCompareText(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "A", "b", "B", "ä", "Ä", " ", "-", "0", "9", "ß", "ss", "€", "😀", "z"}
	word := func() string {
		var b strings.Builder
		for n := rng.Intn(5); n > 0; n-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return b.String()
	}
	ctx := sql.NewEmptyContext()
	for _, coll := range []sql.CollationID{sql.Collation_utf8mb4_0900_ai_ci, sql.Collation_utf8mb4_general_ci, sql.Collation_utf8mb4_bin, sql.Collation_utf8mb4_unicode_ci} {
		typ := types.MustCreateString(sqltypes.VarChar, 20, coll)
		sorter := weightsFor(coll)
		for i := 0; i < 20000; i++ {
			a, b := word(), word()
			want, err := typ.Compare(ctx, a, b)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := compareText(sorter, a, b)
			if !ok || got != want {
				t.Fatalf("%s: compare(%q, %q) = %d, GMS says %d", coll, a, b, got, want)
			}
		}
	}
}

// FuzzPlanCacheSameAsParse: whatever the text, the plan cache (literals
// lifted out, the shape planned once) and parsing the text whole agree on
// whether the statement takes the fast path and on every operand's value.
func FuzzPlanCacheSameAsParse(f *testing.F) {
	for _, q := range []string{
		"SELECT c FROM t WHERE id = 5",
		"SELECT c FROM t WHERE id BETWEEN -3 AND 'x' ORDER BY c LIMIT 2",
		"UPDATE t SET k = k + 3, c = 'y' WHERE id = 9",
		"INSERT INTO t (id, c) VALUES (1, 'z')",
		"DELETE FROM t WHERE id IN (1, 2, 3)",
		"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 10 AND 20",
		"SELECT c FROM t WHERE c = 'it''s'",
		"SELECT c FROM t WHERE id = 0x1f",
		"SELECT c FROM t WHERE c = _utf8mb4'x'",
		"SELECT c FROM t WHERE id BETWEEN 0 AND ''\x00",
		"SELECT c FROM t WHERE c = 'a' 'b'",
		"SELECT c FROM t WHERE id=+0",
		"UPDATE t SET k = k + 3 WHERE id = +9",
	} {
		f.Add(q, false)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string, ansi bool) {
		if len(q) > 2000 {
			return
		}
		opts := ast.ParserOptions{AnsiQuotes: ansi}
		var c PlanCache
		p, binds, ok := c.Plan(ctx, q, opts)
		whole, _, wok := planText(ctx, q, opts)
		if ok != wok {
			t.Fatalf("%q: cached ok=%v, parsed ok=%v", q, ok, wok)
		}
		if !ok {
			return
		}
		if got, want := describe(&fastExec{p: p, binds: binds}), describe(&fastExec{p: whole}); got != want {
			t.Fatalf("%q:\ncached %s\nparsed %s", q, got, want)
		}
	})
}
