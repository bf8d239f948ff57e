package workload

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
)

// bank: accounts, each opened with the same balance; clients move money
// between two of them, half the time reading the balances with SELECT ...
// FOR UPDATE first (refusing a transfer that would overdraw), half the
// time with a plain read and conditional UPDATEs, and now and then read
// every balance in one transaction. The total never changes and no
// balance goes negative: every read, during the run and at the end, must
// show exactly that. A read that sees another total (a transfer half
// applied, a lost or repeated one) or a negative balance is a violation.
// The history (bank.jsonl) lists the reads and their totals.

const (
	bankAccounts = 8
	bankOpening  = 100
)

type bank struct {
	mu    sync.Mutex
	reads []bankRead
}

type bankRead struct {
	Process int     `json:"process"`
	Time    int64   `json:"time"`
	Total   int64   `json:"total"`
	Min     int64   `json:"min"`
	Rows    int64   `json:"rows"`
	Final   bool    `json:"final,omitempty"`
	Values  []int64 `json:"balances,omitempty"`
}

func newBank() *bank { return &bank{} }

func (b *bank) setup(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
		"DELETE FROM accounts",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for i := 0; i < bankAccounts; i++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO accounts VALUES (?, ?)", i, bankOpening); err != nil {
			return err
		}
	}
	return nil
}

func (b *bank) step(ctx context.Context, c *client) error {
	if ctx.Err() != nil {
		return nil
	}
	if c.rnd.IntN(5) == 0 {
		return b.read(ctx, c)
	}
	from := c.rnd.IntN(bankAccounts)
	to := (from + 1 + c.rnd.IntN(bankAccounts-1)) % bankAccounts
	amount := int64(1 + c.rnd.IntN(10))
	locking := c.rnd.IntN(2) == 0
	o, err := c.transaction(ctx, func(tx *sql.Tx) error {
		if locking {
			var bal int64
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", from).Scan(&bal); err != nil {
				return err
			}
			var other int64
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", to).Scan(&other); err != nil {
				return err
			}
			if bal < amount {
				return nil // nothing to move
			}
		}
		// The debit is conditional, so a plain transfer cannot overdraw
		// either; the credit only follows a debit that happened.
		res, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?", amount, from, amount)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + ? WHERE id = ?", amount, to)
		return err
	})
	c.done(ctx, o, err)
	return nil
}

// read reads every balance in one transaction and records it.
func (b *bank) read(ctx context.Context, c *client) error {
	var rd bankRead
	o, err := c.transaction(ctx, func(tx *sql.Tx) error {
		var err error
		rd, err = readBalances(ctx, tx)
		return err
	})
	c.done(ctx, o, err)
	if o != outcomeOK {
		return nil
	}
	rd.Process, rd.Time = c.id, c.r.now()
	b.mu.Lock()
	b.reads = append(b.reads, rd)
	b.mu.Unlock()
	return nil
}

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func readBalances(ctx context.Context, q querier) (bankRead, error) {
	rows, err := q.QueryContext(ctx, "SELECT balance FROM accounts ORDER BY id")
	if err != nil {
		return bankRead{}, err
	}
	defer rows.Close()
	rd := bankRead{Min: 1 << 62}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return bankRead{}, err
		}
		rd.Values = append(rd.Values, v)
		rd.Total += v
		rd.Rows++
		rd.Min = min(rd.Min, v)
	}
	return rd, rows.Err()
}

func (b *bank) check(ctx context.Context, r *run) ([]Check, error) {
	var finals []bankRead
	for i, ep := range r.cfg.Endpoints {
		db, done, err := r.checkConn(ctx, ep)
		if err != nil {
			return nil, err
		}
		rd, err := readBalances(ctx, db)
		done()
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: %w", i+1, err)
		}
		rd.Final, rd.Process, rd.Time = true, -1-i, r.now()
		finals = append(finals, rd)
	}
	all := append(append([]bankRead(nil), b.reads...), finals...)
	if err := writeJSONLines(filepath.Join(r.cfg.Dir, "bank.jsonl"), len(all), func(i int) any { return all[i] }); err != nil {
		return nil, err
	}
	want := int64(bankAccounts * bankOpening)
	var badTotal, badFinal, negative []bankRead
	for _, rd := range all {
		switch {
		case rd.Total == want && rd.Rows == bankAccounts:
		case rd.Final:
			badFinal = append(badFinal, rd)
		default:
			badTotal = append(badTotal, rd)
		}
		if rd.Min < 0 {
			negative = append(negative, rd)
		}
	}
	describe := func(rs []bankRead) string {
		if len(rs) == 0 {
			return ""
		}
		rd := rs[0]
		return fmt.Sprintf("; first: client %d at %.3fs read %d rows totalling %d, balances %v", rd.Process, float64(rd.Time)/1e9, rd.Rows, rd.Total, rd.Values)
	}
	// The reads during the run test isolation (each sees a state where
	// every transfer is whole); the final ones, after the faults and the
	// settling, what the servers keep.
	return []Check{
		{Name: "total unchanged", OK: len(badTotal) == 0,
			Detail: fmt.Sprintf("%d of %d reads during the run show a total other than %d%s",
				len(badTotal), len(b.reads), want, describe(badTotal))},
		{Name: "final total unchanged", OK: len(badFinal) == 0,
			Detail: fmt.Sprintf("%d of %d final reads show a total other than %d%s",
				len(badFinal), len(finals), want, describe(badFinal))},
		{Name: "no negative balance", OK: len(negative) == 0,
			Detail: fmt.Sprintf("%d reads show a negative balance%s", len(negative), describe(negative))},
	}, nil
}
