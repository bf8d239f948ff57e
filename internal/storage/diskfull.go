package storage

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A full or read-only disk, as the store sees it.
//
// Pebble retries a failed flush or compaction at once, and logs each
// failure: with the disk full that was a loop of tens of thousands of
// errors a minute using most of a core. The store's filesystem is wrapped
// so that a write, sync or create the disk refuses (IsWriteRefused: no
// space, no quota, or a filesystem remounted read-only) waits before
// returning the error, longer each time (backoff, from 50 ms up to 5 s),
// which paces Pebble's retries; the wait ends at the first success. The
// log gets one line when an episode starts and one when the disk takes
// writes again; messages that repeat meanwhile are counted, not printed.
//
// Nothing is lost meanwhile: with the WAL off a failed flush leaves the
// memtable in memory, and once Pebble's memtables are full, applying
// stalls until a flush succeeds, so commits wait and then resume by
// themselves.

const (
	noSpaceFirstWait = 50 * time.Millisecond
	noSpaceMaxWait   = 5 * time.Second
)

// noSpaceFS paces operations that fail for lack of space.
type noSpaceFS struct {
	vfs.FS
	log *episodeLogger
	mu  sync.Mutex
	// wait is the next wait after a failure; zero when the last
	// operation succeeded.
	wait time.Duration
	// sleep is time.Sleep (replaced in tests).
	sleep func(time.Duration)
}

// IsWriteRefused reports whether err is a write the disk refused and may
// take later: for lack of space (a full disk, an exhausted quota), or
// because the filesystem is read-only (remounted so by an operator, or by
// the kernel after an I/O error, until it is made writable again).
func IsWriteRefused(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// outcome records the result of one operation and paces failures.
func (fs *noSpaceFS) outcome(op string, err error) error {
	if err == nil || !IsWriteRefused(err) {
		if err == nil {
			fs.mu.Lock()
			was := fs.wait
			fs.wait = 0
			fs.mu.Unlock()
			if was != 0 {
				fs.log.ended()
			}
		}
		return err
	}
	fs.mu.Lock()
	wait := fs.wait
	if wait == 0 {
		wait = noSpaceFirstWait
		fs.log.started(op, err)
	}
	fs.wait = min(2*wait, noSpaceMaxWait)
	fs.mu.Unlock()
	fs.sleep(wait)
	return err
}

func (fs *noSpaceFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err := fs.outcome("create "+name, err); err != nil {
		return nil, err
	}
	return &noSpaceFile{File: f, fs: fs, name: name}, nil
}

func (fs *noSpaceFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if err := fs.outcome("create "+newname, err); err != nil {
		return nil, err
	}
	return &noSpaceFile{File: f, fs: fs, name: newname}, nil
}

type noSpaceFile struct {
	vfs.File
	fs   *noSpaceFS
	name string
}

func (f *noSpaceFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fs.outcome("write "+f.name, err)
}

func (f *noSpaceFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.fs.outcome("write "+f.name, err)
}

func (f *noSpaceFile) Sync() error { return f.fs.outcome("sync "+f.name, f.File.Sync()) }

func (f *noSpaceFile) SyncData() error { return f.fs.outcome("sync "+f.name, f.File.SyncData()) }

func (f *noSpaceFile) Preallocate(off, n int64) error {
	return f.fs.outcome("preallocate "+f.name, f.File.Preallocate(off, n))
}

// episodeLogger passes Pebble's messages on, except during a disk-full
// episode, when repeats are counted and reported when it ends.
type episodeLogger struct {
	inner pebble.Logger
	warn  func(msg string) // where episodes are reported
	mu    sync.Mutex
	in    bool
	muted int
}

func (l *episodeLogger) Infof(format string, args ...any) { l.inner.Infof(format, args...) }

func (l *episodeLogger) Errorf(format string, args ...any) {
	l.mu.Lock()
	if l.in {
		l.muted++
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.inner.Errorf(format, args...)
}

func (l *episodeLogger) Fatalf(format string, args ...any) { l.inner.Fatalf(format, args...) }

func (l *episodeLogger) started(op string, err error) {
	l.mu.Lock()
	if l.in {
		l.mu.Unlock()
		return
	}
	l.in, l.muted = true, 0
	l.mu.Unlock()
	why := "full"
	if errors.Is(err, syscall.EROFS) {
		why = "read-only"
	}
	l.warn(fmt.Sprintf("the store's disk is %s (%s: %v): flushes and compactions are retried with a growing pause, commits wait once memory for unflushed writes is used up; store errors are not repeated until the disk takes writes again", why, op, err))
}

func (l *episodeLogger) ended() {
	l.mu.Lock()
	if !l.in {
		l.mu.Unlock()
		return
	}
	n := l.muted
	l.in, l.muted = false, 0
	l.mu.Unlock()
	l.warn(fmt.Sprintf("the store can write again (%d store errors were not shown meanwhile)", n))
}
