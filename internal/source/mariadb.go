package source

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// MariaDB flavour: a MariaDB replica (or a client that announced
// @mariadb_slave_capability) gets the stored binlog translated on the fly:
//
//   - the format description is MariaDB 10.11's (its table of post-header
//     lengths covers MariaDB's event types 160-172);
//   - Previous_gtids becomes a Gtid_list plus a Binlog_checkpoint;
//   - each MySQL GTID event uuid:N becomes a MariaDB GTID event
//     domain-server_id-N, and the BEGIN query after it is dropped (MariaDB's
//     GTID event opens the transaction);
//   - the logical clock becomes MariaDB's commit_id: consecutive
//     transactions with the same last_committed in one file get the same
//     commit_id, so conservative parallel replication applies them in
//     parallel. They are independent of each other by construction: each
//     depends only on transactions up to last_committed, all of them in
//     earlier groups;
//   - Rows_query events (Lockstep's catalog payload) are dropped; Table_map,
//     Write/Update/Delete_rows v2, Query and XID events pass unchanged
//     (MariaDB reads MySQL's v2 row events), except for tables with JSON
//     columns (mariadb_json.go).
//
// Every event keeps the log_pos of the stored event it stands for, so a
// file/position resume works on the stored file.

// mariadbPostHeaderLengths is the table MariaDB 10.11 writes in its format
// description (event types 1..171), read off a MariaDB 10.11.19 binlog:
// MySQL's types 1-41, nothing for 42-159, MariaDB's own from 160.
var mariadbPostHeaderLengths = func() []byte {
	t := make([]byte, 171)
	copy(t, []byte{
		56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 228, 0, 4, 26, 8, 0, // 1-20
		0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 0, 0, 0, 0, 0, 0, 10, 10, // 21-40
		10, // 41
	})
	copy(t[159:], []byte{0, 4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10}) // 160-171
	return t
}()

// mariadbVersion is the server version in the translated format
// description. MariaDB replicas look at it for known-bug workarounds only.
const mariadbVersion = "10.11.99-MariaDB-lockstep"

// MariaDB event types and GTID flags.
const (
	mariadbBinlogCheckpoint = 161
	mariadbGTID             = 162
	mariadbGTIDList         = 163

	flStandalone    = 0x01
	flGroupCommitID = 0x02
	flTransactional = 0x04
	flAllowParallel = 0x08
	flDDL           = 0x20
)

// mariadbState is the translation state of one dump.
type mariadbState struct {
	domain uint32
	have   binlog.GTIDSet // from @slave_connect_state

	pending    []byte // a translated GTID event waiting to see what follows
	pendingDML bool
	lastLC     int64
	commitID   uint64
	file       int

	// jsonMaps are the columns of the tables with JSON columns, by the
	// table id of their last Table_map (mariadb_json.go).
	jsonMaps map[uint64][]row.Column
}

func (m *mariadbState) init(d *dumper) error {
	m.domain = d.s.DomainID
	if pos := d.r.req.MariaDBGTID; pos != "" {
		have, err := d.s.mariadbPosToSet(pos, m.domain)
		if err != nil {
			return err
		}
		m.have = have
	}
	return nil
}

// mariadbPosToSet turns a MariaDB GTID position ("domain-server-seq,...")
// into the set of our GTIDs it covers: in our domain, everything up to
// seq. Other domains are the replica's own business.
func (s *Source) mariadbPosToSet(pos string, domain uint32) (binlog.GTIDSet, error) {
	var set binlog.GTIDSet
	for part := range strings.SplitSeq(pos, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := strings.Split(part, "-")
		if len(f) != 3 {
			return set, fatal("bad MariaDB GTID %q in @slave_connect_state", part)
		}
		dom, err1 := strconv.ParseUint(f[0], 10, 32)
		_, err2 := strconv.ParseUint(f[1], 10, 32)
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return set, fatal("bad MariaDB GTID %q in @slave_connect_state", part)
		}
		if uint32(dom) != domain || seq == 0 {
			continue
		}
		set.AddRange(s.uuid, 1, seq+1)
	}
	return set, nil
}

