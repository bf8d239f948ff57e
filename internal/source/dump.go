package source

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Flavor is the replication protocol dialect a replica speaks.
type Flavor int

const (
	// FlavorMySQL sends the binlog as stored (MySQL 8 events).
	FlavorMySQL Flavor = iota
	// FlavorMariaDB translates GTID events to MariaDB's (see mariadb.go).
	FlavorMariaDB
)

func (f Flavor) String() string {
	if f == FlavorMariaDB {
		return "MariaDB"
	}
	return "MySQL"
}

// ChecksumMode is what the replica declared with @source_binlog_checksum.
type ChecksumMode int

const (
	// ChecksumUndeclared: the replica did not say; it predates checksums
	// and cannot read our events (MySQL refuses such a dump too).
	ChecksumUndeclared ChecksumMode = iota
	// ChecksumNone: checksum-aware, wants the fake Rotate without one.
	ChecksumNone
	// ChecksumCRC32: checksum-aware, every event checksummed.
	ChecksumCRC32
)

// DumpNonBlock is COM_BINLOG_DUMP's BINLOG_DUMP_NON_BLOCK flag: stop with
// an EOF packet at the end of the log instead of waiting.
const DumpNonBlock = 0x01

// Request is a dump request with the replica's session settings resolved.
type Request struct {
	ConnID   uint32
	ServerID uint32
	Flags    uint16
	// File and Pos start a file/position dump. An empty File means the
	// first file.
	File string
	Pos  uint64
	// GTIDs, if not nil, asks for auto-positioning: everything not in the
	// set (COM_BINLOG_DUMP_GTID with BINLOG_THROUGH_GTID).
	GTIDs     *binlog.GTIDSet
	Heartbeat time.Duration
	Checksum  ChecksumMode
	SemiSync  bool
	UUID      string
	Flavor    Flavor
	// MariaDBGTID is @slave_connect_state: a MariaDB replica's GTID
	// position ("domain-server-seq,..."); empty for a file/position dump.
	MariaDBGTID string
}

// Dump streams the binlog to conn until the replica goes away, the server
// closes, or (with DumpNonBlock) the end of the log. Errors the replica
// should see are sent to it as ERR packets. Dump closes conn: as in MySQL,
// a connection that ran a dump does not take further commands.
func (s *Source) Dump(conn net.Conn, req Request) error {
	defer conn.Close()
	r := &replica{req: req, conn: conn, started: time.Now()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	r.reg = s.registered[req.ConnID]
	s.dumps[r] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.dumps, r)
		s.mu.Unlock()
	}()
	if req.SemiSync {
		s.Semi.addClient(r)
		defer s.Semi.removeClient(r)
	}
	s.logger.Info("replica connected", "server_id", req.ServerID, "conn", req.ConnID, "flavor", req.Flavor,
		"file", req.File, "pos", req.Pos, "gtid_mode", req.GTIDs != nil || req.MariaDBGTID != "", "semi_sync", req.SemiSync)

	d := &dumper{s: s, r: r, pw: newPacketWriter(conn), gone: make(chan struct{})}
	go d.readAcks(conn)
	err := d.run()
	if d.f != nil {
		d.f.Close()
	}
	var e *Error
	if errors.As(err, &e) {
		s.logger.Warn("replica dump refused", "server_id", req.ServerID, "err", e.Message)
		_ = d.pw.writeError(e)
		return nil
	}
	if err != nil && !errors.Is(err, errGone) {
		s.logger.Info("replica disconnected", "server_id", req.ServerID, "err", err)
		return err
	}
	s.logger.Info("replica disconnected", "server_id", req.ServerID)
	return nil
}

var errGone = errors.New("replica went away")

// dumper is the state of one dump.
type dumper struct {
	s    *Source
	r    *replica
	pw   *packetWriter
	gone chan struct{} // closed when the replica's side of the connection ends

	f    vfs.File
	file int   // current file number
	pos  int64 // next offset to send from
	buf  []byte

	skip     bool // inside a transaction the replica already has
	mariadb  *mariadbState
	lastSent time.Time

	// evStart is where the event handle sees starts; sentTrx turns true
	// at the first transaction the dump sends (heldPrefix).
	evStart int64
	sentTrx bool
}

