// Package cluster is Lockstep's multi-primary cluster: nodes that order
// their transactions through one raft log (etcd raft), kept in each
// node's binlog (raftlog).
//
// Node is the raft state machine with its storage: it is driven from
// outside (Tick, Step, Propose) and Process hands out the I/O raft asks
// for, as etcd raft's Ready does: entries and hard state are written to
// the log and synced there, and Process returns the messages to send and
// the entries that committed. Time and the network are at the edges
// (driver.go, transport.go), so tests drive nodes deterministically
// (testdata/raft).
//
// Invariants:
//   - A Ready's hard state is durable before any of its messages leave
//     Process, and its entries are durable before any message that
//     acknowledges them or a vote (MsgAppResp, MsgVoteResp,
//     MsgPreVoteResp) leaves, and before Advance. The other messages (a
//     leader's appends and heartbeats) may leave while the entries are
//     being written: the leader writes to its disk while its followers
//     write to theirs (the raft thesis, 10.2.1), and raft counts the
//     leader's own copy only after Advance.
//   - Committed entries are handed out once, in index order, after they
//     are durable locally; configuration changes among them are applied to
//     raft, to the roster (roster.go), and recorded together in the log's
//     state before Process returns.
//   - A normal entry proposed with data must be a transaction (its meta and
//     binlog events): Propose checks it, so a bad proposal is refused
//     instead of breaking the log.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Config is a node's raft configuration.
type Config struct {
	ID uint64
	// ElectionTicks and HeartbeatTicks are in ticks of the driver's clock.
	ElectionTicks, HeartbeatTicks int
	// Logger receives raft's warnings and errors (nil: discarded).
	Logger *slog.Logger
	// MaxFileSize starts a new binlog file once the current one reaches it
	// (max_binlog_size; 0: never).
	MaxFileSize int64
}

// Node is one cluster member's raft state machine and log.
type Node struct {
	id      uint64
	rn      *raft.RawNode
	log     *raftlog.Log
	roster  Roster // as of the last configuration change applied
	maxFile int64
	hs      raftpb.HardState // as last written to the log
}

// Output is what one Process call asks of the caller.
type Output struct {
	// Messages go to other nodes (their To field says which).
	Messages []raftpb.Message
	// Committed are entries committed and durable here, to apply in order.
	Committed []raftpb.Entry
	// ReadStates answer ReadIndex requests: the commit index a read
	// made now must see, confirmed by a quorum.
	ReadStates []raft.ReadState
	// Lead is the leader known now (0: none), Term the current term.
	Lead, Term uint64
	// Roster is the members after configuration changes among
	// Committed, nil when there were none.
	Roster *Roster
}

// NewNode starts the raft state machine over log. applied is the index of
// the last entry the store holds the effects of. roster is the members as
// the caller knows them (its Self must be cfg.ID); the log's own record,
// when it has one, is used instead. With bootstrap, a node with an empty
// log starts a new cluster whose voters are roster's members; without, it
// waits to be sent the log of a cluster it was added to. A node with a log
// takes its configuration from it.
func NewNode(cfg Config, log *raftlog.Log, applied uint64, roster Roster, bootstrap bool) (*Node, error) {
	if rec := log.Members(); rec != nil {
		r, err := decodeRoster(rec)
		if err != nil {
			return nil, err
		}
		roster = r
	}
	if roster.Self != cfg.ID {
		return nil, fmt.Errorf("cluster: this node is member %d of its cluster, not %d", roster.Self, cfg.ID)
	}
	roster = roster.Clone()
	if roster.Addrs == nil {
		roster.Addrs = map[uint64]string{}
	}
	rc := &raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   log,
		Applied:                   applied,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  16 << 20,
		MaxUncommittedEntriesSize: 64 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		// The leader certifies transactions before they enter the log,
		// so only it proposes them.
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    raftLogger{cfg.Logger},
	}
	if rc.ElectionTick == 0 {
		rc.ElectionTick = 10
	}
	if rc.HeartbeatTick == 0 {
		rc.HeartbeatTick = 1
	}
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return nil, err
	}
	if last, _ := log.LastIndex(); last == 0 && bootstrap {
		var ps []raft.Peer
		for _, id := range slices.Sorted(maps.Keys(roster.Addrs)) {
			ps = append(ps, raft.Peer{ID: id, Context: memberContext{Addr: roster.Addrs[id]}.encode()})
		}
		if err := rn.Bootstrap(ps); err != nil {
			return nil, err
		}
	}
	hs, _, err := log.InitialState()
	if err != nil {
		return nil, err
	}
	return &Node{id: cfg.ID, rn: rn, log: log, roster: roster, maxFile: cfg.MaxFileSize, hs: hs}, nil
}

// RosterOf is the members record of log, if it has one.
func RosterOf(log *raftlog.Log) (Roster, bool, error) {
	rec := log.Members()
	if rec == nil {
		return Roster{}, false, nil
	}
	r, err := decodeRoster(rec)
	return r, err == nil, err
}

