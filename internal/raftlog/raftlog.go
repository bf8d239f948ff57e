// Package raftlog is a cluster node's raft log and raft state. The log is
// the node's binlog: one durable log per node, written once and synced
// once per group, read by raft to send entries to other nodes and by dump
// threads to serve replicas. It implements etcd raft's Storage.
//
// Layout (binlog/raftrecord.go has the event format): each entry is a
// record event (index, term, type, and the entry's data or, for a
// transaction, its meta) followed, when the entry is a transaction, by the
// transaction's events relocated to this file's offsets. Entries are contiguous by index across the binlog files, which
// rotate like any binlog's. Transactions before the first record are
// history from before the node joined a cluster: they are not entries.
// The hard state (term, vote, commit), the configuration with the
// cluster's own record of its members (opaque here: SetConfState) and the
// term of the entry before the first are in raft.state, replaced
// atomically.
//
// Invariants:
//   - An entry is acknowledged to a leader only after Sync; Append never
//     syncs. A tail that a new leader overwrites is cut from the files
//     (binlog.Log.CutBack) and the cut is durable before Append writes
//     the new entries, so a crash can lose unsynced entries but never
//     bring back overwritten ones.
//   - The term and vote are durable (SetHardState) before the caller sends
//     a message that depends on them. The commit index is written with
//     them but not on every change: after a restart it is at least what
//     the store applied (Open's applied), which was committed.
//   - Entries past the commit index may be cut; readers outside raft
//     (dump threads, CDC, the applier) must not read past it.
//
// Compaction (Compact) removes whole binlog files whose entries all lie
// below a point the caller knows is applied and durable in the store; the
// log then starts at the first entry of the oldest file kept, and raft.state
// says so before any file goes, so a crash in between leaves files whose
// entries Open skips. A node behind the first entry cannot be sent the
// log: Snapshot says so (a snapshot whose data is transferNeeded), and a
// node that receives one stops (cluster.Node) instead of waiting forever.
package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Options say where the log lives.
type Options struct {
	FS       vfs.FS
	Dir      string // the binlog's directory; raft.state is kept there
	ServerID uint32
}

// loc is where one entry is in the files.
type loc struct {
	term uint64
	typ  raftpb.EntryType
	rec  binlog.Position // start of the record event
	end  int64           // end of the entry (record and transaction), same file
	gno  uint64          // a transaction's GTID number (its UUID is Log.sid)
}

// Log is a node's raft log over its binlog files.
type Log struct {
	opts Options
	bl   *binlog.Log

	mu        sync.Mutex
	first     uint64 // index of locs[0]
	prevTerm  uint64 // term of entry first-1
	locs      []loc
	hs        raftpb.HardState
	cs        raftpb.ConfState
	members   []byte // recorded with cs (SetConfState)
	buf       []byte
	savedTerm uint64 // term and vote as last written to raft.state
	savedVote uint64
	// history is the GTIDs of transactions before the first record
	// (from before the node joined a cluster), for Previous_gtids.
	history binlog.GTIDSet
	// sid is the GTID UUID of every transaction entry (the cluster's).
	sid binlog.UUID
}

var _ raft.Storage = (*Log)(nil)

const stateFile = "raft.state"

// Open reads the raft log from bl's files and the raft state from the
// directory. applied is the index of the last entry the store holds the
// effects of: the commit index is at least that.
func Open(opts Options, bl *binlog.Log, applied uint64) (*Log, error) {
	l := &Log{opts: opts, bl: bl}
	start, err := l.readState()
	if err != nil {
		return nil, err
	}
	l.first, l.prevTerm = start.index+1, start.term
	if err := l.scan(); err != nil {
		return nil, err
	}
	last := l.lastIndex()
	if applied > last {
		return nil, fmt.Errorf("raftlog: the store applied entry %d but the log ends at %d", applied, last)
	}
	l.hs.Commit = min(max(l.hs.Commit, applied), last)
	return l, nil
}

