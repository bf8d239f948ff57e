package binlog

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// stepFS calls before() ahead of every operation that changes the
// filesystem (create, rename, remove, write, sync, close), so a test can
// take a crash image between any two steps.
type stepFS struct {
	vfs.FS
	before func(op string)
}

func (s *stepFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	s.before("create " + name)
	f, err := s.FS.Create(name, c)
	return s.wrap(name, f), err
}

func (s *stepFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name, c, o...)
	return s.wrap(name, f), err
}

func (s *stepFS) OpenDir(name string) (vfs.File, error) {
	f, err := s.FS.OpenDir(name)
	return s.wrap(name, f), err
}

func (s *stepFS) Rename(from, to string) error {
	s.before("rename " + from + " " + to)
	return s.FS.Rename(from, to)
}

func (s *stepFS) Remove(name string) error {
	s.before("remove " + name)
	return s.FS.Remove(name)
}

func (s *stepFS) wrap(name string, f vfs.File) vfs.File {
	if f == nil {
		return nil
	}
	return &stepFile{File: f, fs: s, name: name}
}

type stepFile struct {
	vfs.File
	fs   *stepFS
	name string
}

func (f *stepFile) Write(p []byte) (int, error) {
	f.fs.before("write " + f.name)
	return f.File.Write(p)
}

func (f *stepFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.before("writeat " + f.name)
	return f.File.WriteAt(p, off)
}

func (f *stepFile) Sync() error {
	f.fs.before("sync " + f.name)
	return f.File.Sync()
}

func (f *stepFile) SyncData() error {
	f.fs.before("syncdata " + f.name)
	return f.File.SyncData()
}

// rotationScenario runs a log through creation, synced appends, rotations
// (by size and as Open's new file) and a reopen, on fs. It returns the
// GTIDs acknowledged (synced) so far each time before() is called, through
// acked, which the scenario updates as it goes.
func rotationScenario(t *testing.T, fs vfs.FS, acked *uint64) {
	opts := Options{FS: fs, Dir: "/b", ServerID: 1}
	gno := uint64(0)
	run := func(l *Log, rotations int) {
		for range rotations {
			for range 2 {
				gno++
				writeTrx(t, l, gno)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			*acked = gno
			var g GTIDSet
			g.AddRange(testSID, 1, gno+1)
			if err := l.Rotate(time.Unix(1700000000, 0), g); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, _, err := Open(opts, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	run(l, 2)
	l.Close()
	// Reopening starts a new file too.
	l, rec, err := Open(opts, GTIDSet{}, Position{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.GTIDs.MaxGNO(testSID) != gno {
		t.Fatalf("reopen found GTIDs %s, wrote 1-%d", rec.GTIDs, gno)
	}
	run(l, 2)
	if _, err := l.Purge(l.Current().File - 1); err != nil {
		t.Fatal(err)
	}
	run(l, 1)
	l.Close()
}

// TestCrashDuringRotation takes a crash image before every filesystem step
// of creating, publishing, rotating and purging binlog files, keeping
// none, some or all of what was not synced, and requires each image to
// open without help, with every acknowledged transaction and no GTID it
// did not write, and to keep working (append, reopen).
func TestCrashDuringRotation(t *testing.T) {
	// Count the steps of one run.
	steps := 0
	var acked uint64
	rotationScenario(t, &stepFS{FS: vfs.NewCrashableMem(), before: func(string) { steps++ }}, &acked)
	if steps < 50 {
		t.Fatalf("only %d steps", steps)
	}
	// Unsynced directory entries and blocks are kept or lost independently
	// at random: several seeds per step for the partial cases.
	type variant struct{ keep, seed int }
	var variants []variant
	for _, keep := range []int{0, 100} {
		variants = append(variants, variant{keep, 0})
	}
	for seed := range 12 {
		variants = append(variants, variant{50, seed})
	}
	for step := range steps {
		for _, v := range variants {
			keep := v.keep
			mem := vfs.NewCrashableMem()
			var image *vfs.MemFS
			var op string
			var ackedAt, n uint64
			acked = 0
			fs := &stepFS{FS: mem, before: func(o string) {
				if int(n) == step {
					image = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(uint64(step), uint64(v.seed)))})
					op, ackedAt = o, acked
				}
				n++
			}}
			rotationScenario(t, fs, &acked)
			if image == nil {
				t.Fatalf("step %d not reached", step)
			}
			name := fmt.Sprintf("step %d (%s), %d%% of unsynced data kept (seed %d)", step, op, keep, v.seed)
			checkRecovers(t, name, image, ackedAt)
		}
	}
}

func checkRecovers(t *testing.T, name string, fs vfs.FS, acked uint64) {
	t.Helper()
	opts := Options{FS: fs, Dir: "/b", ServerID: 1, BaseName: "binlog"}
	// The index never names a file a crash can take away.
	listed, _, err := opts.readIndex()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, n := range listed {
		if _, err := fs.Stat("/b/" + opts.FileName(n)); err != nil {
			t.Fatalf("%s: the index names %s, which the crash took away: %v", name, opts.FileName(n), err)
		}
	}
	l, rec, err := Open(opts, GTIDSet{}, Position{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if files := l.Files(); len(files) > 1 && rec.End.File != files[len(files)-2].Num {
		t.Fatalf("%s: recovered end %v, but the last file before the new one is %s", name, rec.End, files[len(files)-2].Name)
	}
	got := rec.GTIDs.MaxGNO(testSID)
	if got < acked {
		t.Fatalf("%s: recovered GTIDs %s, but 1-%d were acknowledged", name, rec.GTIDs, acked)
	}
	gno := got + 1
	writeTrx(t, l, gno)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, rec, err = Open(opts, GTIDSet{}, Position{})
	if err != nil {
		t.Fatalf("%s: reopening after recovery: %v", name, err)
	}
	defer l.Close()
	if !rec.GTIDs.Contains(testSID, gno) {
		t.Fatalf("%s: the transaction written after recovery is gone: %s", name, rec.GTIDs)
	}
	files := l.Files()
	for i := 1; i < len(files); i++ {
		if files[i].Num != files[i-1].Num+1 {
			t.Fatalf("%s: files not contiguous: %v", name, files)
		}
	}
}