// heldPrefix records, for a semi-sync replica, that it holds the binlog up
// to p: a dump by GTID skips the transactions the replica has (received
// or applied), and until it sends one, everything before its position is
// such a transaction. Without it, a replica that reconnects holding the
// group a commit waits for (its ACK was lost with the old connection)
// never acknowledges it, because it is never sent again, and the commit,
// with every session behind it, waits out rpl_semi_sync_source_timeout.
func (d *dumper) heldPrefix(p binlog.Position) {
	if !d.sentTrx && d.r.req.SemiSync && d.haveSet() != nil {
		d.s.Semi.holds(d.r, p)
	}
}

// readAcks reads what the replica sends during the dump: semi-sync ACKs,
// a Lockstep replica's apply reports (ApplyReport), or the end of the
// connection.
func (d *dumper) readAcks(conn net.Conn) {
	defer close(d.gone)
	br := bufio.NewReaderSize(conn, 4096)
	for {
		pkt, err := readPacket(br, 1<<20)
		if err != nil {
			return
		}
		if len(pkt) >= 9 && pkt[0] == semiSyncMagic {
			pos := binary.LittleEndian.Uint64(pkt[1:9])
			if num, ok := d.s.log.Num(string(pkt[9:])); ok {
				d.s.Semi.ack(d.r, d.r.clampAck(binlog.Position{File: num, Pos: int64(pos)}))
			}
			continue
		}
		if rep, ok := parseApplyReport(pkt); ok {
			d.r.apply.set(rep, time.Now())
			continue
		}
		if len(pkt) > 0 && pkt[0] == comQuit {
			return
		}
	}
}

const (
	semiSyncMagic = 0xef
	semiSyncAck   = 0x01
	comQuit       = 0x01
	okByte        = 0x00
)

func (d *dumper) run() error {
	req := d.r.req
	if req.Checksum == ChecksumUndeclared {
		return fatal("Replica can not handle replication events with the checksum that source is configured to log (binlog_checksum=CRC32); the replica must SET @source_binlog_checksum (or @master_binlog_checksum) before the dump")
	}
	if req.Flavor == FlavorMariaDB {
		d.mariadb = &mariadbState{}
		if err := d.mariadb.init(d); err != nil {
			return err
		}
	}
	if err := d.resolveStart(); err != nil {
		return err
	}
	if err := d.openFile(); err != nil {
		return err
	}
	if err := d.sendFakeRotate(); err != nil {
		return err
	}
	fde, err := d.readEvent(binlog.FileHeaderSize)
	if err != nil {
		return err
	}
	if fde[4] != binlog.FormatDescriptionEvent {
		return fatal("binlog file %s does not start with a format description event", d.s.log.Name(d.file))
	}
	if d.pos > binlog.FileHeaderSize {
		// Sent out of place: log_pos 0 tells the replica not to take it
		// as its position.
		fde = append([]byte(nil), fde...)
		binary.LittleEndian.PutUint32(fde[13:], 0)
		reseal(fde)
	} else {
		d.pos = binlog.FileHeaderSize + int64(len(fde))
	}
	if err := d.emit(fde, false); err != nil {
		return err
	}
	return d.stream()
}

// resolveStart sets d.file and d.pos from the request.
func (d *dumper) resolveStart() error {
	req := d.r.req
	files := d.s.log.Files()
	switch {
	case req.GTIDs != nil:
		if err := d.refuseDivergent(*req.GTIDs); err != nil {
			return err
		}
		return d.resolveGTID(*req.GTIDs, files)
	case d.mariadb != nil && req.MariaDBGTID != "":
		return d.resolveGTID(d.mariadb.have, files)
	}
	if req.File == "" {
		d.file, d.pos = files[0].Num, binlog.FileHeaderSize
		return nil
	}
	num, ok := d.s.log.Num(req.File)
	if !ok {
		return fatal("Could not find first log file name in binary log index file (%q)", req.File)
	}
	d.file, d.pos = num, int64(req.Pos)
	if d.pos < binlog.FileHeaderSize {
		return fatal("Client requested source to start replication from position < 4.")
	}
	return nil
}