// scan walks every binlog file and records where each entry is.
func (l *Log) scan() error {
	next := l.first
	for _, f := range l.bl.Files() {
		data, err := l.bl.ReadFile(f.Num)
		if err != nil {
			return err
		}
		pos := int64(binlog.FileHeaderSize)
		for pos < int64(len(data)) {
			e, err := binlog.NextEvent(data[pos:])
			if err != nil {
				return fmt.Errorf("raftlog: %s at %d: %w", f.Name, pos, err)
			}
			end := pos + int64(e.Size)
			if e.Type != binlog.RowsQueryEvent || !binlog.IsRaftRecord(e.Body()) {
				if len(l.locs) > 0 && !fileEvent(e.Type) {
					return fmt.Errorf("raftlog: %s at %d: an event outside any raft entry", f.Name, pos)
				}
				if e.Type == binlog.GTIDEvent {
					if g, err := binlog.ParseGTID(e.Body()); err == nil {
						l.history.Add(g.SID, g.GNO)
					}
				}
				pos = end
				continue
			}
			r, _, err := binlog.ParseRaftRecord(e.Body())
			if err != nil {
				return fmt.Errorf("raftlog: %s at %d: %w", f.Name, pos, err)
			}
			if len(l.locs) == 0 && r.Index < next {
				// Compacted (raft.state says the log starts later) in a
				// file whose removal a crash interrupted.
				pos = end + int64(r.TrxLen)
				continue
			}
			if len(l.locs) == 0 && r.Index > next {
				return fmt.Errorf("raftlog: %s at %d: the log starts at entry %d, entries from %d are missing", f.Name, pos, r.Index, next)
			}
			if r.Index != next {
				return fmt.Errorf("raftlog: %s at %d: entry %d where %d was expected", f.Name, pos, r.Index, next)
			}
			recEnd := end
			end += int64(r.TrxLen)
			if end > int64(len(data)) {
				return fmt.Errorf("raftlog: %s at %d: entry %d ends past the file", f.Name, pos, r.Index)
			}
			lc := loc{term: r.Term, typ: raftpb.EntryType(r.Type), rec: binlog.Position{File: f.Num, Pos: pos}, end: end}
			if r.TrxLen > 0 {
				if lc.gno, err = l.trxGNO(data[recEnd:end]); err != nil {
					return fmt.Errorf("raftlog: %s at %d: entry %d: %w", f.Name, pos, r.Index, err)
				}
			}
			l.locs = append(l.locs, lc)
			next++
			pos = end
		}
	}
	return nil
}

// fileEvent reports whether an event type belongs to a file rather than to
// a transaction (its header, its end).
func fileEvent(typ byte) bool {
	switch typ {
	case binlog.FormatDescriptionEvent, binlog.PreviousGTIDsEvent, binlog.RotateEvent, binlog.StopEvent:
		return true
	}
	return false
}

func (l *Log) lastIndex() uint64 { return l.first + uint64(len(l.locs)) - 1 }

// InitialState implements raft.Storage.
func (l *Log) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hs, l.cs, nil
}

// FirstIndex implements raft.Storage.
func (l *Log) FirstIndex() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, nil
}

// LastIndex implements raft.Storage.
func (l *Log) LastIndex() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastIndex(), nil
}

// Term implements raft.Storage.
func (l *Log) Term(i uint64) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case i+1 < l.first:
		return 0, raft.ErrCompacted
	case i+1 == l.first:
		return l.prevTerm, nil
	case i > l.lastIndex():
		return 0, raft.ErrUnavailable
	}
	return l.locs[i-l.first].term, nil
}

// TransferNeeded is the data of the snapshots Snapshot gives: the
// receiver is behind the log's first entry and needs a copy of the state.
var TransferNeeded = []byte("lockstep: state transfer needed")

// Snapshot implements raft.Storage. Raft asks for one to send a node
// behind the first entry; the one given only says where the log starts
// (TransferNeeded), as the state itself is copied another way.
func (l *Log) Snapshot() (raftpb.Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first > 1 {
		return raftpb.Snapshot{Data: TransferNeeded, Metadata: raftpb.SnapshotMetadata{Index: l.first - 1, Term: l.prevTerm, ConfState: l.cs}}, nil
	}
	return raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{ConfState: l.cs}}, nil
}

