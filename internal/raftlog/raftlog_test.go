package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

var testSID = binlog.UUID{9, 9, 9}

// trx encodes a small transaction under GTID testSID:gno, as some node
// would have (its positions are that node's, to be relocated).
func trx(gno uint64) []byte {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	ev.AddQuery("db", fmt.Sprintf("INSERT INTO t VALUES (%d)", gno), binlog.QueryOptions{})
	ev.AddXID(gno)
	ev.Close()
	g := binlog.GTIDInfo{SID: testSID, GNO: gno, SequenceNumber: int64(gno), LastCommitted: int64(gno - 1)}
	size := ev.FinalSize(false)
	return ev.Finalize(make([]byte, 0, size), 12345, 1, 7, g)
}

// canon relocates an entry's events to offset 0, so entries written at
// different offsets compare equal.
func canon(t *testing.T, e raftpb.Entry) raftpb.Entry {
	t.Helper()
	if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
		meta, events, err := DecodeTrx(e.Data)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Index, err)
		}
		d, err := binlog.Relocate(nil, events, 0)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Index, err)
		}
		e.Data = EncodeTrx(meta, d)
	}
	return e
}

// dir is where the tests' logs live; a test on the real file system sets
// it to a temporary directory.
var dir = "/d"

type node struct {
	fs vfs.FS
	bl *binlog.Log
	l  *Log
}

func open(t testing.TB, fs vfs.FS, applied uint64) (*node, error) {
	t.Helper()
	bo := binlog.Options{FS: fs, Dir: dir, BaseName: "binlog", ServerID: 1}
	bl, _, err := binlog.Open(bo, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		return nil, err
	}
	l, err := Open(Options{FS: fs, Dir: dir, ServerID: 1}, bl, applied)
	if err != nil {
		bl.Close()
		return nil, err
	}
	return &node{fs: fs, bl: bl, l: l}, nil
}

func mustOpen(t *testing.T, fs vfs.FS, applied uint64) *node {
	t.Helper()
	n, err := open(t, fs, applied)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) close() { n.bl.Close() }

// ents builds entries lo..hi of one term; every third is empty (a
// leader's first entry) or a configuration change, the others
// transactions numbered by index and term.
func ents(lo, hi, term uint64) []raftpb.Entry {
	var out []raftpb.Entry
	for i := lo; i <= hi; i++ {
		e := raftpb.Entry{Index: i, Term: term}
		switch i % 3 {
		case 0:
			if term%2 == 0 {
				e.Type = raftpb.EntryConfChangeV2
				e.Data = []byte(fmt.Sprintf("conf %d/%d", i, term))
			}
		default:
			e.Data = EncodeTrx([]byte(fmt.Sprintf("meta %d", i)), trx(term*1000+i))
		}
		out = append(out, e)
	}
	return out
}

func check(t *testing.T, l *Log, want []raftpb.Entry) {
	t.Helper()
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	if first != 1 || last != uint64(len(want)) {
		t.Fatalf("log holds %d..%d, want 1..%d", first, last, len(want))
	}
	if len(want) == 0 {
		return
	}
	got, err := l.Entries(1, last+1, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		g, w := canon(t, got[i]), canon(t, want[i])
		if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("entry %d: got %d/%d type %v %d bytes, want %d/%d type %v %d bytes", i+1, g.Index, g.Term, g.Type, len(g.Data), w.Index, w.Term, w.Type, len(w.Data))
		}
		if term, _ := l.Term(w.Index); term != w.Term {
			t.Fatalf("Term(%d) = %d, want %d", w.Index, term, w.Term)
		}
	}
}

// gtids is the Previous_gtids a file started after want would carry.
func gtids(want []raftpb.Entry) binlog.GTIDSet {
	var g binlog.GTIDSet
	for _, e := range want {
		if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
			_, events, _ := DecodeTrx(e.Data)
			ev, err := binlog.NextEvent(events)
			if err != nil {
				panic(err)
			}
			gt, err := binlog.ParseGTID(ev.Body())
			if err != nil {
				panic(err)
			}
			g.Add(gt.SID, gt.GNO)
		}
	}
	return g
}

