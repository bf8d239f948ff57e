package replica

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// relayTrx is one complete transaction from the source.
type relayTrx struct {
	GTID binlog.GTIDInfo // SID/GNO (MariaDB GTIDs mapped, see MariaUUID), clock, timestamps
	// Maria is set for a MariaDB source; CommitID is its group commit id.
	Maria    bool
	CommitID uint64
	// Gen changes whenever the source's binlog file changes; last_committed
	// and sequence_number are only comparable within one Gen.
	Gen int
	// Events are the transaction's Table_map and *_rows events (whole
	// events), in order. Empty for DDL.
	Events [][]byte
	// DDL is the statement of a DDL transaction.
	DDL *binlog.Query
	// Source position just past the transaction.
	SourceFile string
	SourceEnd  uint32
	RelayEnd   relayPos
}

// assembler turns a stream of events into transactions. It keeps the
// events only when keep is set (the applier); the receiver uses it to know
// which GTIDs it has received completely.
type assembler struct {
	keep bool

	gen        int
	sourceFile string
	sourcePos  uint32
	maria      bool

	cur   *relayTrx
	dml   bool
	inTrx bool
}

// unsupported marks a stream the replica cannot apply (statement-based
// binlogs, anonymous transactions...): the error stops the thread.
type unsupported struct{ msg string }

func (u unsupported) Error() string { return u.msg }

// add consumes one whole event (header to checksum). It returns a finished
// transaction, if this event ended one.
func (a *assembler) add(ev []byte) (*relayTrx, error) {
	if len(ev) < binlog.HeaderSize+binlog.ChecksumSize {
		return nil, fmt.Errorf("short event (%d bytes)", len(ev))
	}
	h := binlog.ParseHeader(ev)
	if h.LogPos != 0 && h.Flags&binlog.FlagArtificial == 0 {
		a.sourcePos = h.LogPos
	}
	body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
	switch h.Type {
	case binlog.FormatDescriptionEvent:
		// A new stream or a new file: an unfinished transaction before it
		// will be sent again in full.
		a.cur, a.inTrx = nil, false
		a.gen++
		a.maria = strings.Contains(string(body[2:52]), "MariaDB")
		return nil, nil
	case binlog.RotateEvent:
		pos, file, err := binlog.ParseRotate(body)
		if err != nil {
			return nil, err
		}
		if file != a.sourceFile {
			a.gen++
		}
		a.sourceFile, a.sourcePos = file, uint32(pos)
		return nil, nil
	case binlog.GTIDEvent:
		g, err := binlog.ParseGTID(body)
		if err != nil {
			return nil, err
		}
		a.begin(&relayTrx{GTID: g.GTIDInfo})
		if a.cur.GTID.OriginalCommitUS == 0 {
			a.cur.GTID.OriginalCommitUS = uint64(h.Timestamp) * 1e6
		}
		return nil, nil
	case binlog.MariaGTIDEvent:
		g, err := binlog.ParseMariaGTID(body)
		if err != nil {
			return nil, err
		}
		t := &relayTrx{Maria: true, CommitID: g.CommitID}
		t.GTID.SID = MariaUUID(g.Domain, h.ServerID)
		t.GTID.GNO = g.Seq
		t.GTID.OriginalCommitUS = uint64(h.Timestamp) * 1e6
		a.begin(t)
		a.dml = !g.Standalone
		return nil, nil
	case binlog.AnonymousGTIDEvent:
		return nil, unsupported{"the source writes anonymous transactions (gtid_mode=OFF); Lockstep replicas need a source with GTIDs"}
	case binlog.QueryEvent:
		q, err := binlog.ParseQuery(body)
		if err != nil {
			return nil, err
		}
		stmt := strings.TrimSpace(q.Query)
		switch {
		case !a.inTrx:
			return nil, unsupported{fmt.Sprintf("statement %.60q outside a GTID transaction", stmt)}
		case strings.EqualFold(stmt, "BEGIN"):
			a.dml = true
			return nil, nil
		case strings.EqualFold(stmt, "COMMIT"):
			return a.finish(), nil
		case strings.EqualFold(stmt, "ROLLBACK"):
			// MariaDB logs a rolled-back transaction on a non-transactional
			// table this way; nothing of it is applied.
			t := a.finish()
			if t != nil {
				t.Events = nil
			}
			return t, nil
		case a.dml:
			return nil, unsupported{fmt.Sprintf("statement-based event %.60q in a transaction; Lockstep replicas need binlog_format=ROW", stmt)}
		}
		if a.keep {
			a.cur.DDL = &q
		}
		return a.finish(), nil
	case binlog.XIDEvent:
		if !a.inTrx {
			return nil, nil
		}
		return a.finish(), nil
	case binlog.TableMapEvent, binlog.WriteRowsEventV1, binlog.UpdateRowsEventV1, binlog.DeleteRowsEventV1,
		binlog.WriteRowsEventV2, binlog.UpdateRowsEventV2, binlog.DeleteRowsEventV2:
		if !a.inTrx {
			return nil, unsupported{fmt.Sprintf("row event (type %d) outside a GTID transaction", h.Type)}
		}
		if a.keep {
			a.cur.Events = append(a.cur.Events, ev)
		}
		return nil, nil
	case 5, 13, 14: // Intvar, Rand, User_var
		return nil, unsupported{"statement-based events from the source; Lockstep replicas need binlog_format=ROW"}
	case 39, 40: // Partial_update_rows, Transaction_payload
		return nil, unsupported{fmt.Sprintf("event type %d (binlog_row_value_options=PARTIAL_JSON or binlog_transaction_compression) is not supported; use full row images, uncompressed", h.Type)}
	}
	// Everything else (Previous_gtids, Rows_query, heartbeats, MariaDB's
	// Gtid_list, Binlog_checkpoint, Annotate_rows, Stop...) has no effect.
	return nil, nil
}

