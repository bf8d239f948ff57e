package server

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// binlogGTIDPos is MariaDB's BINLOG_GTID_POS(file, pos): the MariaDB GTID
// position (domain-server_id-seq) of the binlog at file:pos. A MariaDB
// replica switching to GTID mode asks for it to translate the file/position
// it has into a GTID position.
type binlogGTIDPos struct {
	expression.BinaryExpressionStub
	s *Server
}

func (s *Server) registerFunctions() {
	s.sql.GMS.Analyzer.Catalog.RegisterFunction(sql.NewEmptyContext(), sql.Function2{
		Name: "binlog_gtid_pos",
		Fn: func(_ *sql.Context, file, pos sql.Expression) sql.Expression {
			return &binlogGTIDPos{BinaryExpressionStub: expression.BinaryExpressionStub{LeftChild: file, RightChild: pos}, s: s}
		},
	})
}

func (f *binlogGTIDPos) String() string {
	return fmt.Sprintf("BINLOG_GTID_POS(%s, %s)", f.LeftChild, f.RightChild)
}

func (f *binlogGTIDPos) Type(*sql.Context) sql.Type { return types.LongText }

func (f *binlogGTIDPos) IsNullable(*sql.Context) bool { return true }

func (f *binlogGTIDPos) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 2 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 2)
	}
	return &binlogGTIDPos{BinaryExpressionStub: expression.BinaryExpressionStub{LeftChild: children[0], RightChild: children[1]}, s: f.s}, nil
}

// Eval returns NULL for a file or position that is not in the binlog.
func (f *binlogGTIDPos) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	file, err := f.LeftChild.Eval(ctx, row)
	if err != nil || file == nil {
		return nil, err
	}
	pos, err := f.RightChild.Eval(ctx, row)
	if err != nil || pos == nil {
		return nil, err
	}
	p, _, err := types.Uint64.Convert(ctx, pos)
	if err != nil {
		return nil, nil
	}
	name, ok := file.(string)
	if !ok {
		name = fmt.Sprint(file)
	}
	v, ok := f.s.source.MariaDBPosAt(name, p.(uint64))
	if !ok {
		return nil, nil
	}
	return v, nil
}