// refuseDivergent refuses a replica (by GTID) that is ahead of this
// source in a server's history the source shares: it has transactions of
// a server UUID the source has transactions of too, and the source lacks
// them. (The source's own UUID is resolveGTID's, with MySQL's message.)
// After a failover the old primary comes back with the transactions it
// committed but never sent; MySQL replicates it and leaves them on it
// alone, and the two differ silently from then on. Here it is told which
// transactions those are. Transactions of a UUID the source has none of
// are the replica's own writes (a row fixed by hand after error 1032, an
// account made on it): MySQL keeps replicating with them, and so does
// Lockstep.
func (d *dumper) refuseDivergent(have binlog.GTIDSet) error {
	executed := d.s.executed()
	extra := have.Subtract(executed)
	var shared binlog.GTIDSet
	for _, u := range extra.UUIDs() {
		if u != d.s.uuid && executed.MaxGNO(u) > 0 {
			shared.AddSet(extra.Of(u))
		}
	}
	if shared.IsEmpty() {
		return nil
	}
	return fatal("The replica has transactions this source does not have: '%s'. They continue a server's history the source has part of (after a failover: the old source's last transactions, never acknowledged), so the two servers would differ. Provision the replica again from this source, or, to keep those transactions, apply them here first.", shared.String())
}

// resolveGTID finds the newest file whose Previous_gtids the replica has
// entirely: everything the replica lacks is in it or after it.
func (d *dumper) resolveGTID(have binlog.GTIDSet, files []binlog.FileInfo) error {
	if extra := have.Subtract(d.s.executed()); extra.MaxGNO(d.s.uuid) > 0 {
		return fatal("Slave has more GTIDs than the master has, using the master's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The master may or may not have rolled back transactions that were already replicated to the slave. Suggest to replicate any transactions that master has rolled back from slave to master, and/or commit empty transactions on master to account for transactions that have been committed on master but are not included in GTID_EXECUTED.")
	}
	var oldest binlog.GTIDSet
	for i := len(files) - 1; i >= 0; i-- {
		prev, err := d.s.log.PreviousGTIDs(files[i].Num)
		if err != nil {
			return fatal("%v", err)
		}
		if prev.Subtract(have).IsEmpty() {
			d.file, d.pos = files[i].Num, binlog.FileHeaderSize
			return nil
		}
		oldest = prev
	}
	return fatal("Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. The GTID set sent by the replica is '%s', and the missing transactions are '%s'", have.String(), oldest.Subtract(have).String())
}

func (d *dumper) openFile() error {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
	f, err := d.s.log.OpenFile(d.file)
	if err != nil {
		return fatal("could not open binlog file %s: %v", d.s.log.Name(d.file), err)
	}
	d.f = f
	return nil
}

// readEvent reads the whole event at off of the current file.
func (d *dumper) readEvent(off int64) ([]byte, error) {
	ev, err := readEventAt(d.f, off)
	if err != nil {
		return nil, fatal("reading %s at %d: %v", d.s.log.Name(d.file), off, err)
	}
	return ev, nil
}

func readEventAt(f vfs.File, off int64) ([]byte, error) {
	var hdr [binlog.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(hdr[9:])
	if size < binlog.HeaderSize+binlog.ChecksumSize || size > 1<<30 {
		return nil, fmt.Errorf("bogus data in log event (size %d)", size)
	}
	ev := make([]byte, size)
	if _, err := f.ReadAt(ev, off); err != nil {
		return nil, err
	}
	return ev, nil
}

// sendFakeRotate tells the replica which file it is reading (an artificial
// Rotate with log_pos 0).
func (d *dumper) sendFakeRotate() error {
	ev := binlog.Rotate(0, d.s.serverID, 0, d.s.log.Name(d.file), uint64(d.pos), true)
	return d.emitArtificial(ev)
}

// emitArtificial sends an event made up for this stream (fake Rotate,
// heartbeat), with or without a checksum as the replica asked.
func (d *dumper) emitArtificial(ev []byte) error {
	if d.r.req.Checksum == ChecksumNone {
		ev = ev[:len(ev)-binlog.ChecksumSize]
		binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)))
	}
	return d.send(ev, false)
}