func TestAppendOverwriteReopen(t *testing.T) {
	t.Run("mem", func(t *testing.T) { testAppendOverwriteReopen(t, vfs.NewMem()) })
	// The real file system cuts files with ftruncate, not by rewriting.
	t.Run("disk", func(t *testing.T) {
		old := dir
		dir = t.TempDir()
		defer func() { dir = old }()
		testAppendOverwriteReopen(t, vfs.Default)
	})
}

func testAppendOverwriteReopen(t *testing.T, fs vfs.FS) {
	n := mustOpen(t, fs, 0)
	check(t, n.l, nil)
	if term, err := n.l.Term(0); err != nil || term != 0 {
		t.Fatalf("Term(0) = %d, %v", term, err)
	}
	want := ents(1, 5, 1)
	if err := n.l.Append(want); err != nil {
		t.Fatal(err)
	}
	check(t, n.l, want)
	// A new leader overwrites from 4.
	want = append(want[:3], ents(4, 6, 2)...)
	if err := n.l.Append(ents(4, 6, 2)); err != nil {
		t.Fatal(err)
	}
	check(t, n.l, want)
	// Rotate, append, then overwrite back into the first file: the later
	// file goes.
	if err := n.l.Rotate(gtids(want)); err != nil {
		t.Fatal(err)
	}
	if err := n.l.Append(ents(7, 8, 2)); err != nil {
		t.Fatal(err)
	}
	want = append(want, ents(7, 8, 2)...)
	check(t, n.l, want)
	if files := n.bl.Files(); len(files) != 2 {
		t.Fatalf("%d files, want 2", len(files))
	}
	want = append(want[:5], ents(6, 9, 3)...)
	if err := n.l.Append(ents(6, 9, 3)); err != nil {
		t.Fatal(err)
	}
	check(t, n.l, want)
	if files := n.bl.Files(); len(files) != 1 {
		t.Fatalf("%d files after cutting back into the first, want 1", len(files))
	}
	if err := n.l.Sync(); err != nil {
		t.Fatal(err)
	}
	hs := raftpb.HardState{Term: 3, Vote: 2, Commit: 4}
	if err := n.l.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	// Entries' size limit: at least one, then as many as fit.
	if es, err := n.l.Entries(1, 10, 1); err != nil || len(es) != 1 {
		t.Fatalf("Entries with a 1-byte limit: %d entries, %v", len(es), err)
	}
	if _, err := n.l.Entries(0, 2, 1<<30); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("Entries from 0: %v", err)
	}
	if _, err := n.l.Entries(5, 11, 1<<30); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Entries past the end: %v", err)
	}
	// Committed entries are never cut.
	if err := n.l.Append(ents(3, 3, 4)); err == nil {
		t.Fatal("an append over a committed entry was accepted")
	}
	n.close()

	// Reopen: same entries, term and vote; the commit index is at least
	// what the store applied.
	n = mustOpen(t, fs, 6)
	defer n.close()
	check(t, n.l, want)
	got, _, _ := n.l.InitialState()
	if got.Term != 3 || got.Vote != 2 || got.Commit != 6 {
		t.Fatalf("hard state after reopen %+v, want term 3 vote 2 commit 6", got)
	}
	if err := n.l.Append(ents(10, 10, 3)); err != nil {
		t.Fatal(err)
	}
	check(t, n.l, append(want, ents(10, 10, 3)...))
}

