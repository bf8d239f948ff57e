package workload

// A primary and its replicas, started by a run, so that the workloads'
// checks hold across failovers: clients write to whichever server is the
// primary, through a dialer that follows it (as a virtual IP or a proxy
// does in production), and the failover fault promotes a replica with
// package failover, exactly as `lockstep failover` does.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/failover"
)

// semiSyncFlag is the option a primary of a semi-synchronous set starts
// with; its replicas start without it (a replica waiting for
// acknowledgements of what it applies, with no replica of its own, would
// stall its applier).
const semiSyncFlag = "--rpl-semi-sync-source-enabled"

// ReplicaSet is a primary and its replicas (StartReplicaSet).
type ReplicaSet struct {
	Servers  []*Server
	SemiSync bool

	mu      sync.Mutex
	primary int
	dialer  string

	// Reprovisioned counts old primaries the new primary refused (they
	// held transactions they never sent) and that were started again
	// empty, to replicate everything.
	Reprovisioned atomic.Int64
}

var dialers atomic.Int64

// StartReplicaSet starts n Lockstep servers of bin (data under
// dir/serverN, the given extra options): server1 the primary, the others its replicas by
// GTID auto-positioning; with semiSync, semi-synchronous (AFTER_SYNC, one
// acknowledgement, waiting up to a minute before falling back).
func StartReplicaSet(n int, bin Binary, dir string, semiSync bool, extra ...string) (*ReplicaSet, error) {
	if bin.MariaDB {
		// Promotion speaks MySQL's statements (package failover);
		// MariaDB's CHANGE MASTER and GTIDs differ.
		return nil, errors.New("replica sets are of Lockstep servers only: failover promotes with MySQL's statements, which MariaDB does not take")
	}
	if n < 2 {
		return nil, errors.New("a replica set needs a primary and at least one replica")
	}
	rs := &ReplicaSet{SemiSync: semiSync, dialer: fmt.Sprintf("lockstep-primary-%d", dialers.Add(1))}
	stopAll := func() {
		for _, s := range rs.Servers {
			_ = s.Stop()
		}
	}
	for i := range n {
		name := fmt.Sprintf("server%d", i+1)
		args := append([]string{"--server-id=" + strconv.Itoa(i+1),
			"--rpl-semi-sync-replica-enabled", "--rpl-semi-sync-source-timeout=60000"}, extra...)
		if semiSync && i == 0 {
			args = append(args, semiSyncFlag)
		}
		s, err := StartServer(name, bin, filepath.Join(dir, name), args...)
		if err != nil {
			stopAll()
			return nil, err
		}
		rs.Servers = append(rs.Servers, s)
	}
	mysql.RegisterDialContext(rs.dialer, func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(rs.Primary().Port))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range rs.Servers[1:] {
		if err := rs.follow(ctx, s, rs.Servers[0]); err != nil {
			stopAll()
			return nil, err
		}
	}
	if err := rs.waitSemiSyncReplicas(ctx); err != nil {
		stopAll()
		return nil, err
	}
	return rs, nil
}

// Stop stops every server.
func (rs *ReplicaSet) Stop() {
	for _, s := range rs.Servers {
		_ = s.Stop()
	}
}

// Primary is the server that is the primary now.
func (rs *ReplicaSet) Primary() *Server {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.Servers[rs.primary]
}

// Endpoint reaches whichever server is the primary when a connection is
// made (the driver's dialer, see Config.Endpoints).
func (rs *ReplicaSet) Endpoint() string { return rs.dialer + "(primary)" }

