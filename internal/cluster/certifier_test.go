package cluster

import (
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/raftlog"
)

var clusterSID = binlog.UUID{0xc0, 0xff, 0xee}

// pending is a transaction finalized by its origin under a placeholder
// GTID, as it reaches the leader.
func pending(origin uint64) []byte {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	ev.AddXID(origin)
	ev.Close()
	return ev.Finalize(nil, 4, 1, uint32(origin), binlog.GTIDInfo{SID: clusterSID})
}

func TestMetaRoundTrip(t *testing.T) {
	m := Meta{Origin: 3, TrxID: 1 << 40, Snapshot: 12345, Term: 7, Keys: []certify.Key{{Hash: 1}, {Hash: ^uint64(0), Shared: true}}}
	got, err := DecodeMeta(m.Encode(nil))
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b := m.Encode(nil)
	for _, bad := range [][]byte{nil, {9}, b[:len(b)-1], append(b, 0)} {
		if _, err := DecodeMeta(bad); err == nil {
			t.Errorf("damaged meta %x decoded", bad)
		}
	}
}

// Two nodes read the same row at the same snapshot and write it: the
// first to reach the leader commits, the second is refused, however long
// ago the first committed (no lost update).
func TestCertifierRefusesLostUpdate(t *testing.T) {
	c := NewCertifier(clusterSID, 0)
	row := []certify.Key{{Hash: 42}}
	_, gno, v, err := c.Certify(Request{Meta: Meta{Origin: 1, Snapshot: 0, Keys: row}, Events: pending(1)})
	if err != nil || !v.OK || gno != 1 {
		t.Fatalf("first writer: gno %d, %v, %v", gno, v, err)
	}
	for i := 0; i < 10; i++ { // unrelated commits in between
		if _, _, v, _ := c.Certify(Request{Meta: Meta{Origin: 3, Snapshot: 1, Keys: []certify.Key{{Hash: uint64(100 + i)}}}, Events: pending(3)}); !v.OK {
			t.Fatal(v)
		}
	}
	if _, _, v, _ := c.Certify(Request{Meta: Meta{Origin: 2, Snapshot: 0, Keys: row}, Events: pending(2)}); v.OK || v.ConflictWith != 1 {
		t.Fatalf("second writer of a stale snapshot: %v", v)
	}
	entry, gno, v, err := c.Certify(Request{Meta: Meta{Origin: 2, Snapshot: 11, Keys: row}, Events: pending(2)})
	if err != nil || !v.OK || gno != 12 || v.DependsOn != 1 {
		t.Fatalf("writer that saw the first: gno %d, %v, %v", gno, v, err)
	}
	// The entry carries the final GTID and logical clock.
	meta, events, err := raftlog.DecodeTrx(entry)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeMeta(meta); err != nil || m.Origin != 2 {
		t.Fatalf("meta %+v, %v", m, err)
	}
	e, _ := binlog.NextEvent(events)
	g, _ := binlog.ParseGTID(e.Body())
	if g.SID != clusterSID || g.GNO != 12 || g.SequenceNumber != 12 || g.LastCommitted != 1 {
		t.Fatalf("GTID %+v", g)
	}
}

// A certifier rebuilt from the log (a new leader) is in the state of the
// one that certified it: it gives every later request the same verdict,
// GTID number and dependency. This is why certification does not depend
// on which node leads. LOCKSTEP_SEED replays a run.
func TestCertifierRebuiltFromLogAgrees(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	request := func(head uint64) Request {
		var keys []certify.Key
		for k := r.IntN(4); k >= 0; k-- {
			keys = append(keys, certify.Key{Hash: uint64(r.IntN(40)), Shared: r.IntN(4) == 0})
		}
		lag := uint64(r.IntN(8))
		snap := uint64(0)
		if head > lag {
			snap = head - lag
		}
		origin := uint64(1 + r.IntN(3))
		return Request{Meta: Meta{Origin: origin, TrxID: r.Uint64(), Snapshot: snap, Keys: keys}, Events: pending(origin)}
	}
	for run := 0; run < 20; run++ {
		leader := NewCertifier(clusterSID, 64)
		var log [][]byte
		for i := 0; i < 300; i++ {
			entry, _, v, err := leader.Certify(request(leader.Next() - 1))
			if err != nil {
				t.Fatal(err)
			}
			if v.OK {
				log = append(log, entry)
			}
		}
		next := NewCertifier(clusterSID, 64)
		for _, e := range log {
			if err := next.Observe(e); err != nil {
				t.Fatal(err)
			}
		}
		if next.Next() != leader.Next() || next.Keys() != leader.Keys() {
			t.Fatalf("seed %d: rebuilt certifier at %d with %d keys, leader at %d with %d", seed, next.Next(), next.Keys(), leader.Next(), leader.Keys())
		}
		for i := 0; i < 300; i++ {
			req := request(leader.Next() - 1)
			req2 := req
			req2.Events = append([]byte(nil), req.Events...)
			e1, g1, v1, err1 := leader.Certify(req)
			e2, g2, v2, err2 := next.Certify(req2)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if v1 != v2 || g1 != g2 || string(e1) != string(e2) {
				t.Fatalf("seed %d run %d: leader says %v (gno %d), rebuilt certifier %v (gno %d)", seed, run, v1, g1, v2, g2)
			}
		}
	}
}

func TestObserveRefusesForeignLogs(t *testing.T) {
	c := NewCertifier(clusterSID, 0)
	entry, _, _, err := c.Certify(Request{Meta: Meta{Origin: 1}, Events: pending(1)})
	if err != nil {
		t.Fatal(err)
	}
	other := NewCertifier(binlog.UUID{1}, 0)
	if err := other.Observe(entry); err == nil {
		t.Fatal("another cluster's transaction was observed")
	}
	fresh := NewCertifier(clusterSID, 0)
	if err := fresh.Observe(entry); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Observe(entry); err == nil {
		t.Fatal("a GTID number seen twice was observed")
	}
}
