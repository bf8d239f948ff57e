package integration

import (
	"context"
	"testing"
	"time"
)

// TestCommitChainAndRelease: through a real client, COMMIT AND CHAIN
// leaves the session in a new transaction (what follows it is rolled back
// with it), and COMMIT RELEASE commits and then the server closes the
// connection: the client's next statement on it fails, and the commit is
// there for others.
func TestCommitChainAndRelease(t *testing.T) {
	s := startServer(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mustExec(t, s.db(""), "CREATE DATABASE d")
	mustExec(t, s.db(""), "CREATE TABLE d.t (id INT PRIMARY KEY)")
	c := s.conn(ctx)
	for _, q := range []string{"BEGIN", "INSERT INTO d.t VALUES (1)", "COMMIT AND CHAIN", "INSERT INTO d.t VALUES (2)", "ROLLBACK",
		"BEGIN", "INSERT INTO d.t VALUES (3)", "COMMIT RELEASE"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := c.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Fatal("the connection is still open after COMMIT RELEASE")
	}
	if got := tableText(t, s.db(""), "SELECT id FROM d.t ORDER BY id"); got != "1|\n3|\n" {
		t.Fatalf("rows %q, want 1 and 3", got)
	}
}
