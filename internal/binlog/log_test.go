package binlog

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeTrx appends one small DDL-like transaction to the log.
func writeTrx(t *testing.T, l *Log, gno uint64) {
	t.Helper()
	var ev TrxEvents
	ev.AddQuery("db", "CREATE TABLE x (a INT PRIMARY KEY)", QueryOptions{})
	ev.Close()
	g := GTIDInfo{SID: testSID, GNO: gno, SequenceNumber: int64(gno), LastCommitted: int64(gno) - 1}
	b := ev.Finalize(nil, uint64(l.Current().Pos), 1, 1, g)
	if err := l.Append(b); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	return b
}

func writeFile(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Sync()
	f.Close()
}

// twoFiles makes a log with two files of three transactions each and
// returns the filesystem (the log is closed). The last three transactions
// are synced only if syncTail.
func twoFiles(t *testing.T, syncTail ...bool) vfs.FS {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "/b", ServerID: 1}
	l, _, err := Open(opts, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 3; i++ {
		writeTrx(t, l, i)
	}
	var g GTIDSet
	g.AddRange(testSID, 1, 4)
	if err := l.Rotate(time.Now(), g); err != nil {
		t.Fatal(err)
	}
	for i := uint64(4); i <= 6; i++ {
		writeTrx(t, l, i)
	}
	if len(syncTail) == 0 || syncTail[0] {
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	return fs
}

func TestOpenRecoversGTIDsAndStartsNewFile(t *testing.T) {
	fs := twoFiles(t)
	l, rec, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := rec.GTIDs.String(); got != testSID.String()+":1-6" {
		t.Fatalf("recovered GTIDs %q", got)
	}
	if rec.Truncated != 0 || len(l.Files()) != 3 || l.Current().File != 3 {
		t.Fatalf("truncated %d, %d files, current %v", rec.Truncated, len(l.Files()), l.Current())
	}
}

func TestTornTailIsCut(t *testing.T) {
	fs := twoFiles(t, false)
	data := readFile(t, fs, "/b/binlog.000002")
	// Cut inside the last transaction, and append garbage.
	torn := append(append([]byte(nil), data[:len(data)-10]...), 0, 0, 0, 7, 7)
	writeFile(t, fs, "/b/binlog.000002", torn)
	l, rec, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rec.Truncated == 0 {
		t.Fatal("torn tail not cut")
	}
	if got := rec.GTIDs.String(); got != testSID.String()+":1-5" {
		t.Fatalf("GTIDs after cutting the torn transaction: %q", got)
	}
	scan, err := ScanFile(readFile(t, fs, "/b/binlog.000002"), nil)
	if err != nil || scan.End != int64(len(readFile(t, fs, "/b/binlog.000002"))) {
		t.Fatalf("cut file does not scan cleanly: %v", err)
	}
}

func TestDamageBeforeTheTailStopsOpen(t *testing.T) {
	// A flipped byte in a file that is not the last one.
	fs := twoFiles(t)
	data := readFile(t, fs, "/b/binlog.000001")
	data[len(data)/2] ^= 0x40
	writeFile(t, fs, "/b/binlog.000001", data)
	_, _, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if !IsDamage(err) || !strings.Contains(err.Error(), "binlog.000001") {
		t.Fatalf("damage in an earlier file: %v", err)
	}

	// Damage in the last file before the position the store had flushed.
	fs = twoFiles(t, false)
	data = readFile(t, fs, "/b/binlog.000002")
	full := int64(len(data))
	data[200] ^= 0x40
	writeFile(t, fs, "/b/binlog.000002", data)
	_, _, err = Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{File: 2, Pos: full})
	if !IsDamage(err) {
		t.Fatalf("damage before the durable position: %v", err)
	}
	// The same damage past the durable position is a torn tail.
	_, rec, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{File: 2, Pos: 100})
	if err != nil || rec.Truncated == 0 {
		t.Fatalf("damage past the durable position: truncated %d, %v", rec.Truncated, err)
	}
}

