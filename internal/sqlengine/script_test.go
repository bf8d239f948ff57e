package sqlengine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// TestScripts runs the SQL scripts in testdata/script, each on a new
// store, as readable statements of SQL semantics:
//
//	exec [conn=<name>]          one statement per line, run in order; the
//	                            output is the error of each that fails
//	                            (ERROR <number> (<sqlstate>): <message>)
//	                            and "ok" when all succeeded
//	query [conn=<name>]         one statement; its rows, tab-separated
//	exec conn=<name> async      one statement, run in the background:
//	                            "waiting" once it waits for a lock, or
//	                            "ended" if it ended first
//	wait conn=<name>            the background statement's outcome
//	restart                     stop the server cleanly and start it again
//	                            on the same files (connections are lost)
//
// Connections are opened by name on first use (default "a").
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/script", func(t *testing.T, path string) {
		fs := vfs.NewMem()
		h := openHarness(t, fs)
		conns := map[string]*conn{}
		pending := map[string]chan error{}
		get := func(d *datadriven.TestData) (string, *conn) {
			name := "a"
			if d.HasArg("conn") {
				d.ScanArgs(t, "conn", &name)
			}
			c := conns[name]
			if c == nil {
				c = h.conn()
				conns[name] = c
			}
			return name, c
		}
		defer func() {
			for name, ch := range pending {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Errorf("%s: background statement of connection %s never ended", path, name)
				}
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				name, c := get(d)
				if d.HasArg("async") {
					if pending[name] != nil {
						d.Fatalf(t, "connection %s already runs a statement", name)
					}
					ch := make(chan error, 1)
					done := make(chan struct{})
					q := strings.TrimSpace(d.Input)
					before := h.e.locks.Stats.Current.Load()
					go func() {
						err := runStatement(c, q)
						ch <- err
						close(done)
					}()
					pending[name] = ch
					// Go on only once the statement waits for a lock (or has
					// ended), so what follows happens after it: scripts are
					// deterministic.
					for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
						select {
						case <-done:
							return "ended"
						default:
						}
						if h.e.locks.Stats.Current.Load() > before {
							return "waiting"
						}
					}
					d.Fatalf(t, "connection %s neither waits nor ends", name)
				}
				var out strings.Builder
				for _, q := range strings.Split(d.Input, "\n") {
					if q = strings.TrimSpace(q); q == "" || strings.HasPrefix(q, "--") {
						continue
					}
					if err := runStatement(c, q); err != nil {
						fmt.Fprintln(&out, errorLine(err))
					}
				}
				if out.Len() == 0 {
					return "ok"
				}
				return out.String()
			case "query":
				_, c := get(d)
				rows, err := c.query(strings.TrimSpace(d.Input))
				if err != nil {
					return errorLine(err) + "\n"
				}
				var out strings.Builder
				for _, r := range rows {
					cells := make([]string, len(r))
					for i, v := range r {
						if v == nil {
							cells[i] = "NULL"
						} else {
							cells[i] = fmt.Sprint(v)
						}
					}
					fmt.Fprintln(&out, strings.Join(cells, "\t"))
				}
				if out.Len() == 0 {
					return "(no rows)"
				}
				return out.String()
			case "wait":
				name, _ := get(d)
				ch := pending[name]
				if ch == nil {
					d.Fatalf(t, "connection %s runs nothing in the background", name)
				}
				delete(pending, name)
				select {
				case err := <-ch:
					if err != nil {
						return errorLine(err)
					}
					return "ok"
				case <-time.After(10 * time.Second):
					d.Fatalf(t, "connection %s: still waiting after 10 s", name)
				}
			case "restart":
				if len(pending) > 0 {
					d.Fatalf(t, "restart with statements running")
				}
				h.close()
				h = openHarness(t, fs)
				conns = map[string]*conn{}
				return "ok"
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// runStatement runs q as the server does: the statements Lockstep answers
// itself first (here the lock statements: FLUSH TABLES WITH READ LOCK,
// LOCK TABLES, UNLOCK TABLES), then go-mysql-server.
func runStatement(c *conn, q string) error {
	if handled, err := c.h.e.ReadLockStatement(c.ctx.WithQuery(q), q); handled {
		return err
	}
	_, err := c.query(q)
	return err
}

// errorLine formats an error as the server sends it and the mariadb
// client prints it.
func errorLine(err error) string {
	// As the server does: go-mysql-server's handler casts the error,
	// then mysqlerr restores MySQL's number, SQLSTATE and text.
	err = mysqlError(err)
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		err = sql.CastSQLError(err)
	}
	if errors.As(mysqlerr.Restore(err), &se) {
		return fmt.Sprintf("ERROR %d (%s): %s", se.Num, se.State, se.Message)
	}
	return "ERROR: " + err.Error()
}
