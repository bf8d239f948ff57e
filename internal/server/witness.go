package server

// A witness (`lockstep witness`, Galera's garbd): a cluster member that
// keeps the raft log and votes, and holds no data. Two data members and a
// witness survive the loss of any one of the three, where two members
// alone stop at the loss of either.
//
// What a witness does:
//   - It writes and syncs every entry like any member before it
//     acknowledges it, and counts in every quorum: an acknowledged commit
//     is on a majority's disks whichever three-way split a crash takes.
//   - It applies nothing. So it never gives a joiner a copy of data (a
//     state transfer comes from a data member; it refuses), and, elected
//     leader, it hands leadership to the voter furthest along
//     (cluster.Driver.Witness), since joiners ask the leader. It may
//     certify transactions meanwhile: certification reads the log only.
//   - It serves no clients: it has no SQL or HTTP port. What it does
//     shows in the data members' views (replication_group_members, the
//     cluster metrics) and in its log.
//   - Its binlog rotates at max_binlog_size and files older than
//     binlog_expire_logs_seconds are purged, never past the entries
//     committed; a member that needs purged entries gets them, or a copy
//     of the data, from a data member.
//
// Its "applied" index is what raft last handed it (nothing to apply):
// after a restart it starts from the commit index its raft state
// recorded, and the certification state from the GTID number at that
// entry (raftlog.GNOAt; for a log that starts past every transaction,
// the first binlog file's Previous_gtids, which a witness that joined
// with a copy seeds from the donor's header).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/admin"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"go.etcd.io/raft/v3/raftpb"
)

// WitnessOptions are the serve options a witness takes; any other given
// to `lockstep witness` is refused.
var WitnessOptions = []string{
	"datadir", "server-id", "log-level",
	"wsrep-cluster-address", "wsrep-node-address", "wsrep-cluster-name", "wsrep-node-name",
	"wsrep-on", "wsrep-provider", "wsrep-new-cluster", "wsrep-ssl-mode", "wsrep-provider-options",
	"ssl-cert", "ssl-key", "ssl-ca", "lockstep-cluster-tick",
	"max-binlog-size", "binlog-expire-logs-seconds", "lockstep-replace-member",
}

// RunWitness runs a witness until ctx ends or its node stops.
func RunWitness(ctx context.Context, cfg Config, log *slog.Logger) error {
	if !cfg.Clustered() {
		return errors.New("a witness is a cluster member: give it --wsrep-cluster-address and --wsrep-node-address")
	}
	if err := atomicfile.MkdirAll(vfs.Default, cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating --datadir %s: %w", cfg.DataDir, err)
	}
	dirLock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer dirLock.Close()
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "store")); err == nil {
		return fmt.Errorf("--datadir %s holds a data member's store: a witness keeps only the log; give it a directory of its own", cfg.DataDir)
	}
	for {
		behind, err := runWitness(ctx, cfg, log)
		if err != nil || !behind {
			return err
		}
		// Behind the cluster's purged log: the log is set aside and the
		// witness joins again (resync.go), as a member does.
		if err := markResync(cfg.DataDir, resyncStale); err != nil {
			return fmt.Errorf("the witness is behind the cluster's purged log, and its data directory could not be marked for a new start: %w", err)
		}
		log.Warn("the witness is behind the cluster's purged log: it sets its log aside and joins again")
	}
}

// runWitness runs a witness until ctx ends or its node stops; behind
// reports that it stopped behind the cluster's purged log.
func runWitness(ctx context.Context, cfg Config, log *slog.Logger) (behind bool, err error) {
	w, err := openWitness(ctx, cfg, log)
	if err != nil {
		return false, err
	}
	defer w.close()
	log.Info("cluster witness: it votes and keeps the log, and holds no data", "node", w.node, "cluster", cfg.Cluster.Name, "address", cfg.Cluster.NodeAddress)
	expire := time.NewTicker(time.Minute)
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case <-w.done:
			if errors.Is(w.err, cluster.ErrBehind) {
				return true, nil
			}
			return false, w.err
		case <-expire.C:
			if cfg.BinlogExpireSeconds > 0 {
				if err := w.expire(time.Now().Add(-time.Duration(cfg.BinlogExpireSeconds) * time.Second)); err != nil {
					log.Warn("binlog expiry failed", "err", err)
				}
			}
		}
	}
}

type witness struct {
	node      uint64
	blog      *binlog.Log
	rlog      *raftlog.Log
	transport *cluster.Transport
	driver    *cluster.Driver
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
}

