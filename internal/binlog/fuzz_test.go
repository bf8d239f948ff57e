package binlog

import (
	"testing"
)

// FuzzBinlogBytes feeds arbitrary bytes to every decoder of binlog data
// that comes from outside (a source's stream, a file on disk): none may
// panic, whatever it is given; each returns a value or an error.
func FuzzBinlogBytes(f *testing.F) {
	var ev TrxEvents
	ev.AddQuery("db", "CREATE TABLE x (a INT PRIMARY KEY)", QueryOptions{})
	ev.Close()
	g := GTIDInfo{SID: testSID, GNO: 7, SequenceNumber: 3, LastCommitted: 2}
	trx := ev.Finalize(nil, 4, 1, 1, g)
	f.Add(trx)
	f.Add(append(append([]byte(nil), FileMagic...), trx...))
	var set GTIDSet
	set.AddRange(testSID, 1, 100)
	f.Add(PreviousGTIDs(1, 1, 100, set))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ScanFile(b, func(*Transaction) error { return nil })
		_, _ = ScanFile(append(append([]byte(nil), FileMagic...), b...), nil)
		_, _ = ParseGTIDSet(string(b))
		for rest := b; len(rest) > 0; {
			e, err := NextEvent(rest)
			body := rest
			if err == nil {
				body = e.Body()
			}
			_, _ = ParseGTID(body)
			_, _, _ = ParseRotate(body)
			_, _ = ParsePreviousGTIDs(body)
			_, _ = ParseQuery(body)
			for _, typ := range []byte{WriteRowsEventV2, UpdateRowsEventV2, DeleteRowsEventV2} {
				_, _ = ParseRows(typ, body)
			}
			_, _ = ParseTableMap(body)
			_, _ = ParseMariaGTID(body)
			if err != nil || e.Size == 0 || int(e.Size) > len(rest) {
				break
			}
			rest = rest[e.Size:]
		}
	})
}