// Roster is the members as of the last configuration change applied.
func (n *Node) Roster() Roster { return n.roster.Clone() }

// Config is raft's configuration now: its voters (of both halves of a
// joint configuration) and its learners.
func (n *Node) Config() (voters, learners []uint64) {
	cfg := n.rn.Status().Config
	return slices.Sorted(maps.Keys(cfg.Voters.IDs())), slices.Sorted(maps.Keys(cfg.Learners))
}

// Joint reports whether raft's configuration is a joint one: a change of
// several members at once was applied, and the change that leaves it
// (which the leader proposes by itself) not yet.
func (n *Node) Joint() bool {
	return len(n.rn.Status().Config.Voters[1]) > 0
}

// ProposeConfChange proposes a configuration change, on the leader. Raft
// turns it into an empty entry if another is not applied yet.
func (n *Node) ProposeConfChange(cc raftpb.ConfChangeV2) error {
	if n.rn.BasicStatus().RaftState != raft.StateLeader {
		return ErrNotLeader
	}
	err := n.rn.ProposeConfChange(cc)
	if errors.Is(err, raft.ErrProposalDropped) {
		return ErrNotLeader
	}
	return err
}

// ID is the node's raft id.
func (n *Node) ID() uint64 { return n.id }

// Tick advances raft's logical clock by one tick.
func (n *Node) Tick() { n.rn.Tick() }

// Campaign makes the node stand for election now.
func (n *Node) Campaign() error { return n.rn.Campaign() }

// Step hands raft a message from another node.
func (n *Node) Step(m raftpb.Message) error {
	if m.To != n.id {
		return fmt.Errorf("cluster: message for node %d delivered to %d", m.To, n.id)
	}
	return n.rn.Step(m)
}

// ErrBehind: the node is behind the first entry the leader's log holds.
var ErrBehind = errors.New("cluster: this member is behind the cluster's log")

// ErrNotLeader is returned for a proposal on a node that is not the
// leader.
var ErrNotLeader = errors.New("cluster: not the leader")

// Propose appends a transaction (raftlog.EncodeTrx: its meta and binlog
// events) to the log, on the leader. It returns once raft has taken it,
// not when it commits.
func (n *Node) Propose(trx []byte) error {
	if n.rn.BasicStatus().RaftState != raft.StateLeader {
		return ErrNotLeader
	}
	_, events, err := raftlog.DecodeTrx(trx)
	if err != nil {
		return err
	}
	for off := 0; off < len(events); {
		e, err := binlog.NextEvent(events[off:])
		if err != nil {
			return fmt.Errorf("cluster: proposal is not binlog events: %w", err)
		}
		off += int(e.Size)
	}
	err = n.rn.Propose(trx)
	if errors.Is(err, raft.ErrProposalDropped) {
		return ErrNotLeader
	}
	return err
}

// ReadIndex asks for the commit index as of now, confirmed by a quorum
// (raft's ReadIndex with ReadOnlySafe: never a lease). The answer comes in
// a later Output's ReadStates with the same rctx; without a leader none
// comes.
func (n *Node) ReadIndex(rctx []byte) { n.rn.ReadIndex(rctx) }

// Status is raft's view of the node.
func (n *Node) Status() raft.Status { return n.rn.Status() }

// HasReady reports whether Process has work.
func (n *Node) HasReady() bool { return n.rn.HasReady() }

// Process performs what raft asks: it writes and syncs the Ready's entries
// and hard state, applies configuration changes, and returns the messages
// to send and the committed entries. An error means the log could not be
// written: the node must stop.
//
// early, if not nil, is handed the messages that need not wait for the
// Ready's entries to be durable, once the hard state is, before the
// entries are written and synced: the caller sends them at once, so that
// the leader's fsync and its followers' overlap. With early nil every
// message is in the Output.
func (n *Node) Process(early func([]raftpb.Message)) (Output, error) {
	var out Output
	if !n.rn.HasReady() {
		st := n.rn.BasicStatus()
		out.Lead, out.Term = st.Lead, st.Term
		return out, nil
	}
	rd := n.rn.Ready()
	if !raft.IsEmptySnap(rd.Snapshot) {
		return out, fmt.Errorf("%w: the other members purged the entries up to %d, and it still needs some of them", ErrBehind, rd.Snapshot.Metadata.Index)
	}
	msgs := rd.Messages
	// Messages may leave before the entries are durable only when the
	// term and vote they carry already are (a steady leader's; a new term
	// or vote is written with the entries, below).
	hs := rd.HardState
	if raft.IsEmptyHardState(hs) {
		hs = n.hs
	}
	if early != nil && len(rd.Entries) > 0 && hs.Term == n.hs.Term && hs.Vote == n.hs.Vote {
		var now []raftpb.Message
		msgs, now = splitAfterAppend(msgs)
		if len(now) > 0 {
			early(now)
		}
	}
	if err := n.log.Append(rd.Entries); err != nil {
		return out, err
	}
	if err := n.log.SetHardState(rd.HardState); err != nil {
		return out, err
	}
	n.hs = hs
	if rd.MustSync && len(rd.Entries) > 0 {
		if err := n.log.Sync(); err != nil {
			return out, err
		}
	}
	if n.maxFile > 0 && len(rd.Entries) > 0 {
		if err := n.log.MaybeRotate(n.maxFile); err != nil {
			return out, err
		}
	}
	for _, e := range rd.CommittedEntries {
		changed, err := n.applyConfChange(e)
		if err != nil {
			return out, err
		}
		if changed {
			r := n.roster.Clone()
			out.Roster = &r
		}
	}
	out.Messages = msgs
	for _, m := range msgs {
		if m.Type == raftpb.MsgSnap {
			// The snapshot only tells the node it is behind the log
			// (raftlog.TransferNeeded); it never installs one, so raft is
			// told at once, and goes back to probing it: a node whose
			// state was copied meanwhile (transfer.go) is then sent the
			// entries after its copy.
			n.rn.ReportSnapshot(m.To, raft.SnapshotFailure)
		}
	}
	out.Committed = rd.CommittedEntries
	out.ReadStates = rd.ReadStates
	n.rn.Advance(rd)
	st := n.rn.BasicStatus()
	out.Lead, out.Term = st.Lead, st.Term
	return out, nil
}

