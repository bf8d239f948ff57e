// Package failover promotes a replica to primary after its primary is
// lost, and points the other replicas at it: the procedure the README's
// "Failover" section describes, run as one command (`lockstep failover`)
// over the MySQL protocol, as orchestrator or MHA run it for MySQL.
//
// The steps, and why each comes where it does:
//
//  1. Every replica must answer (unless told to go on without those that
//     do not): one that is down may be the only one that received a
//     commit the primary acknowledged, and promoting another would lose
//     it.
//  2. Each replica stops receiving (STOP REPLICA IO_THREAD), so that what
//     it received is fixed, even if the old primary is not quite dead,
//     then applies all of it (its Retrieved_Gtid_Set within its
//     gtid_executed). A replica whose applier stopped on an error cannot
//     be judged and ends the failover.
//  3. The new primary is the replica whose gtid_executed holds every
//     other's. With semi-synchronous replication (AFTER_SYNC) every
//     acknowledged commit is on some replica, so it is on that one. If no
//     replica holds all the others hold, they diverged: the failover
//     stops, naming what each lacks, and lets them receive again.
//  4. The new primary stops replicating (STOP REPLICA, RESET REPLICA
//     ALL), becomes writable (read_only OFF) and, if asked, waits for
//     semi-synchronous acknowledgements.
//  5. The others replicate from it by GTID auto-positioning, keeping
//     their user and password.
//
// The package speaks SQL to servers and knows nothing of their insides;
// the choice of step 3 is a pure function (Choose).
package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Replica is one replica of the lost primary.
type Replica struct {
	// Addr is host:port, as the other replicas reach it (they replicate
	// from it if it is promoted).
	Addr string
	DB   *sql.DB
}

// Options tune a failover.
type Options struct {
	// ApplyTimeout bounds the wait for each replica to apply what it
	// received (default 1 minute).
	ApplyTimeout time.Duration
	// SemiSync turns rpl_semi_sync_source_enabled on on the new primary.
	SemiSync bool
	// SkipUnreachable goes on without the replicas that do not answer
	// (they may hold acknowledged commits the others lack).
	SkipUnreachable bool
	// Log, if set, is told each step.
	Log func(format string, args ...any)
}

// Result is what a failover did.
type Result struct {
	// Primary is the index of the promoted replica.
	Primary int
	// Executed is each replica's gtid_executed when the choice was made
	// ("" for one skipped).
	Executed []string
	// Skipped are the replicas that did not answer, by index.
	Skipped []int
	// Repointed are the replicas now replicating from the new primary.
	Repointed []int
	// Failed are replicas that could not be pointed at it, with why.
	Failed map[int]error
}

// Promote runs a failover over replicas (see the package comment).
func Promote(ctx context.Context, replicas []Replica, o Options) (*Result, error) {
	if len(replicas) == 0 {
		return nil, errors.New("failover: no replica given")
	}
	if o.ApplyTimeout <= 0 {
		o.ApplyTimeout = time.Minute
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &Result{Primary: -1, Executed: make([]string, len(replicas)), Failed: map[int]error{}}

	// 1. Who answers.
	var live []int
	for i, r := range replicas {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.DB.PingContext(pctx)
		cancel()
		if err != nil {
			if !o.SkipUnreachable {
				return nil, fmt.Errorf("failover: replica %s does not answer (%v); it may hold commits the others lack: bring it back, or skip it knowingly", r.Addr, err)
			}
			logf("replica %s does not answer: skipped (%v)", r.Addr, err)
			res.Skipped = append(res.Skipped, i)
			continue
		}
		var version string
		if err := r.DB.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return nil, fmt.Errorf("failover: %s: %w", r.Addr, err)
		}
		if strings.Contains(strings.ToLower(version), "mariadb") {
			// MariaDB's GTIDs are another kind (domain-server-sequence,
			// gtid_slave_pos, MASTER_USE_GTID): the comparison and the
			// statements here are MySQL's.
			return nil, fmt.Errorf("failover: %s is MariaDB %s: this command promotes replicas with MySQL's GTIDs (Lockstep, MySQL)", r.Addr, version)
		}
		if _, err := ReplicaStatus(ctx, r.DB); err != nil {
			return nil, fmt.Errorf("failover: %s: %w", r.Addr, err)
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return nil, errors.New("failover: no replica answers")
	}

	// 2. Receive no more; apply what was received.
	for _, i := range live {
		if _, err := replicas[i].DB.ExecContext(ctx, "STOP REPLICA IO_THREAD"); err != nil {
			return nil, fmt.Errorf("failover: STOP REPLICA IO_THREAD on %s: %w", replicas[i].Addr, err)
		}
	}
	resume := func() {
		for _, i := range live {
			_, _ = replicas[i].DB.ExecContext(ctx, "START REPLICA IO_THREAD")
		}
	}
	sets := make([]binlog.GTIDSet, len(live))
	for k, i := range live {
		set, err := waitApplied(ctx, replicas[i], o.ApplyTimeout)
		if err != nil {
			resume()
			return nil, fmt.Errorf("failover: %w", err)
		}
		sets[k] = set
		res.Executed[i] = set.String()
		logf("replica %s has applied everything it received: %s", replicas[i].Addr, orEmpty(set.String()))
	}

	// 3. The one that holds everything.
	k, err := Choose(sets)
	if err != nil {
		resume()
		names := make([]string, len(live))
		for n, i := range live {
			names[n] = replicas[i].Addr
		}
		return nil, fmt.Errorf("failover: %w", describeDivergence(err, names))
	}
	p := live[k]
	res.Primary = p
	primary := replicas[p]
	logf("promoting %s", primary.Addr)

	// 4. Promote it.
	for _, q := range []string{"STOP REPLICA", "RESET REPLICA ALL", "SET GLOBAL read_only = OFF"} {
		if _, err := primary.DB.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("failover: promoting %s: %s: %w", primary.Addr, q, err)
		}
	}
	if o.SemiSync {
		if _, err := primary.DB.ExecContext(ctx, "SET GLOBAL rpl_semi_sync_source_enabled = ON"); err != nil {
			return res, fmt.Errorf("failover: promoting %s: %w", primary.Addr, err)
		}
	}

	// 5. The others follow it.
	host, port, err := net.SplitHostPort(primary.Addr)
	if err != nil {
		return res, fmt.Errorf("failover: the new primary's address %q: %w", primary.Addr, err)
	}
	change := fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_AUTO_POSITION = 1",
		strings.ReplaceAll(host, "'", "''"), port)
	for _, i := range live {
		if i == p {
			continue
		}
		if err := Repoint(ctx, replicas[i].DB, change); err != nil {
			res.Failed[i] = err
			logf("replica %s could not be pointed at %s: %v", replicas[i].Addr, primary.Addr, err)
			continue
		}
		res.Repointed = append(res.Repointed, i)
		logf("replica %s now replicates from %s", replicas[i].Addr, primary.Addr)
	}
	return res, nil
}

