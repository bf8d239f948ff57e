package cluster

// The leader certifies and sequences every transaction before it enters
// the log, so the log holds only transactions that commit if their entry
// commits, each already with its final GTID and logical clock.
//
// A transaction executes on any node (its origin) against a snapshot: the
// GTID number of the last cluster transaction its reads could see. At
// COMMIT the origin sends the leader a Request: the meta (origin, its own
// id for the transaction, the snapshot, the write-set keys) and the
// transaction's binlog events, finalized under a placeholder GTID. The
// leader's Certifier decides it against every transaction certified after
// the snapshot (package certify has the rule) and, if it passes, gives it
// the next GTID number of the cluster's UUID, last_committed = the
// transaction it depends on and sequence_number = its GTID number, and
// returns the entry to propose.
//
// Invariants:
//   - The Certifier's state is a function of the transaction entries of
//     the log it has seen, in order: Observe of a log's entries builds the
//     same state as certifying them did. A new leader observes its log
//     before it certifies, so certification does not depend on which node
//     leads. If an entry it certified is overwritten (it lost leadership),
//     so is everything after it, and the next leader's certifier never saw
//     them.
//   - GTID numbers grow by one per certified transaction, in log order:
//     sequence_number is the GTID number, so logical clocks compare across
//     binlog files, which rotate independently on each node.
//   - The index keeps the last Window transactions; a snapshot older than
//     that fails certification (1213, as a conflict would).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/raftlog"
)

// Meta is what a transaction entry says besides its events.
type Meta struct {
	Origin uint64 // the node the transaction ran on
	TrxID  uint64 // the origin's id for it, to recognise it when it commits
	// Snapshot is the GTID number of the last cluster transaction the
	// transaction's reads could see.
	Snapshot uint64
	// Term is the raft term the origin knew when it sent the transaction:
	// the leader proposes it only in that term (driver.go says why).
	Term uint64
	Keys []certify.Key
}

const metaVersion = 1

// Encode appends m's encoding to dst.
func (m Meta) Encode(dst []byte) []byte {
	dst = append(dst, metaVersion)
	dst = binary.AppendUvarint(dst, m.Origin)
	dst = binary.AppendUvarint(dst, m.TrxID)
	dst = binary.AppendUvarint(dst, m.Snapshot)
	dst = binary.AppendUvarint(dst, m.Term)
	dst = binary.AppendUvarint(dst, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		dst = binary.LittleEndian.AppendUint64(dst, k.Hash)
		if k.Shared {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	return dst
}

// DecodeMeta reads a Meta.
func DecodeMeta(b []byte) (Meta, error) {
	var m Meta
	if len(b) == 0 || b[0] != metaVersion {
		return m, errors.New("cluster: unknown transaction meta version")
	}
	b = b[1:]
	var vals [5]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return m, errors.New("cluster: damaged transaction meta")
		}
		vals[i], b = v, b[n:]
	}
	m.Origin, m.TrxID, m.Snapshot, m.Term = vals[0], vals[1], vals[2], vals[3]
	if vals[4] != uint64(len(b))/9 || len(b)%9 != 0 {
		return m, errors.New("cluster: damaged transaction meta keys")
	}
	m.Keys = make([]certify.Key, vals[4])
	for i := range m.Keys {
		m.Keys[i] = certify.Key{Hash: binary.LittleEndian.Uint64(b), Shared: b[8] == 1}
		b = b[9:]
	}
	return m, nil
}

// Request is a transaction to certify.
type Request struct {
	Meta Meta
	// Events are the transaction's binlog events, starting with its GTID
	// event, finalized under a placeholder GTID. Certify rewrites them.
	Events []byte
}

// DefaultWindow is how many transactions the certification index keeps
// (Galera's cert.max_length is 16384).
const DefaultWindow = 16384

// Certifier certifies and sequences transactions on the leader.
type Certifier struct {
	sid     binlog.UUID // the cluster's UUID: every GTID is sid:n
	window  uint64
	index   certify.Index
	nextGNO uint64
}