// openWitness opens the witness's log and starts its node. A witness
// with an empty log first finds its place in the cluster, as a member
// does (place); joining a cluster whose log was compacted, it seeds its
// log from a data member's state header, skipping the data.
func openWitness(ctx context.Context, cfg Config, log *slog.Logger) (*witness, error) {
	addrs, self, err := cfg.Cluster.members()
	if err != nil {
		return nil, err
	}
	serverTLS, clientTLS, err := clusterTLS(cfg)
	if err != nil {
		return nil, err
	}
	resync, err := setAsideStale(cfg.DataDir, filepath.Join(cfg.DataDir, "store"), log)
	if err != nil {
		return nil, err
	}
	bopts := binlog.Options{FS: vfs.Default, Dir: cfg.DataDir, BaseName: "binlog", ServerID: cfg.ServerID}
	blog, _, err := binlog.Open(bopts, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		return nil, err
	}
	ropts := raftlog.Options{FS: vfs.Default, Dir: cfg.DataDir, ServerID: cfg.ServerID}
	rlog, err := raftlog.Open(ropts, blog, 0)
	if err != nil {
		blog.Close()
		return nil, err
	}
	if _, placed, _ := cluster.RosterOf(rlog); placed && resync != "" {
		if err := clearResync(cfg.DataDir); err != nil {
			blog.Close()
			return nil, err
		}
		resync = ""
	}
	where, bootstrap, err := place(ctx, cfg, rlog, false, addrs, self, resync != "", clientTLS, log)
	if err != nil {
		blog.Close()
		return nil, err
	}
	sid := ClusterUUID(cfg.Cluster.Name)
	if where.LogStart > 1 {
		blog.Close()
		if err := seedWitness(cfg, bopts, ropts, sid, where.Roster, where.From, clientTLS, log); err != nil {
			return nil, err
		}
		return openWitness(ctx, cfg, log)
	}
	// Nothing to apply: it starts after what raft last recorded committed.
	hs, _, err := rlog.InitialState()
	if err != nil {
		blog.Close()
		return nil, err
	}
	applied := hs.Commit
	var gno atomic.Uint64
	if g, ok := rlog.GNOAt(applied); ok {
		gno.Store(g)
	} else if files := blog.Files(); len(files) > 0 {
		prev, err := blog.PreviousGTIDs(files[0].Num)
		if err != nil {
			blog.Close()
			return nil, err
		}
		gno.Store(prev.MaxGNO(sid))
	}
	node, err := cluster.NewNode(cluster.Config{ID: where.Roster.Self, ElectionTicks: 10, HeartbeatTicks: 1, MaxFileSize: cfg.MaxBinlogSize}, rlog, applied, where.Roster, bootstrap)
	if err != nil {
		blog.Close()
		return nil, err
	}
	nodeAddr := strings.TrimSpace(cfg.Cluster.NodeAddress)
	ln, err := net.Listen("tcp", nodeAddr)
	if err != nil {
		blog.Close()
		return nil, fmt.Errorf("cluster address %s (--wsrep-node-address): %w", nodeAddr, err)
	}
	w := &witness{node: where.Roster.Self, blog: blog, rlog: rlog, done: make(chan struct{})}
	w.transport = cluster.NewTransport(w.node, cfg.Cluster.Name, nodeAddr, ln, node.Roster().Addrs)
	w.transport.UseTLS(serverTLS, clientTLS)
	apply := func(es []raftpb.Entry) error {
		for _, e := range es {
			if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
				g, err := cluster.EntryGNO(e.Data)
				if err != nil {
					return fmt.Errorf("cluster: entry %d: %w", e.Index, err)
				}
				gno.Store(g)
			}
		}
		// Dumps are not served, but the binlog's published end is kept
		// where a member's would be: committed entries only.
		if pos, ok := rlog.Position(es[len(es)-1].Index); ok {
			blog.PublishAt(pos)
		}
		return nil
	}
	tick := time.Duration(cfg.Cluster.TickMillis) * time.Millisecond
	w.driver = cluster.NewDriver(node, w.transport, sid, tick, apply)
	w.driver.Witness = true
	w.driver.AppliedGNO = gno.Load
	service := map[string]string{serviceName: cfg.Cluster.nodeName(), serviceRole: "witness"}
	w.driver.Service = func() map[string]string { return service }
	w.driver.SetFlowConfig(cfg.Cluster.flowConfig())
	rctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.transport.Start()
	go func() {
		defer close(w.done)
		if err := w.driver.Run(rctx); err != nil {
			w.err = err
			log.Error("the witness's node stopped", "err", err)
		}
	}()
	return w, nil
}

// seedWitness makes an empty witness's log start after the entry a data
// member's state holds (the data itself is read and dropped), with the
// cluster's GTIDs up to it as its first binlog file's Previous_gtids.
func seedWitness(cfg Config, bopts binlog.Options, ropts raftlog.Options, sid binlog.UUID, self cluster.Roster, from string, clientTLS *tls.Config, log *slog.Logger) error {
	removeLog(cfg.DataDir)
	os.Remove(filepath.Join(cfg.DataDir, "raft.state"))
	log.Info("the cluster's log starts past its first entry: taking a member's state header (its data is not kept)", "donor", from)
	err := cluster.FetchState(from, cfg.Cluster.Name, strings.TrimSpace(cfg.Cluster.NodeAddress), clientTLS, func(h cluster.StateHeader, cs raftpb.ConfState, r io.Reader) error {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		var prev binlog.GTIDSet
		if h.GNO > 0 {
			prev.AddRange(sid, 1, h.GNO+1)
		}
		blog, _, err := binlog.Open(bopts, prev, binlog.Position{})
		if err != nil {
			return err
		}
		if err := blog.Close(); err != nil {
			return err
		}
		roster := h.Roster.Clone()
		roster.Self = self.Self
		return raftlog.Seed(ropts, h.Index, h.Term, cs, cluster.EncodeRoster(roster))
	})
	if err != nil {
		os.Remove(filepath.Join(cfg.DataDir, "raft.state"))
		return fmt.Errorf("taking the state header of member %s: %w", from, err)
	}
	return nil
}

// expire removes the binlog files started before t, as far as their
// entries are committed (the witness has nothing else to wait for).
func (w *witness) expire(t time.Time) error {
	_, err := w.rlog.Compact(admin.FirstKept(w.blog.Files(), t), w.driver.Applied())
	return err
}

func (w *witness) close() {
	w.cancel()
	<-w.done
	w.transport.Close()
	w.blog.Close()
}
