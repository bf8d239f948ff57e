package cluster

// Joining: how a node with an empty log finds its place.
//
// A node that has never been a member asks the members it was given
// (Discover), each on a connection of its own whose hello says id 0: one
// join request (its cluster address), one answer (JoinAnswer), then the
// connection closes. A member answers from its roster:
//
//   - the address is a member already: a member of the first
//     configuration starting after the others gets its id and the
//     roster, starts with them and is sent the log; a member that held
//     entries and comes back with an empty log (its data lost or wiped)
//     has its id retired and joins as a new member (answerMember);
//   - it is not, and the member leads: the leader gives it the next id and
//     proposes it as a learner (raft's non-voting member), and answers once
//     the change is applied; the learner is sent the whole log, which is
//     the state transfer (the log is never compacted), and the leader
//     promotes it to voter once it is within promoteLag entries of the
//     commit index (promote), so a member catching up never counts in the
//     quorum it cannot help form yet;
//   - it is not, and the member does not lead: where the leader is, or to
//     ask again.
//
// A node listed in its own member list that no member answers (none runs
// yet) starts a new cluster with the list (NewNode's bootstrap: the same
// first entries on every member of it); a node not in the list waits until
// it is added.
//
// Removing a member (Remove) is the same exchange with the leader: a
// request naming the member, answered once its removal is applied.
//
// Replacing a member: a new node's join request may name a voter it
// replaces (JoinRequest.Replaces). It is added as a learner like any
// other, the roster noting whom it replaces, and is promoted by one
// change that also removes that voter: raft's joint consensus (the
// thesis, 4.3). The leader applies the joint configuration, in which an
// entry commits only with a majority of the old voters and a majority
// of the new, then proposes by itself the entry that leaves it. The
// cluster never has more voters than before, so the quorum never grows
// while a member is replaced (adding first and removing after gives four
// voters whose quorum is three), and the replaced member keeps voting
// until the configuration without it is in force.
//
// One change at a time: a leader refuses a second one while a change it
// proposed is not applied, or the configuration is joint (the requester
// asks again).
//
// The exchange is not authenticated beyond the cluster port's own
// protection (mutual TLS off loopback): whoever may reach the port may
// take part in the cluster.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	// maxJoinFrame bounds a join request and its answer.
	maxJoinFrame = 64 << 10
	// joinReplyWait is how long a member waits for its driver's answer.
	joinReplyWait = 5 * time.Second
	// promoteLag is how close to the commit index a learner must be to
	// become a voter.
	promoteLag = 64
	// changeTimeout is how long a leader waits for a change it proposed
	// to be applied before it takes another (raft drops a change proposed
	// while one is pending, or when leadership is lost, and says nothing).
	changeTimeout = 5 * time.Second
)

// JoinRequest is what a joining node sends, or, with Remove, a request to
// remove the member at Addr.
type JoinRequest struct {
	Addr   string `json:"addr"` // the joiner's cluster address
	Remove bool   `json:"remove,omitempty"`
	// Replaces is the cluster address of the voter a joiner takes the
	// place of.
	Replaces string `json:"replaces,omitempty"`
}

// JoinAnswer is a member's answer to a join request.
type JoinAnswer struct {
	// Roster is the cluster's members with Self the joiner's id, once it
	// is one of them.
	Roster *Roster `json:"roster,omitempty"`
	// Leader is the leader's cluster address, to ask there.
	Leader string `json:"leader,omitempty"`
	// Wait says why to ask again later.
	Wait string `json:"wait,omitempty"`
	// Refused says why the request cannot be granted, ever.
	Refused string `json:"refused,omitempty"`
	// Removed: the member asked to be removed is.
	Removed bool `json:"removed,omitempty"`
	// LogStart is the first entry the answering member's log holds: past
	// 1, a new member needs a copy of a member's state (transfer.go).
	LogStart uint64 `json:"log_start,omitempty"`
}

