package storage

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/row"
)

// TestTriggerCatalog: triggers are created and dropped by catalog
// changes, unique by name within a database, kept across a reopen, follow
// their table through a rename and a rewrite under a new id, refuse to
// leave their database, and go with their table and their database.
func TestTriggerCatalog(t *testing.T) {
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
	trigger := func(db, name string, table uint64) *TriggerDef {
		return &TriggerDef{DB: db, Name: name, TableID: table, SQL: json.RawMessage(`{"body":"SET @x = 1"}`)}
	}
	must(&CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "d"}})
	must(&CatalogChange{Op: "create_db", DB: &DatabaseDef{Name: "o"}})
	tid, uid, oid := e.NewTableID(), e.NewTableID(), e.NewTableID()
	must(&CatalogChange{Op: "create_table", Table: &TableDef{ID: tid, DB: "d", Name: "t", Columns: cols, PK: []int{0}}})
	must(&CatalogChange{Op: "create_table", Table: &TableDef{ID: uid, DB: "d", Name: "u", Columns: cols, PK: []int{0}}})
	must(&CatalogChange{Op: "create_table", Table: &TableDef{ID: oid, DB: "o", Name: "t", Columns: cols, PK: []int{0}}})
	must(&CatalogChange{Op: "create_trigger", Trigger: trigger("d", "t_bi", tid)})
	must(&CatalogChange{Op: "create_trigger", Trigger: trigger("d", "u_bi", uid)})
	must(&CatalogChange{Op: "create_trigger", Trigger: trigger("o", "t_bi", oid)}) // another database: another name space
	for _, c := range []*CatalogChange{
		{Op: "create_trigger", Trigger: trigger("d", "T_BI", uid)},     // the name is taken
		{Op: "create_trigger", Trigger: trigger("d", "x", oid)},        // a table of another database
		{Op: "create_trigger", Trigger: trigger("d", "x", 999)},        // no such table
		{Op: "drop_trigger", Trigger: &TriggerDef{DB: "d", Name: "x"}}, // no such trigger
	} {
		if err := catalog(t, e, c); err == nil {
			t.Fatalf("%s %+v was accepted", c.Op, c.Trigger)
		}
	}
	if !e.HasTriggers(tid) || !e.HasTriggers(oid) {
		t.Fatal("HasTriggers misses a table with a trigger")
	}

	// A rename keeps the trigger; a move to another database is refused.
	renamed := &TableDef{ID: tid, DB: "d", Name: "t2", Columns: cols, PK: []int{0}}
	must(&CatalogChange{Op: "rename_table", TableID: tid, Table: renamed})
	moved := &TableDef{ID: tid, DB: "o", Name: "t3", Columns: cols, PK: []int{0}}
	var wrong *TriggerInWrongSchemaError
	if err := catalog(t, e, &CatalogChange{Op: "rename_table", TableID: tid, Table: moved}); !errors.As(err, &wrong) {
		t.Fatalf("a table with a trigger moved to another database: %v", err)
	}
	// A rewrite under a new id takes the trigger along.
	nid := e.NewTableID()
	rewritten := &TableDef{ID: nid, DB: "d", Name: "t2", Columns: cols, PK: []int{0}}
	fill, err := FillImage(e.Preview(rewritten), make([]row.Value, len(cols)))
	if err != nil {
		t.Fatal(err)
	}
	must(&CatalogChange{Op: "rewrite_table", TableID: tid, Table: rewritten, Sources: []int{0, 1, 2}, Fill: fill})
	if tr, ok := e.Trigger("d", "t_bi"); !ok || tr.TableID != nid {
		t.Fatalf("after a rewrite: %+v %v, want table %d", tr, ok, nid)
	}
	if e.HasTriggers(tid) || !e.HasTriggers(nid) {
		t.Fatal("HasTriggers did not follow the rewrite")
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
	if tr, ok := e.Trigger("D", "T_BI"); !ok || tr.TableID != nid || string(tr.SQL) != `{"body":"SET @x = 1"}` {
		t.Fatalf("after a reopen: %+v %v", tr, ok)
	}
	if !e.HasTriggers(nid) || !e.HasTriggers(uid) {
		t.Fatal("HasTriggers after a reopen")
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_table", TableID: uid}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Trigger("d", "u_bi"); ok || e.HasTriggers(uid) {
		t.Fatal("a trigger outlived its table")
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_trigger", Trigger: &TriggerDef{DB: "d", Name: "t_bi", TableID: nid}}); err != nil {
		t.Fatal(err)
	}
	if e.HasTriggers(nid) || len(e.Triggers("d")) != 0 {
		t.Fatal("a dropped trigger is still there")
	}
	if err := catalog(t, e, &CatalogChange{Op: "drop_db", DB: &DatabaseDef{Name: "o"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Trigger("o", "t_bi"); ok || e.HasTriggers(oid) {
		t.Fatal("a trigger outlived its database")
	}
}
