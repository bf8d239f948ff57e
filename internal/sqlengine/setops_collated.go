package sqlengine

import (
	"fmt"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// UNION [DISTINCT], INTERSECT and EXCEPT tell rows apart by the
// collation MySQL gives each column of the result, as DISTINCT does
// (distinct.go).
//
// go-mysql-server hashed the rows' bytes for INTERSECT and EXCEPT, so in
// a case-insensitive column `name INTERSECT SELECT 'Alice'` missed the
// row 'ALICE' and EXCEPT kept it (and kept 'ALICE' and 'alice' both);
// and its UNION's result type, where the two sides' types differ (a
// VARCHAR column and a string literal), is a binary LONGTEXT, so
// `SELECT name ... UNION SELECT 'Alice'` kept 'ALICE' and 'Alice'.
// Silently wrong. MySQL aggregates each column's collation over the
// sides by coercibility (a column, implicit, wins over a literal,
// coercible; COLLATE, explicit, over both): setOpHashSchema does so with
// go-mysql-server's own coercibility rules (sql.ResolveCoercibility),
// and collatedSetOp hashes the rows with it.
//
// Each operation keeps MySQL's multiset rules: UNION DISTINCT keeps the
// first row of each value, left side first; INTERSECT keeps the left's
// rows that the right has (DISTINCT: once each; ALL: as many times as
// both have it); EXCEPT keeps the left's rows the right lacks (DISTINCT:
// once each; ALL: the left's count less the right's). Like
// go-mysql-server's, rows are told apart by a 64-bit hash.

// collatedSetOp is a set operation without its ORDER BY, OFFSET and
// LIMIT (they are put above it), run by setOpRows.
type collatedSetOp struct {
	*plan.SetOp
	sch sql.Schema // hashes the rows
}

var _ sql.Node = (*collatedSetOp)(nil)

func (n *collatedSetOp) String() string { return "collated " + n.SetOp.String() }

// buildCollatedSetOp builds n as collatedSetOp with ORDER BY, OFFSET and
// LIMIT above it, in that order, as MySQL applies them.
func (b boundedTopN) buildCollatedSetOp(ctx *sql.Context, n *plan.SetOp, r sql.Row) (sql.RowIter, error) {
	core := *n
	core.SortFields, core.Offset, core.Limit = nil, nil, nil
	var node sql.Node = &collatedSetOp{SetOp: &core, sch: setOpHashSchema(ctx, n)}
	if len(n.SortFields) > 0 {
		node = plan.NewSort(n.SortFields, node)
	}
	if n.Offset != nil {
		node = plan.NewOffset(n.Offset, node)
	}
	if n.Limit != nil {
		node = plan.NewLimit(n.Limit, node)
	}
	it, err := b.base.Build(ctx, node, r)
	if err != nil {
		return nil, err
	}
	return &disposingIter{RowIter: it, node: &core}, nil
}

// buildSetOpRows runs n: the left side is built at once, the right when
// it is first needed (a UNION reads it after the left).
func (b boundedTopN) buildSetOpRows(ctx *sql.Context, n *collatedSetOp, r sql.Row) (sql.RowIter, error) {
	left, err := b.base.Build(ctx, n.Left(), r)
	if err != nil {
		return nil, err
	}
	return &setOpRows{
		op: n.SetOpType, distinct: n.Distinct, sch: n.sch, left: left,
		right: func() (sql.RowIter, error) { return b.base.Build(ctx, n.Right(), r) },
	}, nil
}

// setOpHashSchema is n's schema with each string column typed by the
// collation MySQL gives it: aggregated over the sides by coercibility.
func setOpHashSchema(ctx *sql.Context, n *plan.SetOp) sql.Schema {
	sch := n.Schema(ctx)
	out := make(sql.Schema, len(sch))
	for i, c := range sch {
		cc := *c
		out[i] = &cc
		if !types.IsText(c.Type) {
			continue
		}
		lc, lk := sideCollation(ctx, n.Left(), i)
		rc, rk := sideCollation(ctx, n.Right(), i)
		coll, _ := sql.ResolveCoercibility(lc, lk, rc, rk)
		if coll != sql.Collation_Unspecified {
			cc.Type = types.CreateLongText(coll)
		}
	}
	return out
}

// sideCollation is the collation and coercibility of column i of one
// side of a set operation: a nested set operation's aggregate, a
// projection's expression's, or else the column type's, implicit.
func sideCollation(ctx *sql.Context, side sql.Node, i int) (sql.CollationID, byte) {
	switch s := side.(type) {
	case *plan.SetOp:
		sch := setOpHashSchema(ctx, s)
		if i < len(sch) && types.IsText(sch[i].Type) {
			return sch[i].Type.(sql.StringType).Collation(), 2
		}
	case *plan.Project:
		if i < len(s.Projections) {
			return projectedCollation(ctx, s, i)
		}
	}
	sch := side.Schema(ctx)
	if i < len(sch) {
		if st, ok := sch[i].Type.(sql.StringType); ok {
			return st.Collation(), 2
		}
	}
	return sql.Collation_binary, 5 // a number: any string's collation wins
}

// projectedCollation is the collation and coercibility of projection i
// of p. Where the sides' types differ go-mysql-server puts a projection
// of its own above each side's, converting each column to text
// (implicit, the connection's collation); the column's own expression,
// below it, is the one MySQL aggregates.
func projectedCollation(ctx *sql.Context, p *plan.Project, i int) (sql.CollationID, byte) {
	e := p.Projections[i]
	if a, ok := e.(*expression.Alias); ok {
		e = a.Child
	}
	if inner, ok := p.Child.(*plan.Project); ok {
		if c, ok := e.(*expression.Convert); ok && types.IsText(c.Type(ctx)) {
			if gf, ok := c.Child.(*expression.GetField); ok && gf.Index() >= 0 && gf.Index() < len(inner.Projections) {
				return projectedCollation(ctx, inner, gf.Index())
			}
		}
	}
	return sql.GetCoercibility(ctx, p.Projections[i])
}

// setOpRows runs one set operation over its sides' rows.
type setOpRows struct {
	op       int
	distinct bool
	sch      sql.Schema
	left     sql.RowIter
	right    func() (sql.RowIter, error)

	started bool
	rightIt sql.RowIter      // UNION: the right side, once the left is done
	counts  map[uint64]int64 // INTERSECT, EXCEPT: the right side's rows
	seen    map[uint64]struct{}
}

func (s *setOpRows) Next(ctx *sql.Context) (sql.Row, error) {
	if !s.started {
		s.started = true
		s.seen = map[uint64]struct{}{}
		if s.op != plan.UnionType {
			if err := s.countRight(ctx); err != nil {
				return nil, err
			}
		}
	}
	for {
		row, err := s.nextInput(ctx)
		if err != nil {
			return nil, err
		}
		h, err := s.key(ctx, row)
		if err != nil {
			return nil, err
		}
		switch s.op {
		case plan.UnionType: // DISTINCT only: UNION ALL is go-mysql-server's
		case plan.IntersectType:
			if s.counts[h] == 0 {
				continue
			}
			if !s.distinct {
				s.counts[h]--
				return row, nil
			}
		case plan.ExceptType:
			if !s.distinct {
				if s.counts[h] > 0 {
					s.counts[h]--
					continue
				}
				return row, nil
			}
			if s.counts[h] > 0 {
				continue
			}
		default:
			return nil, fmt.Errorf("set operation %d is not known", s.op)
		}
		if _, dup := s.seen[h]; dup {
			continue
		}
		s.seen[h] = struct{}{}
		return row, nil
	}
}

// nextInput is the next row of the left side and then, for UNION, of
// the right.
func (s *setOpRows) nextInput(ctx *sql.Context) (sql.Row, error) {
	if s.left != nil {
		row, err := s.left.Next(ctx)
		if err != io.EOF {
			return row, err
		}
		err = s.left.Close(ctx)
		s.left = nil
		if err != nil {
			return nil, err
		}
		if s.op != plan.UnionType {
			return nil, io.EOF
		}
	}
	if s.rightIt == nil {
		it, err := s.right()
		if err != nil {
			return nil, err
		}
		s.rightIt = it
	}
	return s.rightIt.Next(ctx)
}

// key hashes row by the result's types: strings by their collation,
// numbers converted to the result's numeric type first (1 and 1.0 are
// one value of a DECIMAL column).
func (s *setOpRows) key(ctx *sql.Context, row sql.Row) (uint64, error) {
	conv := row
	for i, v := range row {
		if v == nil || i >= len(s.sch) || !types.IsNumber(s.sch[i].Type) {
			continue
		}
		if &conv[0] == &row[0] {
			conv = append(sql.Row(nil), row...)
		}
		if c, _, err := s.sch[i].Type.Convert(ctx, v); err == nil {
			conv[i] = c
		}
		if d, ok := conv[i].(decimal.Decimal); ok {
			// 1.0 and 1.00 are one value: hash the digits without
			// trailing zeros.
			conv[i] = canonicalDecimal(d)
		}
	}
	return hash.HashOf(ctx, s.sch, conv)
}

// canonicalDecimal is d's digits without trailing fractional zeros.
func canonicalDecimal(d decimal.Decimal) string {
	str := d.String()
	if strings.Contains(str, ".") {
		str = strings.TrimRight(strings.TrimRight(str, "0"), ".")
	}
	if str == "-0" {
		str = "0"
	}
	return str
}

// countRight reads the right side into counts.
func (s *setOpRows) countRight(ctx *sql.Context) error {
	it, err := s.right()
	if err != nil {
		return err
	}
	s.counts = map[uint64]int64{}
	for {
		row, err := it.Next(ctx)
		if err == io.EOF {
			return it.Close(ctx)
		}
		if err != nil {
			it.Close(ctx)
			return err
		}
		h, err := s.key(ctx, row)
		if err != nil {
			it.Close(ctx)
			return err
		}
		s.counts[h]++
	}
}

func (s *setOpRows) Close(ctx *sql.Context) error {
	var err error
	if s.left != nil {
		err = s.left.Close(ctx)
	}
	if s.rightIt != nil {
		if cerr := s.rightIt.Close(ctx); err == nil {
			err = cerr
		}
	}
	s.seen, s.counts = nil, nil
	return err
}