func TestOpenRefusesDamage(t *testing.T) {
	fs := vfs.NewMem()
	n := mustOpen(t, fs, 0)
	if err := n.l.Append(ents(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if err := n.l.SetHardState(raftpb.HardState{Term: 1, Vote: 1}); err != nil {
		t.Fatal(err)
	}
	n.close()
	if _, err := open(t, fs, 5); err == nil {
		t.Fatal("a store ahead of the log was accepted")
	}
	f, err := fs.OpenReadWrite(dir+"/raft.state", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := open(t, fs, 0); err == nil {
		t.Fatal("a damaged raft.state was accepted")
	}
}

func TestAppendRefusesBadEntries(t *testing.T) {
	n := mustOpen(t, vfs.NewMem(), 0)
	defer n.close()
	if err := n.l.Append([]raftpb.Entry{{Index: 1, Term: 1, Data: EncodeTrx(nil, []byte("not binlog events"))}}); err == nil {
		t.Fatal("a normal entry that is not a transaction was written")
	}
	if err := n.l.Append([]raftpb.Entry{{Index: 1, Term: 1, Data: []byte{0xff, 0xff}}}); err == nil {
		t.Fatal("a normal entry with a bad meta length was written")
	}
	if err := n.l.Append(ents(2, 3, 1)); err == nil {
		t.Fatal("an entry after a gap was written")
	}
	check(t, n.l, nil)
}

// TestCrashNeverBringsBackOverwrittenEntries appends, overwrites, rotates
// and syncs at random, crashes the file system at random points (keeping
// a random share of what was not synced), and requires the recovered log
// to hold every entry synced and not since overwritten, and nothing that
// is not in the log as it was at the crash: an overwritten tail never
// comes back. LOCKSTEP_SEED replays a run.
func TestCrashNeverBringsBackOverwrittenEntries(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for run := 0; run < 40; run++ {
		fs := vfs.NewCrashableMem()
		n := mustOpen(t, fs, 0)
		var model []raftpb.Entry
		durable := 0 // leading entries of model that are synced
		term := uint64(1)
		for step := 0; step < 12; step++ {
			switch op := r.IntN(10); {
			case op < 2 && len(model) > 0:
				if err := n.l.Rotate(gtids(model)); err != nil {
					t.Fatal(err)
				}
				durable = len(model) // rotation syncs the file it ends
			default:
				at := uint64(len(model)) + 1
				if len(model) > 0 && r.IntN(3) == 0 {
					at = 1 + uint64(r.IntN(len(model)))
					term++
				}
				es := ents(at, at+uint64(r.IntN(4)), term)
				if err := n.l.Append(es); err != nil {
					t.Fatal(err)
				}
				model = append(model[:at-1], es...)
				durable = min(durable, int(at-1))
				if r.IntN(2) == 0 {
					if err := n.l.Sync(); err != nil {
						t.Fatal(err)
					}
					durable = len(model)
				}
			}
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(run)))})
		n.close()
		m, err := open(t, crashed, 0)
		if err != nil {
			t.Fatalf("seed %d run %d: reopen after crash: %v", seed, run, err)
		}
		last, _ := m.l.LastIndex()
		if int(last) < durable || int(last) > len(model) {
			m.close()
			t.Fatalf("seed %d run %d: %d entries after the crash; %d were synced, %d written", seed, run, last, durable, len(model))
		}
		check(t, m.l, model[:last])
		m.close()
	}
}

