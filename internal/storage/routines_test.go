package storage

import (
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestRoutineCatalog: stored procedures are created and dropped by
// catalog changes, unique by name (in any case) within a database, kept
// across a reopen, and go with their database.
func TestRoutineCatalog(t *testing.T) {
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
	proc := func(db, name string) *RoutineDef {
		return &RoutineDef{DB: db, Name: name, SQL: json.RawMessage(`{"body":"BEGIN END"}`)}
	}
	must(&CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}})
	must(&CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "o"}})
	must(&CatalogChange{Op: "create_routine", Routine: proc("d", "p")})
	must(&CatalogChange{Op: "create_routine", Routine: proc("d", "q")})
	must(&CatalogChange{Op: "create_routine", Routine: proc("o", "p")}) // another database: another name space
	for _, c := range []*CatalogChange{
		{Op: "create_routine", Routine: proc("d", "P")},                // the name is taken
		{Op: "create_routine", Routine: proc("nope", "x")},             // no such database
		{Op: "drop_routine", Routine: &RoutineDef{DB: "d", Name: "x"}}, // no such routine
		{Op: "create_routine"},                                         // nothing
	} {
		if err := catalog(t, e, c); err == nil {
			t.Fatalf("%s %+v was accepted", c.Op, c.Routine)
		}
	}
	if _, err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	e.Close()

	e, err = Open(Options{FS: fs, Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := e.Routine("D", "Q"); !ok || r.Name != "q" || string(r.SQL) != `{"body":"BEGIN END"}` {
		t.Fatalf("after a reopen: %+v %v", r, ok)
	}
	if rs := e.Routines("d"); len(rs) != 2 || rs[0].Name != "p" || rs[1].Name != "q" {
		t.Fatalf("Routines(d) = %+v", rs)
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_routine", Routine: &RoutineDef{DB: "d", Name: "P"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Routine("d", "p"); ok {
		t.Fatal("a dropped procedure is still there")
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_db", DB: &DatabaseDef{Name: "o"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Routine("o", "p"); ok || len(e.Routines("o")) != 0 {
		t.Fatal("a procedure outlived its database")
	}
	if _, err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e2, err := Open(Options{FS: fs, Dir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if len(e2.Routines("o")) != 0 || len(e2.Routines("d")) != 1 {
		t.Fatalf("after drops and a reopen: %+v %+v", e2.Routines("o"), e2.Routines("d"))
	}
}