// Compact removes the binlog files before file number keepFile whose
// entries all have an index of at most upTo (applied and durable in the
// store), never the file being appended to, and returns their names.
func (l *Log) Compact(keepFile int, upTo uint64) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.bl.Current().File
	keepFile = min(keepFile, cur)
	// The new first entry: the first one in a file at or after keepFile,
	// walked back while the entries before it are not all at most upTo.
	i := sort.Search(len(l.locs), func(i int) bool { return l.locs[i].rec.File >= keepFile })
	for i > 0 && l.first+uint64(i)-1 > upTo {
		f := l.locs[i-1].rec.File
		i = sort.Search(len(l.locs), func(j int) bool { return l.locs[j].rec.File >= f })
		keepFile = f
	}
	if i == 0 {
		return nil, nil
	}
	if i < len(l.locs) {
		keepFile = l.locs[i].rec.File
	}
	l.prevTerm = l.locs[i-1].term
	l.first += uint64(i)
	l.locs = append([]loc(nil), l.locs[i:]...)
	if err := l.writeState(); err != nil {
		return nil, err
	}
	return l.bl.Purge(keepFile)
}

// Entries implements raft.Storage: entries [lo, hi), at most maxSize bytes
// of them but at least one.
func (l *Log) Entries(lo, hi, maxSize uint64) ([]raftpb.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lo < l.first {
		return nil, raft.ErrCompacted
	}
	if hi > l.lastIndex()+1 || lo > hi {
		return nil, raft.ErrUnavailable
	}
	var out []raftpb.Entry
	var size uint64
	for i := lo; i < hi; {
		// Read the run of entries in one file with one read.
		first := l.locs[i-l.first]
		j := i
		for j < hi && l.locs[j-l.first].rec.File == first.rec.File {
			j++
		}
		end := l.locs[j-1-l.first].end
		data := make([]byte, end-first.rec.Pos)
		if err := l.readAt(first.rec.File, data, first.rec.Pos); err != nil {
			return nil, err
		}
		for k := i; k < j; k++ {
			lc := l.locs[k-l.first]
			e, err := decodeEntry(data[lc.rec.Pos-first.rec.Pos : lc.end-first.rec.Pos])
			if err != nil {
				return nil, fmt.Errorf("raftlog: entry %d in %s: %w", k, l.bl.Name(lc.rec.File), err)
			}
			if e.Index != k || e.Term != lc.term {
				return nil, fmt.Errorf("raftlog: entry %d in %s reads as %d/%d", k, l.bl.Name(lc.rec.File), e.Index, e.Term)
			}
			size += uint64(e.Size())
			if len(out) > 0 && size > maxSize {
				return out, nil
			}
			out = append(out, e)
		}
		i = j
	}
	return out, nil
}

func (l *Log) readAt(file int, p []byte, off int64) error {
	f, err := l.bl.OpenFile(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// decodeEntry reads one entry: its record event and, for a transaction,
// the events after it.
func decodeEntry(b []byte) (raftpb.Entry, error) {
	e, err := binlog.NextEvent(b)
	if err != nil {
		return raftpb.Entry{}, err
	}
	r, ok, err := binlog.ParseRaftRecord(e.Body())
	if !ok || err != nil {
		return raftpb.Entry{}, fmt.Errorf("not a raft record: %v", err)
	}
	ent := raftpb.Entry{Index: r.Index, Term: r.Term, Type: raftpb.EntryType(r.Type), Data: r.Data}
	if r.TrxLen > 0 {
		events := b[e.Size:]
		if len(events) != int(r.TrxLen) {
			return raftpb.Entry{}, fmt.Errorf("transaction of %d bytes, record says %d", len(events), r.TrxLen)
		}
		for off := 0; off < len(events); {
			ev, err := binlog.NextEvent(events[off:])
			if err != nil {
				return raftpb.Entry{}, err
			}
			off += int(ev.Size)
		}
		ent.Data = EncodeTrx(r.Data, events)
	}
	if len(ent.Data) == 0 {
		ent.Data = nil
	}
	return ent, nil
}

// EncodeTrx is the data of a normal entry that is a transaction: meta
// (the cluster's, opaque here: kept in the record) and the transaction's
// binlog events (written after the record, relocated).
func EncodeTrx(meta, events []byte) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(meta)+len(events))
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	return append(b, events...)
}