// emit translates one stored event and sends the result.
func (m *mariadbState) emit(d *dumper, ev []byte, ack bool) error {
	typ := ev[4]
	if typ == binlog.TableMapEvent || m.jsonMaps != nil {
		var err error
		if ev, err = m.translateJSON(ev); err != nil {
			return fatal("cannot translate an event of %s for a MariaDB replica: %v", d.s.log.Name(d.file), err)
		}
	}
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	hdr := binlog.ParseHeader(ev)
	switch typ {
	case binlog.FormatDescriptionEvent:
		m.file = d.file
		m.lastLC, m.commitID = -1, 0
		return d.send(mariadbFDE(hdr), ack)
	case binlog.PreviousGTIDsEvent:
		prev, err := binlog.ParsePreviousGTIDs(body)
		if err != nil {
			return fatal("bad Previous_gtids event in %s: %v", d.s.log.Name(d.file), err)
		}
		if err := d.send(m.gtidList(d, hdr, prev), false); err != nil {
			return err
		}
		cp := binary.LittleEndian.AppendUint32(nil, uint32(len(d.s.log.Name(d.file))))
		cp = append(cp, d.s.log.Name(d.file)...)
		return d.send(mariadbEvent(hdr.Timestamp, mariadbBinlogCheckpoint, hdr.ServerID, hdr.LogPos, 0, cp), ack)
	case binlog.GTIDEvent:
		g, err := binlog.ParseGTID(body)
		if err != nil {
			return fatal("bad GTID event in %s: %v", d.s.log.Name(d.file), err)
		}
		m.pending = m.gtidEvent(hdr, g)
		return nil
	case binlog.RowsQueryEvent:
		return nil
	case binlog.QueryEvent:
		if m.pending != nil {
			q, err := binlog.ParseQuery(body)
			if err == nil && q.Query == "BEGIN" {
				m.pendingDML = true
				return m.flushPending(d, ack)
			}
			// A DDL statement: standalone.
			if err := m.flushPending(d, false); err != nil {
				return err
			}
		}
		if ev2, ok := mariadbQuery(ev); ok {
			ev = ev2
		}
	default:
		if m.pending != nil {
			m.pendingDML = true
			if err := m.flushPending(d, false); err != nil {
				return err
			}
		}
	}
	return d.send(ev, ack)
}

// mariadbCollations maps MySQL 8 collations MariaDB 10.11 does not know
// to the nearest ones it does (same character set, UCA-based, case- and
// accent-insensitive where the original is).
var mariadbCollations = strings.NewReplacer(
	"utf8mb4_0900_ai_ci", "utf8mb4_unicode_520_ci",
	"utf8mb4_0900_as_ci", "utf8mb4_unicode_520_ci",
	"utf8mb4_0900_as_cs", "utf8mb4_bin",
	"utf8mb4_0900_bin", "utf8mb4_bin",
)

// mariadbQuery rewrites the statement of a Query event that names MySQL 8
// collations; ok is false when the event needs no change.
func mariadbQuery(ev []byte) ([]byte, bool) {
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	// Post-header: thread id 4, exec time 4, db length 1, error 2, status
	// vars length 2; then status vars, db, NUL, statement.
	if len(body) < 13 {
		return nil, false
	}
	dbLen := int(body[8])
	svLen := int(binary.LittleEndian.Uint16(body[11:]))
	qStart := 13 + svLen + dbLen + 1
	if qStart > len(body) {
		return nil, false
	}
	q := string(body[qStart:])
	if !strings.Contains(q, "_0900_") {
		return nil, false
	}
	q = mariadbCollations.Replace(q)
	out := append([]byte(nil), ev[:binlog.HeaderSize+qStart]...)
	out = append(out, q...)
	out = append(out, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[9:], uint32(len(out)))
	reseal(out)
	return out, true
}

// gtidEvent builds the MariaDB GTID event for g, flags to be completed by
// flushPending once the transaction's kind is known.
func (m *mariadbState) gtidEvent(hdr binlog.Header, g binlog.GTID) []byte {
	body := binary.LittleEndian.AppendUint64(nil, g.GNO)
	body = binary.LittleEndian.AppendUint32(body, m.domain)
	body = append(body, 0) // flags2, set in flushPending
	lc := g.LastCommitted
	if lc != m.lastLC {
		m.lastLC = lc
		m.commitID++
	}
	body = binary.LittleEndian.AppendUint64(body, uint64(m.file)<<40|m.commitID)
	m.pendingDML = false
	return mariadbEvent(hdr.Timestamp, mariadbGTID, hdr.ServerID, hdr.LogPos, binlog.FlagSuppressUse, body)
}

