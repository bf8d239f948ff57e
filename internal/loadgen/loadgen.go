// Package loadgen is a built-in, sysbench-like OLTP load generator, for
// machines without sysbench and for quick runs of `lockstep bench`.
//
// It creates sysbench's tables (sbtest1..N: id AUTO_INCREMENT primary key,
// k INT with a secondary index, c CHAR(120), pad CHAR(60)) and runs
// sysbench's transactions against them, one connection per worker:
//
//	oltp_point_select      SELECT c FROM sbtestN WHERE id=?            (autocommit)
//	oltp_update_index      UPDATE sbtestN SET k=k+1 WHERE id=?         (autocommit)
//	oltp_update_non_index  UPDATE sbtestN SET c=? WHERE id=?           (autocommit)
//	oltp_write_only        BEGIN; the two updates; DELETE and INSERT of one id; COMMIT
//
// Ids and tables are uniform random, as with sysbench --rand-type=uniform.
// Deadlocks (1213), lock wait timeouts (1205) and duplicate keys (1062) are
// counted as ignored errors and the transaction is rolled back, as sysbench
// does with its default --mysql-ignore-errors; any other error stops the run.
package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Workloads are the transaction types Run knows.
var Workloads = []string{"oltp_point_select", "oltp_update_index", "oltp_update_non_index", "oltp_write_only"}

// Config describes one run.
type Config struct {
	Workload  string
	Tables    int
	TableSize int
	Threads   int
	Duration  time.Duration
	Seed      uint64
}

// Result is what a run did.
type Result struct {
	Transactions uint64
	Queries      uint64
	Errors       uint64 // ignored errors (deadlocks, lock wait timeouts, duplicate keys)
	Elapsed      time.Duration
	P95          time.Duration // transaction latency
}

// TPS is transactions per second.
func (r Result) TPS() float64 { return float64(r.Transactions) / r.Elapsed.Seconds() }

// QPS is queries per second.
func (r Result) QPS() float64 { return float64(r.Queries) / r.Elapsed.Seconds() }

// Valid reports whether name is a workload Run knows.
func Valid(name string) bool {
	for _, w := range Workloads {
		if w == name {
			return true
		}
	}
	return false
}

