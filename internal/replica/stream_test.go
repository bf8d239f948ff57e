package replica

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

var testUUID = binlog.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// events splits encoded events.
func events(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		e, err := binlog.NextEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Data)
		b = b[e.Size:]
	}
	return out
}

// dmlTrx encodes a transaction inserting one row into test.t (id INT).
func dmlTrx(t *testing.T, gno uint64, lc, seq int64) [][]byte {
	cols := []row.Column{{Name: "id", Type: row.TypeLong}}
	img, err := row.AppendImage(nil, cols, []row.Value{int64(gno)})
	if err != nil {
		t.Fatal(err)
	}
	var ev binlog.TrxEvents
	ev.AddQuery("test", "BEGIN", binlog.QueryOptions{})
	ev.AddRow(binlog.WriteRowsEventV2, binlog.TableRef{ID: 7, NCols: 1, Map: binlog.TableMapBody(7, "test", "t", cols, []int{0})}, nil, img)
	ev.AddXID(gno)
	ev.Close()
	g := binlog.GTIDInfo{SID: testUUID, GNO: gno, LastCommitted: lc, SequenceNumber: seq, OriginalCommitUS: 1_700_000_000_000_000, ImmediateCommitUS: 1_700_000_000_000_000}
	return events(t, ev.Finalize(make([]byte, ev.FinalSize(false)), 4, 1, 1, g))
}

func ddlTrx(t *testing.T, gno uint64, q string) [][]byte {
	var ev binlog.TrxEvents
	ev.AddQuery("test", q, binlog.QueryOptions{})
	ev.Close()
	g := binlog.GTIDInfo{SID: testUUID, GNO: gno, SequenceNumber: int64(gno)}
	return events(t, ev.Finalize(make([]byte, ev.FinalSize(false)), 4, 1, 1, g))
}

// rawEvent builds an event with a valid checksum.
func rawEvent(typ byte, serverID uint32, body []byte) []byte {
	ev := make([]byte, binlog.HeaderSize, binlog.HeaderSize+len(body)+4)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[5:], serverID)
	binary.LittleEndian.PutUint32(ev[9:], uint32(binlog.HeaderSize+len(body)+4))
	ev = append(ev, body...)
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

func TestAssemblerTransactions(t *testing.T) {
	a := assembler{keep: true}
	feed := func(evs [][]byte) []*relayTrx {
		var out []*relayTrx
		for _, e := range evs {
			tr, err := a.add(e)
			if err != nil {
				t.Fatal(err)
			}
			if tr != nil {
				out = append(out, tr)
			}
		}
		return out
	}
	feed([][]byte{binlog.Rotate(0, 1, 0, "binlog.000007", 4, true), binlog.FormatDescription(0, 1, false)})
	got := feed(dmlTrx(t, 5, 2, 3))
	if len(got) != 1 {
		t.Fatalf("%d transactions", len(got))
	}
	tr := got[0]
	if tr.GTID.GNO != 5 || tr.GTID.SID != testUUID || tr.GTID.LastCommitted != 2 || tr.GTID.SequenceNumber != 3 || tr.DDL != nil ||
		len(tr.Events) != 2 || tr.SourceFile != "binlog.000007" || tr.GTID.OriginalCommitUS != 1_700_000_000_000_000 {
		t.Fatalf("trx %+v", tr)
	}
	// A partial transaction followed by a new stream is dropped.
	part := dmlTrx(t, 6, 3, 4)
	feed(part[:2])
	if got := feed([][]byte{binlog.FormatDescription(0, 1, false)}); len(got) != 0 {
		t.Fatal("a format description completed a transaction")
	}
	got = feed(append(dmlTrx(t, 6, 3, 4), ddlTrx(t, 7, "CREATE TABLE u (id INT PRIMARY KEY)")...))
	if len(got) != 2 || got[0].GTID.GNO != 6 || got[1].DDL == nil || got[1].DDL.Query != "CREATE TABLE u (id INT PRIMARY KEY)" || got[1].DDL.DB != "test" {
		t.Fatalf("after the restart: %+v", got)
	}
	if got[0].Gen == tr.Gen {
		t.Fatal("a new format description must start a new generation")
	}
}

