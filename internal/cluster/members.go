package cluster

// Member announcements: how each node learns how the others stand.
//
// Raft tells a follower nothing about its peers, and a leader only their
// log positions. So every node tells the others, every announceTicks
// ticks, how it stands: what the server it runs in says of itself
// (Service: an opaque map, such as its client address and server UUID),
// whether it follows a leader, its raft and apply positions and its own
// transactions' counters. Each node keeps the last announcement of every
// peer with the time it arrived.
//
// Announcements feed status tables, metrics and the dashboard only:
// ordering, certification and apply never read them, so a lost, late or
// forged one costs a stale row, never a wrong commit. A payload over
// maxAnnouncement bytes or one that does not decode is dropped.

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

const (
	// announceTicks is how often a node announces itself, in ticks (an
	// election timeout's worth).
	announceTicks = 10
	// maxAnnouncement bounds an announcement's encoding.
	maxAnnouncement = 8 << 10
)

// Announcement is what a node says of itself.
type Announcement struct {
	// Service is what the server the node runs in says of itself.
	Service map[string]string `json:"service,omitempty"`
	// Primary: the node follows a leader (it is in the primary
	// component); Synced: and it has caught up since (Driver.Synced).
	Primary bool `json:"primary"`
	Synced  bool `json:"synced"`
	// Desynced: its apply queue stayed over flow control's limit, and
	// it left flow control until it catches up (flowcontrol.go).
	Desynced bool `json:"desynced,omitempty"`
	// Term, Commit and Applied are its raft term and commit and applied
	// indexes; AppliedGNO is the GTID number of the last transaction it
	// applied.
	Term       uint64 `json:"term"`
	Commit     uint64 `json:"commit"`
	Applied    uint64 `json:"applied"`
	AppliedGNO uint64 `json:"applied_gno"`
	// Committed and Conflicts count the transactions of this node's own
	// sessions since it started: committed, and refused by certification.
	Committed uint64 `json:"committed"`
	Conflicts uint64 `json:"conflicts"`
	// StartGNO is AppliedGNO when the node started; CertKeys is the
	// number of keys its certification index holds.
	StartGNO uint64 `json:"start_gno"`
	CertKeys uint64 `json:"cert_keys"`
}

// Member is one node of the cluster as this node knows it.
type Member struct {
	ID   uint64
	Addr string // its cluster address
	Self bool
	// Learner: in raft's configuration as a learner, a member that
	// joined and is still being caught up (join.go). It does not vote:
	// the cluster's quorum does not count it yet.
	Learner bool
	// Heard is when its last announcement arrived (now for Self; zero if
	// none has).
	Heard time.Time
	Announcement
}

// announcement is this node's own, as of the driver's last turn.
func (d *Driver) announcement() Announcement {
	st := d.State()
	a := Announcement{Primary: st.Lead != 0, Synced: d.Synced(), Term: st.Term, Commit: st.Commit, Applied: st.Applied,
		Committed: d.localCommits.Load(), Conflicts: d.localConflicts.Load(),
		StartGNO: d.startGNO, CertKeys: d.certKeys.Load(), Desynced: d.Desynced()}
	if d.Service != nil {
		a.Service = d.Service()
	}
	if d.AppliedGNO != nil {
		a.AppliedGNO = d.AppliedGNO()
	}
	return a
}

// announce sends this node's announcement to every peer.
func (d *Driver) announce() {
	b, err := json.Marshal(d.announcement())
	if err != nil || len(b) > maxAnnouncement {
		return
	}
	for id := range d.transport.peerAddrs() {
		d.transport.SendPacket(Packet{Kind: kindAnnounce, From: d.node.ID(), To: id, Payload: b})
	}
}

// heard keeps a peer's announcement.
func (d *Driver) heard(from uint64, payload []byte) {
	if len(payload) > maxAnnouncement {
		return
	}
	var a Announcement
	if err := json.Unmarshal(payload, &a); err != nil {
		return
	}
	if _, known := d.transport.peerAddrs()[from]; !known {
		return
	}
	d.pmu.Lock()
	d.peers[from] = Member{ID: from, Heard: time.Now(), Announcement: a}
	d.pmu.Unlock()
}

// Members returns every node of the cluster's configuration (voters and
// learners), this one included, in id order, each with what this node
// last heard of it.
func (d *Driver) Members() []Member {
	self := d.Self()
	out := []Member{self}
	d.pmu.Lock()
	out[0].Learner = slices.Contains(d.learners, self.ID)
	for _, id := range slices.Sorted(maps.Keys(d.roster.Addrs)) {
		if id == self.ID {
			continue
		}
		m := d.peers[id]
		m.ID, m.Addr = id, d.roster.Addrs[id]
		m.Learner = slices.Contains(d.learners, id)
		out = append(out, m)
	}
	d.pmu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return out
}

// Self is this node as it announces itself.
func (d *Driver) Self() Member {
	return Member{ID: d.node.ID(), Addr: d.transport.addr, Self: true, Heard: time.Now(), Announcement: d.announcement()}
}

// LeaderCommit is the leader's commit index as this node knows it: its
// own if it leads, else the larger of its own and the one the leader
// last announced. A member's lag is LeaderCommit minus its Applied.
func (d *Driver) LeaderCommit() uint64 {
	st := d.State()
	if st.Leader || st.Lead == 0 {
		return st.Commit
	}
	d.pmu.Lock()
	announced := d.peers[st.Lead].Commit
	d.pmu.Unlock()
	return max(st.Commit, announced)
}

// Reachable reports whether m was heard from within three announcement
// periods (always for this node itself).
func (d *Driver) Reachable(m Member) bool {
	return m.Self || (!m.Heard.IsZero() && time.Since(m.Heard) < 3*announceTicks*d.tick)
}