// splitAfterAppend separates the messages that acknowledge the Ready's
// entries or a vote, which must wait until they are durable, from the
// others. The order within each part is kept.
func splitAfterAppend(msgs []raftpb.Message) (after, now []raftpb.Message) {
	for _, m := range msgs {
		switch m.Type {
		case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp, raftpb.MsgSnap:
			after = append(after, m)
		default:
			now = append(now, m)
		}
	}
	return after, now
}

// applyConfChange applies a committed configuration change to raft and to
// the roster, and records both.
func (n *Node) applyConfChange(e raftpb.Entry) (bool, error) {
	var cc raftpb.ConfChangeI
	switch e.Type {
	case raftpb.EntryConfChange:
		var c raftpb.ConfChange
		if err := c.Unmarshal(e.Data); err != nil {
			return false, fmt.Errorf("cluster: entry %d: %w", e.Index, err)
		}
		cc = c
	case raftpb.EntryConfChangeV2:
		var c raftpb.ConfChangeV2
		if err := c.Unmarshal(e.Data); err != nil {
			return false, fmt.Errorf("cluster: entry %d: %w", e.Index, err)
		}
		cc = c
	default:
		return false, nil
	}
	cs := n.rn.ApplyConfChange(cc)
	v2 := cc.AsV2()
	mc := decodeMemberContext(v2.Context)
	var removed []uint64
	for _, c := range v2.Changes {
		switch c.Type {
		case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
			// A change from before addresses were recorded keeps the
			// address the roster was started with.
			if mc.Addr != "" {
				n.roster.Addrs[c.NodeID] = mc.Addr
			}
			if c.Type == raftpb.ConfChangeAddLearnerNode && mc.Replaces != 0 {
				if n.roster.Replacing == nil {
					n.roster.Replacing = map[uint64]uint64{}
				}
				n.roster.Replacing[c.NodeID] = mc.Replaces
			}
		case raftpb.ConfChangeRemoveNode:
			removed = append(removed, c.NodeID)
		}
	}
	// A member removed goes out of the roster now or, an outgoing voter
	// of a joint configuration, once the joint configuration is left.
	n.roster.retire(*cs, removed)
	return true, n.log.SetConfState(*cs, n.roster.encode())
}

// NoteSeen records, durably, that this node heard from member id (once
// per id: it reports whether it was new).
func (n *Node) NoteSeen(id uint64) (bool, error) {
	if id == 0 || id == n.id || slices.Contains(n.roster.Seen, id) {
		return false, nil
	}
	n.roster.Seen = append(n.roster.Seen, id)
	_, cs, _ := n.log.InitialState()
	return true, n.log.SetConfState(cs, n.roster.encode())
}

// Removed reports whether this node was removed from the cluster.
func (n *Node) Removed() bool { return slices.Contains(n.roster.Removed, n.id) }

// raftLogger passes raft's warnings and errors to a slog.Logger.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) out(level slog.Level, msg string) {
	if r.l != nil {
		r.l.Log(context.Background(), level, msg, "component", "raft")
	}
}
func (r raftLogger) Debug(v ...any)                 {}
func (r raftLogger) Debugf(format string, v ...any) {}
func (r raftLogger) Info(v ...any)                  {}
func (r raftLogger) Infof(format string, v ...any)  {}
func (r raftLogger) Warning(v ...any)               { r.out(slog.LevelWarn, fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.out(slog.LevelWarn, fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any) { r.out(slog.LevelError, fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) {
	r.out(slog.LevelError, fmt.Sprintf(format, v...))
}
func (r raftLogger) Fatal(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
func (r raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
