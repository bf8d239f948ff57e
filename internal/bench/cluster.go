package bench

// The cluster experiment: three Lockstep members against three MariaDB
// Galera nodes, with the settings published Galera benchmarks compare:
// wsrep_slave_threads 1 and 16 (TPS, latency, the time flow control
// paused the cluster), and innodb_flush_log_at_trx_commit 1 and 2 with
// the binlog on. Each system runs with the clients on one
// node, then spread over the three (sysbench connects round robin to
// every port; the built-in generator has one address, so it runs the
// first placement only).
//
// A Lockstep member is always durable: a commit is synced on a majority
// before it is acknowledged. Galera runs durable (sync_binlog=1, flush 1)
// and relaxed (flush 2, binlog not synced: what Galera users are advised
// to run, and which a coordinated crash can lose commits with). Applier
// threads are set at run time on every node (wsrep_slave_threads), so the
// data is loaded once per system.
//
// Per run, beside the driver's figures: the CPU of all three nodes per
// transaction, and the largest node's fraction of the run during which
// flow control held commits back (wsrep_flow_control_paused_ns; for
// Galera, replication was paused).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/mariadb"
)

// group is a cluster's nodes seen as one server by the load driver: the
// first node, or every node when spread.
type group struct {
	label   string // "" = its nodes'
	members []server
	spread  bool
}

func (g *group) Label() string {
	if g.label != "" {
		return g.label
	}
	return g.members[0].Label()
}
func (g *group) Port() int { return g.members[0].Port() }
func (g *group) PID() int  { return g.members[0].PID() }
func (g *group) DB(dbname string) (*sql.DB, error) {
	return g.members[0].DB(dbname)
}
func (g *group) Stop() error {
	var err error
	for _, m := range g.members {
		err = errors.Join(err, m.Stop())
	}
	return err
}
func (g *group) DataPaths() []string {
	var out []string
	for _, m := range g.members {
		out = append(out, m.DataPaths()...)
	}
	return out
}

// Ports are where the clients connect.
func (g *group) Ports() []int {
	if !g.spread {
		return []int{g.members[0].Port()}
	}
	var out []int
	for _, m := range g.members {
		out = append(out, m.Port())
	}
	return out
}

// PIDs are every node's process.
func (g *group) PIDs() []int {
	var out []int
	for _, m := range g.members {
		out = append(out, m.PID())
	}
	return out
}

var placements = []string{"one node", "three nodes"}

func runCluster(ctx context.Context, r *runner) error {
	appliers := r.o.Appliers
	if len(appliers) == 0 {
		appliers = []int{1, 16}
	}
	threads := slices.Max(r.o.Threads)
	r.notef("the cluster runs at %d client threads (the largest of --threads).", threads)
	places := placements
	if _, ok := r.drv.(sysbenchDriver); !ok {
		places = places[:1]
		r.notef("the built-in load generator connects to one address: clients on one node only (install sysbench to spread them).")
	}
	galera := r.withMariaDB
	if galera {
		if err := mariadb.GaleraInstalled(mariadb.GaleraProvider); err != nil {
			r.notef("%v: Lockstep runs alone.", err)
			galera = false
		}
	}
	runs := len(places) * len(appliers)
	if galera {
		runs += len(places) * len(appliers) * 2
	}
	r.plan(runs)

	lc, err := r.lockstepCluster(ctx)
	if err != nil {
		return err
	}
	for _, place := range places {
		lc.spread = place != placements[0]
		for _, a := range appliers {
			if err := setEach(ctx, lc, fmt.Sprintf("wsrep_slave_threads=%d", a)); err != nil {
				return err
			}
			if _, err := r.measure(ctx, lc, nil, "durable, clients on "+place, float64(a), threads); err != nil {
				return err
			}
		}
	}
	r.stop(lc.members...)
	if !galera {
		return nil
	}
	gc, err := r.galeraCluster(ctx)
	if err != nil {
		return err
	}
	for _, place := range places {
		gc.spread = place != placements[0]
		for _, mode := range []string{"durable", "relaxed"} {
			flush, sync := 1, 1
			if mode == "relaxed" {
				flush, sync = 2, 0
			}
			for _, a := range appliers {
				if err := setEach(ctx, gc, fmt.Sprintf("innodb_flush_log_at_trx_commit=%d", flush), fmt.Sprintf("sync_binlog=%d", sync), fmt.Sprintf("wsrep_slave_threads=%d", a)); err != nil {
					return err
				}
				if err := waitEach(ctx, gc, "an empty receive queue", func(db *sql.DB) bool {
					return statusNumber(ctx, db, "wsrep_local_recv_queue") == 0
				}); err != nil {
					return err
				}
				if _, err := r.measure(ctx, gc, nil, mode+", clients on "+place, float64(a), threads); err != nil {
					return err
				}
			}
		}
	}
	r.stop(gc.members...)
	return nil
}

