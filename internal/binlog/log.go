package binlog

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
)

// Log is the set of binlog files in a directory plus the file being
// appended to.
//
// Invariants:
//   - Files are numbered by a counter, contiguously. The files present are
//     the truth; the index file (binlog.index, for MySQL's tools) lists them
//     in order, is replaced atomically (write, sync, rename, sync dir)
//     whenever the list changes, and is checked against the files at Open
//     (recover.go says what each disagreement means).
//   - A file is created, its header written and synced and its directory
//     entry synced before the index names it or a transaction is appended to
//     it, so no crash leaves the index naming a file that does not exist.
//   - Every file starts with the magic number, a format description and a
//     Previous_gtids event, and holds whole transactions only once synced.
//     After every sync the synced end is written to the synced mark
//     (binlog.synced, not itself synced): a lower bound on what is durable
//     that survives a process crash, so Open can tell damage in bytes that
//     were synced (refuse) from a torn tail that never was (cut).
//   - Open always starts a new file, so appends never reopen an old one.
//   - The appending side (Append, Sync, Rotate) belongs to one goroutine, the
//     commit pipeline's flusher. The file list has its own mutex and is never
//     held across I/O that commits wait on, so SHOW BINARY LOGS and PURGE do
//     not block commits and are not blocked by them.
type Log struct {
	opts Options

	// Appending side, owned by the flusher.
	cur     vfs.File
	curNum  int
	curSize int64
	mark    syncedMark

	listMu sync.Mutex
	files  []FileInfo // in order; the last one is the current file
	io     FileIO     // every file's, purged ones too

	// The published end: readers (dump threads) may read up to it. The
	// flusher publishes after each group's write (and sync, when the group
	// is synced), always at a transaction boundary.
	pubMu  sync.Mutex
	pub    Position
	pubCh  chan struct{} // closed (and replaced) at every Publish
	closed bool
}

// Options configure a Log.
type Options struct {
	FS       vfs.FS
	Dir      string
	BaseName string // "binlog"
	ServerID uint32
}

// FileInfo describes one binlog file.
type FileInfo struct {
	Name string
	Num  int
	Size int64
	// Created is when the file was started (from its format description).
	Created time.Time
	// IO is what this process wrote and synced to it.
	IO FileIO
}

// FileIO counts and times the writes and syncs of binlog files
// (performance_schema's file summaries). Reads are not counted: dump
// threads read the files on their own.
type FileIO struct {
	Writes, WriteBytes             uint64
	WriteNanos, MinWrite, MaxWrite uint64
	Syncs                          uint64
	SyncNanos, MinSync, MaxSync    uint64
}

// noteWrite counts a write of n bytes that took d.
func (f *FileIO) noteWrite(n int, d time.Duration) {
	f.Writes++
	f.WriteBytes += uint64(n)
	f.WriteNanos += uint64(d)
	f.MinWrite, f.MaxWrite = minMax(f.Writes, f.MinWrite, f.MaxWrite, uint64(d))
}

// noteSync counts a sync that took d.
func (f *FileIO) noteSync(d time.Duration) {
	f.Syncs++
	f.SyncNanos += uint64(d)
	f.MinSync, f.MaxSync = minMax(f.Syncs, f.MinSync, f.MaxSync, uint64(d))
}

func minMax(n, lo, hi, v uint64) (uint64, uint64) {
	if n == 1 || v < lo {
		lo = v
	}
	return lo, max(hi, v)
}

// Position is a place in the log.
type Position struct {
	File int // file number
	Pos  int64
}

// Less orders positions.
func (p Position) Less(o Position) bool {
	return p.File < o.File || (p.File == o.File && p.Pos < o.Pos)
}

// FileName is the name of binlog file number n.
func (o *Options) FileName(n int) string { return fmt.Sprintf("%s.%06d", o.BaseName, n) }

func (o *Options) indexPath() string { return filepath.Join(o.Dir, o.BaseName+".index") }

// Recovered is what Open learned from the existing files.
type Recovered struct {
	// GTIDs is every GTID in the log (Previous_gtids of the first file plus
	// all transactions).
	GTIDs GTIDSet
	// LastSequence is the highest sequence_number found in the last file.
	LastSequence int64
	// End is the end of the last complete transaction before the new file.
	End Position
	// Truncated is how many bytes of torn tail were cut.
	Truncated int64
}

