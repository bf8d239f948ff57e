package server

// lockstep_remove_member(member): removes a member from the cluster, as
// MySQL Group Replication's administration functions are called with
// SELECT. member is its cluster address (wsrep_node_address) or its
// server UUID (MEMBER_ID in performance_schema.replication_group_members).
// It needs SUPER or GROUP_REPLICATION_ADMIN, returns once the removal is
// applied on the leader, and gives up with an error after 30 s (no
// leader, or another change in progress). A removed member that still
// runs refuses statements on tables (1047) from then on. To replace a
// member, start the new one first (it joins by itself), then remove the
// old.

import (
	"context"
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

type removeMember struct {
	expression.UnaryExpressionStub
	s *Server
}

func (s *Server) registerClusterFunctions() {
	s.sql.GMS.Analyzer.Catalog.RegisterFunction(sql.NewEmptyContext(), sql.Function1{
		Name: "lockstep_remove_member",
		Fn: func(_ *sql.Context, arg sql.Expression) sql.Expression {
			return &removeMember{UnaryExpressionStub: expression.UnaryExpressionStub{Child: arg}, s: s}
		},
	})
}

func (f *removeMember) String() string               { return fmt.Sprintf("lockstep_remove_member(%s)", f.Child) }
func (f *removeMember) Type(*sql.Context) sql.Type   { return types.LongText }
func (f *removeMember) IsNullable(*sql.Context) bool { return false }
func (f *removeMember) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 1)
	}
	return &removeMember{UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}, s: f.s}, nil
}

func (f *removeMember) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	s := f.s
	s.sessions.mu.Lock()
	c := s.sessions.conns[ctx.Session.ID()]
	s.sessions.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("lockstep_remove_member: no client connection")
	}
	if err := s.sql.Require(c, sqlengine.NeedGroupAdmin); err != nil {
		return nil, err
	}
	if s.member == nil {
		return nil, errOnlyMember("lockstep_remove_member")
	}
	v, err := f.Child.Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	arg := fmt.Sprint(v)
	addr := ""
	for _, m := range s.member.Members() {
		if m.Addr == arg || m.Service[serviceUUID] == arg {
			addr = m.Addr
		}
	}
	if addr == "" {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "lockstep_remove_member: %q is neither the cluster address nor the server UUID of a member", arg)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.member.Remove(wctx, addr); err != nil {
		return nil, mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%v", err)
	}
	return fmt.Sprintf("Member %s removed from the cluster.", addr), nil
}

// errOnlyMember refuses on a single server what only a cluster member does.
func errOnlyMember(what string) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s outside a cluster'", what)
}