// follow makes s replicate from p.
func (rs *ReplicaSet) follow(ctx context.Context, s, p *Server) error {
	db, err := sql.Open("mysql", s.rootDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	change := fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = %d, SOURCE_USER = 'root', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1", p.Port)
	if err := failover.Repoint(ctx, db, change); err != nil {
		return fmt.Errorf("%s replicating from %s: %w", s.Name, p.Name, err)
	}
	return nil
}

// waitSemiSyncReplicas waits until every replica is connected to the
// primary as a semi-synchronous one.
func (rs *ReplicaSet) waitSemiSyncReplicas(ctx context.Context) error {
	if !rs.SemiSync {
		return nil
	}
	p := rs.Primary()
	db, err := sql.Open("mysql", p.rootDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	want := strconv.Itoa(len(rs.Servers) - 1)
	for {
		var name, v string
		err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'Rpl_semi_sync_source_clients'").Scan(&name, &v)
		if err == nil && v == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the replicas of %s did not all connect as semi-synchronous ones (%s of %s): %w", p.Name, v, want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// failover kills the primary and promotes a replica with package
// failover; the old primary comes back as a replica of the new one, or,
// refused for holding transactions it never sent, is started again empty
// and replicates everything.
func (rs *ReplicaSet) failover(ctx context.Context) (string, error) {
	rs.mu.Lock()
	old := rs.primary
	rs.mu.Unlock()
	oldSrv := rs.Servers[old]
	if err := oldSrv.Kill(); err != nil {
		return "", err
	}
	var replicas []failover.Replica
	var idx []int
	for i, s := range rs.Servers {
		if i == old {
			continue
		}
		db, err := sql.Open("mysql", s.rootDSN())
		if err != nil {
			return "", err
		}
		defer db.Close()
		replicas = append(replicas, failover.Replica{Addr: "127.0.0.1:" + strconv.Itoa(s.Port), DB: db})
		idx = append(idx, i)
	}
	res, err := failover.Promote(ctx, replicas, failover.Options{ApplyTimeout: time.Minute, SemiSync: rs.SemiSync})
	if err != nil {
		// Nothing promoted: the old primary comes back as it was.
		if serr := oldSrv.Start(); serr != nil {
			return "", fmt.Errorf("%w; and restarting %s: %v", err, oldSrv.Name, serr)
		}
		return "", err
	}
	if len(res.Failed) > 0 {
		return "", fmt.Errorf("promoted %s, but: %v", replicas[res.Primary].Addr, res.Failed)
	}
	newSrv := rs.Servers[idx[res.Primary]]
	if rs.SemiSync {
		// A restart keeps each server in its role.
		newSrv.setFlag(semiSyncFlag, true)
		oldSrv.setFlag(semiSyncFlag, false)
	}
	rs.mu.Lock()
	rs.primary = idx[res.Primary]
	rs.mu.Unlock()

	if err := oldSrv.Start(); err != nil {
		return "", err
	}
	if err := rs.follow(ctx, oldSrv, newSrv); err != nil {
		return "", err
	}
	refused, err := rs.caughtUpOrRefused(ctx, oldSrv, newSrv)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("%s promoted", newSrv.Name)
	if refused {
		// Provisioned again: an empty data directory replicates
		// everything by GTID.
		rs.Reprovisioned.Add(1)
		if err := oldSrv.Stop(); err != nil {
			return "", err
		}
		if err := os.RemoveAll(oldSrv.dataDir()); err != nil {
			return "", err
		}
		if err := oldSrv.Start(); err != nil {
			return "", err
		}
		if err := rs.follow(ctx, oldSrv, newSrv); err != nil {
			return "", err
		}
		what += fmt.Sprintf(", %s provisioned again", oldSrv.Name)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return what, rs.waitSemiSyncReplicas(wctx)
}

// caughtUpOrRefused waits until s, replicating from p, has applied all p
// has, or p refused it (13114: it holds transactions p lacks).
func (rs *ReplicaSet) caughtUpOrRefused(ctx context.Context, s, p *Server) (refused bool, err error) {
	sdb, err := sql.Open("mysql", s.rootDSN())
	if err != nil {
		return false, err
	}
	defer sdb.Close()
	pdb, err := sql.Open("mysql", p.rootDSN())
	if err != nil {
		return false, err
	}
	defer pdb.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		if st, err := failover.ReplicaStatus(ctx, sdb); err == nil && st["Last_IO_Errno"] == "13114" {
			return true, nil
		}
		have, err1 := failover.GTIDExecuted(ctx, sdb)
		want, err2 := failover.GTIDExecuted(ctx, pdb)
		if err1 == nil && err2 == nil && want.Subtract(have).IsEmpty() {
			return false, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("%s neither caught up with %s nor was refused within a minute", s.Name, p.Name)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// disconnect has the primary drop its replicas' connections (KILL of
// their binlog dump threads); they reconnect by themselves.
func (rs *ReplicaSet) disconnect(ctx context.Context) (string, error) {
	db, err := sql.Open("mysql", rs.Primary().rootDSN())
	if err != nil {
		return "", err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
	if err != nil {
		return "", err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return "", err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		return "", errors.New("no replica connected")
	}
	for _, id := range ids {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d replica connection(s) dropped", len(ids)), nil
}

// converged waits until every replica has applied all the primary has and
// compares the tables of database on every server: the check that no
// failover left a server with rows of its own. The primary's set is read
// again at every step: a commit that waited for a replica's
// acknowledgement at the end of the run may still become visible there.
func (rs *ReplicaSet) converged(ctx context.Context, database string) Check {
	c := Check{Name: "replicas converged"}
	p := rs.Primary()
	pdb, err := sql.Open("mysql", p.rootDSN())
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer pdb.Close()
	var notes []string
	c.OK = true
	var others []*sql.DB
	for _, s := range rs.Servers {
		if s == p {
			continue
		}
		db, err := sql.Open("mysql", s.rootDSN())
		if err != nil {
			c.OK, c.Detail = false, err.Error()
			return c
		}
		defer db.Close()
		others = append(others, db)
		deadline := time.Now().Add(time.Minute)
		for {
			want, err1 := failover.GTIDExecuted(ctx, pdb)
			have, err2 := failover.GTIDExecuted(ctx, db)
			if err1 == nil && err2 == nil && have.Equal(want) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				c.OK = false
				notes = append(notes, fmt.Sprintf("%s did not reach the primary's gtid_executed within a minute (has %s, primary %s)", s.Name, have, want))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wantSum, err := tablesDigest(ctx, pdb, database)
	if err != nil {
		c.OK, c.Detail = false, err.Error()
		return c
	}
	for i, db := range others {
		if sum, err := tablesDigest(ctx, db, database); err != nil || sum != wantSum {
			c.OK = false
			notes = append(notes, fmt.Sprintf("replica %d's tables differ from the primary's (%v)", i+1, err))
		}
	}
	if c.OK {
		c.Detail = fmt.Sprintf("%d servers, primary %s: same gtid_executed, same rows", len(rs.Servers), p.Name)
	} else {
		c.Detail = strings.Join(notes, "; ")
	}
	return c
}

// tablesDigest hashes every row of every table of database, in a fixed
// order.
func tablesDigest(ctx context.Context, db *sql.DB, database string) (string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", database)
	if err != nil {
		return "", err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return "", err
		}
		tables = append(tables, t)
	}
	rows.Close()
	h := sha256.New()
	for _, t := range tables {
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT * FROM `%s`.`%s`", database, t))
		if err != nil {
			return "", err
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			var b strings.Builder
			for _, v := range vals {
				fmt.Fprintf(&b, "%v:%q,", v.Valid, v.String)
			}
			lines = append(lines, b.String())
		}
		rows.Close()
		slices.Sort(lines)
		fmt.Fprintf(h, "%s\n%d\n", t, len(lines))
		for _, l := range lines {
			fmt.Fprintln(h, l)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// setFlag adds or removes a flag from the options s starts with.
func (s *Server) setFlag(flag string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.args = slices.DeleteFunc(s.args, func(a string) bool { return a == flag })
	if on {
		s.args = append(s.args, flag)
	}
}
