package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Driver runs a Node in real time. One goroutine (Run) owns the node: it
// ticks raft's clock, steps incoming messages and takes proposals, and
// after each turn has the node process its Ready, sends the messages and
// hands the committed entries to Apply.
//
// A turn takes everything already waiting (messages, proposals) before
// processing, so proposals that arrive together are written and synced
// together: one fsync per group, as the single server's group commit.
type Driver struct {
	node      *Node
	transport *Transport
	tick      time.Duration
	apply     func([]raftpb.Entry)
	props     chan proposal
	state     atomic.Pointer[State]
	done      chan struct{}
}

type proposal struct {
	trx    []byte
	result chan error
}

// State is a node's raft state as last seen by its driver.
type State struct {
	ID, Lead, Term, Commit, Applied uint64
	Leader                          bool
}

// NewDriver prepares a driver; Run starts it. apply receives the committed
// entries in order, on the driver's goroutine.
func NewDriver(n *Node, t *Transport, tick time.Duration, apply func([]raftpb.Entry)) *Driver {
	d := &Driver{node: n, transport: t, tick: tick, apply: apply, props: make(chan proposal, 1024), done: make(chan struct{})}
	d.state.Store(&State{ID: n.ID()})
	return d
}

// ErrStopped is returned for a proposal to a driver that has stopped.
var ErrStopped = errors.New("cluster: node stopped")

// Run drives the node until ctx ends or the log fails (the error).
func (d *Driver) Run(ctx context.Context) error {
	defer close(d.done)
	ticker := time.NewTicker(d.tick)
	defer ticker.Stop()
	recv := d.transport.Recv()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			d.node.Tick()
		case m := <-recv:
			d.step(m)
		case p := <-d.props:
			p.result <- d.node.Propose(p.trx)
		}
		// Take what else is waiting, then process once.
	more:
		for {
			select {
			case m := <-recv:
				d.step(m)
			case p := <-d.props:
				p.result <- d.node.Propose(p.trx)
			default:
				break more
			}
		}
		for d.node.HasReady() {
			out, err := d.node.Process()
			if err != nil {
				return err
			}
			d.transport.Send(out.Messages)
			if len(out.Committed) > 0 {
				d.apply(out.Committed)
			}
		}
		st := d.node.rn.BasicStatus()
		d.state.Store(&State{ID: d.node.ID(), Lead: st.Lead, Term: st.Term, Commit: st.Commit, Applied: st.Applied, Leader: st.RaftState == raft.StateLeader})
	}
}

func (d *Driver) step(m raftpb.Message) {
	// A message for another node or one raft refuses is dropped, as a
	// lost message would be.
	_ = d.node.Step(m)
}

// Propose hands a transaction to the node and returns once raft has taken
// it (ErrNotLeader on a follower), not when it commits: Apply sees it
// then.
func (d *Driver) Propose(ctx context.Context, trx []byte) error {
	p := proposal{trx: trx, result: make(chan error, 1)}
	select {
	case d.props <- p:
	case <-d.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.result:
		return err
	case <-d.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State is the node's raft state after the driver's last turn.
func (d *Driver) State() State { return *d.state.Load() }