// Open opens (or creates) the log in opts.Dir: Inspect, then OpenFound
// with the next file numbered after the last one present. durable is a
// position the caller knows was durable (see Inspect).
func Open(opts Options, extra GTIDSet, durable Position) (*Log, Recovered, error) {
	f, err := Inspect(opts, durable)
	if err != nil {
		return nil, Recovered{}, err
	}
	l, err := OpenFound(f, extra, f.NextFile())
	if err != nil {
		return nil, Recovered{}, err
	}
	rec := Recovered{GTIDs: f.GTIDs.Clone(), LastSequence: f.LastSequence, End: f.End, Truncated: f.Cut}
	rec.GTIDs.AddSet(extra)
	if rec.End.File == 0 {
		rec.End = l.Current()
	}
	return l, rec, nil
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeIndex replaces the index atomically. Callers hold listMu.
func (l *Log) writeIndex() error {
	var b bytes.Buffer
	for _, f := range l.files {
		fmt.Fprintf(&b, "./%s\n", f.Name)
	}
	return atomicfile.Write(l.opts.FS, l.opts.indexPath(), b.Bytes())
}

// HeaderLen is the size of a new file's header for a Previous_gtids set g.
func HeaderLen(g GTIDSet) int64 {
	return int64(FileHeaderSize + FormatDescriptionSize + PreviousGTIDsSize(g))
}

// startFile creates file num with its header and makes it durable, then
// adds it to the index. The order matters: the file and its directory entry
// are synced before the index names it, so an index never names a file that
// a crash can take away, and the synced mark names the new file only once
// the index does.
func (l *Log) startFile(num int, now time.Time, prev GTIDSet) error {
	name := l.opts.FileName(num)
	f, err := l.opts.FS.Create(filepath.Join(l.opts.Dir, name), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	ts := uint32(now.Unix())
	hdr := append([]byte(nil), FileMagic...)
	hdr = append(hdr, FormatDescription(ts, l.opts.ServerID, false)...)
	hdr = append(hdr, PreviousGTIDs(ts, l.opts.ServerID, uint32(HeaderLen(prev)), prev)...)
	var io FileIO
	start := time.Now()
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return err
	}
	io.noteWrite(len(hdr), time.Since(start))
	start = time.Now()
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	io.noteSync(time.Since(start))
	if err := atomicfile.SyncDir(l.opts.FS, l.opts.Dir); err != nil {
		f.Close()
		return err
	}
	l.cur, l.curNum, l.curSize = f, num, int64(len(hdr))
	l.listMu.Lock()
	l.files = append(l.files, FileInfo{Name: name, Num: num, Size: l.curSize, Created: now, IO: io})
	l.io.noteWrite(len(hdr), time.Duration(io.WriteNanos))
	l.io.noteSync(time.Duration(io.SyncNanos))
	err = l.writeIndex()
	l.listMu.Unlock()
	if err != nil {
		return err
	}
	return l.mark.record(l.Current())
}

// Current is the position the next Append writes at.
func (l *Log) Current() Position { return Position{File: l.curNum, Pos: l.curSize} }

// Append writes p at the end of the current file (no sync).
func (l *Log) Append(p []byte) error {
	start := time.Now()
	n, err := l.cur.WriteAt(p, l.curSize)
	took := time.Since(start)
	l.curSize += int64(n)
	if err != nil {
		return err
	}
	l.listMu.Lock()
	cur := &l.files[len(l.files)-1]
	cur.Size = l.curSize
	cur.IO.noteWrite(n, took)
	l.io.noteWrite(n, took)
	l.listMu.Unlock()
	return nil
}

// syncCurrent syncs the current file, its data only or all of it, and
// counts the sync.
func (l *Log) syncCurrent(dataOnly bool) error {
	start := time.Now()
	var err error
	if dataOnly {
		err = l.cur.SyncData()
	} else {
		err = l.cur.Sync()
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	l.listMu.Lock()
	l.files[len(l.files)-1].IO.noteSync(took)
	l.io.noteSync(took)
	l.listMu.Unlock()
	return nil
}

// IO returns what this process wrote and synced to every binlog file.
func (l *Log) IO() FileIO {
	l.listMu.Lock()
	defer l.listMu.Unlock()
	return l.io
}

// Sync makes everything appended so far durable (fdatasync, as MySQL syncs
// its binlog: the file's size is data for this purpose), then records the
// synced end in the synced mark.
func (l *Log) Sync() error {
	if err := l.syncCurrent(true); err != nil {
		return err
	}
	return l.mark.record(l.Current())
}

// Rotate ends the current file with a Rotate event, syncs and closes it, and
// starts the next file with prev as its Previous_gtids.
func (l *Log) Rotate(now time.Time, prev GTIDSet) error {
	next := l.opts.FileName(l.curNum + 1)
	ev := Rotate(uint32(now.Unix()), l.opts.ServerID, uint32(l.curSize)+uint32(RotateSize(next)), next, FileHeaderSize, false)
	if err := l.Append(ev); err != nil {
		return err
	}
	if err := l.syncCurrent(false); err != nil {
		return err
	}
	if err := l.mark.record(l.Current()); err != nil {
		return err
	}
	if err := l.cur.Close(); err != nil {
		return err
	}
	return l.startFile(l.curNum+1, now, prev)
}

// Rewind cuts the current file back to pos after an append that failed
// part-way (a full disk), so the next append continues from a transaction
// boundary. pos must be in the current file, at or after its last synced
// end. The bytes are cut with the file's descriptor; a file without one
// can only be "rewound" to where it already ends.
func (l *Log) Rewind(pos Position) error {
	if pos.File != l.curNum || pos.Pos > l.curSize {
		return fmt.Errorf("binlog: cannot rewind %s to %d (it is at %s:%d)", l.Name(pos.File), pos.Pos, l.Name(l.curNum), l.curSize)
	}
	if pos.Pos < l.curSize {
		fd := l.cur.Fd()
		if fd == vfs.InvalidFd {
			return fmt.Errorf("binlog: cannot cut %s back to %d: no file descriptor", l.Name(l.curNum), pos.Pos)
		}
		if err := syscall.Ftruncate(int(fd), pos.Pos); err != nil {
			return fmt.Errorf("binlog: cutting %s back to %d: %w", l.Name(l.curNum), pos.Pos, err)
		}
		if _, err := syscall.Seek(int(fd), pos.Pos, io.SeekStart); err != nil {
			return fmt.Errorf("binlog: cutting %s back to %d: %w", l.Name(l.curNum), pos.Pos, err)
		}
	}
	l.curSize = pos.Pos
	l.listMu.Lock()
	l.files[len(l.files)-1].Size = l.curSize
	l.listMu.Unlock()
	return nil
}

// CutBack makes pos the end of the log, across files: the files after
// pos's are removed and pos's file is cut at pos and appended to again.
// It is how a cluster node drops a raft log tail that a new leader
// overwrote (raftrecord.go); pos must be at an entry boundary of a file
// present, and nothing past it may have been published.
//
// The later files' removal is made durable before the cut, and the cut
// before CutBack returns, so a crash leaves either the old tail or the
// new end, never a later file after a cut one.
func (l *Log) CutBack(pos Position) error {
	if pos.File > l.curNum || pos.File == l.curNum && pos.Pos > l.curSize {
		return fmt.Errorf("binlog: cannot cut back to %s:%d, past the end (%s:%d)", l.Name(pos.File), pos.Pos, l.Name(l.curNum), l.curSize)
	}
	l.listMu.Lock()
	keep := 0
	for keep < len(l.files) && l.files[keep].Num <= pos.File {
		keep++
	}
	if keep == 0 || l.files[keep-1].Num != pos.File || pos.Pos < FileHeaderSize {
		l.listMu.Unlock()
		return fmt.Errorf("binlog: cannot cut back to %s:%d: no such file", l.Name(pos.File), pos.Pos)
	}
	later := append([]FileInfo(nil), l.files[keep:]...)
	l.listMu.Unlock()
	if pos.Less(l.mark.at) {
		if err := l.mark.lower(pos); err != nil {
			return err
		}
	}
	if pos.File != l.curNum {
		if err := l.cur.Close(); err != nil {
			return err
		}
		l.cur = nil
		for i := len(later) - 1; i >= 0; i-- {
			if err := l.opts.FS.Remove(l.Path(later[i].Num)); err != nil && !oserror.IsNotExist(err) {
				return err
			}
		}
		if err := atomicfile.SyncDir(l.opts.FS, l.opts.Dir); err != nil {
			return err
		}
		l.listMu.Lock()
		l.files = l.files[:keep]
		err := l.writeIndex()
		l.listMu.Unlock()
		if err != nil {
			return err
		}
		f, err := l.opts.FS.OpenReadWrite(l.Path(pos.File), vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		l.cur, l.curNum = f, pos.File
		st, err := f.Stat()
		if err != nil {
			return err
		}
		l.curSize = st.Size()
	}
	if pos.Pos < l.curSize {
		if err := l.truncateCurrent(pos.Pos); err != nil {
			return err
		}
	}
	l.curSize = pos.Pos
	l.listMu.Lock()
	l.files[len(l.files)-1].Size = l.curSize
	l.listMu.Unlock()
	return nil
}

// truncateCurrent cuts the current file to size and syncs it: with the
// file's descriptor when it has one, otherwise (an in-memory file system)
// by rewriting the kept bytes atomically and reopening the file.
func (l *Log) truncateCurrent(size int64) error {
	if fd := l.cur.Fd(); fd != vfs.InvalidFd {
		if err := syscall.Ftruncate(int(fd), size); err != nil {
			return fmt.Errorf("binlog: cutting %s back to %d: %w", l.Name(l.curNum), size, err)
		}
		return l.cur.Sync()
	}
	kept := make([]byte, size)
	if _, err := l.cur.ReadAt(kept, 0); err != nil {
		return fmt.Errorf("binlog: cutting %s back to %d: %w", l.Name(l.curNum), size, err)
	}
	if err := l.cur.Close(); err != nil {
		return err
	}
	l.cur = nil
	path := l.Path(l.curNum)
	if err := atomicfile.Write(l.opts.FS, path, kept); err != nil {
		return err
	}
	f, err := l.opts.FS.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	l.cur = f
	return nil
}

// RotateEventSize is the size of the Rotate event that ends the current file.
func (l *Log) RotateEventSize() int64 { return int64(RotateSize(l.opts.FileName(l.curNum + 1))) }

// Publish makes everything appended so far readable by Published's
// callers. Called by the appending goroutine at transaction boundaries.
func (l *Log) Publish() {
	l.pubMu.Lock()
	if l.pub != l.Current() && !l.closed {
		l.pub = l.Current()
		close(l.pubCh)
		l.pubCh = make(chan struct{})
	}
	l.pubMu.Unlock()
}

// PublishAt makes the log readable by Published's callers up to p, a
// transaction boundary at or before the end, and no further: a cluster
// node publishes what it has applied (committed entries), never a tail
// raft may still cut. Called by the appending goroutine.
func (l *Log) PublishAt(p Position) {
	l.pubMu.Lock()
	if l.pub != p && !l.closed {
		l.pub = p
		close(l.pubCh)
		l.pubCh = make(chan struct{})
	}
	l.pubMu.Unlock()
}

// Published returns the published end, a channel closed when it next
// moves (or the log closes), and whether the log is closed. Safe from any
// goroutine; never waits for the appending side.
func (l *Log) Published() (Position, <-chan struct{}, bool) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	return l.pub, l.pubCh, l.closed
}

// Num returns the number of the listed file called name.
func (l *Log) Num(name string) (int, bool) {
	l.listMu.Lock()
	defer l.listMu.Unlock()
	for _, f := range l.files {
		if f.Name == name {
			return f.Num, true
		}
	}
	return 0, false
}

// OpenFile opens binlog file number n for reading.
func (l *Log) OpenFile(n int) (vfs.File, error) { return l.opts.FS.Open(l.Path(n)) }

// Close closes the current file and wakes Published's waiters.
func (l *Log) Close() error {
	l.pubMu.Lock()
	if !l.closed && l.pubCh != nil {
		l.closed = true
		close(l.pubCh)
	}
	l.pubMu.Unlock()
	merr := l.mark.close()
	if l.cur == nil {
		return merr
	}
	err := l.cur.Close()
	l.cur = nil
	if err == nil {
		err = merr
	}
	return err
}

// Files returns a copy of the file list. Safe from any goroutine.
func (l *Log) Files() []FileInfo {
	l.listMu.Lock()
	defer l.listMu.Unlock()
	return append([]FileInfo(nil), l.files...)
}

// Purge removes files before file number keep (never the current file) and
// returns their names. Safe from any goroutine; it does not wait for commits.
func (l *Log) Purge(keep int) ([]string, error) {
	l.listMu.Lock()
	var gone []FileInfo
	for len(l.files) > 1 && l.files[0].Num < keep {
		gone = append(gone, l.files[0])
		l.files = l.files[1:]
	}
	var err error
	if len(gone) > 0 {
		err = l.writeIndex()
	}
	l.listMu.Unlock()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range gone {
		if err := l.opts.FS.Remove(filepath.Join(l.opts.Dir, f.Name)); err != nil {
			return names, err
		}
		names = append(names, f.Name)
	}
	return names, nil
}

// CopyTo writes a copy of the log up to end into dir (which must exist):
// every file before end's whole, end's file up to end, the index naming
// them and a synced mark at end, all synced. end must be a published
// position (Published): whole transactions, written, and never cut back.
// A file purged while it is copied fails the copy. Safe from any
// goroutine.
func (l *Log) CopyTo(dir string, end Position) error {
	var names []string
	for _, f := range l.Files() {
		if f.Num > end.File {
			break
		}
		n := int64(-1)
		if f.Num == end.File {
			n = end.Pos
		}
		if err := copyFile(l.opts.FS, l.Path(f.Num), filepath.Join(dir, f.Name), n); err != nil {
			return err
		}
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("binlog: no file up to %s to copy", l.Name(end.File))
	}
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "./%s\n", n)
	}
	copyOpts := l.opts
	copyOpts.Dir = dir
	if err := atomicfile.Write(l.opts.FS, copyOpts.indexPath(), b.Bytes()); err != nil {
		return err
	}
	var mark [20]byte
	encodeMark(&mark, end)
	if err := atomicfile.Write(l.opts.FS, copyOpts.syncedPath(), mark[:]); err != nil {
		return err
	}
	return atomicfile.SyncDir(l.opts.FS, dir)
}

