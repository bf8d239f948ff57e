// Package atomicfile replaces small files atomically: the new content is
// written to a temporary file, synced, renamed over the old one, and the
// directory is synced, so after a crash the file holds either the old or
// the new content, never a mix.
package atomicfile

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Write replaces path with data on fs. On the OS's file system the file
// is readable by its owner only (0600): some of these files hold secrets
// (a replication source's password).
func Write(fs vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if fs == vfs.Default {
		// Before anything is written; the rename keeps the mode.
		if err := os.Chmod(tmp, 0o600); err != nil {
			f.Close()
			return err
		}
	}
	// vfs.File.Write may modify what it is given (Pebble's in-memory
	// filesystem does, under the race detector): write a copy.
	if _, err := f.Write(append([]byte(nil), data...)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(fs, filepath.Dir(path))
}

// SyncDir makes a directory's entries durable.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MkdirAll creates dir (with perm) and any missing parents (0755),
// syncing the parent of each directory it creates, so the new directories
// survive a crash.
func MkdirAll(fs vfs.FS, dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(fs, parent, 0o755); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return err
	}
	return SyncDir(fs, parent)
}

// checkedTrailer starts the last line of a file written by WriteChecked.
const checkedTrailer = "\n// crc32c "

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteChecked replaces path with data followed by a line holding data's
// CRC-32C, so that ReadChecked finds damage instead of reading another
// value (a flipped bit in a host name is still a valid host name).
func WriteChecked(fs vfs.FS, path string, data []byte) error {
	out := append(append([]byte(nil), data...), fmt.Sprintf("%s%08x\n", checkedTrailer, crc32.Checksum(data, castagnoli))...)
	return Write(fs, path, out)
}

// ReadChecked reads a file written by WriteChecked and verifies it. A file
// without the checksum line (written before it existed) is returned as it
// is.
func ReadChecked(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	tag := []byte(checkedTrailer[1:])
	i := bytes.LastIndex(b, tag)
	if i < 0 {
		return b, nil
	}
	if i == 0 || b[i-1] != '\n' {
		return nil, fmt.Errorf("%s is damaged (its checksum line is)", path)
	}
	data, line := b[:i-1], strings.TrimSpace(string(b[i+len(tag):]))
	sum, err := strconv.ParseUint(line, 16, 32)
	if err != nil || uint32(sum) != crc32.Checksum(data, castagnoli) {
		return nil, fmt.Errorf("%s is damaged (checksum mismatch)", path)
	}
	return data, nil
}