// emit sends a stored event, translated for the replica's flavor.
func (d *dumper) emit(ev []byte, ack bool) error {
	if d.mariadb != nil {
		return d.mariadb.emit(d, ev, ack)
	}
	return d.send(ev, ack)
}

// send writes one event packet.
func (d *dumper) send(ev []byte, ack bool) error {
	d.lastSent = time.Now()
	if d.r.req.SemiSync {
		flag := byte(0)
		if ack {
			flag = semiSyncAck
		}
		return d.pw.write([]byte{okByte, semiSyncMagic, flag}, ev)
	}
	return d.pw.write([]byte{okByte}, ev)
}

// reseal recomputes an event's checksum after its header changed.
func reseal(ev []byte) {
	n := len(ev) - binlog.ChecksumSize
	binary.LittleEndian.PutUint32(ev[n:], crc32.ChecksumIEEE(ev[:n]))
}

const readChunk = 1 << 20

// stream sends events from d.file/d.pos on, waiting at the published end.
func (d *dumper) stream() error {
	req := d.r.req
	var heartbeat *time.Timer
	if req.Heartbeat > 0 {
		heartbeat = time.NewTimer(req.Heartbeat)
		defer heartbeat.Stop()
	}
	for {
		end, changed, closed := d.s.log.Published()
		if closed {
			_ = d.pw.flush()
			return errGone
		}
		var limit int64
		if d.file == end.File {
			limit = end.Pos
		} else if d.file < end.File {
			st, err := d.f.Stat()
			if err != nil {
				return fatal("stat %s: %v", d.s.log.Name(d.file), err)
			}
			limit = st.Size()
		} else {
			return fatal("replica asked for binlog file %s, which is not written yet", d.s.log.Name(d.file))
		}
		if d.pos > limit {
			return fatal("Client requested source to start replication from position > file size (%s, %d > %d)", d.s.log.Name(d.file), d.pos, limit)
		}
		if d.pos < limit {
			d.r.offer(binlog.Position{File: d.file, Pos: limit})
			rotated, err := d.sendRange(limit, d.file == end.File)
			if err != nil {
				return err
			}
			d.r.setSent(binlog.Position{File: d.file, Pos: d.pos})
			if rotated {
				continue
			}
		}
		if d.pos == limit && d.file < end.File {
			// A file that ends without a Rotate event (the server stopped
			// or crashed and started a new file): go on with the next one.
			d.file++
			d.pos = binlog.FileHeaderSize
			if err := d.openFile(); err != nil {
				return err
			}
			if err := d.sendFakeRotate(); err != nil {
				return err
			}
			continue
		}
		if d.pos < limit {
			continue
		}
		// Caught up.
		d.heldPrefix(binlog.Position{File: d.file, Pos: d.pos})
		if err := d.pw.flush(); err != nil {
			return err
		}
		if req.Flags&DumpNonBlock != 0 {
			return d.pw.writeEOF()
		}
		var hb <-chan time.Time
		if heartbeat != nil {
			heartbeat.Reset(max(req.Heartbeat-time.Since(d.lastSent), time.Millisecond))
			hb = heartbeat.C
		}
		select {
		case <-changed:
		case <-d.gone:
			return errGone
		case <-hb:
			ev := binlog.Heartbeat(d.s.serverID, uint32(d.pos), d.s.log.Name(d.file))
			if err := d.emitArtificial(ev); err != nil {
				return err
			}
			if err := d.pw.flush(); err != nil {
				return err
			}
		}
	}
}

