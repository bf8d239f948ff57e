package commit

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A data directory as one of three stops left it, plus a copy of it from
// the middle of the run (for stale copies of files).
type stoppedDir struct {
	fs, mid *vfs.MemFS
	late    *vfs.MemFS      // a copy from near the end (stale binlog files)
	rows    map[int64]int64 // every acknowledged commit's effect
	maxGNO  uint64          // the highest GTID number acknowledged
}

const recoveryTrx = 60

// stopDir commits recoveryTrx transactions with sync_binlog=1 and small
// binlog files, and stops: "clean" closes everything; "kill" takes the
// image a kill -9 leaves (everything written is there, the store has
// flushed only the first half); "purged" also purges the first files
// before the kill.
func stopDir(t *testing.T, stop string) stoppedDir {
	t.Helper()
	mem := vfs.NewCrashableMem()
	cfg := newConfig(1, false, 2048)
	p, s, log, _, err := Open(OpenOptions{FS: mem, Dir: "/data", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tab := createTable(t, p, s)
	d := stoppedDir{rows: map[int64]int64{}}
	for i := range int64(recoveryTrx) {
		old := map[int64]int64{}
		if v, ok := d.rows[i%25]; ok {
			old[i%25] = v
		}
		if err := put(p, s, tab, map[int64]int64{i % 25: i}, old); err != nil {
			t.Fatal(err)
		}
		d.rows[i%25] = i
		if i == recoveryTrx/2 {
			if _, err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			d.mid = mem.CrashClone(vfs.CrashCloneCfg{})
		}
		if i == recoveryTrx-3 {
			d.late = mem.CrashClone(vfs.CrashCloneCfg{})
		}
		if stop == "purged" && i == recoveryTrx*3/4 {
			if _, err := log.Purge(log.Files()[2].Num); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.maxGNO = p.GTIDExecuted().MaxGNO(crashUUID)
	if stop == "clean" {
		p.Close()
		s.Close()
		d.fs = mem
		return d
	}
	// A process crash loses nothing the OS has, synced or not.
	d.fs = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
	p.Close()
	s.Close()
	return d
}

func fileNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func binlogNames(t *testing.T, fs vfs.FS) []string {
	var out []string
	for _, n := range fileNames(t, fs, "/data") {
		if strings.HasPrefix(n, "binlog.0") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) < 4 {
		t.Fatalf("only %d binlog files", len(out))
	}
	return out
}

func readMem(t *testing.T, fs vfs.FS, path string) []byte {
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

func writeMem(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// damage is one way to damage a data directory. It returns false when it
// does not apply (a stale copy identical to the file).
type damage struct {
	name  string
	file  string // what a refusal must name
	apply func(t *testing.T, d stoppedDir) bool
	// mustRecover: this damage loses nothing, so a refusal is a failure.
	mustRecover bool
}

func flipAt(path string, where func(n int) int) func(t *testing.T, d stoppedDir) bool {
	return func(t *testing.T, d stoppedDir) bool {
		b := readMem(t, d.fs, path)
		b[where(len(b))] ^= 0x10
		writeMem(t, d.fs, path, b)
		return true
	}
}

func damages(t *testing.T, d stoppedDir) []damage {
	names := binlogNames(t, d.fs)
	first, middle, last := "/data/"+names[0], "/data/"+names[len(names)/2], "/data/"+names[len(names)-1]
	var out []damage
	for _, f := range []struct{ role, path string }{{"first", first}, {"middle", middle}, {"last", last}} {
		base := f.path[len("/data/"):]
		out = append(out,
			damage{name: f.role + " binlog file missing", file: base, apply: func(t *testing.T, d stoppedDir) bool {
				return d.fs.Remove(f.path) == nil
			}},
			damage{name: f.role + " binlog file truncated in the middle", file: base, apply: func(t *testing.T, d stoppedDir) bool {
				b := readMem(t, d.fs, f.path)
				writeMem(t, d.fs, f.path, b[:len(b)/2])
				return true
			}},
			damage{name: f.role + " binlog file stale copy", file: base, apply: func(t *testing.T, d stoppedDir) bool {
				old, err := d.late.Open(f.path)
				if err != nil {
					return false
				}
				b, _ := io.ReadAll(old)
				old.Close()
				if string(b) == string(readMem(t, d.fs, f.path)) {
					return false
				}
				writeMem(t, d.fs, f.path, b)
				return true
			}},
		)
		for _, at := range []struct {
			name  string
			where func(n int) int
		}{{"in its header", func(int) int { return 30 }}, {"a third in", func(n int) int { return n / 3 }}, {"two thirds in", func(n int) int { return 2 * n / 3 }}, {"near its end", func(n int) int { return n - 30 }}} {
			out = append(out, damage{name: f.role + " binlog file, one bit flipped " + at.name, file: base, apply: flipAt(f.path, at.where)})
		}
	}
	for _, name := range []string{"binlog.index", "binlog.synced"} {
		path := "/data/" + name
		out = append(out,
			damage{name: name + " missing", file: name, mustRecover: true, apply: func(t *testing.T, d stoppedDir) bool { return d.fs.Remove(path) == nil }},
			damage{name: name + " truncated", file: name, mustRecover: true, apply: func(t *testing.T, d stoppedDir) bool {
				b := readMem(t, d.fs, path)
				writeMem(t, d.fs, path, b[:len(b)/2])
				return true
			}},
			damage{name: name + " one bit flipped", file: name, mustRecover: true, apply: flipAt(path, func(n int) int { return n / 2 })},
			damage{name: name + " stale copy", file: name, mustRecover: true, apply: func(t *testing.T, d stoppedDir) bool {
				writeMem(t, d.fs, path, readMem(t, d.mid, path))
				return true
			}},
		)
	}
	out = append(out,
		damage{name: "store manifest marker missing", file: "store", apply: func(t *testing.T, d stoppedDir) bool {
			for _, n := range fileNames(t, d.fs, "/data/store") {
				if strings.HasPrefix(n, "marker.manifest.") {
					if err := d.fs.Remove("/data/store/" + n); err != nil {
						t.Fatal(err)
					}
				}
			}
			return true
		}},
		damage{name: "store directory missing", file: "store", apply: func(t *testing.T, d stoppedDir) bool {
			return d.fs.RemoveAll("/data/store") == nil
		}},
		damage{name: "store stale copy", file: "store", apply: func(t *testing.T, d stoppedDir) bool {
			if err := d.fs.RemoveAll("/data/store"); err != nil {
				t.Fatal(err)
			}
			if err := d.fs.MkdirAll("/data/store", 0o755); err != nil {
				t.Fatal(err)
			}
			for _, n := range fileNames(t, d.mid, "/data/store") {
				writeMem(t, d.fs, "/data/store/"+n, readMem(t, d.mid, "/data/store/"+n))
			}
			return true
		}},
	)
	return out
}

// TestRecoveryMatrix damages a data directory left by a clean stop, a
// kill -9 with the store behind and a kill -9 after a purge, in every file
// recovery reads (each binlog role, the index, the synced mark, the store)
// and every way (missing, truncated in the middle, one bit flipped at
// several offsets, a stale copy), then opens it. Each cell must either
// recover every acknowledged commit exactly and go on issuing new GTIDs
// after the highest one acknowledged, or refuse with an error naming the
// damaged file; never start with less, or reuse a GTID.
func TestRecoveryMatrix(t *testing.T) {
	counts := map[string]int{}
	for _, stop := range []string{"clean", "kill", "purged"} {
		for i, dmg := range damages(t, stopDir(t, stop)) {
			t.Run(fmt.Sprintf("%s/%s", stop, dmg.name), func(t *testing.T) {
				d := stopDir(t, stop)
				if !damages(t, d)[i].apply(t, d) {
					counts["not applicable"]++
					t.Skip("does not apply here")
				}
				outcome := checkRecoveryCell(t, d, dmg)
				counts[outcome]++
				t.Log(outcome)
			})
		}
	}
	t.Logf("outcomes: %v", counts)
}

func checkRecoveryCell(t *testing.T, d stoppedDir, dmg damage) string {
	t.Helper()
	cfg := newConfig(1, false, 2048)
	p, s, _, rec, err := Open(OpenOptions{FS: d.fs, Dir: "/data", Config: cfg})
	if err != nil {
		if !IsRefusal(err) {
			t.Fatalf("failed without a refusal: %v", err)
		}
		if dmg.mustRecover {
			t.Fatalf("refused, though this damage loses nothing: %v", err)
		}
		if !strings.Contains(err.Error(), dmg.file) {
			t.Fatalf("the refusal does not name %s: %v", dmg.file, err)
		}
		return "refused"
	}
	defer func() { p.Close(); s.Close() }()
	tab, ok := s.Table("db", "kv")
	if !ok {
		t.Fatalf("started without the table (notes %v)", rec.Notes)
	}
	got := readAllRows(t, s, tab)
	if !mapsEqual(got, d.rows) {
		t.Fatalf("started with different rows (replayed %d, cut %d bytes, notes %v):\n got %v\nwant %v", rec.Replayed, rec.Truncated, rec.Notes, got, d.rows)
	}
	if m := p.GTIDExecuted().MaxGNO(crashUUID); m < d.maxGNO {
		t.Fatalf("executed GTIDs end at %d, %d were acknowledged", m, d.maxGNO)
	}
	if err := put(p, s, tab, map[int64]int64{1000: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if g := p.GTIDExecuted().MaxGNO(crashUUID); g <= d.maxGNO {
		t.Fatalf("a new commit took GTID number %d, already issued", g)
	}
	return "recovered"
}

// TestStoreAheadUnderRelaxedSync: with sync_binlog=0 an OS crash can lose
// a binlog tail the store had flushed. The server starts with the store's
// data, and the GTIDs only the store holds stay executed, so none is
// issued again. The same store recorded as synced is refused.
func TestStoreAheadUnderRelaxedSync(t *testing.T) {
	for _, relaxed := range []bool{true, false} {
		mem := vfs.NewCrashableMem()
		sb := int64(1)
		if relaxed {
			sb = 0
		}
		p, s, _, _, err := Open(OpenOptions{FS: mem, Dir: "/data", Config: newConfig(sb, false, 1<<20)})
		if err != nil {
			t.Fatal(err)
		}
		tab := createTable(t, p, s)
		rows := map[int64]int64{}
		for i := range int64(20) {
			if err := put(p, s, tab, map[int64]int64{i: i}, nil); err != nil {
				t.Fatal(err)
			}
			rows[i] = i
		}
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		maxGNO := p.GTIDExecuted().MaxGNO(crashUUID)
		image := mem.CrashClone(vfs.CrashCloneCfg{}) // an OS crash: nothing unsynced survives
		p.Close()
		s.Close()
		// Whatever the once-a-second sync reached, the binlog loses its
		// tail, and the synced mark its last updates, as an OS crash can
		// do to both (relaxed), or a damaged disk (synced).
		b := readMem(t, image, "/data/binlog.000001")
		writeMem(t, image, "/data/binlog.000001", b[:len(b)-200])
		if err := image.Remove("/data/binlog.synced"); err != nil {
			t.Fatal(err)
		}
		p, s, _, rec, err := Open(OpenOptions{FS: image, Dir: "/data", Config: newConfig(sb, false, 1<<20)})
		if !relaxed {
			if !IsRefusal(err) || !strings.Contains(err.Error(), "store") {
				t.Fatalf("a synced store ahead of the binlog: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !rec.StoreAhead || rec.StoreOnly.IsEmpty() {
			t.Fatalf("store ahead not reported: %+v", rec)
		}
		tab2, _ := s.Table("db", "kv")
		if got := readAllRows(t, s, tab2); !mapsEqual(got, rows) {
			t.Fatalf("rows %v, want %v", got, rows)
		}
		if err := put(p, s, tab2, map[int64]int64{100: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if g := p.GTIDExecuted().MaxGNO(crashUUID); g != maxGNO+1 {
			t.Fatalf("new commit took GTID %d, want %d (the store held up to %d; binlog-only set %s)", g, maxGNO+1, maxGNO, rec.StoreOnly)
		}
		p.Close()
		s.Close()
	}
}
