package source

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

var testSID = binlog.UUID{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x01}

// fixture is a binlog on an in-memory file system with a Source over it.
type fixture struct {
	t    *testing.T
	log  *binlog.Log
	src  *Source
	gno  uint64
	seq  int64
	gtid binlog.GTIDSet
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	l, _, err := binlog.Open(binlog.Options{FS: vfs.NewMem(), Dir: "/data", ServerID: 1}, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, log: l}
	f.src = New(l, 1, testSID, func() binlog.GTIDSet { return f.gtid.Clone() }, NewSemiSync(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { f.src.Close(); l.Close() })
	return f
}

// commit appends a transaction (BEGIN ... XID, or a DDL statement) that
// depends on lastCommitted, and publishes it.
func (f *fixture) commit(ddl bool, lastCommitted int64) {
	f.t.Helper()
	f.gno++
	f.seq++
	var ev binlog.TrxEvents
	if ddl {
		ev.AddQuery("db", "CREATE TABLE t (a INT) DEFAULT COLLATE utf8mb4_0900_ai_ci", binlog.QueryOptions{})
	} else {
		ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
		ev.AddXID(f.gno)
	}
	ev.Close()
	g := binlog.GTIDInfo{SID: testSID, GNO: f.gno, SequenceNumber: f.seq, LastCommitted: lastCommitted, OriginalCommitUS: 1, ImmediateCommitUS: 1}
	if err := f.log.Append(ev.Finalize(nil, uint64(f.log.Current().Pos), 1, 1, g)); err != nil {
		f.t.Fatal(err)
	}
	f.gtid.Add(testSID, f.gno)
	f.log.Publish()
}

func (f *fixture) rotate() {
	f.t.Helper()
	if err := f.log.Rotate(time.Now(), f.gtid); err != nil {
		f.t.Fatal(err)
	}
	f.seq = 0
	f.log.Publish()
}

// client is the replica's end of a dump.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan error
}

func (f *fixture) dump(req Request) *client {
	f.t.Helper()
	server, conn := net.Pipe()
	c := &client{t: f.t, conn: conn, r: bufio.NewReader(conn), done: make(chan error, 1)}
	switch req.Checksum {
	case ChecksumUndeclared:
		req.Checksum = ChecksumCRC32
	case checksumTestUndeclared:
		req.Checksum = ChecksumUndeclared
	}
	go func() { c.done <- f.src.Dump(server, req) }()
	f.t.Cleanup(func() { conn.Close() })
	return c
}

// checksumTestUndeclared asks fixture.dump for a replica that did not
// declare checksum support (the zero value means CRC32 in these tests).
const checksumTestUndeclared ChecksumMode = -1

type packet struct {
	eof   bool
	err   *Error
	ack   bool
	event []byte
}

func (c *client) next(semi bool) packet {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	p, err := readPacket(c.r, 1<<30)
	if err != nil {
		c.t.Fatalf("reading the stream: %v", err)
	}
	switch p[0] {
	case 0xfe:
		return packet{eof: true}
	case 0xff:
		return packet{err: &Error{Code: binary.LittleEndian.Uint16(p[1:]), Message: string(p[9:])}}
	}
	p = p[1:]
	var out packet
	if semi {
		if p[0] != semiSyncMagic {
			c.t.Fatalf("semi-sync packet without the 0xEF header")
		}
		out.ack = p[1] == semiSyncAck
		p = p[2:]
	}
	out.event = p
	return out
}

// events reads events until EOF (non-blocking dumps).
func (c *client) events() [][]byte {
	c.t.Helper()
	var evs [][]byte
	for {
		p := c.next(false)
		if p.err != nil {
			c.t.Fatalf("error packet: %v", p.err)
		}
		if p.eof {
			return evs
		}
		evs = append(evs, p.event)
	}
}

func types(evs [][]byte) []byte {
	var out []byte
	for _, e := range evs {
		out = append(out, e[4])
	}
	return out
}