// Repoint makes db replicate with a CHANGE REPLICATION SOURCE statement.
func Repoint(ctx context.Context, db *sql.DB, change string) error {
	for _, q := range []string{"STOP REPLICA", change, "START REPLICA"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// Choose returns the index of the set that contains every other set. If
// several do (they are equal), the first. If none does, the error is a
// *DivergenceError.
func Choose(sets []binlog.GTIDSet) (int, error) {
	if len(sets) == 0 {
		return -1, errors.New("no replica to choose from")
	}
	for i, s := range sets {
		holds := true
		for j, o := range sets {
			if j != i && !o.Subtract(s).IsEmpty() {
				holds = false
				break
			}
		}
		if holds {
			return i, nil
		}
	}
	var union binlog.GTIDSet
	for _, s := range sets {
		union.AddSet(s)
	}
	d := &DivergenceError{Lacks: make([]binlog.GTIDSet, len(sets))}
	for i, s := range sets {
		d.Lacks[i] = union.Subtract(s)
	}
	return -1, d
}

// DivergenceError says that no replica holds every transaction the others
// hold: Lacks[i] is what replica i lacks of the others'.
type DivergenceError struct {
	Lacks []binlog.GTIDSet
}

func (e *DivergenceError) Error() string {
	var parts []string
	for i, l := range e.Lacks {
		parts = append(parts, fmt.Sprintf("replica %d lacks %s", i+1, l))
	}
	return "no replica holds every transaction the others hold (" + strings.Join(parts, "; ") + ")"
}

// describeDivergence names the replicas of a *DivergenceError by address.
func describeDivergence(err error, names []string) error {
	var d *DivergenceError
	if !errors.As(err, &d) {
		return err
	}
	var parts []string
	for i, l := range d.Lacks {
		parts = append(parts, fmt.Sprintf("%s lacks %s", names[i], l))
	}
	return fmt.Errorf("the replicas diverged, none can be promoted without losing transactions (%s): apply the missing ones on one of them by hand, or provision them again", strings.Join(parts, "; "))
}

// waitApplied waits until r has applied every transaction it received,
// and returns its gtid_executed then.
func waitApplied(ctx context.Context, r Replica, limit time.Duration) (binlog.GTIDSet, error) {
	deadline := time.Now().Add(limit)
	for {
		st, err := ReplicaStatus(ctx, r.DB)
		if err != nil {
			return binlog.GTIDSet{}, fmt.Errorf("%s: %w", r.Addr, err)
		}
		executed, err := GTIDExecuted(ctx, r.DB)
		if err != nil {
			return binlog.GTIDSet{}, fmt.Errorf("%s: %w", r.Addr, err)
		}
		retrieved, err := binlog.ParseGTIDSet(st["Retrieved_Gtid_Set"])
		if err != nil {
			return binlog.GTIDSet{}, fmt.Errorf("%s: its Retrieved_Gtid_Set: %w", r.Addr, err)
		}
		if retrieved.Subtract(executed).IsEmpty() {
			return executed, nil
		}
		if n := st["Last_SQL_Errno"]; n != "" && n != "0" {
			return binlog.GTIDSet{}, fmt.Errorf("%s stopped applying on error %s (%s) with %s received and not applied: fix it and run the failover again",
				r.Addr, n, st["Last_SQL_Error"], retrieved.Subtract(executed))
		}
		if time.Now().After(deadline) {
			return binlog.GTIDSet{}, fmt.Errorf("%s has not applied %s after %v", r.Addr, retrieved.Subtract(executed), limit)
		}
		select {
		case <-ctx.Done():
			return binlog.GTIDSet{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// GTIDExecuted is db's @@global.gtid_executed.
func GTIDExecuted(ctx context.Context, db *sql.DB) (binlog.GTIDSet, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@global.gtid_executed").Scan(&s); err != nil {
		return binlog.GTIDSet{}, err
	}
	return binlog.ParseGTIDSet(s)
}

// ReplicaStatus is db's SHOW REPLICA STATUS row, by column; it fails for a
// server that is not a replica.
func ReplicaStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW REPLICA STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("not a replica (SHOW REPLICA STATUS is empty)")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cols))
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}

func orEmpty(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}
