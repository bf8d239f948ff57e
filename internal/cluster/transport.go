package cluster

// Transport carries raft messages between nodes over TCP.
//
// Each node listens on its cluster address. For every peer it keeps one
// outgoing connection, fed by a bounded queue: when the queue is full or
// the peer cannot be reached, messages are dropped and the peer reported
// unreachable, which raft expects (it sends again). Incoming connections
// only receive.
//
// The peers follow the cluster's configuration (SetPeers): a member added
// gets a sender, a member removed loses its own and its connections.
//
// A connection starts with a hello from the dialer: a magic string, the
// cluster's name and the dialer's node id; the receiver closes a
// connection from another cluster or an unknown node. A node that is not a
// member yet says id 0: its connection carries one join request, which
// the driver answers on the same connection (join.go). Then every packet is
// framed as a 4-byte big-endian length, a kind byte and its payload: a raft
// message (raft's protobuf encoding), a transaction sent to the leader
// for certification or the leader's answer (driver.go), or a node's
// announcement of how it stands (members.go). A frame longer
// than maxFrame, of an unknown kind, or a raft message that does not
// decode closes the connection: bad bytes never reach raft.
//
// With UseTLS every connection is mutual TLS and the hello comes after
// the handshake; without it, traffic is neither authenticated nor
// encrypted (the server allows that on loopback only).

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	helloMagic = "lockstep-cluster 1\n"
	// maxFrame bounds one message: raft's MaxSizePerMsg (1 MiB) plus one
	// transaction of up to the largest allowed size.
	maxFrame   = 256 << 20
	sendQueue  = 4096
	dialTimout = time.Second
)

// Transport sends and receives raft messages for one node.
type Transport struct {
	id      uint64
	addr    string // this node's cluster address
	cluster string
	// serverTLS and clientTLS, when set (UseTLS), wrap every connection.
	serverTLS, clientTLS *tls.Config
	ln                   net.Listener
	recv                 chan Packet
	// Unreachable, if set before Start, is told of a peer a message could
	// not be sent to.
	Unreachable func(id uint64)

	// peers is replaced, never changed, under mu (SetPeers): senders
	// read it without a lock.
	peers   atomic.Pointer[map[uint64]*peer]
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	started bool
	closed  bool
	wg      sync.WaitGroup
	quit    chan struct{}
}

type peer struct {
	id   uint64
	addr string
	q    chan Packet
	gone chan struct{} // closed when the peer leaves the configuration
}

// Packet kinds.
const (
	kindRaft     byte = 1 // a raft message
	kindCertify  byte = 2 // a transaction for the leader to certify
	kindVerdict  byte = 3 // the leader's refusal of one
	kindAnnounce byte = 4 // how a node stands (members.go)
	kindJoin     byte = 5 // a join request and its answer (join.go)
	kindState    byte = 6 // a state transfer's request and header (transfer.go)
	kindFlow     byte = 7 // a flow-control report (pacing.go)
)

// Packet is what travels between nodes: a raft message, or a payload of
// another kind.
type Packet struct {
	Kind     byte
	From, To uint64
	Msg      raftpb.Message // kindRaft
	Payload  []byte         // other kinds
	// Reply, on a join request, takes the answer (once, without
	// blocking: it has room for one).
	Reply chan []byte
	// State, on a state request, takes the state to send (the same way).
	State chan stateSource
}

// NewTransport makes node id's transport, listening on ln at addr, with
// the peers' addresses (the node's own may be included; it is skipped).
func NewTransport(id uint64, cluster, addr string, ln net.Listener, peers map[uint64]string) *Transport {
	t := &Transport{id: id, addr: addr, cluster: cluster, ln: ln, recv: make(chan Packet, sendQueue), conns: map[net.Conn]struct{}{}, quit: make(chan struct{})}
	empty := map[uint64]*peer{}
	t.peers.Store(&empty)
	t.SetPeers(peers)
	return t
}