// sendRange sends the events in [d.pos, limit) of the current file. It
// returns rotated=true after a Rotate event moved it to the next file.
// atEnd says limit is the published end, where the last event of the
// range is the end of the newest group: semi-sync replicas are asked to
// acknowledge it.
func (d *dumper) sendRange(limit int64, atEnd bool) (rotated bool, err error) {
	for d.pos < limit {
		select {
		case <-d.gone:
			return false, errGone
		default:
		}
		n := min(limit-d.pos, readChunk)
		if int64(cap(d.buf)) < n {
			d.buf = make([]byte, n)
		}
		data := d.buf[:n]
		if _, err := d.f.ReadAt(data, d.pos); err != nil && !errors.Is(err, io.EOF) {
			return false, fatal("reading %s at %d: %v", d.s.log.Name(d.file), d.pos, err)
		}
		off := int64(0)
		for off < n {
			if n-off < binlog.HeaderSize {
				break
			}
			size := int64(binary.LittleEndian.Uint32(data[off+9:]))
			if size < binlog.HeaderSize+binlog.ChecksumSize || size > 1<<30 {
				return false, fatal("bogus data in log event at %s:%d", d.s.log.Name(d.file), d.pos+off)
			}
			if off+size > n {
				if off > 0 {
					break
				}
				// One event bigger than the chunk.
				ev, err := d.readEvent(d.pos)
				if err != nil {
					return false, err
				}
				data, n = ev, size
			}
			ev := data[off : off+size]
			evEnd := d.pos + off + size
			d.evStart = d.pos + off
			rotated, err := d.handle(ev, atEnd && evEnd == limit)
			if err != nil {
				return false, err
			}
			off += size
			if rotated {
				return true, nil
			}
		}
		if off == 0 {
			return false, fatal("truncated event at %s:%d", d.s.log.Name(d.file), d.pos)
		}
		d.pos += off
	}
	return false, nil
}

// handle sends one stored event, skipping transactions the replica has and
// following Rotate events.
func (d *dumper) handle(ev []byte, last bool) (rotated bool, err error) {
	typ := ev[4]
	switch typ {
	case binlog.GTIDEvent:
		d.skip = false
		if set := d.haveSet(); set != nil {
			var sid binlog.UUID
			copy(sid[:], ev[binlog.HeaderSize+1:])
			gno := binary.LittleEndian.Uint64(ev[binlog.HeaderSize+17:])
			d.skip = set.Contains(sid, gno)
		}
		if !d.skip {
			d.heldPrefix(binlog.Position{File: d.file, Pos: d.evStart})
			d.sentTrx = true
		}
	case binlog.RotateEvent, binlog.FormatDescriptionEvent, binlog.PreviousGTIDsEvent, binlog.StopEvent:
		d.skip = false
	case binlog.RowsQueryEvent:
		// A cluster's raft record (binlog/raftrecord.go) is the log's own
		// bookkeeping, between transactions: replicas never see it.
		if len(ev) >= binlog.HeaderSize+binlog.ChecksumSize && binlog.IsRaftRecord(ev[binlog.HeaderSize:len(ev)-binlog.ChecksumSize]) {
			return false, nil
		}
	}
	if !d.skip {
		// Only a semi-sync replica is asked for an ACK (and numbers its
		// packets from 1 again after one); other consumers of a semi-sync
		// source get a plain, continuously numbered stream.
		ack := last && d.r.req.SemiSync && d.s.Semi.Enabled() && (typ == binlog.XIDEvent || typ == binlog.QueryEvent)
		if err := d.emit(ev, ack); err != nil {
			return false, err
		}
		if ack {
			if err := d.pw.flush(); err != nil {
				return false, err
			}
			// The replica starts a new packet sequence with its ACK; MySQL's
			// source numbers the packets after an ACK request from 1 again.
			d.pw.seq = 1
		}
	}
	if typ == binlog.RotateEvent && binary.LittleEndian.Uint16(ev[17:])&binlog.FlagArtificial == 0 {
		_, name, err := binlog.ParseRotate(ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize])
		if err != nil {
			return false, fatal("bad Rotate event in %s: %v", d.s.log.Name(d.file), err)
		}
		num, ok := d.s.log.Num(name)
		if !ok {
			return false, fatal("binlog file %s named by a Rotate event is not in the index", name)
		}
		d.file, d.pos = num, binlog.FileHeaderSize
		return true, d.openFile()
	}
	return false, nil
}

// haveSet is the GTID set of transactions the replica already has, for
// auto-positioning.
func (d *dumper) haveSet() *binlog.GTIDSet {
	if d.r.req.GTIDs != nil {
		return d.r.req.GTIDs
	}
	if d.mariadb != nil && d.r.req.MariaDBGTID != "" {
		return &d.mariadb.have
	}
	return nil
}
