package server

// A server started with --wsrep-cluster-address is a member of a
// multi-primary cluster (package cluster): clients write on any member,
// each transaction is certified by the cluster's leader and applied on
// every member in one order, and the binlog files are the raft log.
//
// What changes on a member, against a single server:
//
//   - There is no commit pipeline. Transactions commit through the node
//     (txn/cluster.go); the node's driver writes and syncs the log once
//     per turn, and every member, the origin included, applies committed
//     entries to its store in log order.
//   - Recovery is raft's: the binlog is opened as it is (a torn tail past
//     the synced mark is cut), the store names the last entry it applied,
//     and the committed entries after it are applied again by the node.
//   - Every transaction gets a GTID of the cluster's UUID (derived from
//     --wsrep-cluster-name, so every member has the same), numbered in
//     log order, as Galera's wsrep_gtid_mode does.
//   - The sync settings are fixed: the log is synced before any member
//     acknowledges an entry, so sync_binlog and
//     innodb_flush_log_at_trx_commit show 1 and are read-only.
//   - Every member is a source: replicas and binlog readers (dumps) get
//     the binlog up to what the member has applied, raft's records left
//     out, so every member serves the same GTIDs and a replica can move
//     from one member to another by GTID.
//   - The binlog rotates at max_binlog_size; PURGE BINARY LOGS and
//     binlog_expire_logs_seconds compact the raft log (compact), never
//     below what the store holds durably.
//   - What needs a single server's pipeline is refused with an error, not
//     ignored: replication from a source, FLUSH BINARY LOGS, FLUSH TABLES
//     WITH READ LOCK, and SET gtid_next.

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
	"github.com/lockstepdb/lockstep/internal/storage"
	"go.etcd.io/raft/v3/raftpb"
)

// ClusterConfig is a member's cluster settings (Galera's option names).
type ClusterConfig struct {
	// Address is wsrep_cluster_address: gcomm:// and the members'
	// cluster addresses. The members of a new cluster list every one of
	// them, in the same order; a member that joins a running cluster lists
	// members to ask (itself left out, or listed anywhere).
	Address string
	// NodeAddress is wsrep_node_address: where this member listens for
	// the other members.
	NodeAddress string
	// Name is wsrep_cluster_name: members of another cluster are refused,
	// and the cluster's GTID UUID is derived from it.
	Name string
	// TickMillis is the raft clock's tick; a leader is elected after 10
	// to 20 ticks without one.
	TickMillis int64
	// NodeName is wsrep_node_name ("": the host name).
	NodeName string
	// NewCluster is --wsrep-new-cluster: a member with an empty log starts
	// a new cluster with Address without asking its members first.
	NewCluster bool
	// Replaces is --lockstep-replace-member: the cluster address of the
	// voting member a member joining with an empty log takes the place
	// of, in one change (joint consensus) once it has caught up.
	Replaces string
	// SSLMode is --wsrep-ssl-mode ("" is PROVIDER); SSLCert, SSLKey and
	// SSLCA are the socket.ssl_* provider options (clustertls.go).
	SSLMode                string
	SSLCert, SSLKey, SSLCA string
	SSLOff                 bool // socket.ssl=no
	// ApplierThreads is wsrep_slave_threads (wsrep_applier_threads).
	ApplierThreads int64
	// FCLimit and FCFactor are gcs.fc_limit and gcs.fc_factor
	// (wsrep_provider_options); DesyncAfterMillis is how long a member
	// stays over the limit before it desyncs itself, and DesyncedReads
	// what a desynced member does with statements on tables (WAIT or
	// REFUSE).
	FCLimit           int64
	FCFactor          float64
	DesyncAfterMillis int64
	DesyncedReads     string
}

// defaultApplierThreads is wsrep_slave_threads' default.
const defaultApplierThreads = 1

// flowConfig is the member's flow-control settings.
func (c ClusterConfig) flowConfig() cluster.FlowConfig {
	return cluster.FlowConfig{Limit: uint64(c.FCLimit), Factor: c.FCFactor, DesyncAfter: time.Duration(c.DesyncAfterMillis) * time.Millisecond}
}

