package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// slogLine is a line of the server's one log format (slog's text handler).
var slogLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=("(\\.|[^"\\])*"|\S+)`)

// TestStartLog: a normal start (with the MariaDB port too, which starts a
// second listener), a few clients and a shutdown log in one format, with
// no warning twice, no error, and no line per client connection or per
// failed statement.
func TestStartLog(t *testing.T) {
	mport := fixedPort(t)
	s := startServer(t, t.TempDir(), "--mariadb-port", fmt.Sprint(mport))
	for _, port := range []int{s.port, mport, s.port} {
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, "SELECT 1")
		db.Close()
	}
	// A statement error is the client's, and a client still connected at
	// shutdown is no server error.
	db := s.db("")
	if _, err := db.Exec("SELECT * FROM nosuch.t"); err == nil {
		t.Fatal("a query of a missing database succeeded")
	}
	held, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	s.stop()
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := slogLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("not in the server's log format: %s", line)
			continue
		}
		level, msg := m[1], m[2]
		switch {
		case strings.Contains(msg, "Connection") || strings.Contains(line, "nosuch"):
			t.Errorf("a client's connection or statement logged at %s: %s", level, line)
		case level == "ERROR":
			t.Errorf("error at a normal start: %s", line)
		case level == "WARN" && warned[msg]:
			t.Errorf("warning logged twice: %s", line)
		case level == "WARN":
			warned[msg] = true
		}
	}
	if !strings.Contains(string(b), "ready for connections") || !strings.Contains(string(b), "shutting down") {
		t.Errorf("the log lacks the ready or the shutdown line:\n%s", b)
	}
	if t.Failed() {
		t.Logf("server log:\n%s", b)
	}
}
