package protocol

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/tlscert"
)

func pkt(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func comBinlogDumpPacket(pos uint32, flags uint16, serverID uint32, file string) []byte {
	p := []byte{comBinlogDump}
	p = binary.LittleEndian.AppendUint32(p, pos)
	p = binary.LittleEndian.AppendUint16(p, flags)
	p = binary.LittleEndian.AppendUint32(p, serverID)
	return append(p, file...)
}

// TestWireRewritesDumpCommands: a COM_BINLOG_DUMP reaches the protocol
// layer as the canonical COM_BINLOG_DUMP_GTID and is remembered; other
// packets pass through byte for byte.
func TestWireRewritesDumpCommands(t *testing.T) {
	client, server := net.Pipe()
	l := &Listener{}
	w := newConn(server, l)
	w.authed.Store(true)
	handshake := pkt(1, bytes.Repeat([]byte{'h'}, 60))
	query := pkt(0, append([]byte{0x03}, "SELECT 1"...))
	dump := pkt(0, comBinlogDumpPacket(1234, 1, 77, "binlog.000003"))
	go func() {
		client.Write(handshake)
		client.Write(query)
		client.Write(dump)
	}()
	want := append(append(append([]byte(nil), handshake...), query...), canonicalDump()...)
	got := make([]byte, len(want))
	w.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(w, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stream after the wrapper:\n got %x\nwant %x", got, want)
	}
	cmd := w.TakeDump()
	if cmd == nil || cmd.Err != nil || cmd.GTIDKind || cmd.Pos != 1234 || cmd.Flags != 1 || cmd.ServerID != 77 || cmd.File != "binlog.000003" {
		t.Fatalf("parsed dump %+v", cmd)
	}
	if w.TakeDump() != nil {
		t.Fatal("TakeDump must forget the command")
	}
}

// TestWireIgnoresDumpsBeforeLogin: before the client has logged in, a
// packet shaped like a dump command (with a GTID set to decode) passes
// untouched and nothing is parsed.
func TestWireIgnoresDumpsBeforeLogin(t *testing.T) {
	client, server := net.Pipe()
	w := newConn(server, &Listener{})
	p := []byte{comBinlogDumpGTID, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}
	p = binary.LittleEndian.AppendUint64(p, 4)
	p = binary.LittleEndian.AppendUint32(p, 8)
	p = binary.LittleEndian.AppendUint64(p, 1<<40) // claims 2^40 UUIDs
	dump := pkt(0, p)
	go client.Write(dump)
	got := make([]byte, len(dump))
	w.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(w, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, dump) || w.TakeDump() != nil {
		t.Fatal("a dump-shaped packet before login must pass untouched")
	}
}

// TestWireTerminatesTLS: the wrapper offers TLS in the greeting, answers
// the SSLRequest with the handshake without passing it on, renumbers the
// connection phase so that the protocol layer sees a plain login, and
// intercepts a dump command sent over TLS.
func TestWireTerminatesTLS(t *testing.T) {
	dir := t.TempDir()
	files, _, err := tlscert.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlscert.Server(files)
	if err != nil {
		t.Fatal(err)
	}
	client, server := net.Pipe()
	defer client.Close()
	w := newConn(server, &Listener{TLS: cfg})
	defer w.Close()
	deadline := time.Now().Add(10 * time.Second)
	_ = client.SetDeadline(deadline)
	_ = w.SetDeadline(deadline)

	greeting := append([]byte{10}, "8.0.99\x00"...)
	greeting = append(greeting, make([]byte, 4+8+1)...)        // id, auth data, filler
	greeting = append(greeting, 0x00, 0x02, 33, 2, 0, 0, 0, 0) // caps (PROTOCOL_41), charset, status, caps
	response := append([]byte{0x00, 0x0a, 0x00, 0x00}, bytes.Repeat([]byte{'r'}, 40)...)
	ok := []byte{0x00, 0, 0, 2, 0, 0, 0}
	dump := pkt(0, comBinlogDumpPacket(4, 0, 9, "binlog.000001"))

	// The protocol layer's side.
	layer := make(chan error, 1)
	go func() {
		layer <- func() error {
			if _, err := w.Write(pkt(0, greeting)); err != nil {
				return err
			}
			got := make([]byte, 4+len(response))
			if _, err := io.ReadFull(w, got); err != nil {
				return err
			}
			if !bytes.Equal(got, pkt(1, response)) {
				return fmt.Errorf("handshake response as the layer saw it: %x", got)
			}
			if _, err := w.Write(pkt(2, ok)); err != nil {
				return err
			}
			w.authed.Store(true)
			got = make([]byte, len(canonicalDump()))
			if _, err := io.ReadFull(w, got); err != nil {
				return err
			}
			if !bytes.Equal(got, canonicalDump()) {
				return fmt.Errorf("dump over TLS was not intercepted: %x", got)
			}
			return nil
		}()
	}()

	// The client's side.
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(client, hdr); err != nil {
		t.Fatal(err)
	}
	g := make([]byte, int(hdr[0]))
	if _, err := io.ReadFull(client, g); err != nil {
		t.Fatal(err)
	}
	at := 1 + len("8.0.99") + 1 + 4 + 8 + 1
	if caps := binary.LittleEndian.Uint16(g[at:]); caps&clientSSL == 0 {
		t.Fatalf("greeting capabilities %#x do not offer TLS", caps)
	}
	sslRequest := binary.LittleEndian.AppendUint32(nil, clientSSL|0x0200)
	sslRequest = append(sslRequest, make([]byte, 28)...)
	if _, err := client.Write(pkt(1, sslRequest)); err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(client, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write(pkt(2, response)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4+len(ok))
	if _, err := io.ReadFull(tc, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, pkt(3, ok)) {
		t.Fatalf("OK as the client saw it: %x, want sequence 3", got)
	}
	if _, err := tc.Write(dump); err != nil {
		t.Fatal(err)
	}
	if err := <-layer; err != nil {
		t.Fatal(err)
	}
	if cmd := w.TakeDump(); cmd == nil || cmd.ServerID != 9 || cmd.File != "binlog.000001" {
		t.Fatalf("parsed dump %+v", cmd)
	}
}

func FuzzParseDumpCommand(f *testing.F) {
	f.Add(comBinlogDumpPacket(4, 0, 1, "binlog.000001"))
	gtid := []byte{comBinlogDumpGTID, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'}
	gtid = binary.LittleEndian.AppendUint64(gtid, 4)
	gtid = binary.LittleEndian.AppendUint32(gtid, 8)
	gtid = binary.LittleEndian.AppendUint64(gtid, 0)
	f.Add(gtid)
	f.Add([]byte{comBinlogDumpGTID, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) == 0 {
			return
		}
		cmd := parseDumpCommand(p) // must not panic
		if cmd.Err == nil && cmd.GTIDKind && cmd.GTIDs == nil {
			t.Fatal("a well-formed COM_BINLOG_DUMP_GTID carries a GTID set")
		}
	})
}

// FuzzWireStream: any bytes from a client, before or after login, with
// TLS offered or not, go through the wire wrapper without a panic; the
// wrapper passes on what it does not take over and stops at an error.
func FuzzWireStream(f *testing.F) {
	f.Add([]byte{0}, pkt(1, bytes.Repeat([]byte{'h'}, 60)))
	f.Add([]byte{1}, append(pkt(0, []byte{0x03, 'x'}), pkt(0, comBinlogDumpPacket(4, 0, 1, "binlog.000001"))...))
	f.Add([]byte{2}, pkt(1, append(binary.LittleEndian.AppendUint32(nil, clientSSL|0x0200), make([]byte, 28)...)))
	f.Add([]byte{1}, []byte{0xff, 0xff, 0xff, 0x00, 0x12})
	cfg, _, err := tlscert.Ensure(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	tlsCfg, err := tlscert.Server(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, mode []byte, data []byte) {
		if len(mode) == 0 || len(data) > 1<<16 {
			return
		}
		client, server := net.Pipe()
		l := &Listener{MaxPacket: func() int64 { return 1 << 20 }}
		if mode[0]&2 != 0 {
			l.TLS = tlsCfg
		}
		w := newConn(server, l)
		w.authed.Store(mode[0]&1 != 0)
		deadline := time.Now().Add(2 * time.Second)
		_ = client.SetDeadline(deadline)
		_ = w.SetDeadline(deadline)
		go func() { _, _ = io.Copy(io.Discard, client) }() // what the server answers
		go func() {
			_, _ = client.Write(data)
			_ = client.Close() // end of the client's bytes
		}()
		_, _ = io.Copy(io.Discard, w)
		_ = w.Close()
	})
}
