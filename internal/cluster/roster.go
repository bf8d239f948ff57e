package cluster

// The roster: which node id is at which cluster address.
//
// Raft's configuration names nodes by id only. A node also needs each
// member's address to reach it, and a node that joins needs an id no node
// ever had (raft must never see an id come back after its removal). So
// every configuration change carries the member's address in its context
// (memberContext), and every node keeps a roster beside raft's
// configuration: the address of every id in it, the ids removed, and its
// own id. The roster is changed only when a configuration change is
// applied (in log order, the same on every node) and is written with the
// configuration it goes with (raftlog.SetConfState), so it is never ahead
// of or behind it, across restarts too.
//
// A roster from before addresses were recorded (none in the log's state)
// is the one the server's member list gives: ids by position.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
)

// Roster is the cluster's members as one node knows them.
type Roster struct {
	// Self is this node's id.
	Self uint64 `json:"self"`
	// Addrs is every member's cluster address by id (voters and learners).
	Addrs map[uint64]string `json:"addrs"`
	// Removed are the ids removed from the cluster: never given again.
	Removed []uint64 `json:"removed,omitempty"`
	// Seen are the ids this node has heard from (every running member
	// announces itself to every other): a member seen once has run, and
	// so may have voted (join.go, answerMember).
	Seen []uint64 `json:"seen,omitempty"`
	// Replacing maps a learner that joined to take a voter's place to
	// that voter: promoting the learner removes the voter in the same
	// change (join.go, promote).
	Replacing map[uint64]uint64 `json:"replacing,omitempty"`
	// Leaving are the ids a joint change removes, outgoing voters until
	// the joint configuration is left (retire).
	Leaving []uint64 `json:"leaving,omitempty"`
}

// Clone returns a copy that shares nothing with r.
func (r Roster) Clone() Roster {
	return Roster{Self: r.Self, Addrs: maps.Clone(r.Addrs), Removed: slices.Clone(r.Removed), Seen: slices.Clone(r.Seen),
		Replacing: maps.Clone(r.Replacing), Leaving: slices.Clone(r.Leaving)}
}

// retire follows raft's configuration cs after a change that removed
// the ids removed (none for the change that leaves a joint
// configuration): an id that cs no longer holds in any of its sets goes
// out of the roster, for good. An id a joint change removes is Leaving
// until the change's second step leaves the joint configuration: until
// then it is an outgoing voter, whose vote still counts and whom the
// leader must still reach.
func (r *Roster) retire(cs raftpb.ConfState, removed []uint64) {
	in := map[uint64]bool{}
	for _, set := range [][]uint64{cs.Voters, cs.VotersOutgoing, cs.Learners, cs.LearnersNext} {
		for _, id := range set {
			in[id] = true
		}
	}
	for _, id := range removed {
		if !slices.Contains(r.Leaving, id) {
			r.Leaving = append(r.Leaving, id)
		}
	}
	r.Leaving = slices.DeleteFunc(r.Leaving, func(id uint64) bool {
		if in[id] {
			return false
		}
		delete(r.Addrs, id)
		if !slices.Contains(r.Removed, id) {
			r.Removed = append(r.Removed, id)
		}
		return true
	})
	if len(r.Leaving) == 0 {
		r.Leaving = nil
	}
	for learner, voter := range r.Replacing {
		if !slices.Contains(cs.Learners, learner) || !in[voter] {
			delete(r.Replacing, learner)
		}
	}
	if len(r.Replacing) == 0 {
		r.Replacing = nil
	}
}

// IDOf returns the id of the member at addr.
func (r Roster) IDOf(addr string) (uint64, bool) {
	for id, a := range r.Addrs {
		if a == addr {
			return id, true
		}
	}
	return 0, false
}

// NextID is the id for a new member: past every id the cluster has had.
func (r Roster) NextID() uint64 {
	next := uint64(1)
	for id := range r.Addrs {
		next = max(next, id+1)
	}
	for _, id := range r.Removed {
		next = max(next, id+1)
	}
	return next
}

func (r Roster) encode() []byte {
	b, _ := json.Marshal(r)
	return b
}

// EncodeRoster is r as the log's members record keeps it
// (raftlog.SetConfState, raftlog.Seed).
func EncodeRoster(r Roster) []byte { return r.encode() }

func decodeRoster(b []byte) (Roster, error) {
	var r Roster
	if err := json.Unmarshal(b, &r); err != nil {
		return Roster{}, fmt.Errorf("cluster: the members record: %w", err)
	}
	if r.Addrs == nil {
		r.Addrs = map[uint64]string{}
	}
	return r, nil
}

// memberContext is a configuration change's context: the address of the
// member it adds, promotes or removes, and, for a learner added to take
// a voter's place, that voter's id.
type memberContext struct {
	Addr     string `json:"addr"`
	Replaces uint64 `json:"replaces,omitempty"`
}

func (m memberContext) encode() []byte {
	b, _ := json.Marshal(m)
	return b
}

// decodeMemberContext reads a change's context; an empty one (a log from
// before addresses were recorded) gives an empty address.
func decodeMemberContext(b []byte) memberContext {
	var m memberContext
	if len(b) > 0 {
		_ = json.Unmarshal(b, &m)
	}
	return m
}
