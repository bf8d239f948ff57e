package storage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// A store made from another's export holds the same keys and values, its
// catalog included, and no applied position; a damaged, cut or foreign
// stream makes none.
func TestExportImport(t *testing.T) {
	fs := vfs.NewMem()
	src, err := Open(Options{FS: fs, Dir: "/src"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := catalog(t, src, &CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		if err := src.SetMeta("k"+strings.Repeat("x", i%50)+string(rune('a'+i%26)), bytes.Repeat([]byte{byte(i)}, i%200)); err != nil {
			t.Fatal(err)
		}
	}
	snap := src.NewSnapshot()
	var stream bytes.Buffer
	if err := snap.Export(&stream); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if err := Import(Options{FS: fs, Dir: "/dst"}, bytes.NewReader(stream.Bytes())); err != nil {
		t.Fatal(err)
	}
	dst, err := Open(Options{FS: fs, Dir: "/dst"})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if !dst.Transferred() || src.Transferred() {
		t.Fatalf("Transferred: %v for the copy, %v for the original", dst.Transferred(), src.Transferred())
	}
	if dst.Applied() != (binlog.Position{}) {
		t.Fatalf("the imported store has applied %v of its own log", dst.Applied())
	}
	if _, ok := dst.dbs["d"]; !ok {
		t.Fatal("the imported store lacks the catalog's database")
	}
	want, got := scan(t, src, []byte("\x00meta/k")), scan(t, dst, []byte("\x00meta/k"))
	if len(want) == 0 || len(want) != len(got) {
		t.Fatalf("%d keys imported of %d", len(got), len(want))
	}

	for name, b := range map[string][]byte{
		"cut":     stream.Bytes()[:stream.Len()/2],
		"damaged": append(append([]byte(nil), stream.Bytes()[:stream.Len()-100]...), append([]byte{0xff}, stream.Bytes()[stream.Len()-99:]...)...),
		"foreign": []byte("not a store at all"),
	} {
		if err := Import(Options{FS: fs, Dir: "/" + name}, bytes.NewReader(b)); err == nil {
			t.Errorf("a %s stream was imported", name)
		}
	}
	if err := Import(Options{FS: fs, Dir: "/dst"}, bytes.NewReader(stream.Bytes())); err == nil {
		t.Error("an import over an existing store succeeded")
	}
}

// FuzzImport: a stream from the network makes a store only when it is
// whole; anything else is an error, never a panic.
func FuzzImport(f *testing.F) {
	fs := vfs.NewMem()
	src, err := Open(Options{FS: fs, Dir: "/src"})
	if err != nil {
		f.Fatal(err)
	}
	if err := src.SetMeta("k", []byte("v")); err != nil {
		f.Fatal(err)
	}
	snap := src.NewSnapshot()
	var good bytes.Buffer
	if err := snap.Export(&good); err != nil {
		f.Fatal(err)
	}
	snap.Close()
	src.Close()
	f.Add(good.Bytes())
	f.Add(exportMagic)
	f.Add(append(append([]byte(nil), exportMagic...), 0xff, 0xff, 0xff, 0xff, 0x0f, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Import(Options{FS: vfs.NewMem(), Dir: "/dst"}, bytes.NewReader(b))
	})
}