func TestAssemblerRefusesWhatItCannotApply(t *testing.T) {
	cases := map[string][][]byte{
		"anonymous": {rawEvent(binlog.AnonymousGTIDEvent, 1, make([]byte, 42))},
		"intvar":    {rawEvent(5, 1, make([]byte, 9))},
		"statement": func() [][]byte {
			evs := dmlTrx(t, 1, 0, 1)
			var ev binlog.TrxEvents
			ev.AddQuery("test", "UPDATE t SET id = id + 1", binlog.QueryOptions{})
			ev.Close()
			stmt := events(t, ev.Finalize(make([]byte, ev.FinalSize(false)), 4, 1, 1, binlog.GTIDInfo{SID: testUUID, GNO: 9}))
			return append(evs[:2], stmt[1])
		}(),
		"compressed": {rawEvent(40, 1, make([]byte, 10))},
	}
	for name, evs := range cases {
		a := assembler{keep: true}
		var err error
		for _, e := range evs {
			if _, err = a.add(e); err != nil {
				break
			}
		}
		var u unsupported
		if !errors.As(err, &u) {
			t.Errorf("%s: got %v, want an unsupported error", name, err)
		}
	}
}

func TestMariaDBGTIDs(t *testing.T) {
	body := binary.LittleEndian.AppendUint64(nil, 42)
	body = binary.LittleEndian.AppendUint32(body, 3) // domain
	body = append(body, 0x02)                        // FL_GROUP_COMMIT_ID
	body = binary.LittleEndian.AppendUint64(body, 777)
	a := assembler{keep: true}
	if _, err := a.add(rawEvent(binlog.MariaGTIDEvent, 9, body)); err != nil {
		t.Fatal(err)
	}
	if a.cur == nil || !a.cur.Maria || a.cur.CommitID != 777 || a.cur.GTID.SID != MariaUUID(3, 9) || a.cur.GTID.GNO != 42 {
		t.Fatalf("current %+v", a.cur)
	}
	var g binlog.GTIDSet
	g.AddRange(MariaUUID(0, 1), 1, 101)
	g.AddRange(MariaUUID(0, 2), 101, 151)
	g.AddRange(MariaUUID(3, 9), 1, 43)
	g.Add(testUUID, 5)
	if s := MariaConnectState(g); s != "0-2-150,3-9-42" {
		t.Fatalf("connect state %q", s)
	}
	for pos, want := range map[string]bool{"0-1-150": true, "0-7-151": false, "3-9-42,0-2-100": true, "3-9-43": false, "5-1-1": false} {
		if got, err := MariaPosReached(g, pos); err != nil || got != want {
			t.Errorf("MariaPosReached(%s) = %v, %v", pos, got, err)
		}
	}
	if d, s, ok := mariaOf(MariaUUID(7, 1<<31)); !ok || d != 7 || s != 1<<31 {
		t.Fatal("mariaOf does not reverse MariaUUID")
	}
	if _, _, ok := mariaOf(testUUID); ok {
		t.Fatal("a MySQL UUID taken for a MariaDB one")
	}
}

func TestRelayLogFollowsWriter(t *testing.T) {
	dir := t.TempDir()
	rl, err := openRelay(dir, 200) // rotate at every boundary past 200 bytes
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	rr := rl.reader(relayPos{File: 1, Pos: 4}, stop)
	defer rr.close()
	got := make(chan []byte, 100)
	errc := make(chan error, 1)
	go func() {
		for {
			ev, _, err := rr.next()
			if err != nil {
				errc <- err
				return
			}
			got <- ev
		}
	}()
	var sent [][]byte
	for i := range 20 {
		ev := rawEvent(binlog.XIDEvent, uint32(i), make([]byte, 8))
		sent = append(sent, ev)
		if err := rl.append(ev, true); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Nothing unpublished may be read.
			select {
			case <-got:
				t.Fatal("read an event before it was flushed")
			case <-time.After(20 * time.Millisecond):
			}
		}
		if i%3 == 0 {
			if err := rl.flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rl.flush(); err != nil {
		t.Fatal(err)
	}
	for i := range sent {
		select {
		case e := <-got:
			if string(e) != string(sent[i]) {
				t.Fatalf("event %d differs", i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d never read", i)
		}
	}
	if n := len(relayFiles(dir)); n < 3 {
		t.Fatalf("%d relay files; expected rotation", n)
	}
	rl.removeBefore(rr.pos.File)
	if fs := relayFiles(dir); fs[0] != rr.pos.File {
		t.Fatalf("files %v after removing those before %d", fs, rr.pos.File)
	}
	close(stop)
	if err := <-errc; !errors.Is(err, errStopped) {
		t.Fatalf("reader ended with %v", err)
	}
	rl.close()
	if _, err := os.Stat(dir); err != nil || !strings.HasPrefix(relayName(1), relayPrefix) {
		t.Fatal(err)
	}
}
