package protocol

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestContinuedReply: a reply continued over injected executions reaches
// the client as one reply, each part's packets numbered after the last
// part's, whatever the chunks the writer hands over (split inside
// headers too) and without changing the writer's bytes; the injected
// command is what the library reads next, and after the last part the
// client's own next command passes as it came.
func TestContinuedReply(t *testing.T) {
	execute := func(id uint32, cursor byte) []byte {
		p := binary.LittleEndian.AppendUint32([]byte{comStmtExecute}, id)
		p = append(p, cursor)
		return pkt(0, binary.LittleEndian.AppendUint32(p, 1))
	}
	part := func(seqs ...byte) []byte { // packets of various sizes
		var b []byte
		for i, s := range seqs {
			b = append(b, pkt(s, bytes.Repeat([]byte{byte('a' + i)}, 1+7*i))...)
		}
		return b
	}
	for _, chunk := range []int{1, 2, 3, 5, 4096} {
		client, server := net.Pipe()
		w := newConn(server, &Listener{})
		w.phase.done.Store(true)
		w.authed.Store(true)
		deadline := time.Now().Add(5 * time.Second)
		_ = client.SetDeadline(deadline)
		_ = w.SetDeadline(deadline)

		// server reads a command (as the library does) of n bytes.
		read := func(n int) []byte {
			b := make([]byte, n)
			if _, err := io.ReadFull(w, b); err != nil {
				t.Fatal(err)
			}
			return b
		}
		// reply writes b in chunks while the client reads it whole.
		reply := func(b []byte) []byte {
			orig := append([]byte(nil), b...)
			got := make(chan []byte)
			go func() {
				r := make([]byte, len(b))
				_, _ = io.ReadFull(client, r)
				got <- r
			}()
			for i := 0; i < len(b); i += chunk {
				if _, err := w.Write(b[i:min(i+chunk, len(b))]); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(b, orig) {
				t.Fatalf("chunks of %d: the writer's bytes were changed", chunk)
			}
			return <-got
		}

		go func() { _, _ = client.Write(execute(3, 0)) }()
		if got := read(14); !bytes.Equal(got, execute(3, 0)) || w.CursorRequested() {
			t.Fatalf("the client's execution: %x (cursor %v)", got, w.CursorRequested())
		}
		w.ContinueExecute(9)
		if got := reply(part(1, 2, 3)); !bytes.Equal(got, part(1, 2, 3)) {
			t.Fatalf("chunks of %d: the first part was renumbered: %x", chunk, got)
		}
		if got := read(14); !bytes.Equal(got, execute(9, 0)) {
			t.Fatalf("the injected command: %x, want %x", got, execute(9, 0))
		}
		w.ContinueExecute(9)
		if got := reply(part(1, 2)); !bytes.Equal(got, part(4, 5)) {
			t.Fatalf("chunks of %d: the second part on the wire %x, want %x", chunk, got, part(4, 5))
		}
		if got := read(14); !bytes.Equal(got, execute(9, 0)) {
			t.Fatalf("the second injected command: %x", got)
		}
		if got := reply(part(1)); !bytes.Equal(got, part(6)) {
			t.Fatalf("chunks of %d: the last part on the wire %x, want %x", chunk, got, part(6))
		}
		// The reply is over: the client's next command and its reply
		// pass unchanged.
		go func() { _, _ = client.Write(execute(3, 1)) }()
		if got := read(14); !bytes.Equal(got, execute(3, 1)) || !w.CursorRequested() {
			t.Fatalf("the client's next command: %x (cursor %v)", got, w.CursorRequested())
		}
		if got := reply(part(1, 2)); !bytes.Equal(got, part(1, 2)) {
			t.Fatalf("chunks of %d: a reply after the continued one was renumbered: %x", chunk, got)
		}
		// A command read while a part's packet is unfinished ends the
		// connection.
		w.ContinueExecute(9)
		cut := part(1, 2)
		cut = cut[:len(cut)-3]
		go func() { _, _ = io.ReadFull(client, make([]byte, len(cut))) }()
		if _, err := w.Write(cut); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Read(make([]byte, 14)); err != errContinuedMidPacket {
			t.Fatalf("a command read mid-packet: %v", err)
		}
		_ = client.Close()
		_ = w.Close()
	}
}
