package sqlengine

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestPreparedStatementsKept: a statement the protocol prepared is kept
// by its text until the last statement of that text is released (so a
// long session's map does not grow with every statement it ever
// prepared); SQL PREPARE's statements are counted until DEALLOCATE or the
// session's end, and the protocol's never are.
func TestPreparedStatementsKept(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	s := c.ctx.Session.(*Session)
	id := s.ID()
	h.e.sessions.Store(id, s)
	prepare := func(q string) string {
		t.Helper()
		key, err := h.e.PrepareProtocol(id, func() error {
			_, err := h.e.GMS.PrepareQuery(c.ctx, q)
			return err
		})
		if err != nil || key == "" {
			t.Fatalf("prepare %q: key %q, %v", q, key, err)
		}
		return key
	}
	kept := func(key string) bool {
		_, ok := s.BaseSession.GetPreparedQuery(key)
		return ok
	}
	a, a2, b := prepare("SELECT 1"), prepare("SELECT 1"), prepare("SELECT 2")
	if a != a2 || !kept(a) || !kept(b) || h.e.SQLPrepared.Load() != 0 {
		t.Fatalf("keys %q %q %q, SQL-prepared %d", a, a2, b, h.e.SQLPrepared.Load())
	}
	h.e.ReleaseProtocol(id, a)
	if !kept(a) {
		t.Fatal("a text was dropped while a statement of it is open")
	}
	h.e.ReleaseProtocol(id, a2)
	h.e.ReleaseProtocol(id, b)
	if kept(a) || kept(b) {
		t.Fatal("released statements are still kept")
	}

	c.exec("PREPARE p FROM 'SELECT 3'")
	c.exec("PREPARE p FROM 'SELECT 4'")
	c.exec("PREPARE q FROM 'SELECT 5'")
	if n := h.e.SQLPrepared.Load(); n != 2 {
		t.Fatalf("SQL-prepared %d, want 2", n)
	}
	if n := h.e.SQLPreparedBytes.Load(); n != 16 {
		t.Fatalf("SQL-prepared bytes %d, want 16 (two 8-byte texts)", n)
	}
	// A PREPARE whose statement fails counts nothing once the session
	// moves on.
	if _, err := c.query("PREPARE r FROM 'SELEC 6'"); err == nil {
		t.Fatal("PREPARE of a malformed statement succeeded")
	}
	c.exec("SELECT 1")
	if n := h.e.SQLPreparedBytes.Load(); n != 16 {
		t.Fatalf("SQL-prepared bytes %d after a failed PREPARE, want 16", n)
	}
	c.exec("DEALLOCATE PREPARE p")
	if n := h.e.SQLPrepared.Load(); n != 1 {
		t.Fatalf("SQL-prepared %d after DEALLOCATE, want 1", n)
	}
	s.SessionEnd()
	if n := h.e.SQLPrepared.Load(); n != 0 {
		t.Fatalf("SQL-prepared %d after the session ended, want 0", n)
	}
	if n := h.e.SQLPreparedBytes.Load(); n != 0 {
		t.Fatalf("SQL-prepared bytes %d after the session ended, want 0", n)
	}
}

// TestPreparedBytesAdmission: prepares racing for the last room under
// lockstep_max_prepared_stmt_bytes are never admitted together, whichever
// counter (SQL PREPARE's or the protocol's) each adds to.
func TestPreparedBytesAdmission(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	const name = "lockstep_max_prepared_stmt_bytes" // the server declares it
	if _, _, ok := sql.SystemVariables.GetGlobal(name); !ok {
		sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{&sql.MysqlSystemVariable{
			Name: name, Scope: sql.GetMysqlScope(sql.SystemVariableScope_Global), Dynamic: true,
			Type: types.NewSystemIntType(name, 1024, math.MaxInt64, false), Default: int64(16 << 20)}})
	}
	_, old, _ := sql.SystemVariables.GetGlobal(name)
	if err := sql.SystemVariables.SetGlobal(c.ctx, name, int64(10000)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sql.SystemVariables.SetGlobal(c.ctx, name, old) })
	var other atomic.Int64
	h.e.OtherPreparedBytes = &other
	for round := 0; round < 50; round++ {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			counter := &other
			if i%2 == 0 {
				counter = &h.e.SQLPreparedBytes
			}
			wg.Go(func() {
				if h.e.AdmitPreparedBytes(6000, counter) == nil {
					admitted.Add(1)
				}
			})
		}
		wg.Wait()
		if n := admitted.Load(); n > 1 {
			t.Fatalf("round %d: %d prepares of 6,000 bytes admitted under a 10,000-byte limit", round, n)
		}
		if total := other.Load() + h.e.SQLPreparedBytes.Load(); total != 6000*admitted.Load() {
			t.Fatalf("round %d: %d bytes counted for %d admitted", round, total, admitted.Load())
		}
		other.Store(0)
		h.e.SQLPreparedBytes.Store(0)
	}
}
