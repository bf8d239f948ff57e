package sqlengine

import (
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

// TestParseTxnEnd: the forms of COMMIT and ROLLBACK and their clauses.
func TestParseTxnEnd(t *testing.T) {
	for _, c := range []struct {
		q              string
		ok, rollback   bool
		chain, release int
	}{
		{"COMMIT", true, false, 0, 0},
		{"commit work;", true, false, 0, 0},
		{"ROLLBACK", true, true, 0, 0},
		{"COMMIT AND CHAIN", true, false, 1, 0},
		{"COMMIT WORK AND NO CHAIN", true, false, -1, 0},
		{"rollback release", true, true, 0, 1},
		{"ROLLBACK NO RELEASE", true, true, 0, -1},
		{"COMMIT AND NO CHAIN NO RELEASE", true, false, -1, -1},
		{"COMMIT AND CHAIN RELEASE", true, false, 1, 1},
		{"ROLLBACK TO SAVEPOINT s", false, false, 0, 0},
		{"COMMIT AND", false, false, 0, 0},
		{"COMMIT NO", false, false, 0, 0},
		{"COMMITTED", false, false, 0, 0},
		{"SELECT 1", false, false, 0, 0},
	} {
		e, ok := parseTxnEnd(c.q)
		if ok != c.ok || ok && (e.rollback != c.rollback || e.chain != c.chain || e.release != c.release) {
			t.Errorf("%q: %+v %v, want rollback %v chain %d release %d ok %v", c.q, e, ok, c.rollback, c.chain, c.release, c.ok)
		}
	}
}

// TestTxnEndChainsAndReleases: COMMIT and ROLLBACK AND CHAIN start the
// next transaction with the ended one's access mode; RELEASE asks for the
// connection to close; completion_type gives a plain COMMIT the same
// effect, and AND NO CHAIN takes it back; AND CHAIN RELEASE is MySQL's
// syntax error; prepared, a COMMIT that would chain is refused rather than
// run as a plain one.
func TestTxnEndChainsAndReleases(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	s := c.ctx.Session.(*Session)
	id := s.ID()
	h.e.sessions.Store(id, s)
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY)")
	end := func(q string) (handled, release bool) {
		t.Helper()
		handled, release, err := h.e.TxnEndStatement(id, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return handled, release
	}
	if handled, _ := end("COMMIT"); handled {
		t.Fatal("a plain COMMIT was taken over")
	}
	c.exec("BEGIN")
	c.exec("INSERT INTO t VALUES (1)")
	if handled, release := end("COMMIT AND CHAIN"); !handled || release {
		t.Fatalf("COMMIT AND CHAIN: handled %v, release %v", handled, release)
	}
	c.exec("INSERT INTO t VALUES (2)")
	if handled, _ := end("ROLLBACK WORK AND CHAIN"); !handled {
		t.Fatal("ROLLBACK AND CHAIN was not taken")
	}
	c.exec("INSERT INTO t VALUES (3)")
	c.exec("ROLLBACK")
	if got := c.rows("SELECT id FROM t"); got != "1" {
		t.Fatalf("rows %s, want 1: the chained transactions were not transactions", got)
	}

	c.exec("START TRANSACTION READ ONLY")
	end("COMMIT AND CHAIN")
	if _, err := c.query("INSERT INTO t VALUES (4)"); errno(err) != 1792 {
		t.Fatalf("an insert in a transaction chained to a READ ONLY one: %v, want 1792", err)
	}
	c.exec("ROLLBACK")

	c.exec("BEGIN")
	c.exec("INSERT INTO t VALUES (5)")
	if handled, release := end("COMMIT RELEASE"); !handled || !release {
		t.Fatalf("COMMIT RELEASE: handled %v, release %v", handled, release)
	}
	if got := c.rows("SELECT COUNT(*) FROM t WHERE id = 5"); got != "1" {
		t.Fatal("COMMIT RELEASE did not commit")
	}

	c.exec("SET completion_type = 'CHAIN'")
	c.exec("BEGIN")
	c.exec("INSERT INTO t VALUES (6)")
	if handled, _ := end("COMMIT"); !handled {
		t.Fatal("COMMIT under completion_type CHAIN did not chain")
	}
	c.exec("INSERT INTO t VALUES (7)")
	if handled, _ := end("ROLLBACK AND NO CHAIN"); handled {
		t.Fatal("AND NO CHAIN chained")
	}
	c.exec("ROLLBACK AND NO CHAIN")
	if got := c.rows("SELECT id FROM t WHERE id > 5"); got != "6" {
		t.Fatalf("rows %s, want 6", got)
	}
	if _, err := h.e.GMS.PrepareQuery(c.ctx, "COMMIT"); errno(err) != mysql.ERNotSupportedYet {
		t.Fatalf("a prepared COMMIT under completion_type CHAIN: %v, want 1235", err)
	}
	c.exec("SET completion_type = 'RELEASE'")
	if handled, release := end("rollback"); !handled || !release {
		t.Fatalf("ROLLBACK under completion_type RELEASE: handled %v, release %v", handled, release)
	}
	c.exec("SET completion_type = DEFAULT")
	if _, _, err := h.e.TxnEndStatement(id, "COMMIT AND CHAIN RELEASE"); errno(err) != mysql.ERParseError {
		t.Fatalf("COMMIT AND CHAIN RELEASE: %v, want 1064", err)
	}
}