func TestPurgeKeepsCurrentFile(t *testing.T) {
	fs := twoFiles(t)
	l, _, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	gone, err := l.Purge(100)
	if err != nil || len(gone) != 2 || len(l.Files()) != 1 {
		t.Fatalf("purge: %v %v, %d files left", gone, err, len(l.Files()))
	}
	if _, err := fs.Stat("/b/binlog.000001"); err == nil {
		t.Fatal("purged file still on disk")
	}
	idx := string(readFile(t, fs, "/b/binlog.index"))
	if idx != "./binlog.000003\n" {
		t.Fatalf("index after purge: %q", idx)
	}
}

// CopyTo copies the log up to a position: the copy opens with exactly the
// transactions before it, whatever followed in the original.
func TestCopyToStopsAtThePosition(t *testing.T) {
	fs := vfs.NewMem()
	l, _, err := Open(Options{FS: fs, Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := uint64(1); i <= 3; i++ {
		writeTrx(t, l, i)
	}
	var g GTIDSet
	g.AddRange(testSID, 1, 4)
	if err := l.Rotate(time.Now(), g); err != nil {
		t.Fatal(err)
	}
	writeTrx(t, l, 4)
	end := l.Current()
	writeTrx(t, l, 5) // after the copy's end
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/copy", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := l.CopyTo("/copy", end); err != nil {
		t.Fatal(err)
	}
	if err := l.CopyTo("/copy", end); err == nil {
		t.Fatal("a copy over an existing one succeeded")
	}
	c, rec, err := Open(Options{FS: fs, Dir: "/copy", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := rec.GTIDs.String(); got != testSID.String()+":1-4" || rec.Truncated != 0 || rec.End != end {
		t.Fatalf("the copy: GTIDs %q, truncated %d, end %v (want %v)", got, rec.Truncated, rec.End, end)
	}
}

// TestFileIO: the log counts what it writes and syncs, per file and in
// total, the headers of new files included; a purged file's counts stay
// in the total.
func TestFileIO(t *testing.T) {
	l, _, err := Open(Options{FS: vfs.NewMem(), Dir: "/b", ServerID: 1}, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := uint64(1); i <= 3; i++ {
		writeTrx(t, l, i)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var g GTIDSet
	g.AddRange(testSID, 1, 4)
	if err := l.Rotate(time.Now(), g); err != nil {
		t.Fatal(err)
	}
	writeTrx(t, l, 4)
	files := l.Files()
	if len(files) != 2 {
		t.Fatalf("%d files", len(files))
	}
	var sum FileIO
	for _, f := range files {
		if f.IO.WriteBytes != uint64(f.Size) {
			t.Errorf("%s: %d bytes written, the file has %d", f.Name, f.IO.WriteBytes, f.Size)
		}
		if f.IO.MinWrite > f.IO.MaxWrite || f.IO.MaxWrite > f.IO.WriteNanos {
			t.Errorf("%s: write times min %d max %d sum %d", f.Name, f.IO.MinWrite, f.IO.MaxWrite, f.IO.WriteNanos)
		}
		sum.Writes += f.IO.Writes
		sum.WriteBytes += f.IO.WriteBytes
		sum.Syncs += f.IO.Syncs
	}
	// The first file: its header, three transactions and the Rotate
	// event written; synced at its start, by Sync and by Rotate. The
	// second: its header, one transaction; synced at its start.
	if files[0].IO.Writes != 5 || files[0].IO.Syncs != 3 || files[1].IO.Writes != 2 || files[1].IO.Syncs != 1 {
		t.Errorf("writes and syncs: %+v, %+v", files[0].IO, files[1].IO)
	}
	total := l.IO()
	if total.Writes != sum.Writes || total.WriteBytes != sum.WriteBytes || total.Syncs != sum.Syncs {
		t.Errorf("total %+v, the files' %+v", total, sum)
	}
	if _, err := l.Purge(files[1].Num); err != nil {
		t.Fatal(err)
	}
	if l.IO() != total {
		t.Errorf("the total changed when a file was purged: %+v, was %+v", l.IO(), total)
	}
}
