package storage

import (
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestViewCatalog: views are created, replaced and dropped by catalog
// changes, kept across a reopen, never share a name with a table, and go
// with their database.
func TestViewCatalog(t *testing.T) {
	fs := vfs.NewMem()
	e, err := Open(Options{FS: fs, Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(c *CatalogChange) {
		t.Helper()
		if err := catalog(t, e, c); err != nil {
			t.Fatalf("%s: %v", c.Op, err)
		}
	}
	view := func(name, body string) *ViewDef {
		return &ViewDef{DB: "d", Name: name, SQL: json.RawMessage(body)}
	}
	must(&CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}})
	must(&CatalogChange{Op: "create_table", Table: &TableDef{ID: e.NewTableID(), DB: "d", Name: "t", Columns: cols, PK: []int{0}}})
	must(&CatalogChange{Op: "create_view", View: view("v", `{"select":"SELECT 1"}`)})
	must(&CatalogChange{Op: "create_view", View: view("v", `{"select":"SELECT 2"}`)}) // replaces
	must(&CatalogChange{Op: "create_view", View: view("w", `{"select":"SELECT 3"}`)})
	if err := catalog(t, e, &CatalogChange{Op: "create_view", View: view("t", `{}`)}); err == nil {
		t.Fatal("a view was created under a table's name")
	}
	if err := catalog(t, e, &CatalogChange{Op: "create_table", Table: &TableDef{ID: e.NewTableID(), DB: "d", Name: "W", Columns: cols, PK: []int{0}}}); err == nil {
		t.Fatal("a table was created under a view's name")
	}
	must(&CatalogChange{Op: "drop_view", View: &ViewDef{DB: "d", Name: "w"}})
	if err := catalog(t, e, &CatalogChange{Op: "drop_view", View: &ViewDef{DB: "d", Name: "w"}}); err == nil {
		t.Fatal("a missing view was dropped")
	}
	if _, err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	e.Close()

	e, err = Open(Options{FS: fs, Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v, ok := e.View("D", "V")
	if !ok || string(v.SQL) != `{"select":"SELECT 2"}` {
		t.Fatalf("after a reopen: %+v, %v", v, ok)
	}
	if vs := e.Views("d"); len(vs) != 1 {
		t.Fatalf("views after a reopen: %+v", vs)
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_db", DB: &DatabaseDef{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.View("d", "v"); ok {
		t.Fatal("a view outlived its database")
	}
}