// setEach runs SET GLOBAL on every node.
func setEach(ctx context.Context, g *group, assignments ...string) error {
	for _, m := range g.members {
		if err := setGlobal(ctx, m, assignments...); err != nil {
			return err
		}
	}
	return nil
}

// waitEach waits (at most ten minutes) until cond holds on every node.
func waitEach(ctx context.Context, g *group, what string, cond func(*sql.DB) bool) error {
	for i, m := range g.members {
		db, err := m.DB("")
		if err != nil {
			return err
		}
		deadline := time.Now().Add(10 * time.Minute)
		for !cond(db) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				db.Close()
				return fmt.Errorf("%s node %d: no %s in ten minutes", m.Label(), i+1, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
		db.Close()
	}
	return nil
}

func statusNumber(ctx context.Context, db *sql.DB, name string) float64 {
	var n, v string
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return -1
	}
	return f
}

func statusText(ctx context.Context, db *sql.DB, name string) string {
	var n, v string
	db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v)
	return v
}

// loaded prepares the sbtest tables through the first node and waits
// until every node holds them.
func (r *runner) loaded(ctx context.Context, g *group) error {
	first := g.members[0]
	r.say("preparing %d x %d rows on a %s cluster", r.o.Tables, r.o.TableSize, first.Label())
	if err := r.drv.Prepare(ctx, first, r.o); err != nil {
		return err
	}
	last := fmt.Sprintf("SELECT COUNT(*) FROM sbtest.sbtest%d", r.o.Tables)
	return waitEach(ctx, g, "sbtest tables", func(db *sql.DB) bool {
		var n int
		return db.QueryRowContext(ctx, last).Scan(&n) == nil && n == r.o.TableSize
	})
}

// lockstepCluster starts three Lockstep members on loopback and loads
// the tables.
func (r *runner) lockstepCluster(ctx context.Context) (*group, error) {
	var cports []int
	for range 3 {
		p, err := r.port()
		if err != nil {
			return nil, err
		}
		cports = append(cports, p)
	}
	var addrs []string
	for _, p := range cports {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	g := &group{}
	for i := range 3 {
		s, err := r.lockstep(i+1, "--wsrep-cluster-address=gcomm://"+strings.Join(addrs, ","),
			"--wsrep-node-address="+addrs[i], "--wsrep-cluster-name=bench")
		if err != nil {
			return nil, err
		}
		g.members = append(g.members, s)
	}
	if err := waitEach(ctx, g, "wsrep_ready ON", func(db *sql.DB) bool {
		return statusText(ctx, db, "wsrep_ready") == "ON"
	}); err != nil {
		return nil, err
	}
	return g, r.loaded(ctx, g)
}

// galeraCluster starts three MariaDB Galera nodes on loopback: the first
// bootstraps the cluster and is loaded, the others join it by state
// transfer (mariabackup), as galera_new_cluster and a service start would.
func (r *runner) galeraCluster(ctx context.Context) (*group, error) {
	type node struct{ sql, gcomm, ist, sst int }
	var nodes []node
	for range 3 {
		var n node
		for _, p := range []*int{&n.sql, &n.gcomm, &n.ist, &n.sst} {
			var err error
			if *p, err = r.port(); err != nil {
				return nil, err
			}
		}
		nodes = append(nodes, n)
	}
	plan := make([]mariadb.Node, len(nodes))
	for i, n := range nodes {
		plan[i] = mariadb.Node{Name: fmt.Sprintf("g%d", i+1), Host: "127.0.0.1", GComm: n.gcomm, IST: n.ist, SST: n.sst}
	}
	g := &group{label: "galera"}
	for i, n := range nodes {
		cnf := []string{"sync_binlog=1", "innodb_flush_log_at_trx_commit=1"}
		for _, o := range mariadb.GaleraOptions("bench", i, plan, mariadb.GaleraProvider, "512M") {
			cnf = append(cnf, o.Line())
		}
		var args []string
		if i == 0 {
			args = []string{"--wsrep-new-cluster"}
		}
		s, err := startMariaDBWith(r.serverDir("galera"), i+1, n.sql, args, cnf...)
		if err != nil {
			return nil, fmt.Errorf("starting Galera node %d: %w", i+1, err)
		}
		r.servers = append(r.servers, s)
		g.members = append(g.members, s)
		if err := waitEach(ctx, &group{members: []server{s}}, "Synced state", func(db *sql.DB) bool {
			return statusText(ctx, db, "wsrep_local_state_comment") == "Synced"
		}); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := r.loaded(ctx, g); err != nil {
				return nil, err
			}
		}
	}
	if err := waitEach(ctx, g, "a cluster of three", func(db *sql.DB) bool {
		return statusNumber(ctx, db, "wsrep_cluster_size") == 3
	}); err != nil {
		return nil, err
	}
	return g, nil
}