// copyFile copies the first n bytes of src (all of it if n < 0) to a new
// file dst, and syncs it. An existing dst is left alone: an error.
func copyFile(fs vfs.FS, src, dst string, n int64) error {
	if _, err := fs.Stat(dst); !oserror.IsNotExist(err) {
		return fmt.Errorf("binlog: %s exists already", dst)
	}
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if n >= 0 {
		r = io.LimitReader(in, n)
	}
	copied, err := io.Copy(out, r)
	if err == nil && n >= 0 && copied != n {
		err = fmt.Errorf("binlog: %s holds %d bytes, %d were to be copied", src, copied, n)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Path is the full path of binlog file number n.
func (l *Log) Path(n int) string { return filepath.Join(l.opts.Dir, l.opts.FileName(n)) }

// ReadFile reads the whole of binlog file number n.
func (l *Log) ReadFile(n int) ([]byte, error) { return readAll(l.opts.FS, l.Path(n)) }

// Name is the name of file number n.
func (l *Log) Name(n int) string { return l.opts.FileName(n) }

// PreviousGTIDs reads the Previous_gtids event at the start of file n.
func (l *Log) PreviousGTIDs(n int) (GTIDSet, error) {
	f, err := l.OpenFile(n)
	if err != nil {
		return GTIDSet{}, err
	}
	defer f.Close()
	pos := int64(FileHeaderSize)
	for range 3 {
		var hdr [HeaderSize]byte
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return GTIDSet{}, err
		}
		h := ParseHeader(hdr[:])
		if h.Size < HeaderSize+ChecksumSize || h.Size > 1<<30 {
			return GTIDSet{}, fmt.Errorf("binlog file %s: bad event size %d at %d", l.Name(n), h.Size, pos)
		}
		if h.Type == PreviousGTIDsEvent {
			data := make([]byte, h.Size)
			if _, err := f.ReadAt(data, pos); err != nil {
				return GTIDSet{}, err
			}
			ev, err := NextEvent(data)
			if err != nil {
				return GTIDSet{}, fmt.Errorf("binlog file %s: %w", l.Name(n), err)
			}
			return ParsePreviousGTIDs(ev.Body())
		}
		pos += int64(h.Size)
	}
	return GTIDSet{}, fmt.Errorf("binlog file %s has no Previous_gtids event", l.Name(n))
}
