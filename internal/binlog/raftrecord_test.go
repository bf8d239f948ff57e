package binlog

import (
	"bytes"
	"testing"
)

func raftTrx(gno uint64) []byte {
	var ev TrxEvents
	ev.AddQuery("db", "BEGIN", QueryOptions{})
	ev.AddXID(gno)
	ev.Close()
	return ev.Finalize(nil, 999, 1, 7, GTIDInfo{SID: testSID, GNO: gno, SequenceNumber: int64(gno)})
}

// A file of raft entries scans as its transactions; a record whose
// transaction is torn is cut with it.
func TestScanRaftRecords(t *testing.T) {
	f := append([]byte(nil), FileMagic...)
	f = append(f, FormatDescription(1, 7, false)...)
	f = append(f, PreviousGTIDs(1, 7, uint32(len(f)+PreviousGTIDsSize(GTIDSet{})), GTIDSet{})...)
	add := func(r RaftRecord, trx []byte) {
		end := len(f) + RaftRecordSize(r)
		f = AppendRaftRecord(f, r, 1, 7, uint32(end))
		var err error
		if f, err = Relocate(f, trx, int64(end)); err != nil {
			t.Fatal(err)
		}
	}
	add(RaftRecord{Index: 1, Term: 1}, nil) // a leader's empty entry
	t1 := raftTrx(1)
	add(RaftRecord{Index: 2, Term: 1, TrxLen: uint32(len(t1))}, t1)
	whole := len(f)
	t2 := raftTrx(2)
	add(RaftRecord{Index: 3, Term: 1, TrxLen: uint32(len(t2))}, t2)

	s, err := ScanFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.End != int64(len(f)) || !s.GTIDs.Contains(testSID, 2) {
		t.Fatalf("scan end %d of %d, GTIDs %s", s.End, len(f), s.GTIDs)
	}
	torn := f[:len(f)-10]
	s, err = ScanFile(torn, nil)
	if !IsTornTail(err) || s.End != int64(whole) {
		t.Fatalf("torn: end %d (want %d), %v", s.End, whole, err)
	}
	// Records parse back.
	e, err := NextEvent(f[whole:])
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := ParseRaftRecord(e.Body())
	if !ok || err != nil || r.Index != 3 || r.Term != 1 || r.TrxLen != uint32(len(t2)) {
		t.Fatalf("record %+v ok=%v err=%v", r, ok, err)
	}
}

// Relocate changes log_pos and checksums only, and refuses damage.
func TestRelocate(t *testing.T) {
	trx := raftTrx(5)
	moved, err := Relocate(nil, trx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Relocate(nil, moved, 999)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, trx) {
		t.Fatal("relocating there and back changed the events")
	}
	first, _ := NextEvent(moved)
	if first.LogPos != 1000+first.Size {
		t.Fatalf("log_pos %d after relocating to 1000", first.LogPos)
	}
	bad := append([]byte(nil), trx...)
	bad[len(bad)-6] ^= 1
	if _, err := Relocate(nil, bad, 0); err == nil {
		t.Fatal("damaged events were relocated")
	}
	if _, err := Relocate(nil, trx[:len(trx)-3], 0); err == nil {
		t.Fatal("a truncated event was relocated")
	}
}

func TestSetSequence(t *testing.T) {
	trx := raftTrx(0)
	other := UUID{1, 2, 3}
	if err := SetSequence(trx, other, 77, 70, 77); err != nil {
		t.Fatal(err)
	}
	e, err := NextEvent(trx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGTID(e.Body())
	if err != nil || g.SID != other || g.GNO != 77 || g.LastCommitted != 70 || g.SequenceNumber != 77 {
		t.Fatalf("GTID after SetSequence: %+v %v", g, err)
	}
	if err := SetSequence([]byte("short"), other, 1, 0, 1); err == nil {
		t.Fatal("garbage was sequenced")
	}
}