// TestMembersKeptWithConfState: the members record survives a reopen
// with the configuration, and a version-1 raft.state (without one) is
// still read.
func TestMembersKeptWithConfState(t *testing.T) {
	fs := vfs.NewMem()
	n := mustOpen(t, fs, 0)
	if !n.l.Empty() {
		t.Fatal("a new log is not empty")
	}
	cs := raftpb.ConfState{Voters: []uint64{1, 2}, Learners: []uint64{4}}
	if err := n.l.SetConfState(cs, []byte(`{"self":4}`)); err != nil {
		t.Fatal(err)
	}
	if n.l.Empty() {
		t.Fatal("a log with a configuration is empty")
	}
	n.close()
	n = mustOpen(t, fs, 0)
	_, gotCS, _ := n.l.InitialState()
	if string(n.l.Members()) != `{"self":4}` || len(gotCS.Voters) != 2 || len(gotCS.Learners) != 1 {
		t.Fatalf("after reopen: members %q, conf %+v", n.l.Members(), gotCS)
	}
	n.close()

	// The same state as version 1 wrote it: no members field.
	hs, _ := (&raftpb.HardState{Term: 2, Vote: 1}).Marshal()
	csb, _ := cs.Marshal()
	b := append([]byte(nil), stateMagicV1...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(hs)))
	b = append(b, hs...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(csb)))
	b = append(b, csb...)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := atomicfile.Write(fs, dir+"/raft.state", b); err != nil {
		t.Fatal(err)
	}
	n = mustOpen(t, fs, 0)
	defer n.close()
	gotHS, gotCS, _ := n.l.InitialState()
	if n.l.Members() != nil || gotHS.Term != 2 || len(gotCS.Voters) != 2 {
		t.Fatalf("version 1 state: members %q, hard state %+v, conf %+v", n.l.Members(), gotHS, gotCS)
	}
}

// MaybeRotate starts a new file once the current one is large enough and
// holds an entry; its Previous_gtids names every transaction before it,
// which Open checks when the log is read again.
func TestMaybeRotate(t *testing.T) {
	fs := vfs.NewMem()
	n := mustOpen(t, fs, 0)
	want := ents(1, 6, 1)
	if err := n.l.Append(want); err != nil {
		t.Fatal(err)
	}
	if err := n.l.MaybeRotate(1 << 30); err != nil || len(n.bl.Files()) != 1 {
		t.Fatalf("rotated below the size: %v, %d files", err, len(n.bl.Files()))
	}
	if err := n.l.MaybeRotate(100); err != nil || len(n.bl.Files()) != 2 {
		t.Fatalf("did not rotate past the size: %v, %d files", err, len(n.bl.Files()))
	}
	// A file without an entry yet is not rotated again.
	if err := n.l.MaybeRotate(1); err != nil || len(n.bl.Files()) != 2 {
		t.Fatalf("rotated an empty file: %v, %d files", err, len(n.bl.Files()))
	}
	more := ents(7, 9, 1)
	if err := n.l.Append(more); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	prev, err := n.bl.PreviousGTIDs(n.bl.Files()[1].Num)
	if err != nil || !prev.Equal(gtids(want[:6])) {
		t.Fatalf("the new file's Previous_gtids %s, want %s (%v)", prev, gtids(want[:6]), err)
	}
	if err := n.l.Sync(); err != nil {
		t.Fatal(err)
	}
	n.close()
	n = mustOpen(t, fs, 0)
	defer n.close()
	check(t, n.l, want)
}

