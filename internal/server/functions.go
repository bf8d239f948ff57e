package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/replica"
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
	s.registerWaitFunctions()
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

// gtidWait is WAIT_FOR_EXECUTED_GTID_SET(set[, timeout]) (MySQL: 0 once
// every GTID of set is executed, 1 on timeout) and MASTER_GTID_WAIT(pos[,
// timeout]) (MariaDB: 0, or -1 on timeout, for a MariaDB GTID position,
// which a Lockstep replica of MariaDB records under mapped UUIDs). Without
// a timeout they wait until KILL QUERY.
type gtidWait struct {
	args  []sql.Expression
	s     *Server
	maria bool
}

func (s *Server) registerWaitFunctions() {
	for _, f := range []struct {
		name  string
		maria bool
	}{{"wait_for_executed_gtid_set", false}, {"master_gtid_wait", true}} {
		s.sql.GMS.Analyzer.Catalog.RegisterFunction(sql.NewEmptyContext(), sql.FunctionN{
			Name: f.name,
			Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
				if len(args) < 1 || len(args) > 2 {
					return nil, sql.ErrInvalidArgumentNumber.New(strings.ToUpper(f.name), "1 or 2", len(args))
				}
				return &gtidWait{args: args, s: s, maria: f.maria}, nil
			},
		})
	}
}

func (f *gtidWait) name() string {
	if f.maria {
		return "MASTER_GTID_WAIT"
	}
	return "WAIT_FOR_EXECUTED_GTID_SET"
}

func (f *gtidWait) String() string               { return f.name() + "(...)" }
func (f *gtidWait) Type(*sql.Context) sql.Type   { return types.Int64 }
func (f *gtidWait) IsNullable(*sql.Context) bool { return true }
func (f *gtidWait) Resolved() bool               { return expression.ExpressionsResolved(f.args...) }
func (f *gtidWait) Children() []sql.Expression   { return f.args }
func (f *gtidWait) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}
func (f *gtidWait) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return &gtidWait{args: children, s: f.s, maria: f.maria}, nil
}

func (f *gtidWait) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := f.args[0].Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	want := fmt.Sprint(v)
	timeout := time.Duration(-1)
	if len(f.args) == 2 {
		t, err := f.args[1].Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if t != nil {
			secs, _, err := types.Float64.Convert(ctx, t)
			if err != nil {
				return nil, err
			}
			if s := secs.(float64); s >= 0 {
				timeout = time.Duration(s * float64(time.Second))
			}
		}
	}
	var set binlog.GTIDSet
	if !f.maria {
		if set, err = binlog.ParseGTIDSet(want); err != nil {
			return nil, sql.ErrInvalidArgument.New(f.name())
		}
	}
	reached := func() (bool, error) {
		g := f.s.gtidVisible()
		if f.maria {
			return replica.MariaPosReached(g, want)
		}
		// What is still missing only shrinks: keep it, so each check
		// costs what is left, not the whole set.
		set = set.Subtract(g)
		return set.IsEmpty(), nil
	}
	start := time.Now()
	// Checked after 1 ms, then less and less often (at most every 50 ms).
	pause := time.Millisecond
	for {
		ok, err := reached()
		if err != nil {
			return nil, sql.ErrInvalidArgument.New(f.name())
		}
		if ok {
			return int64(0), nil
		}
		if timeout >= 0 && time.Since(start) >= timeout {
			if f.maria {
				return int64(-1), nil
			}
			return int64(1), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}