func gnos(evs [][]byte) []uint64 {
	var out []uint64
	for _, e := range evs {
		if e[4] == binlog.GTIDEvent {
			out = append(out, binary.LittleEndian.Uint64(e[binlog.HeaderSize+17:]))
		}
	}
	return out
}

func TestDumpFollowsRotationAndEndsAtEOF(t *testing.T) {
	f := newFixture(t)
	f.commit(false, 0)
	f.commit(false, 0)
	f.rotate()
	f.commit(true, 0)
	evs := f.dump(Request{File: "binlog.000001", Pos: 4, Flags: DumpNonBlock}).events()
	const (
		rot  = binlog.RotateEvent
		fde  = binlog.FormatDescriptionEvent
		prev = binlog.PreviousGTIDsEvent
		gtid = binlog.GTIDEvent
		q    = binlog.QueryEvent
		xid  = binlog.XIDEvent
	)
	want := []byte{rot, fde, prev, gtid, q, xid, gtid, q, xid, rot, fde, prev, gtid, q}
	if !bytes.Equal(types(evs), want) {
		t.Fatalf("event types %v, want %v", types(evs), want)
	}
	if g := gnos(evs); len(g) != 3 || g[2] != 3 {
		t.Fatalf("GTIDs %v", g)
	}
	// Every event parses with go-mysql and checksums verify.
	p := replication.NewBinlogParser()
	p.SetVerifyChecksum(true)
	for _, e := range evs[1:] {
		if _, err := p.Parse(e); err != nil {
			t.Fatalf("type %d: %v", e[4], err)
		}
	}
	// The fake Rotate names the file and is artificial with log_pos 0.
	h := binlog.ParseHeader(evs[0])
	if h.LogPos != 0 || h.Flags&binlog.FlagArtificial == 0 || !strings.HasSuffix(string(evs[0][binlog.HeaderSize+8:len(evs[0])-4]), "binlog.000001") {
		t.Fatalf("fake rotate header %+v", h)
	}
}

// raftRecord appends a cluster's raft record for the entry that follows.
func (f *fixture) raftRecord(index uint64) {
	f.t.Helper()
	r := binlog.RaftRecord{Index: index, Term: 1}
	end := f.log.Current().Pos + int64(binlog.RaftRecordSize(r))
	if err := f.log.Append(binlog.AppendRaftRecord(nil, r, 1, 1, uint32(end))); err != nil {
		f.t.Fatal(err)
	}
}

// Raft records between transactions (a cluster node's log) are not sent:
// a replica of a cluster node sees the transactions only.
func TestDumpLeavesOutRaftRecords(t *testing.T) {
	for _, flavor := range []Flavor{FlavorMySQL, FlavorMariaDB} {
		f := newFixture(t)
		f.raftRecord(1)
		f.commit(false, 0)
		f.raftRecord(2)
		f.commit(true, 0)
		evs := f.dump(Request{File: "binlog.000001", Pos: 4, Flags: DumpNonBlock, Flavor: flavor}).events()
		for _, e := range evs {
			if e[4] == binlog.RowsQueryEvent {
				t.Fatalf("%v: a Rows_query event was sent", flavor)
			}
		}
		if g := gnos(evs); flavor == FlavorMySQL && len(g) != 2 {
			t.Fatalf("GTIDs %v", g)
		}
	}
}

func TestDumpFromMidFileMarksFormatDescription(t *testing.T) {
	f := newFixture(t)
	f.commit(false, 0)
	mid := f.log.Current().Pos
	f.commit(false, 0)
	evs := f.dump(Request{File: "binlog.000001", Pos: uint64(mid), Flags: DumpNonBlock}).events()
	if binlog.ParseHeader(evs[1]).LogPos != 0 {
		t.Fatal("a format description sent out of place must have log_pos 0")
	}
	if g := gnos(evs); len(g) != 1 || g[0] != 2 {
		t.Fatalf("GTIDs %v, want [2]", g)
	}
}