// DecodeTrx splits a transaction entry's data into its meta and events
// (aliasing data).
func DecodeTrx(data []byte) (meta, events []byte, err error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return nil, nil, errors.New("raftlog: a transaction entry with a bad meta length")
	}
	meta, events = data[k:k+int(n)], data[k+int(n):]
	if len(events) == 0 {
		return nil, nil, errors.New("raftlog: a transaction entry without events")
	}
	return meta, events, nil
}

// Append writes ents after the entries before ents[0].Index, cutting off
// any tail from that index on (a new leader overwrote it). It does not
// sync: call Sync before acknowledging them. A normal entry with data must
// be a transaction (EncodeTrx).
func (l *Log) Append(ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	at := ents[0].Index
	if at < l.first || at > l.lastIndex()+1 {
		return fmt.Errorf("raftlog: appending entry %d to a log of entries %d..%d", at, l.first, l.lastIndex())
	}
	if at <= l.lastIndex() {
		if at <= l.hs.Commit {
			return fmt.Errorf("raftlog: appending entry %d would cut committed entry %d", at, l.hs.Commit)
		}
		if err := l.bl.CutBack(l.locs[at-l.first].rec); err != nil {
			return err
		}
		l.locs = l.locs[:at-l.first]
	}
	pos := l.bl.Current()
	buf := l.buf[:0]
	locs := make([]loc, 0, len(ents))
	ts := uint32(time.Now().Unix())
	for i, e := range ents {
		if e.Index != at+uint64(i) {
			return fmt.Errorf("raftlog: entries not contiguous at %d", e.Index)
		}
		r := binlog.RaftRecord{Index: e.Index, Term: e.Term, Type: byte(e.Type), Data: e.Data}
		trx := e.Type == raftpb.EntryNormal && len(e.Data) > 0
		var events []byte
		if trx {
			var err error
			if r.Data, events, err = DecodeTrx(e.Data); err != nil {
				return fmt.Errorf("raftlog: entry %d: %w", e.Index, err)
			}
			r.TrxLen = uint32(len(events))
		}
		start := pos.Pos + int64(len(buf))
		recEnd := start + int64(binlog.RaftRecordSize(r))
		buf = binlog.AppendRaftRecord(buf, r, ts, l.opts.ServerID, uint32(recEnd))
		if trx {
			var err error
			if buf, err = binlog.Relocate(buf, events, recEnd); err != nil {
				return fmt.Errorf("raftlog: entry %d: %w", e.Index, err)
			}
		}
		lc := loc{term: e.Term, typ: e.Type, rec: binlog.Position{File: pos.File, Pos: start}, end: pos.Pos + int64(len(buf))}
		if trx {
			var err error
			if lc.gno, err = l.trxGNO(events); err != nil {
				return fmt.Errorf("raftlog: entry %d: %w", e.Index, err)
			}
		}
		locs = append(locs, lc)
	}
	if cap(buf) <= 4<<20 {
		l.buf = buf
	}
	if err := l.bl.Append(buf); err != nil {
		// Undo a partial write so the log stays whole; if that fails too,
		// the log is unusable and says so.
		if rerr := l.bl.Rewind(pos); rerr != nil {
			return fmt.Errorf("raftlog: append failed (%v) and could not be undone: %w", err, rerr)
		}
		return err
	}
	l.locs = append(l.locs, locs...)
	return nil
}

// Sync makes every appended entry durable.
func (l *Log) Sync() error { return l.bl.Sync() }

// Rotate closes the current binlog file and starts the next, whose
// Previous_gtids is prev (the GTIDs of the entries before it).
func (l *Log) Rotate(prev binlog.GTIDSet) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bl.Rotate(time.Now(), prev)
}

