package storage

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Stored procedures are catalog entries like views: storage keeps a
// routine's name and database, and the SQL layer's definition opaque.
// Names are unique within a database, whatever their case, as MySQL has
// them; DROP DATABASE drops the database's routines.

// RoutineDef is a stored procedure in the catalog.
type RoutineDef struct {
	DB   string          `json:"db"`
	Name string          `json:"name"`
	SQL  json.RawMessage `json:"sql"`
}

func routineKey(db, name string) []byte { return []byte("\x00cat/routine/" + nameKey(db, name)) }

// prepareRoutineChange validates create_routine, alter_routine (a new
// definition of a routine that exists) and drop_routine and adds their
// effect to b. Called with e.mu held.
func (e *Engine) prepareRoutineChange(b *Batch, c *CatalogChange) error {
	r := c.Routine
	if r == nil || r.Name == "" {
		return fmt.Errorf("%s without a routine", c.Op)
	}
	if _, ok := e.dbs[strings.ToLower(r.DB)]; !ok {
		return fmt.Errorf("database %q not found", r.DB)
	}
	_, exists := e.routines[nameKey(r.DB, r.Name)]
	if c.Op == "drop_routine" {
		if !exists {
			return fmt.Errorf("procedure %s.%s not found", r.DB, r.Name)
		}
		return b.Delete(routineKey(r.DB, r.Name))
	}
	if exists != (c.Op == "alter_routine") {
		if exists {
			return fmt.Errorf("procedure %s.%s exists", r.DB, r.Name)
		}
		return fmt.Errorf("procedure %s.%s not found", r.DB, r.Name)
	}
	v, _ := json.Marshal(r)
	return b.Set(routineKey(r.DB, r.Name), v)
}

// prepareDatabaseRoutines adds to b the deletion of database db's
// routines. Called with e.mu held.
func (e *Engine) prepareDatabaseRoutines(b *Batch, db string) error {
	for _, r := range e.routines {
		if strings.EqualFold(r.DB, db) {
			if err := b.Delete(routineKey(r.DB, r.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishRoutineChange updates the in-memory routines after c was
// applied. Called with e.mu held.
func (e *Engine) publishRoutineChange(c *CatalogChange) {
	switch c.Op {
	case "create_routine", "alter_routine":
		r := *c.Routine
		e.routines[nameKey(r.DB, r.Name)] = &r
	case "drop_routine":
		delete(e.routines, nameKey(c.Routine.DB, c.Routine.Name))
	case "drop_db":
		for k, r := range e.routines {
			if strings.EqualFold(r.DB, c.DB.Name) {
				delete(e.routines, k)
			}
		}
	}
}

// Routines lists the stored procedures of a database, sorted by name.
func (e *Engine) Routines(db string) []RoutineDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []RoutineDef
	for _, r := range e.routines {
		if strings.EqualFold(r.DB, db) {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Routine returns a stored procedure by name (in any case).
func (e *Engine) Routine(db, name string) (RoutineDef, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.routines[nameKey(db, name)]
	if !ok {
		return RoutineDef{}, false
	}
	return *r, true
}
