package atomicfile

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestChecked(t *testing.T) {
	fs := vfs.NewMem()
	data := []byte(`{"host": "127.0.0.1", "port": 3306}`)
	if err := WriteChecked(fs, "/f", data); err != nil {
		t.Fatal(err)
	}
	got, err := ReadChecked(fs, "/f")
	if err != nil || string(got) != string(data) {
		t.Fatalf("read back %q, %v", got, err)
	}
	// No single flipped bit gives another valid value: either the check
	// fails, or the flip left the value intact, or (a flip in the
	// checksum line's own text, which then reads as a file written before
	// the checksum existed) the JSON no longer parses.
	f, _ := fs.Open("/f")
	raw, _ := io.ReadAll(f)
	f.Close()
	for i := range raw {
		for bit := range 8 {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			if err := Write(fs, "/g", b); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadChecked(fs, "/g"); err == nil && string(got) != string(data) && json.Valid(got) {
				t.Fatalf("flip of bit %d of byte %d read as %q", bit, i, got)
			}
		}
	}
	// A file written without the checksum is read as it is.
	if err := Write(fs, "/old", data); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadChecked(fs, "/old"); err != nil || string(got) != string(data) {
		t.Fatalf("legacy file: %q, %v", got, err)
	}
	if _, err := ReadChecked(fs, "/missing"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing file: %v", err)
	}
}

// On the OS's file system the file is its owner's only: some hold secrets.
func TestWriteIsOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.json")
	if err := Write(vfs.Default, path, []byte(`{"password":"x"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Fatalf("mode %04o, want 0600", m)
	}
}
