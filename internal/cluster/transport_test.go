package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Bad bytes on the cluster port close the connection and never reach
// raft: a stranger, another cluster, an unknown node, a huge frame, a
// frame that does not decode, a message claiming another sender.
func TestTransportRefusesBadConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport(1, "prod", ln.Addr().String(), ln, map[uint64]string{1: ln.Addr().String(), 2: "127.0.0.1:1"})
	tr.Start()
	defer tr.Close()

	hello := func(cluster string, id uint64) []byte {
		var b bytes.Buffer
		if err := writeHello(&b, cluster, id); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	frame := func(p []byte) []byte {
		return append(append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), kindRaft), p...)
	}
	good, _ := (&raftpb.Message{Type: raftpb.MsgHeartbeat, From: 2, To: 1, Term: 1}).Marshal()
	forged, _ := (&raftpb.Message{Type: raftpb.MsgHeartbeat, From: 3, To: 1, Term: 1}).Marshal()
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"other cluster", hello("test", 2)},
		{"unknown node", hello("prod", 9)},
		{"huge frame", append(hello("prod", 2), 0xff, 0xff, 0xff, 0xff, kindRaft)},
		{"unknown kind", append(hello("prod", 2), 0, 0, 0, 1, 99, 0)},
		{"garbage frame", append(hello("prod", 2), frame([]byte{0xff, 0xff, 0xff})...)},
		{"forged sender", append(hello("prod", 2), frame(forged)...)},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(c.data); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: the connection was not closed (%v)", c.name, err)
		}
		conn.Close()
		select {
		case pk := <-tr.Recv():
			t.Errorf("%s: a packet got through: %v", c.name, pk.Kind)
		default:
		}
	}
	// A well-formed message from a peer does arrive.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(append(hello("prod", 2), frame(good)...)); err != nil {
		t.Fatal(err)
	}
	select {
	case pk := <-tr.Recv():
		if pk.Kind != kindRaft || pk.Msg.From != 2 || pk.Msg.Type != raftpb.MsgHeartbeat {
			t.Fatalf("received %+v", pk)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a good message did not arrive")
	}
}

// FuzzClusterConnection: whatever arrives on the cluster port after the
// hello (a member's id, or 0 for a joiner's request), the transport
// hands the driver only frames that decode, closes the connection on
// anything else, and never panics.
func FuzzClusterConnection(f *testing.F) {
	hello := func(id uint64) []byte {
		var b bytes.Buffer
		if err := writeHello(&b, "prod", id); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	join, _ := json.Marshal(JoinRequest{Addr: "127.0.0.1:9"})
	var frame bytes.Buffer
	writeFrame(&frame, kindJoin, join)
	f.Add(append(hello(0), frame.Bytes()...))
	frame.Reset()
	writeFrame(&frame, kindState, join)
	f.Add(append(hello(0), frame.Bytes()...))
	frame.Reset()
	writeFrame(&frame, kindAnnounce, []byte(`{"primary":true}`))
	f.Add(append(hello(2), frame.Bytes()...))
	f.Add(append(hello(2), 0, 0, 0, 3, kindRaft, 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := NewTransport(1, "prod", "127.0.0.1:1", nil, map[uint64]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"})
		done := make(chan struct{})
		defer close(done)
		go func() { // a driver that refuses every request at once
			for {
				select {
				case pk := <-tr.recv:
					switch {
					case pk.Reply != nil:
						reply(pk.Reply, JoinAnswer{Wait: "fuzzing"})
					case pk.State != nil:
						pk.State <- stateSource{header: StateHeader{Refused: "fuzzing"}, close: func() {}}
					}
				case <-done:
					return
				}
			}
		}()
		server, client := net.Pipe()
		go func() {
			client.Write(b)
			client.Close()
		}()
		go io.Copy(io.Discard, client) // answers to join requests
		_ = tr.receive(server)
		server.Close()
	})
}
