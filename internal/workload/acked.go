package workload

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// acked-writes: each client inserts rows with ids of its own, one
// autocommit INSERT each. Every insert acknowledged (ok) must be in the
// final table, whatever crashed meanwhile; none refused (fail) may be; an
// insert whose outcome is unknown (info) may be either. The history
// (ackedwrites.jsonl) lists every insert and its outcome.

type ackedWrites struct {
	mu   sync.Mutex
	rows []ackedRow
}

type ackedRow struct {
	ID      int64  `json:"id"`
	Process int    `json:"process"`
	Status  string `json:"status"`
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	Error   string `json:"error,omitempty"`
}

func (a *ackedWrites) setup(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS acked (id BIGINT PRIMARY KEY, process INT NOT NULL)")
	if err == nil {
		_, err = db.ExecContext(ctx, "DELETE FROM acked")
	}
	return err
}

// ids are client<<32 | sequence, so clients never collide.
func (a *ackedWrites) step(ctx context.Context, c *client) error {
	if ctx.Err() != nil {
		return nil
	}
	a.mu.Lock()
	seq := int64(len(a.rows))
	a.rows = append(a.rows, ackedRow{})
	a.mu.Unlock()
	id := int64(c.id)<<32 | seq
	start := c.r.now()
	_, err := c.db.ExecContext(ctx, "INSERT INTO acked (id, process) VALUES (?, ?)", id, c.id)
	o := classify(err, true)
	c.done(ctx, o, err)
	row := ackedRow{ID: id, Process: c.id, Status: statusName(o), Start: start, End: c.r.now()}
	if err != nil {
		row.Error = err.Error()
	}
	a.mu.Lock()
	a.rows[seq] = row
	a.mu.Unlock()
	return nil
}

func statusName(o outcome) string {
	return [...]string{"ok", "fail", "info"}[o]
}

func (a *ackedWrites) check(ctx context.Context, r *run) ([]Check, error) {
	if err := writeJSONLines(filepath.Join(r.cfg.Dir, "ackedwrites.jsonl"), len(a.rows), func(i int) any { return a.rows[i] }); err != nil {
		return nil, err
	}
	db, done, err := r.checkConn(ctx, r.cfg.Endpoints[0])
	if err != nil {
		return nil, err
	}
	defer done()
	present, err := idSet(ctx, db, "SELECT id FROM acked")
	if err != nil {
		return nil, err
	}
	var lost, resurrected []int64
	var ok, info, infoPresent int
	for _, row := range a.rows {
		switch row.Status {
		case "ok":
			ok++
			if !present[row.ID] {
				lost = append(lost, row.ID)
			}
		case "fail":
			if present[row.ID] {
				resurrected = append(resurrected, row.ID)
			}
		case "info":
			info++
			if present[row.ID] {
				infoPresent++
			}
		}
	}
	checks := []Check{
		{Name: "acknowledged inserts present", OK: len(lost) == 0,
			Detail: fmt.Sprintf("%d of %d acknowledged inserts present, %d lost%s", ok-len(lost), ok, len(lost), sample(lost))},
		{Name: "refused inserts absent", OK: len(resurrected) == 0,
			Detail: fmt.Sprintf("%d refused inserts present%s", len(resurrected), sample(resurrected))},
		{Name: "unknown outcomes", OK: true,
			Detail: fmt.Sprintf("%d inserts of unknown outcome (the connection broke at COMMIT, or 1180): %d committed, %d not", info, infoPresent, info-infoPresent)},
	}
	return checks, nil
}

func idSet(ctx context.Context, db querier, q string) (map[int64]bool, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// sample lists up to five ids.
func sample(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) > 5 {
		return fmt.Sprintf(" (e.g. %v)", ids[:5])
	}
	return fmt.Sprintf(" (%v)", ids)
}

// writeJSONLines writes n values, one JSON document a line.
func writeJSONLines(path string, n int, at func(i int) any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := 0; i < n; i++ {
		if err := enc.Encode(at(i)); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
