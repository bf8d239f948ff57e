package sqlengine

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/variables"
)

// TestProcessList: a connection's state through a statement, KILL of it,
// a pid used twice, progress, and removal.
func TestProcessList(t *testing.T) {
	variables.InitStatusVariables()
	variables.InitSystemVariables()
	l := newProcessList()
	sess := sql.NewBaseSessionWithClientServer("", sql.Client{User: "u", Address: "h"}, 7)
	l.AddConnection(7, "h")
	if ps := l.Processes(); len(ps) != 1 || ps[0].Command != sql.ProcessCommandConnect {
		t.Fatalf("after AddConnection: %+v", ps)
	}
	l.ConnectionReady(sess)
	ctx := sql.NewContext(context.Background(), sql.WithSession(sess), sql.WithPid(42))
	qctx, err := l.BeginQuery(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.BeginQuery(ctx, "SELECT 2"); !sql.ErrPidAlreadyUsed.Is(err) {
		t.Fatalf("a running pid begun again: %v", err)
	}
	l.AddTableProgress(42, "t", 10)
	l.UpdateTableProgress(42, "t", 3)
	ps := l.Processes()
	if len(ps) != 1 || ps[0].Command != sql.ProcessCommandQuery || ps[0].Query != "SELECT 1" || ps[0].User != "u" ||
		ps[0].QueryPid != 42 || ps[0].Progress["t"].Done != 3 || ps[0].Progress["t"].Total != 10 {
		t.Fatalf("while running: %+v", ps)
	}
	l.Kill(7)
	if qctx.Err() == nil {
		t.Fatal("KILL did not cancel the statement's context")
	}
	l.EndQuery(qctx)
	if ps := l.Processes(); ps[0].Command != sql.ProcessCommandSleep || ps[0].Query != "" || len(ps[0].Progress) != 0 {
		t.Fatalf("after EndQuery: %+v", ps)
	}
	// The pid is free again, and progress of an ended statement is ignored.
	l.UpdateTableProgress(42, "t", 1)
	qctx, err = l.BeginQuery(ctx, "SELECT 3")
	if err != nil {
		t.Fatal(err)
	}
	l.RemoveConnection(7)
	if qctx.Err() == nil || len(l.Processes()) != 0 {
		t.Fatalf("after RemoveConnection: ctx %v, %d processes", qctx.Err(), len(l.Processes()))
	}
	if _, err := l.BeginQuery(ctx, "SELECT 4"); err == nil {
		t.Fatal("a statement begun on a removed connection")
	}
}