// Compact removes whole files below the point given, never entries past
// it nor the current file; the log then starts later, and reads the same
// after a reopen, also when a crash left the removed files in place.
func TestCompact(t *testing.T) {
	fs := vfs.NewMem()
	n := mustOpen(t, fs, 0)
	var want []raftpb.Entry
	for lo := uint64(1); lo <= 10; lo += 3 { // four files: 1-3, 4-6, 7-9, 10-12
		es := ents(lo, lo+2, 1)
		if err := n.l.Append(es); err != nil {
			t.Fatal(err)
		}
		want = append(want, es...)
		if err := n.l.MaybeRotate(1); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.l.Sync(); err != nil {
		t.Fatal(err)
	}
	files := n.bl.Files() // the four and an empty current one
	if len(files) != 5 {
		t.Fatalf("%d files, want 5", len(files))
	}
	// Entries up to 5 may go: only the first file (1-3) can.
	gone, err := n.l.Compact(files[3].Num, 5)
	if err != nil || len(gone) != 1 {
		t.Fatalf("Compact: %v, removed %v", err, gone)
	}
	if first, _ := n.l.FirstIndex(); first != 4 {
		t.Fatalf("first index %d after compaction, want 4", first)
	}
	if term, err := n.l.Term(3); err != nil || term != 1 {
		t.Fatalf("Term(3) = %d, %v", term, err)
	}
	if _, err := n.l.Term(2); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("Term(2): %v, want ErrCompacted", err)
	}
	// The GTID number at an entry: its own or the last before it, or,
	// compacted away, one less than the first after it.
	for i, want := range map[uint64]uint64{6: 1005, 5: 1005, 3: 1003, 1: 1003} {
		if g, ok := n.l.GNOAt(i); !ok || g != want {
			t.Fatalf("GNOAt(%d) = %d, %v; want %d", i, g, ok, want)
		}
	}
	if _, err := n.l.Entries(3, 5, 1<<30); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("Entries(3, 5): %v, want ErrCompacted", err)
	}
	if snap, err := n.l.Snapshot(); err != nil || snap.Metadata.Index != 3 || !bytes.Equal(snap.Data, TransferNeeded) {
		t.Fatalf("Snapshot: %+v %v", snap.Metadata, err)
	}
	// Keep a copy of the second file, compact it away, and put it back: a
	// crash between raft.state and the removal.
	saved := map[string][]byte{"binlog.index": readAll(t, fs, dir+"/binlog.index")}
	for _, f := range files[1:3] {
		saved[f.Name] = readAll(t, fs, n.bl.Path(f.Num))
	}
	if gone, err := n.l.Compact(files[4].Num, 9); err != nil || len(gone) != 2 {
		t.Fatalf("Compact: %v, removed %v", err, gone)
	}
	n.close()
	for name, b := range saved {
		f, err := fs.Create(dir+"/"+name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Close()
	}
	n = mustOpen(t, fs, 0)
	defer n.close()
	first, _ := n.l.FirstIndex()
	last, _ := n.l.LastIndex()
	if first != 10 || last != 12 {
		t.Fatalf("after reopen the log holds %d..%d, want 10..12", first, last)
	}
	got, err := n.l.Entries(10, 13, 1<<30)
	if err != nil || len(got) != 3 {
		t.Fatalf("Entries(10, 13): %d entries, %v", len(got), err)
	}
	for i, e := range got {
		if w := canon(t, want[9+i]); e.Index != w.Index || !bytes.Equal(canon(t, e).Data, w.Data) {
			t.Fatalf("entry %d reads back as %d", w.Index, e.Index)
		}
	}
}

func readAll(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzRaftState: a damaged raft.state is refused with an error naming
// it, never a panic.
func FuzzRaftState(f *testing.F) {
	fs := vfs.NewMem()
	n := mustOpenAt(f, fs)
	if err := n.l.SetConfState(raftpb.ConfState{Voters: []uint64{1, 2, 3}}, []byte(`{"self":1}`)); err != nil {
		f.Fatal(err)
	}
	if err := n.l.SetHardState(raftpb.HardState{Term: 2, Vote: 1}); err != nil {
		f.Fatal(err)
	}
	n.close()
	f.Add(readAll(f, fs, dir+"/raft.state"))
	f.Add(stateMagicV1)
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		wf, err := fs.Create(dir+"/raft.state", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		wf.Write(b)
		wf.Close()
		if n, err := open(t, fs, 0); err == nil {
			n.close()
		}
	})
}

// mustOpenAt opens an empty log for a fuzz target's seed.
func mustOpenAt(f *testing.F, fs vfs.FS) *node {
	bl, _, err := binlog.Open(binlog.Options{FS: fs, Dir: dir, BaseName: "binlog", ServerID: 1}, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		f.Fatal(err)
	}
	l, err := Open(Options{FS: fs, Dir: dir, ServerID: 1}, bl, 0)
	if err != nil {
		f.Fatal(err)
	}
	return &node{fs: fs, bl: bl, l: l}
}
