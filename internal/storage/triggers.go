package storage

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Triggers are catalog entries like views: storage keeps a trigger's
// name, its database and the id of its table, and the SQL layer's
// definition opaque. A trigger belongs to its table:
//
//   - it names the table by id, so RENAME TABLE within the database
//     carries it along; renaming a table with triggers into another
//     database is refused (a trigger lives in its table's database);
//   - a rewrite of the table under a new id (rewrite_table) moves it to
//     the new id in the same batch;
//   - DROP TABLE and DROP DATABASE drop it with the table.
//
// Trigger names are unique within a database, as in MySQL.

// TriggerDef is a trigger in the catalog.
type TriggerDef struct {
	DB      string          `json:"db"`
	Name    string          `json:"name"`
	TableID uint64          `json:"table_id"`
	SQL     json.RawMessage `json:"sql"`
}

func triggerKey(db, name string) []byte { return []byte("\x00cat/trigger/" + nameKey(db, name)) }

// prepareTriggerChange validates create_trigger and drop_trigger and adds
// their effect to b. Called with e.mu held.
func (e *Engine) prepareTriggerChange(b *Batch, c *CatalogChange) error {
	if c.Trigger == nil || c.Trigger.Name == "" {
		return fmt.Errorf("%s without a trigger", c.Op)
	}
	tr := c.Trigger
	if _, ok := e.dbs[strings.ToLower(tr.DB)]; !ok {
		return fmt.Errorf("database %q not found", tr.DB)
	}
	_, exists := e.triggers[nameKey(tr.DB, tr.Name)]
	if c.Op == "drop_trigger" {
		if !exists {
			return fmt.Errorf("trigger %s.%s not found", tr.DB, tr.Name)
		}
		return b.Delete(triggerKey(tr.DB, tr.Name))
	}
	if exists {
		return fmt.Errorf("trigger %s.%s exists", tr.DB, tr.Name)
	}
	t, ok := e.tables[tr.TableID]
	if !ok {
		return fmt.Errorf("table id %d not found", tr.TableID)
	}
	if !strings.EqualFold(t.Def.DB, tr.DB) {
		return fmt.Errorf("trigger %s.%s on a table of database %q", tr.DB, tr.Name, t.Def.DB)
	}
	v, _ := json.Marshal(tr)
	return b.Set(triggerKey(tr.DB, tr.Name), v)
}

// prepareTableTriggers adds to b what a change of table id does to its
// triggers: dropped with it, moved to its new id, or (renamed into
// another database) refused. Called with e.mu held.
func (e *Engine) prepareTableTriggers(b *Batch, c *CatalogChange) error {
	for _, tr := range e.triggers {
		if tr.TableID != c.TableID {
			continue
		}
		switch c.Op {
		case "drop_table":
			if err := b.Delete(triggerKey(tr.DB, tr.Name)); err != nil {
				return err
			}
		case "rename_table", "alter_table", "rewrite_table", "add_index", "drop_index":
			if !strings.EqualFold(c.Table.DB, tr.DB) {
				return &TriggerInWrongSchemaError{Trigger: tr.Name}
			}
			if c.Table.ID != tr.TableID {
				moved := *tr
				moved.TableID = c.Table.ID
				v, _ := json.Marshal(&moved)
				if err := b.Set(triggerKey(tr.DB, tr.Name), v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// publishTriggerChange updates the in-memory triggers after c was
// applied. Called with e.mu held.
func (e *Engine) publishTriggerChange(c *CatalogChange) {
	switch c.Op {
	case "create_trigger":
		tr := *c.Trigger
		e.triggers[nameKey(tr.DB, tr.Name)] = &tr
	case "drop_trigger":
		delete(e.triggers, nameKey(c.Trigger.DB, c.Trigger.Name))
	case "drop_db":
		for k, tr := range e.triggers {
			if strings.EqualFold(tr.DB, c.DB.Name) {
				delete(e.triggers, k)
			}
		}
	case "drop_table":
		for k, tr := range e.triggers {
			if tr.TableID == c.TableID {
				delete(e.triggers, k)
			}
		}
	case "rewrite_table":
		for k, tr := range e.triggers {
			if tr.TableID == c.TableID {
				moved := *tr
				moved.TableID = c.Table.ID
				e.triggers[k] = &moved
			}
		}
	default:
		return
	}
	e.noteTriggered()
}

// TriggerInWrongSchemaError refuses to move a table with triggers into
// another database (MySQL error 1435).
type TriggerInWrongSchemaError struct{ Trigger string }

func (e *TriggerInWrongSchemaError) Error() string {
	return fmt.Sprintf("Trigger in wrong schema (trigger %s)", e.Trigger)
}

// Triggers lists the triggers of a database, sorted by name.
func (e *Engine) Triggers(db string) []TriggerDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []TriggerDef
	for _, tr := range e.triggers {
		if strings.EqualFold(tr.DB, db) {
			out = append(out, *tr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Trigger returns a trigger by name.
func (e *Engine) Trigger(db, name string) (TriggerDef, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	tr, ok := e.triggers[nameKey(db, name)]
	if !ok {
		return TriggerDef{}, false
	}
	return *tr, true
}

// HasTriggers reports whether table id has a trigger. Lock-free: the
// fast path asks at every write.
func (e *Engine) HasTriggers(id uint64) bool {
	m := e.triggered.Load()
	return m != nil && (*m)[id]
}

// noteTriggered rebuilds the set HasTriggers reads. Called with e.mu held
// after the triggers changed.
func (e *Engine) noteTriggered() {
	m := make(map[uint64]bool, len(e.triggers))
	for _, tr := range e.triggers {
		m[tr.TableID] = true
	}
	e.triggered.Store(&m)
}