func TestAutoPositionSkipsWhatTheReplicaHas(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		f.commit(false, 0)
	}
	f.rotate()
	f.commit(false, 0)
	f.commit(false, 0)

	var have binlog.GTIDSet
	have.AddRange(testSID, 1, 3) // 1-2
	evs := f.dump(Request{GTIDs: &have, Flags: DumpNonBlock}).events()
	if g := gnos(evs); len(g) != 3 || g[0] != 3 {
		t.Fatalf("GTIDs %v, want 3..5", g)
	}
	// Having all of file 1, the dump starts with file 2.
	have.AddRange(testSID, 1, 4)
	evs = f.dump(Request{GTIDs: &have, Flags: DumpNonBlock}).events()
	if !strings.Contains(string(evs[0]), "binlog.000002") {
		t.Fatal("auto-positioning did not start at the newest file the replica needs")
	}
	if g := gnos(evs); len(g) != 2 || g[0] != 4 {
		t.Fatalf("GTIDs %v, want 4..5", g)
	}
}

func TestDumpErrors(t *testing.T) {
	f := newFixture(t)
	f.commit(false, 0)
	var ahead, other binlog.GTIDSet
	ahead.AddRange(testSID, 1, 10)
	// A former source's transactions this source received part of.
	former := binlog.UUID{9, 9, 9}
	f.gtid.AddRange(former, 1, 3)
	other.AddRange(testSID, 1, 1)
	other.AddRange(former, 1, 5)
	cases := []struct {
		req  Request
		want string
	}{
		{Request{File: "binlog.000042", Pos: 4}, "Could not find first log file"},
		{Request{File: "binlog.000001", Pos: 1 << 20}, "position > file size"},
		{Request{File: "binlog.000001", Pos: 2}, "position < 4"},
		{Request{File: "binlog.000001", Pos: 4, Checksum: checksumTestUndeclared}, "checksum"},
		{Request{GTIDs: &ahead}, "more GTIDs than the master"},
		{Request{GTIDs: &other}, "transactions this source does not have: '09090900-0000-0000-0000-000000000000:3-4'"},
	}
	// The replica's own transactions (a server the source has none of)
	// are no divergence: the dump goes on.
	var own binlog.GTIDSet
	own.AddRange(testSID, 1, 2)
	own.AddRange(binlog.UUID{7, 7, 7}, 1, 4)
	if p := f.dump(Request{GTIDs: &own}).next(false); p.err != nil {
		t.Fatalf("a replica with its own transactions: %+v", p.err)
	}
	for _, c := range cases {
		cl := f.dump(c.req)
		p := cl.next(false)
		for p.err == nil && !p.eof {
			p = cl.next(false) // some errors follow the stream's first events
		}
		if p.err == nil || p.err.Code != ErrFatalReadingBinlog || !strings.Contains(p.err.Message, c.want) {
			t.Fatalf("%+v: got %+v, want error 1236 with %q", c.req, p.err, c.want)
		}
	}
}

func TestPurgedBinlogsAreReported(t *testing.T) {
	f := newFixture(t)
	f.commit(false, 0)
	f.rotate()
	f.commit(false, 0)
	if _, err := f.log.Purge(2); err != nil {
		t.Fatal(err)
	}
	p := f.dump(Request{GTIDs: &binlog.GTIDSet{}}).next(false)
	if p.err == nil || !strings.Contains(p.err.Message, "purged required binary logs") {
		t.Fatalf("got %+v", p)
	}
}