// members parses Address: the members' addresses by node id (1-based
// position in the list: the ids of a new cluster's members) and this
// member's id in it (0 when NodeAddress is not listed).
func (c ClusterConfig) members() (map[uint64]string, uint64, error) {
	list, ok := strings.CutPrefix(strings.TrimSpace(c.Address), "gcomm://")
	if !ok {
		return nil, 0, fmt.Errorf("--wsrep-cluster-address %q must start with gcomm://", c.Address)
	}
	addrs := map[uint64]string{}
	var self uint64
	for i, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, 0, fmt.Errorf("--wsrep-cluster-address: member %q needs a host and a port: %v", a, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && !c.secured() {
			// Without TLS the members' connections are neither encrypted
			// nor authenticated: anyone who could reach the port could
			// join the log.
			return nil, 0, fmt.Errorf("--wsrep-cluster-address: member %s is not on a loopback address; members off loopback need TLS between them: --wsrep-ssl-mode=SERVER with --ssl-cert, --ssl-key and --ssl-ca, or the socket.ssl_* provider options", a)
		}
		for _, b := range addrs {
			if b == a {
				return nil, 0, fmt.Errorf("--wsrep-cluster-address: member %s is listed twice", a)
			}
		}
		id := uint64(i + 1)
		addrs[id] = a
		if a == strings.TrimSpace(c.NodeAddress) {
			self = id
		}
	}
	if _, _, err := net.SplitHostPort(strings.TrimSpace(c.NodeAddress)); err != nil {
		return nil, 0, fmt.Errorf("--wsrep-node-address %q needs a host and a port: %v", c.NodeAddress, err)
	}
	return addrs, self, nil
}

// ClusterUUID is the GTID UUID of cluster name.
func ClusterUUID(name string) binlog.UUID {
	h := sha256.Sum256([]byte("lockstep cluster " + name))
	var u binlog.UUID
	copy(u[:], h[:16])
	u[6] = u[6]&0x0f | 0x50 // a name-based UUID (version 5 layout)
	u[8] = u[8]&0x3f | 0x80
	return u
}

// member is a running cluster node: the driver and applier (txn.Cluster)
// and what they run on.
type member struct {
	*cluster.Driver
	*cluster.Applier
	rlog      *raftlog.Log
	id        uint64
	sid       binlog.UUID
	transport *cluster.Transport
	cancel    context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	err       error // why the driver stopped
	// behind is closed when the node stopped behind the cluster's purged
	// log and the data directory is marked for a copy (resync.go): the
	// server restarts.
	behind chan struct{}
}