func (a *assembler) begin(t *relayTrx) {
	t.Gen = a.gen
	a.cur, a.inTrx, a.dml = t, true, false
}

func (a *assembler) finish() *relayTrx {
	t := a.cur
	a.cur, a.inTrx, a.dml = nil, false, false
	if t == nil {
		return nil
	}
	t.SourceFile, t.SourceEnd = a.sourceFile, a.sourcePos
	return t
}

// MariaUUID maps a MariaDB GTID's domain and server id to the UUID under
// which a Lockstep replica records it: 4d444200-DDDD-DDDD-SSSS-SSSS00000000
// ("MDB\0", then the domain and the server id big-endian). The sequence
// number is the GNO. The mapping is reversible, so the replica can tell a
// MariaDB source its position (@slave_connect_state) from its GTID set.
func MariaUUID(domain, server uint32) binlog.UUID {
	var u binlog.UUID
	copy(u[:], "MDB\x00")
	binary.BigEndian.PutUint32(u[4:], domain)
	binary.BigEndian.PutUint32(u[8:], server)
	return u
}

// mariaOf reverses MariaUUID.
func mariaOf(u binlog.UUID) (domain, server uint32, ok bool) {
	if string(u[:4]) != "MDB\x00" || u[12]|u[13]|u[14]|u[15] != 0 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(u[4:]), binary.BigEndian.Uint32(u[8:]), true
}

// MariaConnectState is the @slave_connect_state for a replica that has
// executed g: per domain, the GTID with the highest sequence number.
func MariaConnectState(g binlog.GTIDSet) string {
	type last struct{ server, seq uint64 }
	best := map[uint32]last{}
	for _, u := range g.UUIDs() {
		d, s, ok := mariaOf(u)
		if !ok {
			continue
		}
		if n := g.MaxGNO(u); n > best[d].seq {
			best[d] = last{uint64(s), n}
		}
	}
	var parts []string
	for d, l := range best {
		parts = append(parts, fmt.Sprintf("%d-%d-%d", d, l.server, l.seq))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// MariaPosReached reports whether a replica that has executed g has reached
// the MariaDB GTID position pos ("domain-server-seq,..."), as
// MASTER_GTID_WAIT means it: per domain, a sequence number at least seq.
func MariaPosReached(g binlog.GTIDSet, pos string) (bool, error) {
	for part := range strings.SplitSeq(pos, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var d, s, n uint64
		if _, err := fmt.Sscanf(part, "%d-%d-%d", &d, &s, &n); err != nil {
			return false, fmt.Errorf("invalid GTID position %q", part)
		}
		best := uint64(0)
		for _, u := range g.UUIDs() {
			if dom, _, ok := mariaOf(u); ok && uint64(dom) == d {
				best = max(best, g.MaxGNO(u))
			}
		}
		if best < n {
			return false, nil
		}
	}
	return true, nil
}
