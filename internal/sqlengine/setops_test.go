package sqlengine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// setOpDepth is the depth of nested set operations in s.
func setOpDepth(s ast.SelectStatement) int {
	if p, ok := s.(*ast.ParenSelect); ok {
		s = p.Select
	}
	op, ok := s.(*ast.SetOp)
	if !ok {
		return 0
	}
	return 1 + max(setOpDepth(op.Left), setOpDepth(op.Right))
}

// leaves lists the branches of s in order, as text.
func leaves(s ast.SelectStatement, out *[]string) {
	if op, ok := s.(*ast.SetOp); ok && op.Limit == nil && len(op.OrderBy) == 0 {
		leaves(op.Left, out)
		leaves(op.Right, out)
		return
	}
	*out = append(*out, ast.String(s))
}

func TestBalanceSetOps(t *testing.T) {
	chain := func(n int, branch func(i int) string, op string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = branch(i)
		}
		return strings.Join(parts, " "+op+" ")
	}
	plain := func(i int) string { return fmt.Sprintf("SELECT %d", i) }
	limited := func(i int) string {
		if i%3 == 1 {
			return fmt.Sprintf("(SELECT %d UNION SELECT %d LIMIT 1)", i, -i)
		}
		return plain(i)
	}
	for _, c := range []struct {
		name     string
		query    string
		maxDepth int
	}{
		{"union", chain(1000, plain, "UNION"), 12},
		{"union all", chain(1000, plain, "UNION ALL"), 12},
		{"intersect", chain(100, plain, "INTERSECT"), 9},
		{"limited branches stay right children", chain(999, limited, "UNION ALL"), 13},
		{"short", chain(5, plain, "UNION"), 4},
		{"except is not regrouped", chain(20, plain, "EXCEPT"), 19},
	} {
		st, _, err := ParseOne(context.Background(), c.query, ast.ParserOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var before []string
		leaves(st.(ast.SelectStatement), &before)
		if err := balanceSetOps(st, c.query); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var after []string
		leaves(st.(ast.SelectStatement), &after)
		if strings.Join(before, "|") != strings.Join(after, "|") {
			t.Errorf("%s: the branches changed order or content", c.name)
		}
		if d := setOpDepth(st.(ast.SelectStatement)); d > c.maxDepth {
			t.Errorf("%s: depth %d after balancing, want at most %d", c.name, d, c.maxDepth)
		}
	}
	// The top keeps the chain's ORDER BY and LIMIT.
	q := chain(20, plain, "UNION") + " ORDER BY 1 DESC LIMIT 3"
	st, _, _ := ParseOne(context.Background(), q, ast.ParserOptions{})
	if err := balanceSetOps(st, q); err != nil {
		t.Fatal(err)
	}
	if top := st.(*ast.SetOp); top.Limit == nil || len(top.OrderBy) != 1 {
		t.Fatalf("the top lost its clauses: %s", ast.String(st))
	}
	// Too many branches that must stay right children in a row.
	always := func(i int) string {
		if i == 0 {
			return plain(i)
		}
		return fmt.Sprintf("(SELECT %d UNION SELECT %d LIMIT 1)", i, -i)
	}
	q = chain(maxRightOnly+2, always, "UNION")
	st, _, err := ParseOne(context.Background(), q, ast.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := balanceSetOps(st, q); err == nil || !strings.Contains(err.Error(), "1473") {
		t.Fatalf("a chain of %d limited set operations: %v, want 1473", maxRightOnly+1, err)
	}
}

// TestLongSetOpChains runs chains of a thousand branches through the
// engine: left as parsed, go-mysql-server took seconds to plan such a
// chain, and minutes at a few thousand.
func TestLongSetOpChains(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	parts := make([]string, 1000)
	for i := range parts {
		parts[i] = fmt.Sprintf("SELECT %d AS x", i%10)
		if i%7 == 3 {
			parts[i] = fmt.Sprintf("(SELECT %d UNION ALL SELECT 99 LIMIT 1)", i%10)
		}
	}
	for op, want := range map[string]string{"UNION ALL": "1000", "UNION": "10"} {
		rows, err := c.query("SELECT COUNT(*) FROM (" + strings.Join(parts, " "+op+" ") + ") t")
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if got := fmt.Sprint(rows[0][0]); got != want {
			t.Errorf("%s: COUNT(*) = %s, want %s", op, got, want)
		}
	}
}