// openMember opens a member's store and binlog (its raft log) and starts
// its node. A member whose log is empty first finds its place in the
// cluster (place), which may wait until ctx ends.
func openMember(ctx context.Context, cfg Config, serverUUID binlog.UUID, log *slog.Logger, opts storage.Options) (*member, *storage.Engine, *binlog.Log, error) {
	addrs, self, err := cfg.Cluster.members()
	if err != nil {
		return nil, nil, nil, err
	}
	serverTLS, clientTLS, err := clusterTLS(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	resync, err := setAsideStale(cfg.DataDir, opts.Dir, log)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := storage.Open(opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening the store: %w", err)
	}
	bopts := binlog.Options{FS: vfs.Default, Dir: cfg.DataDir, BaseName: "binlog", ServerID: cfg.ServerID}
	// The store's GTIDs go into a new first file's Previous_gtids: those
	// of a state copied from another member (transferState).
	blog, _, err := binlog.Open(bopts, gtidsOfStore(store), store.Applied())
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	fail := func(err error) (*member, *storage.Engine, *binlog.Log, error) {
		blog.Close()
		store.Close()
		return nil, nil, nil, err
	}
	rlog, err := raftlog.Open(raftlog.Options{FS: vfs.Default, Dir: cfg.DataDir, ServerID: cfg.ServerID}, blog, 0)
	if err != nil {
		return fail(err)
	}
	sid := ClusterUUID(cfg.Cluster.Name)
	applier, applied, err := cluster.NewApplier(sid, store, rlog)
	if err != nil {
		return fail(err)
	}
	if err := rlog.NoteApplied(applied); err != nil {
		return fail(err)
	}
	high, err := store.GTIDHighWater()
	if err != nil {
		return fail(err)
	}
	hasData := len(high) > 0 || store.Applied().File != 0
	if _, placed, _ := cluster.RosterOf(rlog); placed && resync != "" {
		// Joined again: the log records this member's place.
		if err := clearResync(cfg.DataDir); err != nil {
			return fail(err)
		}
		resync = ""
	}
	where, bootstrap, err := place(ctx, cfg, rlog, hasData, addrs, self, resync != "", clientTLS, log)
	if err != nil {
		return fail(err)
	}
	if where.LogStart > 1 {
		// Joining after the log was compacted: the state first, then the
		// member opens on it as on any data directory it left.
		blog.Close()
		store.Close()
		if err := transferState(cfg, opts, where.Roster, where.From, clientTLS, log); err != nil {
			return nil, nil, nil, err
		}
		return openMember(ctx, cfg, serverUUID, log, opts)
	}
	roster := where.Roster
	self = roster.Self
	node, err := cluster.NewNode(cluster.Config{ID: self, ElectionTicks: 10, HeartbeatTicks: 1, MaxFileSize: cfg.MaxBinlogSize}, rlog, applied, roster, bootstrap)
	if err != nil {
		return fail(err)
	}
	nodeAddr := strings.TrimSpace(cfg.Cluster.NodeAddress)
	ln, err := net.Listen("tcp", nodeAddr)
	if err != nil {
		return fail(fmt.Errorf("cluster address %s (--wsrep-node-address): %w", nodeAddr, err))
	}
	m := &member{Applier: applier, rlog: rlog, id: self, sid: sid, done: make(chan struct{}), behind: make(chan struct{})}
	m.transport = cluster.NewTransport(self, cfg.Cluster.Name, nodeAddr, ln, node.Roster().Addrs)
	m.transport.UseTLS(serverTLS, clientTLS)
	tick := time.Duration(cfg.Cluster.TickMillis) * time.Millisecond
	// Replicas and binlog readers see what this member applied: committed
	// entries, never a tail raft may still cut.
	published := func() {
		pos := store.Applied()
		if pos.File == 0 {
			pos = binlog.Position{File: blog.Files()[0].Num, Pos: binlog.FileHeaderSize}
		}
		blog.PublishAt(pos)
	}
	published()
	apply := func(es []raftpb.Entry) error {
		if err := applier.Apply(es); err != nil {
			return err
		}
		published()
		return nil
	}
	applier.SetThreads(int(cfg.Cluster.ApplierThreads))
	m.Driver = cluster.NewDriver(node, m.transport, sid, tick, apply)
	m.SetFlowConfig(cfg.Cluster.flowConfig())
	service := memberService(cfg, serverUUID, nodeAddr)
	m.Service = func() map[string]string { return service }
	m.AppliedGNO = applier.Snapshot
	m.NewStoreSnapshot = store.NewSnapshot
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.transport.Start()
	go func() {
		defer close(m.done)
		if err := m.Run(ctx); err != nil {
			m.mu.Lock()
			m.err = err
			m.mu.Unlock()
			if !errors.Is(err, cluster.ErrBehind) {
				log.Error("the cluster node stopped; this member takes no more commits", "err", err)
				return
			}
			if merr := markResync(cfg.DataDir, resyncStale); merr != nil {
				log.Error("the cluster node stopped behind the cluster's purged log, and its data directory could not be marked for a copy; this member takes no more commits", "err", err, "mark_error", merr)
				return
			}
			log.Warn("the cluster node stopped behind the cluster's purged log: the server restarts and takes a copy of a member's data", "err", err)
			close(m.behind)
		}
	}()
	return m, store, blog, nil
}

// place finds this member's roster: the one its log records; for a log
// from before rosters were recorded, the member list's; for an empty log,
// the one the running cluster gives it (cluster.Discover: added as a new
// member if its address is not one yet), or, when no member answers and
// this one is listed (or --wsrep-new-cluster), the list's, to start a new
// cluster with (bootstrap).
//
// A place whose LogStart is past 1 (the members compacted their logs)
// needs a copy of a member's state first (transferState).
//
// A member whose stale data was set aside (rejoining) never starts a new
// cluster: it waits for the members to answer.
func place(ctx context.Context, cfg Config, rlog *raftlog.Log, hasData bool, addrs map[uint64]string, listed uint64, rejoining bool, clientTLS *tls.Config, log *slog.Logger) (cluster.Place, bool, error) {
	replaces := strings.TrimSpace(cfg.Cluster.Replaces)
	if r, ok, err := cluster.RosterOf(rlog); err != nil || ok {
		if err == nil && replaces != "" {
			log.Info("this member is in the cluster already: --lockstep-replace-member only counts when a member joins with an empty data directory", "replace_member", replaces)
		}
		return cluster.Place{Roster: r}, false, err
	}
	if replaces != "" && cfg.Cluster.NewCluster {
		return cluster.Place{}, false, errors.New("--lockstep-replace-member joins a running cluster: it cannot go with --wsrep-new-cluster")
	}
	listRoster := cluster.Place{Roster: cluster.Roster{Self: listed, Addrs: addrs}}
	notListed := fmt.Errorf("--wsrep-node-address %q is not one of the members in --wsrep-cluster-address", cfg.Cluster.NodeAddress)
	if rejoining && rlog.Empty() && cfg.Cluster.NewCluster {
		return cluster.Place{}, false, fmt.Errorf("this member's stale data was set aside and it joins the running cluster again; --wsrep-new-cluster would start an empty cluster beside it: start without it (or remove %s to start a new cluster)", filepath.Join(cfg.DataDir, resyncFile))
	}
	if !rlog.Empty() || cfg.Cluster.NewCluster {
		if listed == 0 {
			return cluster.Place{}, false, notListed
		}
		return listRoster, rlog.Empty(), nil
	}
	// A member added to a running cluster is sent its whole log and
	// applies it: a store that already holds data (hasData) would end up
	// with more than the cluster's. Refused before asking, so that no
	// member is added for it.
	errHasData := fmt.Errorf("this member joins a running cluster, and its data directory %s already holds transactions; a new member starts with an empty one", cfg.DataDir)
	if hasData && listed == 0 {
		return cluster.Place{}, false, errHasData
	}
	seeds := make([]string, 0, len(addrs))
	for id := uint64(1); id <= uint64(len(addrs)); id++ {
		seeds = append(seeds, addrs[id])
	}
	log.Info("asking the members how the cluster stands", "members", strings.Join(seeds, ","))
	p, err := cluster.Discover(ctx, cluster.DiscoverConfig{
		Cluster: cfg.Cluster.Name, Addr: strings.TrimSpace(cfg.Cluster.NodeAddress), Seeds: seeds, TLS: clientTLS,
		Replaces: replaces,
		// A member that replaces another joins a running cluster; it
		// never starts one.
		MayStart: listed != 0 && replaces == "" && !rejoining,
		Waiting: func(reason string) {
			log.Info("waiting to join the cluster", "reason", reason)
		},
	})
	if err != nil {
		return cluster.Place{}, false, fmt.Errorf("joining the cluster: %w", err)
	}
	if p.Start {
		log.Info("no member runs yet: starting a new cluster", "members", strings.Join(seeds, ","))
		return listRoster, true, nil
	}
	if hasData {
		return cluster.Place{}, false, errHasData
	}
	log.Info("joined the cluster", "member_id", p.Roster.Self, "log_start", p.LogStart)
	return p, false, nil
}

// transferState makes this member's store a copy of the member at from's
// (cluster.FetchState) and its raft log start after the entry that copy
// holds (raftlog.Seed), in a data directory whose store, binlog and raft
// log are new and closed: their files are replaced.
func transferState(cfg Config, opts storage.Options, self cluster.Roster, from string, clientTLS *tls.Config, log *slog.Logger) error {
	began := time.Now()
	if err := os.RemoveAll(opts.Dir); err != nil {
		return err
	}
	removeLog(cfg.DataDir)
	fetch := func(donor string) (uint64, error) {
		var index uint64
		err := cluster.FetchState(donor, cfg.Cluster.Name, strings.TrimSpace(cfg.Cluster.NodeAddress), clientTLS, func(h cluster.StateHeader, cs raftpb.ConfState, r io.Reader) error {
			if err := storage.Import(opts, r); err != nil {
				return err
			}
			roster := h.Roster.Clone()
			roster.Self = self.Self
			index = h.Index
			return raftlog.Seed(raftlog.Options{FS: vfs.Default, Dir: cfg.DataDir, ServerID: cfg.ServerID}, h.Index, h.Term, cs, cluster.EncodeRoster(roster))
		})
		if err != nil {
			os.RemoveAll(opts.Dir)
			os.Remove(filepath.Join(cfg.DataDir, "raft.state"))
		}
		return index, err
	}
	donor, index, err := copyFromDonors(donorsOf(self, from), fetch, stateCopyPatience, log)
	if err != nil {
		return err
	}
	log.Info("copied a member's state", "donor", donor, "entry", index, "seconds", time.Since(began).Seconds())
	return nil
}

// stateCopyPatience is how long a joiner keeps asking members for a copy
// of their state before its start fails.
const stateCopyPatience = time.Minute

// donorsOf is where a joiner asks for a copy of the state: first the
// member that answered its join (from), then every other member of the
// roster, in id order. The one that answered may refuse (a witness that
// was leading keeps no data) or fail midway.
func donorsOf(r cluster.Roster, from string) []string {
	out := []string{from}
	for _, id := range slices.Sorted(maps.Keys(r.Addrs)) {
		if a := r.Addrs[id]; id != r.Self && a != from {
			out = append(out, a)
		}
	}
	return out
}

// copyFromDonors asks the donors in turn for a copy (fetch, which leaves
// nothing behind when it fails) until one gives it, going round again
// after a pause until patience runs out; it returns the donor that gave
// the copy and the entry the copy holds.
func copyFromDonors(donors []string, fetch func(donor string) (uint64, error), patience time.Duration, log *slog.Logger) (string, uint64, error) {
	deadline := time.Now().Add(patience)
	for {
		var err error
		for _, d := range donors {
			log.Info("the cluster's log starts past its first entry: copying a member's state", "donor", d)
			var index uint64
			if index, err = fetch(d); err == nil {
				return d, index, nil
			}
			log.Warn("no copy of the state from this member; asking another", "donor", d, "err", err)
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("copying a member's state: no member gave one in %v; the last said: %w", patience, err)
		}
		time.Sleep(time.Second)
	}
}

// What a member announces of its server (cluster.Announcement.Service).
const (
	serviceUUID = "server_uuid"
	serviceHost = "host"
	servicePort = "port"
	serviceName = "node_name"
	serviceRole = "role" // "witness" for a witness (witness.go)
)

// memberService is what this member announces of its server: its UUID,
// where clients reach it (the bind address, or the cluster address's host
// when it binds every interface) and its wsrep_node_name.
func memberService(cfg Config, serverUUID binlog.UUID, clusterAddr string) map[string]string {
	host := cfg.BindAddress
	if host == "" || host == "*" || host == "0.0.0.0" || host == "::" {
		host, _, _ = net.SplitHostPort(clusterAddr)
	}
	return map[string]string{serviceUUID: serverUUID.String(), serviceHost: host, servicePort: fmt.Sprint(cfg.Port), serviceName: cfg.Cluster.nodeName()}
}

// stop stops the node (before the store and the binlog close).
func (m *member) stop() {
	m.cancel()
	<-m.done
	m.transport.Close()
	m.Applier.Close()
}

// primary reports whether the member is in the primary component: it
// follows a raft leader (a leader cut off from the majority steps down
// after an election timeout, as CheckQuorum has it).
func (m *member) primary() bool { return m.State().Lead != 0 }

// ready reports whether the member serves clients: in the primary
// component and caught up since it joined it (Galera's SYNCED).
func (m *member) ready() bool { return m.Synced() }

// status is the member's wsrep_* status variables, as Galera names them.
func (m *member) status(vars map[string]func() any) {
	st := func() cluster.State { return m.State() }
	primary := m.primary
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	// The members this one hears from, itself included (Galera counts
	// the members of its component).
	vars["wsrep_cluster_size"] = func() any {
		n := uint64(0)
		for _, x := range m.Members() {
			if m.Reachable(x) {
				n++
			}
		}
		return n
	}
	vars["wsrep_cluster_state_uuid"] = func() any { return m.sid.String() }
	vars["wsrep_cluster_status"] = func() any {
		if primary() {
			return "Primary"
		}
		return "non-Primary"
	}
	vars["wsrep_connected"] = func() any { return onOff(primary()) }
	vars["wsrep_ready"] = func() any { return onOff(m.ready()) }
	// Synced; Donor/Desynced while it has desynced itself (flow
	// control); Joined while it catches up after joining the primary
	// component; Initialized outside it.
	vars["wsrep_local_state_comment"] = func() any {
		switch {
		case m.ready() && m.Desynced():
			return "Donor/Desynced"
		case m.ready():
			return "Synced"
		case primary():
			return "Joined"
		}
		return "Initialized"
	}
	// This member's position among the members, in id order.
	vars["wsrep_local_index"] = func() any {
		for i, x := range m.Members() {
			if x.Self {
				return uint64(i)
			}
		}
		return uint64(0)
	}
	// Galera's numeric state: 4 Synced, 2 Donor/Desynced, 3 Joined, 0
	// outside the primary component.
	vars["wsrep_local_state"] = func() any {
		switch {
		case m.ready() && m.Desynced():
			return uint64(2)
		case m.ready():
			return uint64(4)
		case primary():
			return uint64(3)
		}
		return uint64(0)
	}
	// Entries committed and not yet applied here: Galera's receive queue.
	vars["wsrep_local_recv_queue"] = func() any { return m.RecvQueue() }
	vars["wsrep_local_recv_queue_avg"] = func() any { return fmt.Sprintf("%.6f", m.RecvQueueAvg()) }
	vars["wsrep_incoming_addresses"] = func() any { return strings.Join(m.clientAddresses(), ",") }
	vars["wsrep_last_committed"] = func() any { return m.Snapshot() }
	local := m.Self
	vars["wsrep_local_commits"] = func() any { return local().Committed }
	vars["wsrep_replicated"] = func() any { return local().Committed }
	vars["wsrep_local_cert_failures"] = func() any { return local().Conflicts }
	// Flow control (cluster/flowcontrol.go): this member paces its own
	// sessions' commits while a member's apply queue is over the limit;
	// nothing stops the cluster. paused is the fraction of the time since
	// start it spent pacing, sent the times its own queue went over the
	// limit, recv the times it began pacing.
	fs := m.FlowStats
	vars["wsrep_flow_control_paused"] = func() any { return fmt.Sprintf("%.6f", fs().PausedFraction) }
	vars["wsrep_flow_control_paused_ns"] = func() any { return uint64(fs().Paused.Nanoseconds()) }
	vars["wsrep_flow_control_sent"] = func() any { return fs().Sent }
	vars["wsrep_flow_control_recv"] = func() any { return fs().Recv }
	vars["wsrep_flow_control_active"] = func() any { return fmt.Sprint(fs().Active) }
	vars["wsrep_flow_control_requested"] = func() any { return fmt.Sprint(fs().Requested) }
	vars["wsrep_desync_count"] = func() any { return sqlengine.StatusNum(m.Desynced()) }
	vars["wsrep_cert_deps_distance"] = func() any { return fmt.Sprintf("%.6f", m.Stats().DepsDistance) }
	vars["wsrep_applier_thread_count"] = func() any { return uint64(m.Threads()) }
	vars["Lockstep_cluster_pace_rate"] = func() any { return fmt.Sprintf("%.1f", fs().Rate) }
	vars["Lockstep_cluster_commit_index"] = func() any { return st().Commit }
	vars["Lockstep_cluster_applied_index"] = func() any { return st().Applied }
	vars["Lockstep_cluster_leader"] = func() any { return st().Lead }
	vars["Lockstep_cluster_term"] = func() any { return st().Term }
}

// gtidsOfStore is the GTIDs whose effects the store shows: the cluster's
// transactions up to the last applied, and whatever the store held
// before (its high-water marks).
func gtidsOfStore(store *storage.Engine) binlog.GTIDSet {
	var set binlog.GTIDSet
	high, err := store.GTIDHighWater()
	if err != nil {
		return set
	}
	for sid, gno := range high {
		if gno > 0 {
			set.AddRange(sid, 1, gno+1)
		}
	}
	return set
}

// gtidVisible is @@gtid_executed: the GTIDs whose effects clients can see.
func (s *Server) gtidVisible() binlog.GTIDSet {
	if s.member != nil {
		return gtidsOfStore(s.store)
	}
	return s.pipe.GTIDVisible()
}

// binlogExpireSeconds is binlog_expire_logs_seconds.
func (s *Server) binlogExpireSeconds() int64 { return s.cfg.BinlogExpireSeconds }

// compact removes the member's binlog files before number keep, as far
// as their entries are applied and durable in the store (flushed first):
// the raft log then starts later. A member whose log is behind the new
// start (stopped meanwhile) cannot be sent the entries it lacks, and must
// join again from a copy of the data.
// memberAdmin is a member as package admin sees it.
type memberAdmin struct {
	m     *member
	store *storage.Engine
}

func (a memberAdmin) Compact(keep int) ([]string, error) { return a.m.compact(a.store, keep) }
func (a memberAdmin) ResetFlowStats()                    { a.m.ResetFlowStats() }

func (m *member) compact(store *storage.Engine, keep int) ([]string, error) {
	durable, err := store.Flush()
	if err != nil {
		return nil, err
	}
	upTo, ok := m.rlog.IndexAt(durable)
	if !ok {
		return nil, nil // nothing applied in this log yet
	}
	return m.rlog.Compact(keep, min(upTo, m.State().Applied))
}

// Statement kinds of wsrep_sync_wait's mask, as Galera numbers them.
const (
	syncRead   = 1 // SELECT, BEGIN / START TRANSACTION
	syncUpdate = 2 // UPDATE, DELETE
	syncInsert = 4 // INSERT, REPLACE
	syncShow   = 8 // SHOW
	// syncDDL is not in Galera's mask: a member always waits before DDL
	// (CREATE, ALTER, DROP, RENAME, TRUNCATE), as Galera orders DDL
	// before running it (TOI) and so runs it on the latest schema; a
	// CREATE TABLE right after CREATE DATABASE on another member would
	// otherwise not find the database.
	syncDDL = 16
)

// causalReadTimeout bounds a causal wait (Galera's repl.causal_read_timeout).
const causalReadTimeout = 30 * time.Second

// syncKind is the wsrep_sync_wait kind of a statement (0: none).
func syncKind(query string) int64 {
	q := strings.TrimLeft(query, " \t\r\n(")
	word := q
	if i := strings.IndexAny(q, " \t\r\n(;*"); i >= 0 {
		word = q[:i]
	}
	switch strings.ToLower(word) {
	case "select", "with", "begin", "start", "values", "table":
		return syncRead
	case "update", "delete":
		return syncUpdate
	case "insert", "replace":
		return syncInsert
	case "show":
		return syncShow
	case "create", "alter", "drop", "rename", "truncate":
		return syncDDL
	}
	return 0
}

// causalWait is wsrep_sync_wait on a cluster member: before a statement
// of a kind the session's mask names, wait until this node has applied
// every transaction the cluster committed before the statement arrived,
// so that it sees every write acknowledged before it on any member; DDL
// always waits (syncDDL), and on a desynced member (with WAIT) every
// statement on tables does. A wait longer than 30 s (no quorum) gets
// 1205, as in Galera.
func (s *Server) causalWait(ctx context.Context, c *mysql.Conn, query string) error {
	if s.member == nil {
		return nil
	}
	kind := syncKind(bareStatement(query))
	if kind == 0 {
		return nil
	}
	var mask int64
	if w, ok := c.Conn.(*protocol.Conn); ok {
		mask = w.SyncMask.Load() // kept current by refreshTimeouts
	} else {
		mask = s.sessionSyncMask(c)
	}
	if s.member.Desynced() && s.cfg.Cluster.DesyncedReads != "REFUSE" && !s.answersDetached(c, query) {
		// Behind the cluster by more than flow control's limit: a
		// statement on tables waits to catch up (detached.go). What a
		// member answers even outside the primary component (SHOW,
		// SET, reads of information_schema and performance_schema)
		// does not, so that monitoring sees the member as it is; with
		// REFUSE the others never get here.
		mask |= syncRead | syncUpdate | syncInsert
	}
	if (mask|syncDDL)&kind == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, causalReadTimeout)
	defer cancel()
	if err := s.member.SyncWait(ctx); err != nil {
		if errors.Is(err, cluster.ErrStopped) {
			return errNotPrimary()
		}
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	}
	return nil
}