func TestBlockingDumpWaitsAndSendsHeartbeats(t *testing.T) {
	f := newFixture(t)
	f.commit(false, 0)
	c := f.dump(Request{File: "binlog.000001", Pos: 4, Heartbeat: 20 * time.Millisecond})
	for range 6 { // rotate, fde, prev, gtid, begin, xid
		c.next(false)
	}
	p := c.next(false)
	if p.event[4] != binlog.HeartbeatEvent {
		t.Fatalf("idle stream sent type %d, want a heartbeat", p.event[4])
	}
	if h := binlog.ParseHeader(p.event); int64(h.LogPos) != f.log.Current().Pos {
		t.Fatalf("heartbeat at %d, binlog end %d", h.LogPos, f.log.Current().Pos)
	}
	f.commit(false, 0)
	for {
		p = c.next(false)
		if p.event[4] == binlog.GTIDEvent {
			break
		}
	}
	c.conn.Close()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the dump did not end when the replica went away")
	}
}

// sendAck sends a semi-sync ACK of position pos in binlog.000001, as a
// replica does.
func (c *client) sendAck(t *testing.T, pos uint64) {
	t.Helper()
	ack := binary.LittleEndian.AppendUint64([]byte{semiSyncMagic}, pos)
	ack = append(ack, "binlog.000001"...)
	pw := &packetWriter{w: bufio.NewWriter(c.conn)}
	if err := pw.write(ack); err != nil {
		t.Fatal(err)
	}
	pw.flush()
}

func TestSemiSyncAcksAndFallback(t *testing.T) {
	f := newFixture(t)
	semi := f.src.Semi
	semi.SetTimeout(200)
	semi.SetEnabled(true)
	f.commit(false, 0)
	c := f.dump(Request{File: "binlog.000001", Pos: 4, SemiSync: true})
	ackTo := func(wantAck bool) {
		t.Helper()
		for {
			p := c.next(true)
			if p.event[4] != binlog.XIDEvent {
				if p.ack {
					t.Fatalf("ACK requested on a type %d event", p.event[4])
				}
				continue
			}
			if p.ack != wantAck {
				t.Fatalf("XID event ack flag %v, want %v", p.ack, wantAck)
			}
			if !p.ack {
				return
			}
			c.sendAck(t, uint64(binlog.ParseHeader(p.event).LogPos))
			return
		}
	}
	ackTo(true)
	for semi.Clients() != 1 {
		time.Sleep(time.Millisecond)
	}
	// A commit waits for the replica's ACK.
	f.commit(false, 0)
	end := f.log.Current()
	done := make(chan struct{})
	go func() { semi.WaitAck(end, 1); close(done) }()
	select {
	case <-done:
		t.Fatal("WaitAck returned before the ACK")
	case <-time.After(50 * time.Millisecond):
	}
	ackTo(true)
	<-done
	if semi.Stats.YesTx.Load() != 1 || !semi.Status() {
		t.Fatalf("yes_tx %d status %v", semi.Stats.YesTx.Load(), semi.Status())
	}
	// No ACK: the wait times out and the source falls back to async.
	f.commit(false, 0)
	start := time.Now()
	semi.WaitAck(f.log.Current(), 1)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("timed-out wait lasted %v", d)
	}
	if semi.Status() || semi.Stats.NoTx.Load() != 1 {
		t.Fatalf("after a timeout: status %v no_tx %d", semi.Status(), semi.Stats.NoTx.Load())
	}
	// Async: the next commit does not wait (with a timeout of a minute
	// now, one that waited would outlast the bound below); an ACK of the
	// latest position switches semi-sync back on.
	semi.SetTimeout(60000)
	returned := make(chan struct{})
	go func() { semi.WaitAck(f.log.Current(), 1); close(returned) }()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("an async commit waited for an ACK")
	}
	ackTo(true)
	for !semi.Status() {
		time.Sleep(time.Millisecond)
	}
}

