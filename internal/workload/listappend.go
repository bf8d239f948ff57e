package workload

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/lockstepdb/lockstep/internal/elle"
)

// list-append: transactions of one to four micro-operations on a few
// keys, each either an append of a unique value to the key's list
// (INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', value)) or a read
// of the list. The history (history.jsonl, the elle package's format) is
// checked by the elle package: the order of each key's appends is known
// from the lists read, so write-write, write-read and read-write
// dependencies between transactions can be inferred, and a cycle of them
// is an anomaly (G0, G1c, G-single, G2-item), judged allowed or not at the
// expected level. Keys are retired after a number of appends so that
// lists stay short.

const (
	listActiveKeys    = 5
	listAppendsPerKey = 64
)

type listAppend struct {
	mu      sync.Mutex
	history elle.History
	nextID  int64
	// keys: the active keys and how many values each has been given.
	keys     []int64
	appended map[int64]int64
	nextKey  int64
}

func newListAppend() *listAppend {
	l := &listAppend{appended: map[int64]int64{}}
	for l.nextKey = 0; l.nextKey < listActiveKeys; l.nextKey++ {
		l.keys = append(l.keys, l.nextKey)
	}
	return l
}

func (l *listAppend) setup(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS lists (k BIGINT PRIMARY KEY, v TEXT NOT NULL)",
		"DELETE FROM lists",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// plan picks a transaction's micro-operations, with fresh values.
func (l *listAppend) plan(c *client) elle.Txn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	t := elle.Txn{ID: l.nextID, Process: int64(c.id)}
	n := 1 + c.rnd.IntN(4)
	for i := 0; i < n; i++ {
		slot := c.rnd.IntN(len(l.keys))
		k := l.keys[slot]
		if c.rnd.IntN(2) == 0 {
			t.Ops = append(t.Ops, elle.Op{Kind: elle.OpRead, Key: strconv.FormatInt(k, 10)})
			continue
		}
		l.appended[k]++
		t.Ops = append(t.Ops, elle.AppendOp(strconv.FormatInt(k, 10), l.appended[k]))
		if l.appended[k] >= listAppendsPerKey {
			l.keys[slot] = l.nextKey // retire the key
			l.nextKey++
		}
	}
	return t
}

func (l *listAppend) step(ctx context.Context, c *client) error {
	if ctx.Err() != nil {
		return nil
	}
	t := l.plan(c)
	t.Start = c.r.now()
	o, err := c.transaction(ctx, func(tx *sql.Tx) error {
		for i := range t.Ops {
			op := &t.Ops[i]
			k, _ := strconv.ParseInt(op.Key, 10, 64)
			if op.Kind == elle.OpAppend {
				v := strconv.FormatInt(op.Value, 10)
				if _, err := tx.ExecContext(ctx, "INSERT INTO lists (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', ?)", k, v, v); err != nil {
					return err
				}
				continue
			}
			var s string
			err := tx.QueryRowContext(ctx, "SELECT v FROM lists WHERE k = ?", k).Scan(&s)
			if err == sql.ErrNoRows {
				op.List = []int64{}
				continue
			}
			if err != nil {
				return err
			}
			list, perr := parseList(s)
			if perr != nil {
				return fmt.Errorf("key %d holds %q: %w", k, s, perr)
			}
			op.List = list
		}
		return nil
	})
	c.done(ctx, o, err)
	t.End = c.r.now()
	t.Status = [...]elle.Status{elle.StatusOK, elle.StatusFail, elle.StatusInfo}[o]
	if err != nil {
		t.Error = err.Error()
	}
	if o != outcomeOK {
		for i := range t.Ops {
			t.Ops[i].List = nil // reads of transactions that did not commit mean nothing
		}
	}
	l.mu.Lock()
	l.history = append(l.history, t)
	l.mu.Unlock()
	return nil
}

func parseList(s string) ([]int64, error) {
	if s == "" {
		return []int64{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (l *listAppend) check(ctx context.Context, r *run) ([]Check, error) {
	f, err := os.Create(filepath.Join(r.cfg.Dir, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	if err := elle.Write(f, l.history); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	level, err := expectedLevel(r.cfg)
	if err != nil {
		return nil, err
	}
	res, err := elle.Check(l.history, elle.Options{Isolation: level})
	if err != nil {
		return nil, err
	}
	valid := true
	for _, a := range res.Anomalies {
		valid = valid && !a.Violation
	}
	return []Check{{Name: "isolation (elle, " + string(level) + ")", OK: valid, Detail: res.Report()}}, nil
}

// expectedLevel is the level histories are judged against: Config.Expect,
// or the one the sessions' isolation guarantees in MySQL-family servers.
// InnoDB's REPEATABLE READ reads from a snapshot but writes over the
// latest version, so it gives Adya's read committed guarantees (no G0,
// G1a, G1b, G1c) while G-single, G2-item and lost updates can occur; only
// SERIALIZABLE (locking reads) forbids them.
func expectedLevel(cfg Config) (elle.Isolation, error) {
	if cfg.Expect != "" {
		return elle.ParseIsolation(cfg.Expect)
	}
	switch strings.ToUpper(strings.NewReplacer("-", " ", "_", " ").Replace(cfg.Isolation)) {
	case "SERIALIZABLE":
		return elle.Serializable, nil
	case "READ UNCOMMITTED":
		return elle.ReadUncommitted, nil
	}
	return elle.ReadCommitted, nil
}

// forbidsLostUpdate reports whether level forbids lost updates.
func forbidsLostUpdate(level elle.Isolation) bool {
	return elle.Forbids(level, elle.LostUpdate)
}