// sessionSyncMask is the kinds of statement c's session waits before:
// wsrep_sync_wait's mask, or all of them under group_replication_consistency
// = BEFORE.
func (s *Server) sessionSyncMask(c *mysql.Conn) int64 {
	if gc, ok := s.sql.SessionVariable(c.ConnectionID, "group_replication_consistency"); ok && strings.EqualFold(fmt.Sprint(gc), "BEFORE") {
		return syncRead | syncUpdate | syncInsert | syncShow
	}
	v, _ := s.sql.SessionVariable(c.ConnectionID, "wsrep_sync_wait")
	return sqlengine.IntValue(v)
}

// retryAutocommit reports whether a statement that failed with err runs
// again (wsrep_retry_autocommit): on a cluster member, a statement that
// was its own transaction and lost certification (1213) is run again up
// to that many times, so that a client never sees the conflict of a
// statement it did not put in a transaction. inTrx says whether the
// session was in a transaction before the statement.
func (s *Server) retryAutocommit(c *mysql.Conn, err error, attempt int, inTrx bool) bool {
	if s.member == nil || inTrx || err == nil {
		return false
	}
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Number() != mysql.ERLockDeadlock {
		return false
	}
	v, ok := s.sql.SessionVariable(c.ConnectionID, "wsrep_retry_autocommit")
	return ok && int64(attempt) < sqlengine.IntValue(v)
}