// flushPending sends the held GTID event with its flags.
func (m *mariadbState) flushPending(d *dumper, ack bool) error {
	ev := m.pending
	m.pending = nil
	const flagsAt = binlog.HeaderSize + 12
	if m.pendingDML {
		ev[flagsAt] = flTransactional | flAllowParallel | flGroupCommitID
	} else {
		// DDL: standalone, no commit_id (it waits for everything before).
		ev[flagsAt] = flStandalone | flDDL
		ev = append(ev[:flagsAt+1], make([]byte, 6)...) // 19-byte body
		ev = append(ev, 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)))
	}
	reseal(ev)
	return d.send(ev, ack)
}

// gtidList builds the Gtid_list event for a file whose Previous_gtids is
// prev: the last sequence number of our domain.
func (m *mariadbState) gtidList(d *dumper, hdr binlog.Header, prev binlog.GTIDSet) []byte {
	body := make([]byte, 4)
	if n := prev.MaxGNO(d.s.uuid); n > 0 {
		binary.LittleEndian.PutUint32(body, 1)
		body = binary.LittleEndian.AppendUint32(body, m.domain)
		body = binary.LittleEndian.AppendUint32(body, d.s.serverID)
		body = binary.LittleEndian.AppendUint64(body, n)
	}
	return mariadbEvent(hdr.Timestamp, mariadbGTIDList, hdr.ServerID, hdr.LogPos, 0, body)
}

// mariadbFDE is a MariaDB 10.11 format description with the stored one's
// header fields.
func mariadbFDE(hdr binlog.Header) []byte {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	var ver [50]byte
	copy(ver[:], mariadbVersion)
	body = append(body, ver[:]...)
	body = binary.LittleEndian.AppendUint32(body, hdr.Timestamp)
	body = append(body, binlog.HeaderSize)
	body = append(body, mariadbPostHeaderLengths...)
	body = append(body, 1) // CRC32
	return mariadbEvent(hdr.Timestamp, binlog.FormatDescriptionEvent, hdr.ServerID, hdr.LogPos, hdr.Flags, body)
}

// mariadbEvent builds a whole checksummed event.
func mariadbEvent(ts uint32, typ byte, serverID, logPos uint32, flags uint16, body []byte) []byte {
	size := binlog.HeaderSize + len(body) + binlog.ChecksumSize
	ev := make([]byte, binlog.HeaderSize, size)
	binary.LittleEndian.PutUint32(ev[0:], ts)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[5:], serverID)
	binary.LittleEndian.PutUint32(ev[9:], uint32(size))
	binary.LittleEndian.PutUint32(ev[13:], logPos)
	binary.LittleEndian.PutUint16(ev[17:], flags)
	ev = append(ev, body...)
	ev = append(ev, 0, 0, 0, 0)
	reseal(ev)
	return ev
}

// MariaDBPosAt is the MariaDB GTID position of the binlog at file:pos
// (BINLOG_GTID_POS): our domain's last sequence number before that point,
// as domain-server_id-seq, or "" when nothing precedes it. ok is false when
// file is not in the binlog or pos is not a transaction boundary in it.
func (s *Source) MariaDBPosAt(file string, pos uint64) (string, bool) {
	num, ok := s.log.Num(file)
	if !ok {
		return "", false
	}
	data, err := s.log.ReadFile(num)
	if err != nil || pos > uint64(len(data)) || pos < binlog.FileHeaderSize {
		return "", false
	}
	seen, err := binlog.ScanFile(data[:pos], nil)
	if (err != nil && !binlog.IsTornTail(err)) || uint64(seen.End) != max(pos, uint64(seen.End)) {
		return "", false
	}
	all := seen.Previous.Clone()
	all.AddSet(seen.GTIDs)
	n := all.MaxGNO(s.uuid)
	if n == 0 {
		return "", true
	}
	return fmt.Sprintf("%d-%d-%d", s.DomainID, s.serverID, n), true
}
