package server

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestLogrusRouting: go-mysql-server's logrus entries reach the slog
// handler, per-client lines only at debug, the secure_file_priv warning
// once however many listeners give it.
func TestLogrusRouting(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		l := logrus.New()
		routeLogrus(l, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})).With("component", "sql"), level)
		if l.IsLevelEnabled(logrus.DebugLevel) != (level == slog.LevelDebug) {
			t.Fatalf("%v: logrus debug enabled %v", level, l.IsLevelEnabled(logrus.DebugLevel))
		}
		for range 2 { // two listeners start
			l.Info("Server ready. Accepting connections.")
			l.Warn("secure_file_priv is set to \"\", which is insecure.")
			l.Warn("Any user with GRANT FILE privileges will be able to read any file which the sql-server process can read.")
			l.Warn("Please consider restarting the server with secure_file_priv set to a safe (or non-existent) directory.")
		}
		l.WithField("connectionID", 7).Info("NewConnection")
		l.WithField("connectionID", 7).WithError(errors.New("duplicate key")).Warn("error running query")
		l.WithField("query", "SELECT 1").WithField("connectionID", 7).Error("unable to process query")
		l.WithField("connectionID", 7).Info("ConnectionClosed")
		out := buf.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if n := strings.Count(out, "level=WARN"); n != 1 || !strings.Contains(out, `msg="secure_file_priv is empty`) {
			t.Fatalf("%v: %d warnings, want the secure_file_priv one once:\n%s", level, n, out)
		}
		if !strings.Contains(out, `level=ERROR msg="unable to process query" component=sql connectionID=7 query="SELECT 1"`) {
			t.Fatalf("%v: the error entry is missing or changed:\n%s", level, out)
		}
		debug := strings.Count(out, "level=DEBUG")
		switch {
		case level == slog.LevelInfo && (debug != 0 || len(lines) != 2):
			t.Fatalf("at INFO: want the warning and the error only:\n%s", out)
		case level == slog.LevelDebug && (debug != 5 || !strings.Contains(out, "level=DEBUG msg=NewConnection component=sql connectionID=7")):
			t.Fatalf("at DEBUG: want the ready lines and the connection lines at DEBUG:\n%s", out)
		}
	}
}