// clusterVariables are the wsrep_* system variables. wsrep_sync_wait,
// wsrep_dirty_reads and wsrep_retry_autocommit act on a cluster member; on a single server every
// read already sees every acknowledged commit and no commit is certified,
// so they change nothing there. The others show the start-up options.
func (s *Server) clusterVariables() []sql.SystemVariable {
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	str := func(name, v string) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: global, Dynamic: false,
			Type: types.NewSystemStringType(name), Default: v}
	}
	on := int8(0)
	provider := "none"
	if s.member != nil {
		on, provider = 1, "lockstep-raft"
	}
	return []sql.SystemVariable{
		&sql.MysqlSystemVariable{Name: "wsrep_sync_wait", Scope: both, Dynamic: true,
			Type: types.NewSystemIntType("wsrep_sync_wait", 0, 15, false), Default: int64(0)},
		// MySQL Group Replication's name for causal reads: BEFORE waits
		// as wsrep_sync_wait = 15 does; BEFORE_ON_PRIMARY_FAILOVER is
		// EVENTUAL in multi-primary mode, as in MySQL. AFTER and
		// BEFORE_AND_AFTER (a commit waiting for every member to apply
		// it) are not offered, so setting them is refused.
		&sql.MysqlSystemVariable{Name: "group_replication_consistency", Scope: both, Dynamic: true,
			Type:    types.NewSystemEnumType("group_replication_consistency", "EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER", "BEFORE"),
			Default: "EVENTUAL"},
		&sql.MysqlSystemVariable{Name: "wsrep_dirty_reads", Scope: both, Dynamic: true,
			Type: types.NewSystemBoolType("wsrep_dirty_reads"), Default: int8(0)},
		&sql.MysqlSystemVariable{Name: "wsrep_retry_autocommit", Scope: both, Dynamic: true,
			Type: types.NewSystemIntType("wsrep_retry_autocommit", 0, 10000, false), Default: int64(1)},
		&sql.MysqlSystemVariable{Name: "wsrep_on", Scope: global, Dynamic: false,
			Type: types.NewSystemBoolType("wsrep_on"), Default: on},
		str("wsrep_provider", provider),
		str("wsrep_cluster_address", s.cfg.Cluster.Address),
		str("wsrep_node_address", s.cfg.Cluster.NodeAddress),
		str("wsrep_cluster_name", s.cfg.Cluster.Name),
		str("wsrep_node_name", s.cfg.Cluster.nodeName()),
	}
}