// TestSemiSyncAckPastWhatWasSent: a replica that acknowledges a position
// it was never sent does not release commits after what it received:
// the ACK counts only up to what the source wrote to it.
func TestSemiSyncAckPastWhatWasSent(t *testing.T) {
	f := newFixture(t)
	semi := f.src.Semi
	semi.SetTimeout(200)
	semi.SetEnabled(true)
	f.commit(false, 0)
	c := f.dump(Request{File: "binlog.000001", Pos: 4, SemiSync: true})
	for p := c.next(true); !p.ack; p = c.next(true) {
	}
	c.sendAck(t, 1<<40)
	for semi.Clients() != 1 || semi.Stats.Acks.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	f.commit(false, 0)
	start := time.Now()
	semi.WaitAck(f.log.Current(), 1)
	if d := time.Since(start); d < 150*time.Millisecond || semi.Stats.YesTx.Load() != 0 {
		t.Fatalf("a commit after the forged ACK returned after %v as acknowledged (%d)", d, semi.Stats.YesTx.Load())
	}
}

func TestWaitNoReplicaOffFallsBackAtOnce(t *testing.T) {
	f := newFixture(t)
	semi := f.src.Semi
	semi.SetTimeout(60000)
	semi.SetWaitNoReplica(false)
	semi.SetEnabled(true)
	f.commit(false, 0)
	// A commit that waited would wait out the minute's timeout.
	returned := make(chan struct{})
	go func() { semi.WaitAck(f.log.Current(), 1); close(returned) }()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("with no semi-sync replica and wait_no_replica OFF the commit must not wait")
	}
	if semi.Status() {
		t.Fatal("with no semi-sync replica and wait_no_replica OFF semi-sync stayed on")
	}
}

func TestMariaDBFlavour(t *testing.T) {
	f := newFixture(t)
	f.commit(true, 0)
	f.commit(false, 1)
	f.commit(false, 1) // same last_committed: same commit_id
	f.commit(false, 3)
	c := f.dump(Request{Flavor: FlavorMariaDB, MariaDBGTID: "0-1-1", Flags: DumpNonBlock})
	evs := c.events()
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	p.SetVerifyChecksum(true)
	var ids []uint64
	var seqs []uint64
	sawList := false
	for _, e := range evs[1:] {
		ev, err := p.Parse(e)
		if err != nil {
			t.Fatalf("type %d: %v", e[4], err)
		}
		switch x := ev.Event.(type) {
		case *replication.FormatDescriptionEvent:
			if !strings.Contains(string(x.ServerVersion), "MariaDB") {
				t.Fatalf("format description version %q", x.ServerVersion)
			}
		case *replication.MariadbGTIDListEvent:
			sawList = true
		case *replication.MariadbGTIDEvent:
			ids = append(ids, x.CommitID)
			seqs = append(seqs, x.GTID.SequenceNumber)
		case *replication.GTIDEvent:
			t.Fatal("a MySQL GTID event reached a MariaDB replica")
		case *replication.QueryEvent:
			if string(x.Query) == "BEGIN" {
				t.Fatal("BEGIN must be dropped after a MariaDB GTID event")
			}
		}
	}
	if !sawList {
		t.Fatal("no Gtid_list event")
	}
	// 0-1-1 is what the replica has: the stream starts at seq 2.
	if len(seqs) != 3 || seqs[0] != 2 {
		t.Fatalf("sequence numbers %v", seqs)
	}
	if ids[0] != ids[1] || ids[1] == ids[2] {
		t.Fatalf("commit ids %v: the two transactions with the same last_committed must share one", ids)
	}
	if got := mariadbPostHeaderLengths[binlog.FormatDescriptionEvent-1]; int(got) != 2+50+4+1+len(mariadbPostHeaderLengths) {
		t.Fatalf("format description post-header length %d disagrees with the table's size", got)
	}
}

func TestMariaDBDDLCollationRewritten(t *testing.T) {
	f := newFixture(t)
	f.commit(true, 0)
	evs := f.dump(Request{Flavor: FlavorMariaDB, MariaDBGTID: "", Flags: DumpNonBlock}).events()
	for _, e := range evs {
		if e[4] == binlog.QueryEvent {
			if bytes.Contains(e, []byte("0900")) || !bytes.Contains(e, []byte("utf8mb4_unicode_520_ci")) {
				t.Fatalf("query not rewritten: %q", e[binlog.HeaderSize:])
			}
			return
		}
	}
	t.Fatal("no query event")
}

