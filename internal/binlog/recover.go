package binlog

// What Open finds in a data directory, and what it does about it.
//
// The files present are the truth; binlog.index is a list kept for MySQL's
// tools and checked against them. The synced mark (binlog.synced) records,
// after every sync, the end of what was synced; it is written without a
// sync, so after a process crash it is exact and after an OS crash it may be
// older (or unreadable, then ignored): it never claims more than was synced.
// Inspect reads everything and changes nothing; OpenFound makes the repairs
// Inspect found safe. Every other disagreement is damage and refused, with
// a DamageError naming the file and offset.
//
//   - Files present must be contiguous. A gap is damage.
//   - Files below the first file the index lists are leftovers of a PURGE
//     interrupted between rewriting the index and removing them: removed.
//   - Files the index lists below the first file present were purged after
//     that copy of the index was written: forgotten.
//   - Files present after the last listed one, or every file when the index
//     is missing or unreadable: the index is rebuilt from the files. The one exception is
//     a last file holding no transaction and no complete header that the
//     index does not name: a crash while it was being created left it, and
//     it is removed.
//   - The last listed file missing: if the synced mark names it (or a later
//     file), transactions that were synced are gone: damage. Otherwise it
//     held nothing that was ever synced (an earlier version could leave an
//     index naming a file whose directory entry a crash took away) and it is
//     forgotten. More than one listed file missing at the end is damage.
//   - Each file's Previous_gtids must equal everything before it: the first
//     file's Previous_gtids plus the transactions of every earlier file. A
//     file that lost transactions (a stale or truncated copy) is damage.
//   - Damage (a bad checksum, a malformed or cut event) in any file but the
//     last is damage. In the last file it is a torn tail, cut back to the
//     end of the last complete transaction, only if it lies at or after
//     both the synced mark and the caller's durable position; otherwise it
//     is damage. A last file that ends cleanly but before the synced mark
//     was truncated: damage.
//   - The synced mark naming a file after the last one present: files were
//     lost at the end: damage.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
)

// DamageError is damage Open refuses to repair.
type DamageError struct {
	File   string // the file damaged or missing (a base name)
	Offset int64  // where, when it is a place in a file (-1: the whole file)
	Reason string
}

func (e *DamageError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s is damaged at offset %d: %s", e.File, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Reason)
}

// Found is what Inspect found.
type Found struct {
	opts Options
	// Files are the files the log holds after the repairs, in order.
	Files []FileInfo
	// First is the Previous_gtids of the first file: everything purged.
	First GTIDSet
	// GTIDs is every GTID in the log (First plus every transaction).
	GTIDs GTIDSet
	// End is the end of the last complete transaction of the last file
	// (zero when there is no file).
	End Position
	// Cut is how many bytes of torn tail OpenFound cuts from the last file.
	Cut int64
	// Synced is the synced mark read (zero if none or unreadable).
	Synced Position
	// LastSequence is the highest sequence_number in the last file.
	LastSequence int64
	// Notes say what OpenFound will repair, for the log.
	Notes []string

	remove       []string // files to delete (purge leftovers, an orphan)
	heads        []int64  // each file's header end (after Previous_gtids)
	lastData     []byte   // the last file's bytes, when Cut > 0
	indexDiffers bool
}

// NextFile is the number the next file would take: after every file
// present or listed.
func (f *Found) NextFile() int {
	if n := len(f.Files); n > 0 {
		return f.Files[n-1].Num + 1
	}
	return 1
}

// HeaderEnd is where the first transaction of file number num may start.
func (f *Found) HeaderEnd(num int) (int64, bool) {
	for i, fi := range f.Files {
		if fi.Num == num {
			return f.heads[i], true
		}
	}
	return 0, false
}

func (o *Options) syncedPath() string { return filepath.Join(o.Dir, o.BaseName+".synced") }

