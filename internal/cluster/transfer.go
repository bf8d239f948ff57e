package cluster

// State transfer: a member that joins after the other members compacted
// their logs (the entries from the first are gone) is sent a copy of one
// member's state instead of the whole log.
//
// The joiner, once it is a member (join.go), asks a member for its state
// on a connection of its own (hello id 0, one request naming the joiner's
// address, which must be a member). The donor's driver takes a consistent
// view of its store between two turns, where the store holds exactly the
// entries up to the applied index, and answers with a header (that index,
// its term, raft's configuration and the roster as of it) followed by the
// store's contents (storage's transfer stream), read from that view while
// the donor goes on committing. The joiner makes its store from it and
// starts its raft log after that index (raftlog.Seed); the leader then
// sends it the entries after it, as to any follower.

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// transferTimeout bounds a whole state transfer.
const transferTimeout = time.Hour

// StateHeader is what a donor sends before its store's contents.
type StateHeader struct {
	// Index and Term are the last entry whose effects the store holds.
	Index, Term uint64
	// ConfState is raft's configuration as of Index (raft's encoding).
	ConfState []byte
	// Roster is the members as of Index.
	Roster Roster
	// GNO is the cluster's GTID number of the last transaction at or
	// before Index (a witness, which imports no store, starts from it).
	GNO uint64 `json:",omitempty"`
	// Refused says why no state follows.
	Refused string `json:",omitempty"`
}

// stateSource is a donor's state at one entry, ready to stream.
type stateSource struct {
	header StateHeader
	export func(io.Writer) error // nil when refused
	close  func()
}

// answerState takes the state a joiner asked for (on Run's goroutine):
// the header is of the last entry handed to the apply loop, and the
// store's snapshot is taken by that loop once it has applied exactly the
// entries up to it (applyQueue.between).
func (d *Driver) answerState(pk Packet) {
	refuse := func(why string) {
		pk.State <- stateSource{header: StateHeader{Refused: why}, close: func() {}}
	}
	var req JoinRequest
	if err := json.Unmarshal(pk.Payload, &req); err != nil {
		refuse("a bad request")
		return
	}
	roster := d.node.Roster()
	if _, ok := roster.IDOf(req.Addr); !ok {
		refuse(req.Addr + " is not a member of the cluster")
		return
	}
	if d.NewStoreSnapshot == nil {
		refuse("this member cannot give its state")
		return
	}
	term, err := d.node.log.Term(d.handed)
	if err != nil {
		refuse(err.Error())
		return
	}
	_, cs, _ := d.node.log.InitialState()
	csb, err := cs.Marshal()
	if err != nil {
		refuse(err.Error())
		return
	}
	header := StateHeader{Index: d.handed, Term: term, ConfState: csb, Roster: roster}
	d.queue.between(func() {
		snap := d.NewStoreSnapshot()
		if d.AppliedGNO != nil {
			header.GNO = d.AppliedGNO()
		}
		pk.State <- stateSource{header: header, export: snap.Export, close: func() { snap.Close() }}
	})
}

// serveState writes the state the driver gave for a request: its header
// frame, then the store's contents.
func (t *Transport) serveState(c net.Conn, req []byte) error {
	ch := make(chan stateSource, 1)
	select {
	case t.recv <- Packet{Kind: kindState, To: t.id, Payload: req, State: ch}:
	case <-t.quit:
		return nil
	}
	var src stateSource
	timer := time.NewTimer(joinReplyWait)
	defer timer.Stop()
	select {
	case src = <-ch:
	case <-timer.C:
		src = stateSource{header: StateHeader{Refused: "no answer in time"}, close: func() {}}
		// The answer may still come (the apply loop takes the store's
		// snapshot once it has caught up): release it then.
		go func() {
			select {
			case late := <-ch:
				late.close()
			case <-t.quit:
			}
		}()
	case <-t.quit:
		return nil
	}
	defer src.close()
	_ = c.SetDeadline(time.Now().Add(transferTimeout))
	w := bufio.NewWriterSize(c, 256<<10)
	hdr, _ := json.Marshal(src.header)
	if err := writeFrame(w, kindState, hdr); err != nil {
		return err
	}
	if src.export != nil {
		if err := src.export(w); err != nil {
			return err
		}
	}
	return w.Flush()
}

// FetchState asks the member at addr for its state, for the member at
// cluster address self (which must be a member already), and hands the
// header and the store's contents to install.
func FetchState(addr, cluster, self string, clientTLS *tls.Config, install func(StateHeader, raftpb.ConfState, io.Reader) error) error {
	c, err := dialPeer(addr, clientTLS)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(transferTimeout))
	w := bufio.NewWriter(c)
	if err := writeHello(w, cluster, 0); err != nil {
		return err
	}
	req, _ := json.Marshal(JoinRequest{Addr: self})
	if err := writeFrame(w, kindState, req); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	r := bufio.NewReaderSize(c, 256<<10)
	kind, b, err := readFrame(r)
	if err != nil {
		return err
	}
	if kind != kindState {
		return fmt.Errorf("cluster: %s answered with a packet of kind %d", addr, kind)
	}
	var h StateHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("cluster: %s: a bad state header: %w", addr, err)
	}
	if h.Refused != "" {
		return fmt.Errorf("cluster: %s gives no state: %s", addr, h.Refused)
	}
	var cs raftpb.ConfState
	if err := cs.Unmarshal(h.ConfState); err != nil {
		return fmt.Errorf("cluster: %s: a bad configuration: %w", addr, err)
	}
	if h.Roster.Addrs == nil {
		h.Roster.Addrs = map[uint64]string{}
	}
	return install(h, cs, r)
}