// Prepare creates and fills the tables in the database db is connected to,
// loading with up to `threads` connections.
func Prepare(ctx context.Context, db *sql.DB, tables, size, threads int) error {
	for t := 1; t <= tables; t++ {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE sbtest%d (
  id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0,
  c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '',
  PRIMARY KEY (id), KEY k_%d (k))`, t, t)); err != nil {
			return fmt.Errorf("creating sbtest%d: %w", t, err)
		}
	}
	const batch = 500
	type job struct{ table, from, to int }
	jobs := make(chan job)
	errc := make(chan error, max(threads, 1))
	var wg sync.WaitGroup
	for w := 0; w < max(threads, 1); w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for j := range jobs {
				var b strings.Builder
				args := make([]any, 0, 4*(j.to-j.from+1))
				fmt.Fprintf(&b, "INSERT INTO sbtest%d (id, k, c, pad) VALUES ", j.table)
				for id := j.from; id <= j.to; id++ {
					if id > j.from {
						b.WriteByte(',')
					}
					b.WriteString("(?,?,?,?)")
					args = append(args, id, rng.IntN(size)+1, cValue(rng), padValue(rng))
				}
				if _, err := db.ExecContext(ctx, b.String(), args...); err != nil {
					errc <- fmt.Errorf("loading sbtest%d: %w", j.table, err)
					return
				}
			}
		}(uint64(w) + 1)
	}
	var err error
feed:
	for t := 1; t <= tables; t++ {
		for from := 1; from <= size; from += batch {
			select {
			case jobs <- job{t, from, min(from+batch-1, size)}:
			case err = <-errc:
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// cValue and padValue are sysbench's digit groups ("###########-" x 10 and
// x 5, each # a random digit).
func cValue(r *rand.Rand) string   { return digitGroups(r, 10) }
func padValue(r *rand.Rand) string { return digitGroups(r, 5) }

func digitGroups(r *rand.Rand, n int) string {
	b := make([]byte, 0, 12*n)
	for g := 0; g < n; g++ {
		if g > 0 {
			b = append(b, '-')
		}
		for range 11 {
			b = append(b, byte('0'+r.IntN(10)))
		}
	}
	return string(b)
}

// Run runs cfg's workload against db with cfg.Threads connections for
// cfg.Duration (or until ctx ends). progress, if set, is called about
// once a second with the transactions done so far.
func Run(ctx context.Context, db *sql.DB, cfg Config, progress func(done uint64)) (Result, error) {
	if !Valid(cfg.Workload) {
		return Result{}, fmt.Errorf("unknown workload %q (known: %s)", cfg.Workload, strings.Join(Workloads, ", "))
	}
	if cfg.Tables < 1 || cfg.TableSize < 1 || cfg.Threads < 1 {
		return Result{}, fmt.Errorf("tables, table size and threads must be at least 1")
	}
	db.SetMaxOpenConns(cfg.Threads + 1)
	db.SetMaxIdleConns(cfg.Threads + 1)
	conns := make([]*sql.Conn, cfg.Threads)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		conns[i] = c
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var trx, queries, ignored atomic.Uint64
	hists := make([]histogram, cfg.Threads)
	errc := make(chan error, cfg.Threads)
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{c: c, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))}
			for runCtx.Err() == nil {
				t0 := time.Now()
				n, err := w.transaction(runCtx)
				if runCtx.Err() != nil {
					return // a statement the deadline cut short is not counted
				}
				if err != nil {
					if ignorable(err) {
						ignored.Add(1)
						continue
					}
					errc <- err
					cancel()
					return
				}
				hists[i].add(time.Since(t0))
				trx.Add(1)
				queries.Add(uint64(n))
			}
		}()
	}
	done := make(chan struct{})
	if progress != nil {
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					progress(trx.Load())
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	res := Result{Transactions: trx.Load(), Queries: queries.Load(), Errors: ignored.Load(), Elapsed: time.Since(start)}
	var all histogram
	for i := range hists {
		all.merge(&hists[i])
	}
	res.P95 = all.quantile(0.95)
	select {
	case err := <-errc:
		return res, err
	default:
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func ignorable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205, 1062:
			return true
		}
	}
	return false
}

type worker struct {
	c   *sql.Conn
	cfg Config
	rng *rand.Rand
}

func (w *worker) table() int { return w.rng.IntN(w.cfg.Tables) + 1 }
func (w *worker) id() int    { return w.rng.IntN(w.cfg.TableSize) + 1 }

// transaction runs one transaction and returns the statements it sent.
func (w *worker) transaction(ctx context.Context) (int, error) {
	switch w.cfg.Workload {
	case "oltp_point_select":
		var c string
		err := w.c.QueryRowContext(ctx, fmt.Sprintf("SELECT c FROM sbtest%d WHERE id=?", w.table()), w.id()).Scan(&c)
		if errors.Is(err, sql.ErrNoRows) { // a row oltp_write_only deleted
			err = nil
		}
		return 1, err
	case "oltp_update_index":
		_, err := w.c.ExecContext(ctx, fmt.Sprintf("UPDATE sbtest%d SET k=k+1 WHERE id=?", w.table()), w.id())
		return 1, err
	case "oltp_update_non_index":
		_, err := w.c.ExecContext(ctx, fmt.Sprintf("UPDATE sbtest%d SET c=? WHERE id=?", w.table()), cValue(w.rng), w.id())
		return 1, err
	}
	// oltp_write_only
	tx, err := w.c.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	t := w.table()
	id := w.id()
	stmts := []struct {
		q    string
		args []any
	}{
		{fmt.Sprintf("UPDATE sbtest%d SET k=k+1 WHERE id=?", t), []any{w.id()}},
		{fmt.Sprintf("UPDATE sbtest%d SET c=? WHERE id=?", t), []any{cValue(w.rng), w.id()}},
		{fmt.Sprintf("DELETE FROM sbtest%d WHERE id=?", t), []any{id}},
		{fmt.Sprintf("INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)", t), []any{id, w.id(), cValue(w.rng), padValue(w.rng)}},
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			tx.Rollback()
			return 0, err
		}
	}
	return len(stmts) + 2, tx.Commit()
}

// histogram counts latencies in buckets growing by 5% from 1 us, enough to
// read a p95 within 5%.
type histogram struct {
	counts [400]uint64
	n      uint64
}

const histBase = 1.05

func (h *histogram) add(d time.Duration) {
	us := max(float64(d.Microseconds()), 1)
	i := min(int(math.Log(us)/math.Log(histBase)), len(h.counts)-1)
	h.counts[i]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(math.Pow(histBase, float64(i+1)) * float64(time.Microsecond))
		}
	}
	return 0
}