// MaybeRotate starts a new binlog file once the current one holds an
// entry and has reached max bytes, as a single server rotates at
// max_binlog_size (so that files can be purged below a compaction point,
// Compact). The new file's Previous_gtids is the current file's plus the
// GTIDs of its transactions (and of history before the first entry, if
// the file holds any). It syncs the file it ends.
func (l *Log) MaybeRotate(max int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.bl.Current()
	if cur.Pos < max || len(l.locs) == 0 || l.locs[len(l.locs)-1].rec.File != cur.File {
		return nil
	}
	prev, err := l.bl.PreviousGTIDs(cur.File)
	if err != nil {
		return err
	}
	if first := l.locs[0].rec.File; first == cur.File {
		prev.AddSet(l.history)
	}
	for i := len(l.locs) - 1; i >= 0 && l.locs[i].rec.File == cur.File; i-- {
		if n := l.locs[i].gno; n != 0 {
			prev.Add(l.sid, n)
		}
	}
	return l.bl.Rotate(time.Now(), prev)
}

// trxGNO is the GTID number of a transaction's events (its first event);
// every transaction entry has the log's one GTID UUID (l.sid).
func (l *Log) trxGNO(events []byte) (uint64, error) {
	e, err := binlog.NextEvent(events)
	if err != nil {
		return 0, err
	}
	if e.Type != binlog.GTIDEvent {
		return 0, fmt.Errorf("a transaction that does not start with a GTID event (type %d)", e.Type)
	}
	g, err := binlog.ParseGTID(e.Body())
	if err != nil {
		return 0, err
	}
	switch {
	case l.sid == binlog.UUID{}:
		l.sid = g.SID
	case g.SID != l.sid:
		return 0, fmt.Errorf("a transaction of GTID UUID %s in a log of %s", g.SID, l.sid)
	}
	return g.GNO, nil
}

// SetHardState records raft's hard state. A new term or vote is written
// to raft.state and synced before it returns; a commit index alone is
// kept in memory and written with the next term or vote (see the top of
// the file).
func (l *Log) SetHardState(hs raftpb.HardState) error {
	if raft.IsEmptyHardState(hs) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hs = hs
	if hs.Term == l.savedTerm && hs.Vote == l.savedVote {
		return nil
	}
	return l.writeState()
}

// SetConfState records the configuration in force after a configuration
// change was applied, and members, the caller's record of the members
// that goes with it (their addresses), durably and together.
func (l *Log) SetConfState(cs raftpb.ConfState, members []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cs = cs
	l.members = append([]byte(nil), members...)
	return l.writeState()
}

// Members is what the last SetConfState recorded as members (nil: none
// was, as in a log from before members were recorded).
func (l *Log) Members() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.members...)
}

// Seed writes the raft state of a node whose state was copied from
// another's at entry index of term (a state transfer): its log, empty
// yet, starts after index, with configuration cs and the caller's members
// record. It refuses a directory that has a raft state already.
func Seed(opts Options, index, term uint64, cs raftpb.ConfState, members []byte) error {
	if _, err := opts.FS.Stat(filepath.Join(opts.Dir, stateFile)); !oserror.IsNotExist(err) {
		return fmt.Errorf("raftlog: %s holds a raft state already", opts.Dir)
	}
	l := &Log{opts: opts, first: index + 1, prevTerm: term, cs: cs, members: members,
		hs: raftpb.HardState{Term: term, Commit: index}}
	return l.writeState()
}

// Empty reports whether the log has never held an entry nor a raft state:
// a node that has not joined a cluster yet.
func (l *Log) Empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastIndex() == 0 && raft.IsEmptyHardState(l.hs) && len(l.cs.Voters) == 0 && len(l.cs.Learners) == 0
}

// NoteApplied records that the store holds the entries up to i: they are
// committed, whatever the commit index on disk says.
func (l *Log) NoteApplied(i uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i > l.lastIndex() {
		return fmt.Errorf("raftlog: the store applied entry %d but the log ends at %d", i, l.lastIndex())
	}
	l.hs.Commit = max(l.hs.Commit, i)
	return nil
}

// GNOAt is the GTID number of the last transaction entry at or before
// entry i, as far as the log can tell: from a transaction entry at or
// before i, or else from the first one after it (one less: numbers grow
// by one per transaction entry). With no transaction entry in the log it
// reports false.
func (l *Log) GNOAt(i uint64) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.lastIndex()
	for k := min(i, last); k >= l.first && k > 0; k-- {
		if g := l.locs[k-l.first].gno; g != 0 {
			return g, true
		}
	}
	for k := max(i+1, l.first); k <= last; k++ {
		if g := l.locs[k-l.first].gno; g != 0 {
			return g - 1, true
		}
	}
	return 0, false
}