func (o *Options) parseNum(name string) (int, bool) {
	suffix, ok := strings.CutPrefix(name, o.BaseName+".")
	if !ok || len(suffix) < 6 {
		return 0, false
	}
	for _, c := range suffix {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// readIndex returns the numbers the index lists, and whether it exists.
func (o *Options) readIndex() ([]int, bool, error) {
	f, err := o.FS.Open(o.indexPath())
	if err != nil {
		if oserror.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer f.Close()
	var nums []int
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		n, ok := o.parseNum(filepath.Base(s))
		if !ok || (len(nums) > 0 && n != nums[len(nums)-1]+1) {
			return nil, true, &DamageError{File: filepath.Base(o.indexPath()), Offset: -1, Reason: fmt.Sprintf("line %d (%q) is not the next binlog file name", line, s)}
		}
		nums = append(nums, n)
	}
	return nums, true, sc.Err()
}

// Inspect reads the log in opts.Dir, checks it against the rules above and
// says what OpenFound would do, changing nothing. durable is a position the
// caller knows was synced (the store applied everything before it after it
// was synced): damage before it is never a torn tail, and a last file
// ending before it was truncated.
func Inspect(opts Options, durable Position) (*Found, error) {
	if opts.BaseName == "" {
		opts.BaseName = "binlog"
	}
	f := &Found{opts: opts}
	names, err := opts.FS.List(opts.Dir)
	if err != nil && !oserror.IsNotExist(err) {
		return nil, err
	}
	var present []int
	for _, n := range names {
		if num, ok := opts.parseNum(n); ok {
			present = append(present, num)
		}
	}
	slices.Sort(present)
	listed, haveIndex, err := opts.readIndex()
	if d := (*DamageError)(nil); errors.As(err, &d) {
		// The files are the truth: a damaged index is rebuilt from them.
		f.Notes = append(f.Notes, d.Error()+": rebuilt from the binlog files present")
		listed, haveIndex, err = nil, false, nil
		f.indexDiffers = true
	}
	if err != nil {
		return nil, err
	}
	f.Synced = readSyncedMark(opts.FS, opts.syncedPath())
	if !haveIndex && len(present) > 0 && len(f.Notes) == 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%s is missing: rebuilt from the %d binlog files present", filepath.Base(opts.indexPath()), len(present)))
	}
	if len(listed) > 0 {
		for len(present) > 0 && present[0] < listed[0] {
			name := opts.FileName(present[0])
			f.remove = append(f.remove, name)
			f.Notes = append(f.Notes, fmt.Sprintf("%s was purged but not yet removed: removed", name))
			present = present[1:]
		}
	}
	for i := 1; i < len(present); i++ {
		if present[i] != present[i-1]+1 {
			return nil, &DamageError{File: opts.FileName(present[i-1] + 1), Offset: -1, Reason: fmt.Sprintf("missing: the binlog files present jump from %s to %s", opts.FileName(present[i-1]), opts.FileName(present[i]))}
		}
	}
	last := 0
	if len(present) > 0 {
		last = present[len(present)-1]
	}
	var missingAtEnd []int
	for _, n := range listed {
		switch {
		case len(present) > 0 && n < present[0]:
			f.indexDiffers = true
			f.Notes = append(f.Notes, fmt.Sprintf("%s is listed in %s but missing; it is older than every file present, so it is treated as purged", opts.FileName(n), filepath.Base(opts.indexPath())))
		case n > last:
			missingAtEnd = append(missingAtEnd, n)
		}
	}
	if len(missingAtEnd) > 0 {
		n := missingAtEnd[0]
		if len(missingAtEnd) > 1 || f.Synced.File >= n {
			return nil, &DamageError{File: opts.FileName(n), Offset: -1, Reason: fmt.Sprintf("listed in %s and synced (up to %s:%d) but missing", filepath.Base(opts.indexPath()), opts.FileName(f.Synced.File), f.Synced.Pos)}
		}
		f.indexDiffers = true
		f.Notes = append(f.Notes, fmt.Sprintf("%s is listed in %s but does not exist; nothing in it was ever synced (it was being created when the server stopped): forgotten", opts.FileName(n), filepath.Base(opts.indexPath())))
	}
	if f.Synced.File > last && f.Synced.File > 0 && len(missingAtEnd) == 0 {
		return nil, &DamageError{File: opts.FileName(f.Synced.File), Offset: -1, Reason: fmt.Sprintf("synced up to offset %d (%s) but missing", f.Synced.Pos, filepath.Base(opts.syncedPath()))}
	}
	lastListed := 0
	if len(listed) > 0 {
		lastListed = listed[len(listed)-1]
	}
	known := durable
	if known.Less(f.Synced) {
		known = f.Synced
	}
	var all GTIDSet
	for i, num := range present {
		name := opts.FileName(num)
		data, err := readAll(opts.FS, filepath.Join(opts.Dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading binlog file %s: %w", name, err)
		}
		isLast := i == len(present)-1
		scan, serr := ScanFile(data, nil)
		if isLast && !scan.Header && scan.GTIDs.IsEmpty() && num > lastListed && known.File < num {
			// Being created when the server stopped, never listed.
			f.remove = append(f.remove, name)
			f.Notes = append(f.Notes, fmt.Sprintf("%s holds no complete header and is not in %s (a crash while it was being created): removed", name, filepath.Base(opts.indexPath())))
			break
		}
		if num > lastListed && haveIndex {
			f.indexDiffers = true
			f.Notes = append(f.Notes, fmt.Sprintf("%s was not in %s: added", name, filepath.Base(opts.indexPath())))
		}
		if serr != nil {
			cut := Position{File: num, Pos: scan.End}
			switch {
			case !isLast:
				return nil, &DamageError{File: name, Offset: scan.End, Reason: serr.Error() + " (not the last binlog file, so not a torn write)"}
			case !IsTornTail(serr):
				return nil, &DamageError{File: name, Offset: scan.End, Reason: serr.Error()}
			case cut.Less(known):
				return nil, &DamageError{File: name, Offset: scan.End, Reason: fmt.Sprintf("%v, before %s:%d, which was synced (%s) or applied to the store: not a torn write", serr, opts.FileName(known.File), known.Pos, filepath.Base(opts.syncedPath()))}
			case !scan.Header:
				return nil, &DamageError{File: name, Offset: scan.End, Reason: fmt.Sprintf("%v: the file has no complete header", serr)}
			}
			f.Cut = int64(len(data)) - scan.End
			f.lastData = data[:scan.End]
		} else if end := (Position{File: num, Pos: scan.End}); end.Less(known) && (isLast || known.File == num) {
			return nil, &DamageError{File: name, Offset: scan.End, Reason: fmt.Sprintf("ends at offset %d, but %s:%d was synced (%s) or applied to the store: the file was truncated or replaced by an older copy", scan.End, opts.FileName(known.File), known.Pos, filepath.Base(opts.syncedPath()))}
		} else if !scan.Header {
			return nil, &DamageError{File: name, Offset: scan.End, Reason: "the file has no complete header"}
		}
		if i == 0 {
			f.First = scan.Previous.Clone()
			all = scan.Previous.Clone()
		} else if !scan.Previous.Equal(all) {
			return nil, &DamageError{File: opts.FileName(num - 1), Offset: -1, Reason: fmt.Sprintf("the binlog files up to it hold GTIDs %s, but %s's Previous_gtids says %s: it lost transactions or was replaced by another copy", all, name, scan.Previous)}
		}
		all.AddSet(scan.GTIDs)
		f.Files = append(f.Files, FileInfo{Name: name, Num: num, Size: scan.End, Created: scan.Created})
		f.heads = append(f.heads, scan.HeaderEnd)
		// The last file kept (a half-created one after it is removed).
		f.LastSequence = scan.LastSequence
		f.End = Position{File: num, Pos: scan.End}
	}
	if len(f.Files) != len(listed) {
		f.indexDiffers = true
	}
	f.GTIDs = all
	return f, nil
}

// OpenFound makes the repairs f describes (removing leftover files,
// cutting a torn tail, syncing the last file, rewriting the index) and
// starts file number next (at least f.NextFile()) with Previous_gtids
// f.GTIDs plus extra (GTIDs executed but in no file).
func OpenFound(f *Found, extra GTIDSet, next int) (*Log, error) {
	opts := f.opts
	if next < f.NextFile() {
		return nil, fmt.Errorf("binlog: starting file %d, before %s", next, opts.FileName(f.NextFile()))
	}
	if err := atomicfile.MkdirAll(opts.FS, opts.Dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{opts: opts, files: append([]FileInfo(nil), f.Files...)}
	for _, name := range f.remove {
		if err := opts.FS.Remove(filepath.Join(opts.Dir, name)); err != nil && !oserror.IsNotExist(err) {
			return nil, err
		}
	}
	if n := len(f.Files); n > 0 {
		lastPath := filepath.Join(opts.Dir, f.Files[n-1].Name)
		if f.Cut > 0 {
			if err := atomicfile.Write(opts.FS, lastPath, f.lastData); err != nil {
				return nil, err
			}
		} else if err := syncFile(opts.FS, lastPath); err != nil {
			// Written under a relaxed sync setting and never synced: it
			// must be durable before the store applies what it holds.
			return nil, err
		}
	}
	var err error
	if l.mark, err = openSyncedMark(opts.FS, opts.syncedPath()); err != nil {
		return nil, err
	}
	if f.End.File != 0 {
		if err := l.mark.record(f.End); err != nil {
			return nil, err
		}
	}
	if len(f.remove) > 0 || f.indexDiffers {
		if err := l.writeIndex(); err != nil {
			return nil, err
		}
	}
	gtids := f.GTIDs.Clone()
	gtids.AddSet(extra)
	if err := l.startFile(next, time.Now(), gtids); err != nil {
		return nil, err
	}
	l.pub, l.pubCh = l.Current(), make(chan struct{})
	return l, nil
}

func syncFile(fs vfs.FS, path string) error {
	file, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// syncedMark is the synced mark file: file number (8), offset (8), CRC-32C
// of both (4), rewritten in place after every sync and never synced itself.
type syncedMark struct {
	f   vfs.File
	buf [20]byte
	at  Position // the position last recorded
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeMark(dst *[20]byte, p Position) {
	binary.BigEndian.PutUint64(dst[0:], uint64(p.File))
	binary.BigEndian.PutUint64(dst[8:], uint64(p.Pos))
	binary.BigEndian.PutUint32(dst[16:], crc32.Checksum(dst[:16], castagnoli))
}

// readSyncedMark returns the recorded position, or zero when the mark is
// missing or unreadable (an OS crash may tear it; it is only a bound).
func readSyncedMark(fs vfs.FS, path string) Position {
	data, err := readAll(fs, path)
	if err != nil || len(data) < 20 {
		return Position{}
	}
	if crc32.Checksum(data[:16], castagnoli) != binary.BigEndian.Uint32(data[16:]) {
		return Position{}
	}
	p := Position{File: int(binary.BigEndian.Uint64(data)), Pos: int64(binary.BigEndian.Uint64(data[8:]))}
	if p.File < 0 || p.Pos < 0 {
		return Position{}
	}
	return p
}

func openSyncedMark(fs vfs.FS, path string) (syncedMark, error) {
	if _, err := fs.Stat(path); oserror.IsNotExist(err) {
		var zero [20]byte
		encodeMark(&zero, Position{})
		if err := atomicfile.Write(fs, path, zero[:]); err != nil {
			return syncedMark{}, err
		}
	}
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return syncedMark{}, err
	}
	return syncedMark{f: f}, nil
}

// record writes p as synced. Called after p was synced, never before.
func (m *syncedMark) record(p Position) error {
	if m.f == nil {
		return nil
	}
	encodeMark(&m.buf, p)
	_, err := m.f.WriteAt(m.buf[:], 0)
	m.at = p
	return err
}

// lower records p, below the position recorded, and syncs the mark: the
// bytes past p are about to be cut, and a crash must not bring back a
// mark past the end of what remains.
func (m *syncedMark) lower(p Position) error {
	if err := m.record(p); err != nil || m.f == nil {
		return err
	}
	return m.f.Sync()
}

func (m *syncedMark) close() error {
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}

// IsDamage reports whether err is damage Open refused to repair.
func IsDamage(err error) bool {
	var d *DamageError
	return errors.As(err, &d)
}
