package sqlengine

import "testing"

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
	c.exec("DEALLOCATE PREPARE p")
	if n := h.e.SQLPrepared.Load(); n != 1 {
		t.Fatalf("SQL-prepared %d after DEALLOCATE, want 1", n)
	}
	s.SessionEnd()
	if n := h.e.SQLPrepared.Load(); n != 0 {
		t.Fatalf("SQL-prepared %d after the session ended, want 0", n)
	}
}