// SetPeers makes the peers those of addrs (this node's own id skipped):
// a new one gets a sender, one gone or moved loses its sender and queue.
func (t *Transport) SetPeers(addrs map[uint64]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	next := make(map[uint64]*peer, len(addrs))
	for id, addr := range addrs {
		if id == t.id {
			continue
		}
		if p := old[id]; p != nil && p.addr == addr {
			next[id] = p
			continue
		}
		p := &peer{id: id, addr: addr, q: make(chan Packet, sendQueue), gone: make(chan struct{})}
		next[id] = p
		if t.started && !t.closed {
			t.wg.Add(1)
			go t.send(p)
		}
	}
	for id, p := range old {
		if next[id] != p {
			close(p.gone)
		}
	}
	t.peers.Store(&next)
}

// peerAddrs returns the peers' cluster addresses by node id.
func (t *Transport) peerAddrs() map[uint64]string {
	ps := *t.peers.Load()
	out := make(map[uint64]string, len(ps))
	for id, p := range ps {
		out[id] = p.addr
	}
	return out
}

// UseTLS makes every connection mutual TLS, before Start: server for the
// connections the node accepts, client for those it dials (whose
// ServerName, also in the state VerifyConnection sees, is the peer's
// host). Their verification is the caller's policy.
func (t *Transport) UseTLS(server, client *tls.Config) {
	t.serverTLS, t.clientTLS = server, client
}

// dial connects to a peer, with the TLS handshake if TLS is on, within
// dialTimout.
func (t *Transport) dial(addr string) (net.Conn, error) {
	return dialPeer(addr, t.clientTLS)
}

// dialPeer connects to a node's cluster address, as a TLS client with
// clientTLS when it is set.
func dialPeer(addr string, clientTLS *tls.Config) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimout}
	if clientTLS == nil {
		return d.Dial("tcp", addr)
	}
	conf := clientTLS.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		conf.ServerName = host
		// An IP address is not sent as SNI, so the connection state's
		// ServerName would be empty: the verifier is told the host.
		if verify := conf.VerifyConnection; verify != nil {
			conf.VerifyConnection = func(cs tls.ConnectionState) error {
				cs.ServerName = host
				return verify(cs)
			}
		}
	}
	c, err := tls.DialWithDialer(d, "tcp", addr, conf)
	if err != nil {
		return nil, err // not a nil *tls.Conn in an interface
	}
	return c, nil
}

// Start accepts connections and starts the senders.
func (t *Transport) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = true
	t.wg.Add(1)
	go t.accept()
	for _, p := range *t.peers.Load() {
		t.wg.Add(1)
		go t.send(p)
	}
}

// Recv delivers incoming packets.
func (t *Transport) Recv() <-chan Packet { return t.recv }

// Send queues raft messages for their peers, dropping what cannot be
// queued.
func (t *Transport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		t.SendPacket(Packet{Kind: kindRaft, From: t.id, To: m.To, Msg: m})
	}
}

// SendPacket queues a packet for its peer; it reports false if it was
// dropped (unknown peer, full queue).
func (t *Transport) SendPacket(pk Packet) bool {
	p := (*t.peers.Load())[pk.To]
	if p == nil {
		return false
	}
	select {
	case p.q <- pk:
		return true
	default:
		t.unreachable(pk.To)
		return false
	}
}

func (t *Transport) unreachable(id uint64) {
	if t.Unreachable != nil {
		t.Unreachable(id)
	}
}

// Close stops listening, closes every connection and waits for the
// transport's goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.quit)
	err := t.ln.Close()
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

// track registers a connection to close at Close; false if closing.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		if t.serverTLS != nil {
			// The handshake runs at the first read, under the hello's
			// deadline.
			c = tls.Server(c, t.serverTLS)
		}
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.untrack(c)
			_ = t.receive(c)
		}()
	}
}