func TestPacketWriterSplitsLargePayloads(t *testing.T) {
	for _, n := range []int{0, 10, maxPayload - 1, maxPayload, maxPayload + 10, 2 * maxPayload} {
		var buf bytes.Buffer
		pw := newPacketWriter(&buf)
		payload := bytes.Repeat([]byte{7}, n)
		if err := pw.write(payload[:n/2], payload[n/2:]); err != nil {
			t.Fatal(err)
		}
		pw.flush()
		got, err := readPacket(bufio.NewReader(&buf), 1<<30)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("n=%d: %d bytes back, err %v", n, len(got), err)
		}
		if buf.Len() != 0 {
			t.Fatalf("n=%d: %d bytes left over", n, buf.Len())
		}
	}
}

// TestPlainConsumerOfSemiSyncSource: a consumer that did not ask for
// semi-sync gets a continuously numbered stream from a source with
// semi-sync on (sequence numbers restart only for a replica that ACKs;
// python-mysql-replication and mysqlbinlog reject the stream otherwise).
func TestPlainConsumerOfSemiSyncSource(t *testing.T) {
	f := newFixture(t)
	f.src.Semi.SetEnabled(true)
	f.commit(false, 0)
	f.commit(false, 0)
	c := f.dump(Request{File: "binlog.000001", Pos: 4, Flags: DumpNonBlock})
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for want := byte(1); ; want++ { // the dump command was 0
		var hdr [4]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			t.Fatal(err)
		}
		if hdr[3] != want {
			t.Fatalf("packet %d has sequence number %d", want, hdr[3])
		}
		p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
		if _, err := io.ReadFull(c.r, p); err != nil {
			t.Fatal(err)
		}
		if p[0] == 0xfe {
			return
		}
	}
}

// TestSemiSyncReconnectHoldingTheWaitingGroup: a semi-sync replica whose
// connection broke after it received a group and before its ACK arrived
// comes back by GTID holding that group, which its dump skips and so
// never asks it to acknowledge again. Its request says it has it: the
// commit waiting for the group is released at once, instead of waiting
// out the timeout with every session behind it. A replica that lacks the
// group releases nothing until it acknowledges it.
func TestSemiSyncReconnectHoldingTheWaitingGroup(t *testing.T) {
	f := newFixture(t)
	semi := f.src.Semi
	semi.SetTimeout(30000)
	semi.SetEnabled(true)
	f.commit(false, 0)
	f.commit(false, 0)
	end := f.log.Current()
	done := make(chan struct{})
	go func() { semi.WaitAck(end, 1); close(done) }()

	// A replica that has only the first transaction: it is sent the
	// second, and the wait goes on until it acknowledges it.
	var some binlog.GTIDSet
	some.Add(testSID, 1)
	c := f.dump(Request{GTIDs: &some, SemiSync: true})
	var ackAt uint64
	for p := c.next(true); ; p = c.next(true) {
		if p.ack {
			ackAt = uint64(binlog.ParseHeader(p.event).LogPos)
			break
		}
	}
	select {
	case <-done:
		t.Fatal("a replica that lacked the group released the wait before acknowledging it")
	case <-time.After(100 * time.Millisecond):
	}
	// Its connection breaks before the ACK; it comes back with both.
	c.conn.Close()
	<-c.done
	var all binlog.GTIDSet
	all.AddRange(testSID, 1, 3)
	f.dump(Request{GTIDs: &all, SemiSync: true})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the commit still waits for a group the reconnected replica holds (it would have acknowledged %d)", ackAt)
	}
	if semi.Stats.YesTx.Load() != 1 || semi.Stats.Timeouts.Load() != 0 {
		t.Fatalf("yes_tx %d, timeouts %d", semi.Stats.YesTx.Load(), semi.Stats.Timeouts.Load())
	}
}
