package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
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
	l := &wireListener{}
	w := &wireConn{Conn: server, r: newReader(server), l: l}
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
	cmd := w.takeDump()
	if cmd == nil || cmd.err != nil || cmd.gtidKind || cmd.pos != 1234 || cmd.flags != 1 || cmd.serverID != 77 || cmd.file != "binlog.000003" {
		t.Fatalf("parsed dump %+v", cmd)
	}
	if w.takeDump() != nil {
		t.Fatal("takeDump must forget the command")
	}
}

// TestWireIgnoresDumpsBeforeLogin: before the client has logged in, a
// packet shaped like a dump command (with a GTID set to decode) passes
// untouched and nothing is parsed.
func TestWireIgnoresDumpsBeforeLogin(t *testing.T) {
	client, server := net.Pipe()
	w := &wireConn{Conn: server, r: newReader(server), l: &wireListener{}}
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
	if !bytes.Equal(got, dump) || w.takeDump() != nil {
		t.Fatal("a dump-shaped packet before login must pass untouched")
	}
}

// TestWirePassesTLSThrough: after an SSLRequest nothing is parsed.
func TestWirePassesTLSThrough(t *testing.T) {
	client, server := net.Pipe()
	w := &wireConn{Conn: server, r: newReader(server), l: &wireListener{}}
	sslRequest := pkt(1, make([]byte, 32))
	looksLikeDump := pkt(0, comBinlogDumpPacket(4, 0, 1, "x")) // random TLS bytes could
	go func() {
		client.Write(sslRequest)
		client.Write(looksLikeDump)
	}()
	want := append(append([]byte(nil), sslRequest...), looksLikeDump...)
	got := make([]byte, len(want))
	w.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(w, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || w.takeDump() != nil {
		t.Fatal("bytes after an SSL request must pass untouched")
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
		if cmd.err == nil && cmd.gtidKind && cmd.gtids == nil {
			t.Fatal("a well-formed COM_BINLOG_DUMP_GTID carries a GTID set")
		}
	})
}