// receive reads one incoming connection until it fails or closes.
func (t *Transport) receive(c net.Conn) error {
	r := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	from, err := readHello(r, t.cluster)
	if err != nil {
		return err
	}
	if from == 0 {
		return t.serveJoin(c, r)
	}
	if _, known := (*t.peers.Load())[from]; !known {
		return fmt.Errorf("cluster: connection from unknown node %d", from)
	}
	_ = c.SetReadDeadline(time.Time{})
	var hdr [5]byte
	buf := make([]byte, 0, 4096)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n, kind := binary.BigEndian.Uint32(hdr[:]), hdr[4]
		if n > maxFrame {
			return fmt.Errorf("cluster: a %d-byte packet from node %d", n, from)
		}
		pk := Packet{Kind: kind, From: from, To: t.id}
		switch kind {
		case kindRaft:
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			// Unmarshal copies bytes fields, so buf can be reused.
			if err := pk.Msg.Unmarshal(buf); err != nil {
				return fmt.Errorf("cluster: a bad message from node %d: %w", from, err)
			}
			if pk.Msg.From != from || pk.Msg.To != t.id {
				return fmt.Errorf("cluster: node %d sent a message from %d to %d", from, pk.Msg.From, pk.Msg.To)
			}
		case kindCertify, kindVerdict, kindAnnounce, kindFlow: // not kindJoin: only from id 0
			if kind == kindAnnounce && n > maxAnnouncement {
				return fmt.Errorf("cluster: a %d-byte announcement from node %d", n, from)
			}
			if kind == kindFlow && n > maxFlowReport {
				return fmt.Errorf("cluster: a %d-byte flow-control report from node %d", n, from)
			}
			pk.Payload = make([]byte, n)
			if _, err := io.ReadFull(r, pk.Payload); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cluster: a packet of unknown kind %d from node %d", kind, from)
		}
		select {
		case t.recv <- pk:
		case <-t.quit:
			return nil
		}
	}
}

func writeHello(w io.Writer, cluster string, id uint64) error {
	b := append([]byte(helloMagic), byte(len(cluster)))
	b = append(b, cluster...)
	b = binary.BigEndian.AppendUint64(b, id)
	_, err := w.Write(b)
	return err
}

func readHello(r io.Reader, cluster string) (uint64, error) {
	b := make([]byte, len(helloMagic)+1)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, err
	}
	if string(b[:len(helloMagic)]) != helloMagic {
		return 0, errors.New("cluster: not a Lockstep cluster connection")
	}
	rest := make([]byte, int(b[len(helloMagic)])+8)
	if _, err := io.ReadFull(r, rest); err != nil {
		return 0, err
	}
	if name := string(rest[:len(rest)-8]); name != cluster {
		return 0, fmt.Errorf("cluster: connection from cluster %q, this is %q", name, cluster)
	}
	return binary.BigEndian.Uint64(rest[len(rest)-8:]), nil
}

// send keeps a connection to p and writes its queue to it.
func (t *Transport) send(p *peer) {
	defer t.wg.Done()
	var c net.Conn
	var w *bufio.Writer
	var frame []byte
	backoff := 50 * time.Millisecond
	defer func() {
		if c != nil {
			t.untrack(c)
		}
	}()
	for {
		var m Packet
		select {
		case m = <-p.q:
		case <-t.quit:
			return
		case <-p.gone:
			return
		}
		if c == nil {
			conn, err := t.dial(p.addr)
			if err != nil || !t.track(conn) {
				if conn != nil {
					conn.Close()
				}
				t.unreachable(p.id)
				t.drain(p, backoff)
				backoff = min(backoff*2, time.Second)
				continue
			}
			c, w = conn, bufio.NewWriterSize(conn, 64<<10)
			if err := writeHello(w, t.cluster, t.id); err != nil {
				t.untrack(c)
				c = nil
				continue
			}
			backoff = 50 * time.Millisecond
		}
		err := t.write(w, m, &frame)
		// Write what else is queued before flushing, as one batch.
		for err == nil && len(p.q) > 0 {
			err = t.write(w, <-p.q, &frame)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			t.untrack(c)
			c = nil
			t.unreachable(p.id)
		}
	}
}

func (t *Transport) write(w *bufio.Writer, pk Packet, frame *[]byte) error {
	if pk.Kind != kindRaft {
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(pk.Payload)))
		hdr[4] = pk.Kind
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		_, err := w.Write(pk.Payload)
		return err
	}
	n := pk.Msg.Size()
	if cap(*frame) < 5+n {
		*frame = make([]byte, 5+n)
	}
	f := (*frame)[:5+n]
	binary.BigEndian.PutUint32(f, uint32(n))
	f[4] = kindRaft
	if _, err := pk.Msg.MarshalTo(f[5:]); err != nil {
		return err
	}
	_, err := w.Write(f)
	return err
}

// drain drops p's queued messages for a while after a failed dial, so a
// dead peer does not hold stale messages.
func (t *Transport) drain(p *peer, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-p.q:
		case <-timer.C:
			return
		case <-t.quit:
			return
		case <-p.gone:
			return
		}
	}
}
