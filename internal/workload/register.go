package workload

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
)

// register: a few hot rows, each a counter that clients (on every
// endpoint) increment by read-modify-write: read the value, then write it
// plus one, in one transaction. Half the rows are always read with SELECT
// ... FOR UPDATE, which every MySQL-family level must make safe; the
// other half always plainly, which only snapshot isolation or
// serializability make safe (InnoDB's REPEATABLE READ writes over a newer
// value: a lost update, allowed there, as in MySQL). A row is read one way
// only, so that a plain increment writing back an old value cannot be
// blamed on the locking ones.
//
// At the end each counter must equal its acknowledged increments, plus
// at most the increments whose outcome is unknown. Lost updates are found
// from the values read: two acknowledged increments of a row that read
// the same value both wrote value+1, so one of them was lost. Among
// locking increments that is always a violation; among plain ones it is
// judged against the expected level (register.jsonl lists every
// increment).

const registerRows = 4

type register struct {
	mu  sync.Mutex
	ops []registerOp
}

type registerOp struct {
	Process int    `json:"process"`
	Row     int    `json:"row"`
	Locking bool   `json:"locking"`
	Read    int64  `json:"read"`
	Status  string `json:"status"`
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
}

func newRegister() *register { return &register{} }

func (g *register) setup(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS registers (id INT PRIMARY KEY, v BIGINT NOT NULL)",
		"DELETE FROM registers",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for i := 0; i < registerRows; i++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO registers VALUES (?, 0)", i); err != nil {
			return err
		}
	}
	return nil
}

func (g *register) step(ctx context.Context, c *client) error {
	if ctx.Err() != nil {
		return nil
	}
	row := c.rnd.IntN(registerRows)
	op := registerOp{Process: c.id, Row: row, Locking: lockingRow(row), Read: -1, Start: c.r.now()}
	q := "SELECT v FROM registers WHERE id = ?"
	if op.Locking {
		q += " FOR UPDATE"
	}
	o, err := c.transaction(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, q, op.Row).Scan(&op.Read); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE registers SET v = ? WHERE id = ?", op.Read+1, op.Row)
		return err
	})
	c.done(ctx, o, err)
	op.Status, op.End = statusName(o), c.r.now()
	g.mu.Lock()
	g.ops = append(g.ops, op)
	g.mu.Unlock()
	return nil
}

// lockingRow reports whether row is read with FOR UPDATE.
func lockingRow(row int) bool { return row < registerRows/2 }

func (g *register) check(ctx context.Context, r *run) ([]Check, error) {
	if err := writeJSONLines(filepath.Join(r.cfg.Dir, "register.jsonl"), len(g.ops), func(i int) any { return g.ops[i] }); err != nil {
		return nil, err
	}
	db, done, err := r.checkConn(ctx, r.cfg.Endpoints[0])
	if err != nil {
		return nil, err
	}
	defer done()
	final := map[int]int64{}
	rows, err := db.QueryContext(ctx, "SELECT id, v FROM registers")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return nil, err
		}
		final[id] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	// Per row: acknowledged and unknown increments; which acknowledged
	// increments read the same value (two writers of value+1: one of them
	// was lost).
	type key struct {
		row  int
		read int64
	}
	readers := map[key][]registerOp{}
	acked, unknown := map[int]int64{}, map[int]int64{}
	for _, op := range g.ops {
		switch op.Status {
		case "ok":
			acked[op.Row]++
			readers[key{op.Row, op.Read}] = append(readers[key{op.Row, op.Read}], op)
		case "info":
			unknown[op.Row]++
		}
	}
	var lostLocking, lostPlain int
	// n acknowledged increments of a row read the same value and all
	// wrote value+1: n-1 of them were lost.
	for k, ops := range readers {
		if lockingRow(k.row) {
			lostLocking += len(ops) - 1
		} else {
			lostPlain += len(ops) - 1
		}
	}
	expect, err := expectedLevel(r.cfg)
	if err != nil {
		return nil, err
	}
	plainForbidden := forbidsLostUpdate(expect)
	// Each counter: at least its acknowledged increments (less the lost
	// updates the level allows, on plain rows), at most those plus the
	// ones whose outcome is unknown.
	var bad []string
	for row := 0; row < registerRows; row++ {
		low, high := acked[row], acked[row]+unknown[row]
		if !lockingRow(row) && !plainForbidden {
			low = 0
		}
		if final[row] < low || final[row] > high {
			bad = append(bad, fmt.Sprintf("row %d is %d; %d increments acknowledged, %d unknown", row, final[row], acked[row], unknown[row]))
		}
	}
	return []Check{
		{Name: "counters match increments", OK: len(bad) == 0,
			Detail: fmt.Sprintf("%d of %d counters outside what the acknowledged increments allow%s", len(bad), registerRows, listOrNone(bad))},
		{Name: "no lost update under FOR UPDATE", OK: lostLocking == 0,
			Detail: fmt.Sprintf("%d acknowledged locking increments wrote over one that read the same value", lostLocking)},
		{Name: "lost updates with plain reads (" + string(expect) + ")", OK: lostPlain == 0 || !plainForbidden,
			Detail: fmt.Sprintf("%d acknowledged plain increments wrote over one that read the same value; %s", lostPlain, allowedOrNot(plainForbidden))},
	}, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return " (" + fmt.Sprint(s) + ")"
}

func allowedOrNot(forbidden bool) string {
	if forbidden {
		return "forbidden at this level"
	}
	return "allowed at this level"
}