// Position is where entry i ends in the binlog (the position a dump may
// send up to once i is committed).
func (l *Log) Position(i uint64) (binlog.Position, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < l.first || i > l.lastIndex() {
		return binlog.Position{}, false
	}
	lc := l.locs[i-l.first]
	return binlog.Position{File: lc.rec.File, Pos: lc.end}, true
}

// IndexAt is the entry that ends at pos in the binlog (the position a
// store records with what it applied), and whether there is one.
func (l *Log) IndexAt(pos binlog.Position) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.locs), func(i int) bool {
		lc := l.locs[i]
		return !(binlog.Position{File: lc.rec.File, Pos: lc.end}).Less(pos)
	})
	if i < len(l.locs) && l.locs[i].rec.File == pos.File && l.locs[i].end == pos.Pos {
		return l.first + uint64(i), true
	}
	return 0, false
}

// raft.state: magic, then length-prefixed hard state and conf state
// (raft's protobuf encoding) and, from version 2, the members record, then
// the index and term of the entry before the log's first, and a CRC-32C of
// everything before it. Version 1 (no members record) is still read.
var (
	stateMagic   = []byte("lockstep-raft-state 2\n")
	stateMagicV1 = []byte("lockstep-raft-state 1\n")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type logStart struct{ index, term uint64 }

func (l *Log) writeState() error {
	hs, err := l.hs.Marshal()
	if err != nil {
		return err
	}
	cs, err := l.cs.Marshal()
	if err != nil {
		return err
	}
	b := append([]byte(nil), stateMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(hs)))
	b = append(b, hs...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cs)))
	b = append(b, cs...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.members)))
	b = append(b, l.members...)
	b = binary.BigEndian.AppendUint64(b, l.first-1)
	b = binary.BigEndian.AppendUint64(b, l.prevTerm)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := atomicfile.Write(l.opts.FS, filepath.Join(l.opts.Dir, stateFile), b); err != nil {
		return err
	}
	l.savedTerm, l.savedVote = l.hs.Term, l.hs.Vote
	return nil
}

func (l *Log) readState() (logStart, error) {
	path := filepath.Join(l.opts.Dir, stateFile)
	f, err := l.opts.FS.Open(path)
	if oserror.IsNotExist(err) {
		return logStart{}, nil
	}
	if err != nil {
		return logStart{}, err
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return logStart{}, err
	}
	bad := func(what string) (logStart, error) {
		return logStart{}, fmt.Errorf("raftlog: %s is damaged (%s); it holds the node's term and vote, which raft cannot do without", path, what)
	}
	v1 := len(b) >= len(stateMagicV1) && string(b[:len(stateMagicV1)]) == string(stateMagicV1)
	if len(b) < len(stateMagic)+4 || string(b[:len(stateMagic)]) != string(stateMagic) && !v1 {
		return bad("no header")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return bad("checksum")
	}
	p := body[len(stateMagic):]
	field := func() ([]byte, bool) {
		if len(p) < 4 || uint64(len(p)-4) < uint64(binary.BigEndian.Uint32(p)) {
			return nil, false
		}
		n := binary.BigEndian.Uint32(p)
		v := p[4 : 4+n]
		p = p[4+n:]
		return v, true
	}
	hs, ok1 := field()
	cs, ok2 := field()
	members, ok3 := []byte(nil), true
	if !v1 {
		members, ok3 = field()
	}
	if !ok1 || !ok2 || !ok3 || len(p) != 16 {
		return bad("length")
	}
	if len(members) > 0 {
		l.members = append([]byte(nil), members...)
	}
	if err := l.hs.Unmarshal(hs); err != nil {
		return bad(err.Error())
	}
	if err := l.cs.Unmarshal(cs); err != nil {
		return bad(err.Error())
	}
	l.savedTerm, l.savedVote = l.hs.Term, l.hs.Vote
	return logStart{index: binary.BigEndian.Uint64(p), term: binary.BigEndian.Uint64(p[8:])}, nil
}
