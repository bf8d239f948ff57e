package storage

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// fullFS fails file creation and writes with ENOSPC while full is set, and
// counts the attempts.
type fullFS struct {
	vfs.FS
	full     atomic.Bool
	attempts atomic.Int64
}

func (f *fullFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.full.Load() {
		f.attempts.Add(1)
		return nil, &pathErr{name}
	}
	return f.FS.Create(name, c)
}

type pathErr struct{ name string }

func (e *pathErr) Error() string { return "create " + e.name + ": no space left on device" }
func (e *pathErr) Unwrap() error { return syscall.ENOSPC }

type countingLogger struct {
	mu     sync.Mutex
	errors int
	warns  []string
}

func (l *countingLogger) Infof(string, ...any) {}
func (l *countingLogger) Errorf(string, ...any) {
	l.mu.Lock()
	l.errors++
	l.mu.Unlock()
}
func (l *countingLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (l *countingLogger) warn(msg string) {
	l.mu.Lock()
	l.warns = append(l.warns, msg)
	l.mu.Unlock()
}

// TestDiskFullFlushBacksOff: while the disk is full, Pebble's flush is
// retried with growing pauses (a handful of attempts a second, not a busy
// loop), the log says so once, and the flush completes by itself when
// space returns, with the data intact.
func TestDiskFullFlushBacksOff(t *testing.T) {
	ffs := &fullFS{FS: vfs.NewMem()}
	lg := &countingLogger{}
	e, err := Open(Options{FS: ffs, Dir: "/s", Logger: lg, Warn: lg.warn})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := e.NewBatch()
	if err := b.Set([]byte("\x02k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := e.Apply([]*Batch{b}, []binlog.Position{{File: 1, Pos: 100}}, true); err != nil {
		t.Fatal(err)
	}
	ffs.full.Store(true)
	done := make(chan error, 1)
	go func() { _, err := e.Flush(); done <- err }()
	deadline := time.Now().Add(30 * time.Second)
	for ffs.attempts.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	first := ffs.attempts.Load()
	if first == 0 {
		t.Fatal("the flush never tried to write")
	}
	time.Sleep(1500 * time.Millisecond)
	attempts := ffs.attempts.Load() - first
	ffs.full.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("flush after space returned: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("flush did not complete after space returned")
	}
	// 50+100+200+400+800 ms: about five attempts in 1.5 s; without the
	// pauses Pebble makes thousands.
	t.Logf("%d attempts in 1.5 s of a full disk after the first", attempts)
	if attempts > 20 {
		t.Fatalf("%d more attempts to create a file in 1.5 s of a full disk", attempts)
	}
	lg.mu.Lock()
	warns, errs := lg.warns, lg.errors
	lg.mu.Unlock()
	if len(warns) != 2 || !strings.Contains(warns[0], "disk is full") || !strings.Contains(warns[1], "can write again") {
		t.Fatalf("episode messages: %q", warns)
	}
	if errs > 1 {
		t.Fatalf("%d store errors logged during the episode", errs)
	}
	if v, ok, err := get(e.db, []byte("\x02k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("data after the episode: %q %v %v", v, ok, err)
	}
}