// NewCertifier returns a certifier for cluster UUID sid that has seen no
// transaction; window 0 means DefaultWindow.
func NewCertifier(sid binlog.UUID, window uint64) *Certifier {
	if window == 0 {
		window = DefaultWindow
	}
	return &Certifier{sid: sid, window: window, nextGNO: 1}
}

// NewCertifierAt returns a certifier that has seen the cluster's
// transactions up to GTID number gno without holding their keys:
// snapshots older than gno are too old (1213), later ones are certified
// exactly. A node starts from its applied position so, without reading
// its log.
func NewCertifierAt(sid binlog.UUID, window, gno uint64) *Certifier {
	c := NewCertifier(sid, window)
	c.index = certify.Start(gno)
	c.nextGNO = gno + 1
	return c
}

// Clone returns an independent copy (a new leader starts from the copy
// of what its node applied).
func (c *Certifier) Clone() *Certifier {
	n := *c
	n.index = c.index.Clone()
	return &n
}

// Certify decides r. If it passes, its events are given their GTID and
// logical clock and the entry to propose is returned with its GTID number;
// if not, the verdict says why (the origin answers 1213).
func (c *Certifier) Certify(r Request) (entry []byte, gno uint64, v certify.Verdict, err error) {
	v = c.index.Certify(r.Meta.Snapshot, r.Meta.Keys)
	if !v.OK {
		return nil, 0, v, nil
	}
	gno = c.nextGNO
	if err := binlog.SetSequence(r.Events, c.sid, gno, int64(v.DependsOn), int64(gno)); err != nil {
		return nil, 0, v, err
	}
	if err := c.record(gno, r.Meta.Keys); err != nil {
		return nil, 0, v, err
	}
	return raftlog.EncodeTrx(r.Meta.Encode(nil), r.Events), gno, v, nil
}

// decodeEntry returns a transaction entry's meta and GTID.
func decodeEntry(entry []byte) (Meta, binlog.GTID, error) {
	meta, events, err := raftlog.DecodeTrx(entry)
	if err != nil {
		return Meta{}, binlog.GTID{}, err
	}
	m, err := DecodeMeta(meta)
	if err != nil {
		return Meta{}, binlog.GTID{}, err
	}
	g, err := firstGTID(events)
	return m, g, err
}

// firstGTID is the GTID of a transaction's events.
func firstGTID(events []byte) (binlog.GTID, error) {
	e, err := binlog.NextEvent(events)
	if err != nil {
		return binlog.GTID{}, err
	}
	return binlog.ParseGTID(e.Body())
}

// Observe takes a transaction entry already in the log (certified by this
// or an earlier leader) into the certifier's state.
func (c *Certifier) Observe(entry []byte) error {
	m, g, err := decodeEntry(entry)
	if err != nil {
		return err
	}
	return c.observe(m, g)
}

// observe is Observe of an entry already decoded.
func (c *Certifier) observe(m Meta, g binlog.GTID) error {
	if g.SID != c.sid {
		return fmt.Errorf("cluster: a transaction of %s in the log of cluster %s", g.SID, c.sid)
	}
	if g.GNO != c.nextGNO {
		return fmt.Errorf("cluster: GTID number %d in the log where %d was next", g.GNO, c.nextGNO)
	}
	return c.record(g.GNO, m.Keys)
}

func (c *Certifier) record(gno uint64, keys []certify.Key) error {
	if err := c.index.Append(gno, keys); err != nil {
		return err
	}
	c.nextGNO = gno + 1
	if gno > c.window {
		c.index.Purge(gno - c.window)
	}
	return nil
}

// Next is the GTID number the next certified transaction gets.
func (c *Certifier) Next() uint64 { return c.nextGNO }

// Keys is the number of keys the index holds.
func (c *Certifier) Keys() int { return c.index.Len() }
