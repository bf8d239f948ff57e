package sqlengine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
)

// harness runs SQL in-process against a real store, pipeline and engine.
type harness struct {
	t      testing.TB
	fs     vfs.FS
	e      *Engine
	pipe   *commit.Pipeline
	closed bool
}

func newHarness(t testing.TB) *harness {
	return openHarness(t, vfs.NewMem())
}

func openHarness(t testing.TB, fs vfs.FS) *harness {
	t.Helper()
	cfg := &commit.Config{ServerID: 1, ServerUUID: binlog.UUID{7, 7, 7}}
	cfg.SyncBinlog.Store(1)
	cfg.FlushLogAtTrxCommit.Store(1)
	cfg.MaxBinlogSize.Store(1 << 30)
	cfg.Tracking.Store(int32(commit.WriteSet))
	cfg.HistorySize.Store(25000)
	p, s, _, _, err := commit.Open(commit.OpenOptions{FS: fs, Dir: "/data", Collator: Collator{}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fs: fs, e: New(s, p, lock.New()), pipe: p}
	t.Cleanup(h.close)
	return h
}

// replayFromBinlog opens a harness on a crash image of fs whose store is
// removed, so everything in it comes from replaying the binlog, and
// returns a connection using database db.
func replayFromBinlog(t testing.TB, fs *vfs.MemFS, db string) *conn {
	t.Helper()
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := crashed.RemoveAll("/data/store"); err != nil {
		t.Fatal(err)
	}
	c := openHarness(t, crashed).conn()
	c.exec("USE " + db)
	return c
}

func (h *harness) close() {
	if h.closed {
		return
	}
	h.closed = true
	h.pipe.Close()
	h.e.store.Close()
}

// conn is one client session.
type conn struct {
	h   *harness
	ctx *sql.Context
}

var nextConn atomic.Uint32 // tests open connections from several goroutines

func (h *harness) conn() *conn {
	base := sql.NewBaseSessionWithClientServer("test", sql.Client{User: "root", Address: "localhost"}, nextConn.Add(1))
	s := &Session{BaseSession: base, eng: h.e}
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	ctx.SetCurrentDatabase("")
	return &conn{h: h, ctx: ctx}
}

// query runs one statement and returns its rows.
func (c *conn) query(q string) ([]sql.Row, error) {
	s := c.ctx.Session.(*Session)
	s.CommandBegin()
	defer s.CommandEnd()
	ctx := c.ctx.WithQuery(q)
	// A query's clock, as the server's context factory sets it.
	ctx.SetQueryTime(time.Now())
	applySessionTime(ctx)
	_, iter, _, err := c.h.e.GMS.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	for {
		r, err := iter.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			iter.Close(ctx)
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, iter.Close(ctx)
}

func (c *conn) exec(q string) {
	c.h.t.Helper()
	if _, err := c.query(q); err != nil {
		c.h.t.Fatalf("%s: %v", q, err)
	}
}

// rows runs q and formats the result as "a,b;c,d".
func (c *conn) rows(q string) string {
	c.h.t.Helper()
	rs, err := c.query(q)
	if err != nil {
		c.h.t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for _, r := range rs {
		var cells []string
		for _, v := range r {
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, strings.Join(cells, ","))
	}
	return strings.Join(out, ";")
}

func TestHarnessSmoke(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(10) NOT NULL DEFAULT '', KEY k_1 (k))")
	c.exec("INSERT INTO t (k, c) VALUES (5, 'a'), (7, 'b'), (5, 'c')")
	if got := c.rows("SELECT id, k, c FROM t ORDER BY id"); got != "1,5,a;2,7,b;3,5,c" {
		t.Fatalf("rows: %s", got)
	}
}