// Place is where Discover finds a node whose log is empty.
type Place struct {
	// Roster is the cluster's, Self the node's id, unless Start.
	Roster Roster
	// Start: no member answered and the node may start a new cluster.
	Start bool
	// LogStart is the first entry of the answering member's log, and
	// From its cluster address (where to ask for a copy of the state).
	LogStart uint64
	From     string
}

// serveJoin handles a connection whose hello said id 0: one join request,
// handed to the driver, and its answer.
func (t *Transport) serveJoin(c net.Conn, r *bufio.Reader) error {
	_ = c.SetDeadline(time.Now().Add(joinReplyWait + 5*time.Second))
	kind, req, err := readFrame(r)
	if err != nil {
		return err
	}
	switch kind {
	case kindState:
		return t.serveState(c, req)
	case kindJoin:
	default:
		return fmt.Errorf("cluster: a packet of kind %d from a node that is not a member", kind)
	}
	reply := make(chan []byte, 1)
	select {
	case t.recv <- Packet{Kind: kindJoin, To: t.id, Payload: req, Reply: reply}:
	case <-t.quit:
		return nil
	}
	var ans []byte
	timer := time.NewTimer(joinReplyWait)
	defer timer.Stop()
	select {
	case ans = <-reply:
	case <-timer.C:
		ans, _ = json.Marshal(JoinAnswer{Wait: "no answer in time"})
	case <-t.quit:
		return nil
	}
	return writeFrame(c, kindJoin, ans)
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxJoinFrame {
		return 0, nil, fmt.Errorf("cluster: a %d-byte join packet", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return hdr[4], b, err
}

func writeFrame(w io.Writer, kind byte, payload []byte) error {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = append(b, kind)
	_, err := w.Write(append(b, payload...))
	return err
}

// AskToJoin sends a join request to the member at addr and returns its
// answer.
func AskToJoin(addr, cluster string, clientTLS *tls.Config, req JoinRequest) (JoinAnswer, error) {
	c, err := dialPeer(addr, clientTLS)
	if err != nil {
		return JoinAnswer{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(joinReplyWait + 5*time.Second))
	w := bufio.NewWriter(c)
	if err := writeHello(w, cluster, 0); err != nil {
		return JoinAnswer{}, err
	}
	b, _ := json.Marshal(req)
	if err := writeFrame(w, kindJoin, b); err != nil {
		return JoinAnswer{}, err
	}
	if err := w.Flush(); err != nil {
		return JoinAnswer{}, err
	}
	kind, ans, err := readFrame(bufio.NewReader(c))
	if err != nil {
		return JoinAnswer{}, err
	}
	if kind != kindJoin {
		return JoinAnswer{}, fmt.Errorf("cluster: %s answered with a packet of kind %d", addr, kind)
	}
	var a JoinAnswer
	if err := json.Unmarshal(ans, &a); err != nil {
		return JoinAnswer{}, fmt.Errorf("cluster: %s: a bad join answer: %w", addr, err)
	}
	if a.Roster != nil && a.Roster.Addrs == nil {
		a.Roster.Addrs = map[uint64]string{}
	}
	return a, nil
}

// DiscoverConfig is what Discover needs.
type DiscoverConfig struct {
	Cluster string
	Addr    string   // this node's cluster address
	Seeds   []string // the members to ask (Addr among them is skipped)
	TLS     *tls.Config
	// Replaces is the cluster address of the voter this node takes the
	// place of ("": it is added).
	Replaces string
	// MayStart: this node may start a new cluster with the seeds (it is
	// one of them).
	MayStart bool
	// Waiting, if set, is told every few seconds why the node still
	// waits.
	Waiting func(reason string)
}

// Discover finds the place of a node whose log is empty: the roster of
// the cluster it is a member of (added to it if need be), or, when
// MayStart and no seed answers (none runs yet), Start. It asks until ctx
// ends.
func Discover(ctx context.Context, dc DiscoverConfig) (Place, error) {
	req := JoinRequest{Addr: dc.Addr, Replaces: dc.Replaces}
	lastSaid := time.Now()
	for round := 0; ; round++ {
		started, reason := false, "no member answered"
		var refused error
		ask := func(addr string) *Place {
			a, err := AskToJoin(addr, dc.Cluster, dc.TLS, req)
			if err == nil && a.Roster == nil && a.Leader != "" && a.Leader != addr {
				started = true
				addr = a.Leader
				a, err = AskToJoin(addr, dc.Cluster, dc.TLS, req)
			}
			switch {
			case err != nil:
				reason = fmt.Sprintf("%s: %v", addr, err)
			case a.Roster != nil:
				return &Place{Roster: *a.Roster, LogStart: a.LogStart, From: addr}
			case a.Refused != "":
				refused = fmt.Errorf("cluster: %s refused to add this member: %s", addr, a.Refused)
			default:
				started = true
				if a.Wait != "" {
					reason = fmt.Sprintf("%s: %s", addr, a.Wait)
				}
			}
			return nil
		}
		for _, addr := range dc.Seeds {
			if addr == dc.Addr {
				continue
			}
			if p := ask(addr); p != nil {
				return *p, nil
			}
			if refused != nil {
				return Place{}, refused
			}
		}
		if dc.MayStart && !started {
			return Place{Start: true}, nil
		}
		if dc.Waiting != nil && time.Since(lastSaid) > 5*time.Second {
			dc.Waiting(reason)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return Place{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// joining is a change a leader proposed and waits to see applied.
type joining struct {
	addr    string
	id      uint64
	remove  bool
	since   time.Time
	replies []chan []byte
}

// answerJoin answers a join request (on Run's goroutine).
func (d *Driver) answerJoin(pk Packet) {
	var req JoinRequest
	if err := json.Unmarshal(pk.Payload, &req); err != nil || req.Addr == "" {
		reply(pk.Reply, JoinAnswer{Wait: "a bad join request"})
		return
	}
	roster := d.node.Roster()
	id, member := roster.IDOf(req.Addr)
	logStart, _ := d.node.log.FirstIndex()
	if member && !req.Remove && req.Replaces != "" && req.Replaces != req.Addr {
		reply(pk.Reply, JoinAnswer{Refused: fmt.Sprintf("%s is a member of the cluster already; only a new member replaces another", req.Addr)})
		return
	}
	if member && !req.Remove {
		// A member that comes back at its own address empty is retired
		// and added again (answerMember): replacing itself asks nothing
		// more.
		d.answerMember(pk, roster, id, logStart)
		return
	}
	if !member && req.Remove {
		reply(pk.Reply, JoinAnswer{Refused: fmt.Sprintf("%s is not a member of the cluster", req.Addr)})
		return
	}
	st := d.node.rn.BasicStatus()
	if d.certifier == nil { // not the leader (or not yet certifying)
		reply(pk.Reply, JoinAnswer{Leader: roster.Addrs[st.Lead], Wait: "no leader"})
		return
	}
	if j := d.change; j != nil {
		if j.addr == req.Addr && j.remove == req.Remove {
			j.replies = append(j.replies, pk.Reply)
			return
		}
		reply(pk.Reply, JoinAnswer{Wait: "another membership change is in progress"})
		return
	}
	if d.node.Joint() {
		reply(pk.Reply, JoinAnswer{Wait: "a member is being replaced"})
		return
	}
	if req.Remove {
		d.proposeRemoval(pk, id)
		return
	}
	mc := memberContext{Addr: req.Addr}
	if req.Replaces != "" {
		old, why := d.replaceable(roster, req.Replaces)
		if why != "" {
			reply(pk.Reply, JoinAnswer{Refused: why})
			return
		}
		mc.Replaces = old
	}
	id = roster.NextID()
	cc := raftpb.ConfChangeV2{
		Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddLearnerNode, NodeID: id}},
		Context: mc.encode(),
	}
	if err := d.node.ProposeConfChange(cc); err != nil {
		reply(pk.Reply, JoinAnswer{Wait: err.Error()})
		return
	}
	d.change = &joining{addr: req.Addr, id: id, since: time.Now(), replies: []chan []byte{pk.Reply}}
}

// replaceable returns the id of the voter at addr, which a new member
// asks to replace, or why it cannot be replaced.
func (d *Driver) replaceable(roster Roster, addr string) (uint64, string) {
	old, ok := roster.IDOf(addr)
	voters, _ := d.node.Config()
	if !ok || !slices.Contains(voters, old) {
		return 0, fmt.Sprintf("%s, which the new member is to replace, is not a voting member of the cluster", addr)
	}
	for learner, voter := range roster.Replacing {
		if voter == old {
			return 0, fmt.Sprintf("%s is already being replaced by the member at %s", addr, roster.Addrs[learner])
		}
	}
	return old, ""
}

// answerMember answers a join request from the address of member id: a
// node whose log is empty. One that never ran (a member of the first
// configuration starting late: no member has heard from it, Roster.Seen)
// gets its id back. One that ran has lost its raft state, its vote among
// it, and must not vote again under the id: the leader removes the id
// first, and the node is then added under a new one, as any new member.
// Other members send the request to the leader; without one, a member
// that ran waits for one (the others can elect one without it, or the
// cluster is down either way), and one that never ran gets its id (the
// cluster may need it to elect one). A member wiped before any other
// heard from it (its first election timeout) is taken for one that
// never ran.
func (d *Driver) answerMember(pk Packet, roster Roster, id, logStart uint64) {
	given := func() {
		roster.Self = id
		reply(pk.Reply, JoinAnswer{Roster: &roster, LogStart: logStart})
	}
	ran := slices.Contains(roster.Seen, id)
	if d.certifier == nil {
		st := d.node.rn.BasicStatus()
		switch lead := roster.Addrs[st.Lead]; {
		case st.Lead != 0 && st.Lead != d.node.ID() && lead != "":
			reply(pk.Reply, JoinAnswer{Leader: lead, Wait: "ask the leader"})
		case ran:
			reply(pk.Reply, JoinAnswer{Wait: "no leader; a member that lost its log waits for one"})
		default:
			given()
		}
		return
	}
	if !ran || id == d.node.ID() {
		given()
		return
	}
	if d.change == nil {
		d.proposeRemoval(Packet{Reply: make(chan []byte, 1)}, id)
	}
	reply(pk.Reply, JoinAnswer{Wait: fmt.Sprintf("member %d at %s came back without its log: its id is being retired", id, roster.Addrs[id])})
}

// proposeRemoval proposes the removal of member id (on the leader).
func (d *Driver) proposeRemoval(pk Packet, id uint64) {
	if d.node.Joint() {
		reply(pk.Reply, JoinAnswer{Wait: "a member is being replaced"})
		return
	}
	voters, _ := d.node.Config()
	if len(voters) == 1 && voters[0] == id {
		reply(pk.Reply, JoinAnswer{Refused: "the last voting member cannot be removed"})
		return
	}
	addr := d.node.Roster().Addrs[id]
	cc := raftpb.ConfChangeV2{
		Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeRemoveNode, NodeID: id}},
		Context: memberContext{Addr: addr}.encode(),
	}
	if err := d.node.ProposeConfChange(cc); err != nil {
		reply(pk.Reply, JoinAnswer{Wait: err.Error()})
		return
	}
	d.change = &joining{addr: addr, id: id, remove: true, since: time.Now(), replies: []chan []byte{pk.Reply}}
}

// Remove removes the member at cluster address addr from the cluster, by
// asking the leader (this node, or another), and returns once the removal
// is applied there; it asks again while there is no leader or another
// change is in progress, until ctx ends.
func (d *Driver) Remove(ctx context.Context, addr string) error {
	req := JoinRequest{Addr: addr, Remove: true}
	for {
		d.pmu.Lock()
		roster := d.roster.Clone()
		d.pmu.Unlock()
		if _, ok := roster.IDOf(addr); !ok {
			return fmt.Errorf("cluster: %s is not a member of the cluster", addr)
		}
		why := "no leader"
		if lead := d.State().Lead; lead != 0 {
			a, err := AskToJoin(roster.Addrs[lead], d.transport.cluster, d.transport.clientTLS, req)
			switch {
			case err != nil:
				why = err.Error()
			case a.Removed:
				return nil
			case a.Refused != "":
				return fmt.Errorf("cluster: %s", a.Refused)
			default:
				why = a.Wait
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s was not removed: %s", addr, why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// promote proposes the first learner close enough to the commit index as
// a voter (on the leader, on Run's goroutine); a learner that replaces a
// voter is promoted by a joint change that also removes that voter.
func (d *Driver) promote() {
	if d.certifier == nil || d.change != nil || d.node.Joint() {
		return
	}
	st := d.node.Status()
	roster := d.node.Roster()
	for id := range st.Config.Learners {
		if pr, ok := st.Progress[id]; ok && pr.Match+promoteLag >= st.Commit {
			cc := promotion(roster, st.Config.Voters.IDs(), id)
			if d.node.ProposeConfChange(cc) == nil {
				d.change = &joining{addr: roster.Addrs[id], id: id, since: time.Now()}
			}
			return
		}
	}
}

// promotion is the change that makes learner id a voter, removing in
// the same change the voter it replaces if that one still votes (it may
// have been removed by hand meanwhile: the learner is then simply
// promoted). Two changes in one ConfChangeV2 go through a joint
// configuration, which raft leaves by itself (ConfChangeTransitionAuto).
func promotion(roster Roster, voters map[uint64]struct{}, id uint64) raftpb.ConfChangeV2 {
	cc := raftpb.ConfChangeV2{
		Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: id}},
		Context: memberContext{Addr: roster.Addrs[id]}.encode(),
	}
	if old, ok := roster.Replacing[id]; ok {
		if _, votes := voters[old]; votes {
			cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeRemoveNode, NodeID: old})
		}
	}
	return cc
}

// changed follows a configuration change applied: the transport's peers
// follow the roster, and a change this leader waited for is answered.
func (d *Driver) changed(r Roster) {
	d.transport.SetPeers(r.Addrs)
	if j := d.change; j != nil && j.remove {
		if slices.Contains(r.Removed, j.id) {
			for _, ch := range j.replies {
				reply(ch, JoinAnswer{Removed: true})
			}
			d.change = nil
		}
	} else if j != nil {
		if id, ok := r.IDOf(j.addr); ok && id == j.id {
			logStart, _ := d.node.log.FirstIndex()
			for _, ch := range j.replies {
				rr := r.Clone()
				rr.Self = id
				reply(ch, JoinAnswer{Roster: &rr, LogStart: logStart})
			}
			d.change = nil
		}
	}
}

// expireChange forgets a change not applied in time, or proposed in a
// leadership since lost: raft dropped it, or will apply it without
// anyone waiting.
func (d *Driver) expireChange() {
	if j := d.change; j != nil && (d.certifier == nil || time.Since(j.since) > changeTimeout) {
		for _, ch := range j.replies {
			reply(ch, JoinAnswer{Wait: "the change was not applied in time"})
		}
		d.change = nil
	}
}

func reply(ch chan []byte, a JoinAnswer) {
	b, _ := json.Marshal(a)
	select {
	case ch <- b:
	default:
	}
}

// ErrRemoved: the node was removed from the cluster.
var ErrRemoved = fmt.Errorf("cluster: this node was removed from the cluster")
