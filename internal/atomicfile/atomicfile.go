// Package atomicfile replaces small files atomically: the new content is
// written to a temporary file, synced, renamed over the old one, and the
// directory is synced, so after a crash the file holds either the old or
// the new content, never a mix.
package atomicfile

import (
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Write replaces path with data on fs.
func Write(fs vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
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

// MkdirAll creates dir and any missing parents, syncing the parent of each
// directory it creates, so the new directories survive a crash.
func MkdirAll(fs vfs.FS, dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(fs, parent, perm); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return err
	}
	return SyncDir(fs, parent)
}