// clusterSettings are the member's dynamic settings: wsrep_slave_threads
// (and wsrep_applier_threads) and the flow-control options, which a
// Galera node also takes at run time. On a single server they show the
// start-up values and setting them is refused.
func (s *Server) clusterSettings() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	var vars []sql.SystemVariable
	add := sqlengine.VariableAdder(&vars)
	onMember := func(name string, f func(v any) error) func(*sql.Context, sql.SystemVariableScope, sql.SystemVarValue) error {
		return func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			if s.member == nil {
				return mysql.NewSQLError(mysql.ERWrongValueForVar, "42000", "Variable '%s' can't be set on a server that is not a cluster member", name)
			}
			return f(v.Val)
		}
	}
	add(&sql.MysqlSystemVariable{
		Name: "wsrep_slave_threads", Scope: global, Dynamic: true,
		Type:    types.NewSystemIntType("wsrep_slave_threads", 1, cluster.MaxApplierThreads, false),
		Default: s.cfg.Cluster.ApplierThreads,
		NotifyChanged: onMember("wsrep_slave_threads", func(v any) error {
			s.member.SetThreads(int(sqlengine.IntValue(v)))
			return nil
		}),
	}, "wsrep_applier_threads")
	add(&sql.MysqlSystemVariable{
		Name: "wsrep_provider_options", Scope: global, Dynamic: true,
		Type: types.NewSystemStringType("wsrep_provider_options"), Default: s.cfg.Cluster.providerOptions(),
		NotifyChanged: onMember("wsrep_provider_options", func(v any) error {
			cur := s.member.FlowConfig()
			c := ClusterConfig{FCLimit: int64(cur.Limit), FCFactor: cur.Factor, DesyncAfterMillis: cur.DesyncAfter.Milliseconds()}
			if err := c.applyFlowOptions(fmt.Sprint(v)); err != nil {
				return mysql.NewSQLError(mysql.ERWrongValueForVar, "42000", "%s", err.Error())
			}
			s.member.SetFlowConfig(c.flowConfig())
			return nil
		}),
	})
	return vars
}

// nodeName is wsrep_node_name: the option, or the host name as Galera's.
func (c ClusterConfig) nodeName() string {
	if c.NodeName != "" {
		return c.NodeName
	}
	h, _ := os.Hostname()
	return h
}
