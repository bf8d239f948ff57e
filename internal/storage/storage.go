// Package storage keeps Lockstep's tables in Pebble with Pebble's WAL
// disabled: the binlog is the only log.
//
// Invariants:
//   - Every Pebble commit made by Apply also records the binlog position it
//     reflects (the end of its last transaction) under metaApplied, so after
//     a crash the position read at Open is the end of the last transaction
//     whose effects reached a flushed memtable, and nothing after it did.
//     Everything after it is replayed from the binlog by the caller, once.
//   - Batches are applied in binlog order by one goroutine (the commit
//     pipeline's committer, or replay), so a Pebble snapshot always sees a
//     prefix of the binlog: snapshot reads are consistent in commit order.
//   - A row's value is its row image (package row); its key is the table's
//     primary-key prefix plus the memcomparable key of its primary key
//     columns. A secondary index entry maps the index key (plus the primary
//     key unless the index is unique and the key has no NULL) to the row key.
//   - A table without a primary key gives each row a hidden key: a 128-bit
//     hash of the image it was inserted with plus a slot number. The key
//     stays with the row when it is updated, as InnoDB's hidden row id does,
//     so a statement waiting for the row's lock finds it changed, not gone.
//     A row event carries only images, and replay and replicas write from
//     images alone, so rows are also found by what they are now: an image
//     index maps the hash of each row's current image plus an entry number
//     (0..m-1, no gap) to its key. Every choice (the slot an insert takes,
//     the row a change of an image acts on: the first of the image's rows
//     in insertion order, which a statement's scan visits first) is a
//     function of the data before it, so replay and replicas make the same
//     choices the source made. Locks and write sets name the key without
//     its slot and the image hashes touched, which serialises every pair of
//     transactions whose choices could interfere.
//
// Layout:
//
//	0x01 tableID(8) 0x01 pk                  -> row image
//	0x01 tableID(8) 0x03 hash(16) slot(4)    -> row image (no primary key)
//	0x01 tableID(8) 0x04 hash(16) n(4)       -> row key (image index, no primary key)
//	0x01 tableID(8) 0x05 seq(8)              -> row key (insertion order, no primary key: order.go)
//	0x01 tableID(8) 0x06 hash(16) slot(4)    -> seq (the row's place in that order)
//	0x01 tableID(8) 0x02 indexID(4) ik [pk]  -> pk
//	0x00 "meta/applied"                      -> binlog file(8) pos(8) flags(1)
//	0x00 "meta/gtidmax/" uuid(16)            -> highest GTID number applied
//	0x00 "meta/" name                        -> value (server uuid, ...)
//	0x00 "cat/db/" name                      -> DatabaseDef (JSON)
//	0x00 "cat/tab/" id(8)                    -> TableDef (JSON)
//	0x00 "cat/view/" lower(db) "." lower(name) -> ViewDef (JSON)
//	0x00 "cat/trigger/" lower(db) "." lower(name) -> TriggerDef (JSON)
//	0x00 "cat/routine/" lower(db) "." lower(name) -> RoutineDef (JSON)
//	0x00 "cat/accounts"                      -> accounts (opaque, set_accounts)
package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

const (
	prefixMeta  = 0x00
	prefixTable = 0x01
	kindPrimary = 0x01
	kindIndex   = 0x02
	kindKeyless = 0x03
	kindImage   = 0x04

	groupHashLen  = 16
	keylessKeyLen = 1 + 8 + 1 + groupHashLen + 4
)

var metaAppliedKey = []byte("\x00meta/applied")

// appliedRelaxed flags a metaApplied record written by an Apply whose
// binlog bytes were not known to be synced.
const appliedRelaxed = 1

const gtidMaxPrefix = "\x00meta/gtidmax/"

func gtidMaxKey(sid binlog.UUID) []byte { return append([]byte(gtidMaxPrefix), sid[:]...) }

// DatabaseDef is a database (schema) in the catalog.
type DatabaseDef struct {
	Name      string `json:"name"`
	Collation uint16 `json:"collation"`
}

// IndexDef is a secondary index.
type IndexDef struct {
	ID      uint32 `json:"id"`
	Name    string `json:"name"`
	Columns []int  `json:"columns"`
	Unique  bool   `json:"unique,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// TableDef is a table in the catalog. SQL is opaque to storage: the SQL
// layer keeps what it needs there (defaults, comments, ...).
type TableDef struct {
	ID        uint64          `json:"id"`
	DB        string          `json:"db"`
	Name      string          `json:"name"`
	Columns   []row.Column    `json:"columns"`
	PK        []int           `json:"pk"`
	Indexes   []IndexDef      `json:"indexes,omitempty"`
	Collation uint16          `json:"collation,omitempty"`
	SQL       json.RawMessage `json:"sql,omitempty"`
	NextIndex uint32          `json:"next_index,omitempty"`
}

// ViewDef is a view in the catalog: a name, and the SQL layer's
// definition, opaque to storage (a view holds no rows).
type ViewDef struct {
	DB   string          `json:"db"`
	Name string          `json:"name"`
	SQL  json.RawMessage `json:"sql"`
}

// Table is an open table: its definition plus derived encoders. Immutable;
// DDL replaces it.
type Table struct {
	Def     *TableDef
	coll    row.Collator
	prefix  []byte // 0x01 id
	rowPfx  []byte // prefix + kindPrimary (kindKeyless without a primary key)
	mapBody []byte
}

// Engine is the storage engine.
type Engine struct {
	db   *pebble.DB
	coll row.Collator

	mu     sync.RWMutex
	dbs    map[string]*DatabaseDef // lower-case name
	tables map[uint64]*Table
	byName map[string]*Table   // lower(db) + "." + lower(name)
	views  map[string]*ViewDef // lower(db) + "." + lower(name)
	// triggers are keyed like views; triggered is the set of the ids of
	// tables with a trigger, copied on change (triggers.go).
	triggers  map[string]*TriggerDef
	routines  map[string]*RoutineDef // keyed like views (routines.go)
	triggered atomic.Pointer[map[uint64]bool]
	nextID    uint64
	// catalogVersion counts the catalog changes published (a cache of
	// something derived from the catalog compares it).
	catalogVersion atomic.Uint64

	// seqNext is each keyless table's next insertion sequence number,
	// once known (order.go).
	seqMu   sync.Mutex
	seqNext map[uint64]uint64

	applied       atomic.Pointer[binlog.Position]
	openedRelaxed bool // the applied record read at Open was written relaxed

	// AccountsChanged, if set before use, is called after a set_accounts
	// change is applied (its accounts are then Accounts()). It must not
	// block.
	AccountsChanged func()
}

// Options configure an Engine.
type Options struct {
	FS       vfs.FS
	Dir      string
	Collator row.Collator
	// CacheSize is Pebble's block cache size in bytes.
	CacheSize int64
	// Logger receives Pebble's messages (quiet if nil). Pebble's Fatalf
	// must not return.
	Logger Logger
	// Warn receives the start and end of a disk-full episode (diskfull.go);
	// nil sends them to Logger's Errorf.
	Warn func(msg string)
	// noFilters leaves the Bloom filters out (a benchmark's baseline).
	noFilters bool
	// indexBlockSize, if set, replaces indexBlockSize (a benchmark's
	// baseline).
	indexBlockSize int
}

// indexBlockSize is the most a table's index block holds before Pebble
// splits it into a two-level index. Pebble's default (the data block's
// 4 KiB) gives a table of a few megabytes a two-level index, so a point
// read looks up three blocks in the block cache (top index, index, data)
// instead of two; each lookup takes a cache shard's lock and reference
// counts that both cores contend for. At 256 KiB (as CockroachDB sets
// it) a table of up to about 64 MiB keeps one index block, binary
// searched in place once cached.
const indexBlockSize = 256 << 10

// Open opens or creates the store.
func Open(o Options) (*Engine, error) {
	if o.Collator == nil {
		o.Collator = row.BinaryCollator{}
	}
	var logger pebble.Logger = quietLogger{}
	if o.Logger != nil {
		logger = o.Logger
	}
	el := &episodeLogger{inner: logger, warn: o.Warn}
	if el.warn == nil {
		el.warn = func(msg string) { logger.Errorf("%s", msg) }
	}
	popts := &pebble.Options{
		FS:           &noSpaceFS{FS: o.FS, log: el, sleep: time.Sleep},
		DisableWAL:   true,
		MemTableSize: 64 << 20,
		Logger:       el,
	}
	// A Bloom filter in every table lets a point read (a row by its
	// primary key, a unique-key check) skip the tables that do not hold
	// the key after one filter probe, instead of seeking each one's index
	// and data blocks: 10 bits a key, about 1% false positives. Tables
	// written before have none and are read as before.
	for i := range popts.Levels {
		if !o.noFilters {
			popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
		popts.Levels[i].IndexBlockSize = indexBlockSize
		if o.indexBlockSize > 0 {
			popts.Levels[i].IndexBlockSize = o.indexBlockSize
		}
	}
	if o.CacheSize > 0 {
		c := pebble.NewCache(o.CacheSize)
		defer c.Unref()
		popts.Cache = c
	}
	if err := checkManifestMarker(o.FS, o.Dir); err != nil {
		return nil, err
	}
	db, err := pebble.Open(o.Dir, popts)
	if err != nil {
		return nil, err
	}
	e := &Engine{db: db, coll: o.Collator, dbs: map[string]*DatabaseDef{}, tables: map[uint64]*Table{}, byName: map[string]*Table{}, views: map[string]*ViewDef{}, triggers: map[string]*TriggerDef{}, routines: map[string]*RoutineDef{}, nextID: 1, seqNext: map[uint64]uint64{}}
	if err := e.loadCatalog(); err != nil {
		db.Close()
		return nil, err
	}
	if err := e.sequenceUnordered(); err != nil {
		db.Close()
		return nil, err
	}
	var pos binlog.Position
	if v, c, err := db.Get(metaAppliedKey); err == nil {
		if len(v) >= 16 {
			pos = binlog.Position{File: int(binary.BigEndian.Uint64(v)), Pos: int64(binary.BigEndian.Uint64(v[8:]))}
		}
		// A 16-byte record (written before the flag existed) counts as
		// synced, the stricter reading.
		e.openedRelaxed = len(v) > 16 && v[16]&appliedRelaxed != 0
		c.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		db.Close()
		return nil, err
	}
	e.applied.Store(&pos)
	return e, nil
}

// checkManifestMarker refuses a store directory that holds files but no
// manifest marker: Pebble would start an empty store there, and the data
// it held would be silently gone.
func checkManifestMarker(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil // no directory yet: a new store
	}
	var other string
	for _, n := range names {
		if strings.HasPrefix(n, "marker.manifest.") {
			return nil
		}
		if strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".sst") {
			other = n
		}
	}
	if other != "" {
		return fmt.Errorf("the store in %s holds %s but no manifest marker (marker.manifest.*): it is damaged; refusing to open it as a new, empty store", dir, other)
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// Close flushes and closes the store.
func (e *Engine) Close() error {
	if err := e.db.Flush(); err != nil {
		e.db.Close()
		return err
	}
	return e.db.Close()
}

// Applied is the binlog position of the last applied batch.
func (e *Engine) Applied() binlog.Position { return *e.applied.Load() }

// OpenedRelaxed says the position read at Open was recorded by an Apply
// whose binlog bytes were not known to be synced: the binlog may have lost
// transactions the store holds.
func (e *Engine) OpenedRelaxed() bool { return e.openedRelaxed }

// GTIDHighWater returns, per source UUID, the highest GTID number of a
// transaction the store holds (as of the last flush).
func (e *Engine) GTIDHighWater() (map[binlog.UUID]uint64, error) {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte(gtidMaxPrefix), UpperBound: row.PrefixEnd([]byte(gtidMaxPrefix))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[binlog.UUID]uint64{}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(gtidMaxPrefix)+16 || len(v) != 8 {
			return nil, fmt.Errorf("store: bad GTID record %x", k)
		}
		var sid binlog.UUID
		copy(sid[:], k[len(gtidMaxPrefix):])
		out[sid] = binary.BigEndian.Uint64(v)
	}
	return out, it.Error()
}

// DiskBytes is the space the store's files take on disk (Pebble's
// tables, manifests and the rest; its WAL is off).
func (e *Engine) DiskBytes() uint64 { return e.db.Metrics().DiskSpaceUsage() }

// Flush makes everything applied so far durable and returns the position
// that is now durable.
func (e *Engine) Flush() (binlog.Position, error) {
	pos := e.Applied()
	return pos, e.db.Flush()
}

// Checkpoint writes a consistent copy of the store into dir, which must
// not exist yet (its parent must): the effects of every transaction
// applied up to some position, none after it, with that position recorded
// in the copy as in any store. The position is at most Applied() as read
// after Checkpoint returns. Tables' files are hard-linked where the file
// system allows.
//
// The WAL is off, so a checkpoint holds only what is flushed: the store is
// flushed first, and whatever is applied meanwhile stays in memtables the
// copy leaves out (or is flushed with them, whole batches at a time: the
// copy is a prefix of the applies either way, like the store a crash
// leaves; the binlog holds the rest).
func (e *Engine) Checkpoint(dir string) error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Checkpoint(dir)
}

// Collator is the collator keys are built with.
func (e *Engine) Collator() row.Collator { return e.coll }

func (e *Engine) loadCatalog() error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte("\x00cat/"), UpperBound: []byte("\x00cat0")})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := string(it.Key())
		switch {
		case strings.HasPrefix(k, "\x00cat/db/"):
			var d DatabaseDef
			if err := json.Unmarshal(it.Value(), &d); err != nil {
				return fmt.Errorf("catalog entry %q: %w", k, err)
			}
			e.dbs[strings.ToLower(d.Name)] = &d
		case strings.HasPrefix(k, "\x00cat/tab/"):
			var d TableDef
			if err := json.Unmarshal(it.Value(), &d); err != nil {
				return fmt.Errorf("catalog entry %q: %w", k, err)
			}
			t := e.newTable(&d)
			e.tables[d.ID] = t
			e.byName[nameKey(d.DB, d.Name)] = t
			e.nextID = max(e.nextID, d.ID+1)
		case strings.HasPrefix(k, "\x00cat/view/"):
			var v ViewDef
			if err := json.Unmarshal(it.Value(), &v); err != nil {
				return fmt.Errorf("catalog entry %q: %w", k, err)
			}
			e.views[nameKey(v.DB, v.Name)] = &v
		case strings.HasPrefix(k, "\x00cat/trigger/"):
			var tr TriggerDef
			if err := json.Unmarshal(it.Value(), &tr); err != nil {
				return fmt.Errorf("catalog entry %q: %w", k, err)
			}
			e.triggers[nameKey(tr.DB, tr.Name)] = &tr
		case strings.HasPrefix(k, "\x00cat/routine/"):
			var r RoutineDef
			if err := json.Unmarshal(it.Value(), &r); err != nil {
				return fmt.Errorf("catalog entry %q: %w", k, err)
			}
			e.routines[nameKey(r.DB, r.Name)] = &r
		}
	}
	e.noteTriggered()
	return it.Error()
}

func nameKey(db, table string) string { return strings.ToLower(db) + "." + strings.ToLower(table) }

func (e *Engine) newTable(d *TableDef) *Table {
	t := &Table{Def: d, coll: e.coll}
	t.prefix = binary.BigEndian.AppendUint64([]byte{prefixTable}, d.ID)
	kind := byte(kindPrimary)
	if len(d.PK) == 0 {
		kind = kindKeyless
	}
	t.rowPfx = append(append([]byte(nil), t.prefix...), kind)
	t.mapBody = binlog.TableMapBody(d.ID, d.DB, d.Name, d.Columns, d.PK)
	return t
}

// CatalogVersion changes whenever the catalog does.
func (e *Engine) CatalogVersion() uint64 { return e.catalogVersion.Load() }

// Databases lists the databases, sorted by name.
func (e *Engine) Databases() []DatabaseDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]DatabaseDef, 0, len(e.dbs))
	for _, d := range e.dbs {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Database returns a database by (case-insensitive) name.
func (e *Engine) Database(name string) (DatabaseDef, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	d, ok := e.dbs[strings.ToLower(name)]
	if !ok {
		return DatabaseDef{}, false
	}
	return *d, true
}

// Tables lists the tables of a database, sorted by name.
func (e *Engine) Tables(db string) []*Table {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []*Table
	for _, t := range e.tables {
		if strings.EqualFold(t.Def.DB, db) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Def.Name < out[j].Def.Name })
	return out
}

// Views lists the views of a database, sorted by name.
func (e *Engine) Views(db string) []ViewDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []ViewDef
	for _, v := range e.views {
		if strings.EqualFold(v.DB, db) {
			out = append(out, *v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// View returns a view by name.
func (e *Engine) View(db, name string) (ViewDef, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	v, ok := e.views[nameKey(db, name)]
	if !ok {
		return ViewDef{}, false
	}
	return *v, true
}

// Table returns a table by name.
func (e *Engine) Table(db, name string) (*Table, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	t, ok := e.byName[nameKey(db, name)]
	return t, ok
}

// TableByID returns a table by id.
func (e *Engine) TableByID(id uint64) (*Table, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	t, ok := e.tables[id]
	return t, ok
}

// NewTableID reserves a table id.
func (e *Engine) NewTableID() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.nextID
	e.nextID++
	return id
}

// PrimaryPrefix is the key prefix of the table's rows.
func (t *Table) PrimaryPrefix() []byte { return t.rowPfx }

// IndexPrefix is the key prefix of secondary index i (by position).
func (t *Table) IndexPrefix(i int) []byte {
	p := append(append([]byte(nil), t.prefix...), kindIndex)
	return binary.BigEndian.AppendUint32(p, t.Def.Indexes[i].ID)
}

// TablePrefix covers every key of the table.
func (t *Table) TablePrefix() []byte { return t.prefix }

// Ref is what the binlog encoder needs of the table.
func (t *Table) Ref() binlog.TableRef {
	return binlog.TableRef{ID: t.Def.ID, NCols: len(t.Def.Columns), Map: t.mapBody}
}

// ErrKeyless is returned by RowKey for a table without a primary key: its
// rows are found by group (GroupKey, FindCopies).
var ErrKeyless = errors.New("table has no primary key")

// Keyless reports whether the table has no primary key.
func (t *Table) Keyless() bool { return len(t.Def.PK) == 0 }

// RowKey returns the primary key of a row.
func (t *Table) RowKey(dst []byte, vals []row.Value) ([]byte, error) {
	if t.Keyless() {
		return nil, ErrKeyless
	}
	dst = append(dst, t.rowPfx...)
	return row.AppendTupleKey(dst, t.Def.Columns, t.Def.PK, vals, t.coll)
}

// Keyless tables (see the package comment). A group is a prefix
// (row or image index) plus an image hash; its members are numbered.

func (t *Table) group(kind byte, img []byte) []byte {
	h := sha256.Sum256(img)
	k := make([]byte, 0, keylessKeyLen)
	k = append(k, t.prefix...)
	k = append(k, kind)
	return append(k, h[:groupHashLen]...)
}

func member(group []byte, n uint32) []byte {
	k := make([]byte, len(group), len(group)+4)
	copy(k, group)
	return binary.BigEndian.AppendUint32(k, n)
}

// ImageGroup is the image-index group of an image: the lock (and write
// set) key of every change that adds or removes a row with that image.
func (t *Table) ImageGroup(img []byte) []byte { return t.group(kindImage, img) }

// Getter reads the current data as a writer sees it (its own writes over
// the latest committed data).
type Getter func(k []byte) (v []byte, ok bool, err error)

// KeylessInsert returns the keys a row inserted with image img takes: its
// row key (the first free slot of the image's hash) and its image-index
// entry. lock (nil for none) is called for the row key's LockKey and the
// image group before they are read.
func (t *Table) KeylessInsert(img []byte, get Getter, lock func(k []byte) error) (rowKey, entry []byte, err error) {
	rg := t.group(kindKeyless, img)
	if err := lockKey(lock, rg); err != nil {
		return nil, nil, err
	}
	slot, err := count(rg, get)
	if err != nil {
		return nil, nil, err
	}
	entry, err = t.KeylessEntry(img, get, lock)
	if err != nil {
		return nil, nil, err
	}
	return member(rg, slot), entry, nil
}

// EntryWrite is one image-index write (Value nil: delete).
type EntryWrite struct{ Key, Value []byte }

// KeylessFind returns the row a change of a row with image img acts on,
// and the image-index writes that take it out of the image's entries
// (the last entry moves into its place, keeping them gapless): hint, if
// it is a row with that image (the row the caller read, so that a
// statement changing identical rows changes each of the rows it visits),
// else the first of the image's rows in insertion order. A statement
// reads a table without a primary key in insertion order, so the row it
// visits first among identical ones is that row too: replay and replicas,
// which have only the image, then change the row the source changed, and
// the table keeps the source's order. (A row inserted by the batch being
// written has no place in that order yet: it counts as after the others,
// in entry order.) rowKey is nil if no row has that image. lock is
// called for the image group; the caller locks the row.
func (t *Table) KeylessFind(img, hint []byte, get Getter, lock func(k []byte) error) (rowKey []byte, writes []EntryWrite, err error) {
	ig := t.group(kindImage, img)
	if err := lockKey(lock, ig); err != nil {
		return nil, nil, err
	}
	n, err := count(ig, get)
	if err != nil || n == 0 {
		return nil, nil, err
	}
	entry := func(i uint32) ([]byte, []byte, error) {
		k := member(ig, i)
		v, ok, err := get(k)
		if err == nil && (!ok || len(v) != keylessKeyLen) {
			err = fmt.Errorf("image index of %s.%s is corrupt", t.Def.DB, t.Def.Name)
		}
		return k, append([]byte(nil), v...), err
	}
	last, lastRow, err := entry(n - 1)
	if err != nil {
		return nil, nil, err
	}
	if n == 1 {
		return lastRow, []EntryWrite{{last, nil}}, nil
	}
	if hint != nil {
		if v, ok, err := get(hint); err != nil {
			return nil, nil, err
		} else if !ok || !bytes.Equal(v, img) {
			hint = nil
		}
	}
	// The row to change: the hint's, or the earliest in insertion order.
	var chosen, chosenRow []byte
	best := uint64(math.MaxUint64)
	for i := uint32(0); i < n; i++ {
		k, r := last, lastRow
		if i < n-1 {
			if k, r, err = entry(i); err != nil {
				return nil, nil, err
			}
		}
		if hint != nil {
			if bytes.Equal(r, hint) {
				chosen, chosenRow = k, r
				break
			}
			continue
		}
		seq, ok, err := rowSeq(r, get)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			seq = math.MaxUint64 // inserted by this batch: after the others
		}
		if chosen == nil || seq < best {
			chosen, chosenRow, best = k, r, seq
		}
	}
	if chosen == nil || bytes.Equal(chosen, last) {
		return lastRow, []EntryWrite{{last, nil}}, nil
	}
	return chosenRow, []EntryWrite{{chosen, lastRow}, {last, nil}}, nil
}

// rowSeq is the place in insertion order of the row at key rowKey of a
// table without a primary key, as get reads it; ok is false if it has
// none yet.
func rowSeq(rowKey []byte, get Getter) (seq uint64, ok bool, err error) {
	v, ok, err := get(seqOfKey(rowKey))
	if err != nil || !ok {
		return 0, false, err
	}
	if len(v) != seqValLen {
		return 0, false, fmt.Errorf("sequence entry of a row is %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// KeylessEntry returns the image-index entry a row inserted or changed
// to image img adds. lock is called for the image group.
func (t *Table) KeylessEntry(img []byte, get Getter, lock func(k []byte) error) ([]byte, error) {
	ig := t.group(kindImage, img)
	if err := lockKey(lock, ig); err != nil {
		return nil, err
	}
	n, err := count(ig, get)
	if err != nil {
		return nil, err
	}
	return member(ig, n), nil
}

func lockKey(lock func(k []byte) error, k []byte) error {
	if lock == nil {
		return nil
	}
	return lock(k)
}

// LockKey is the key to lock (and to put in a write set) for a row key: the
// key itself, or for a keyless row its hash without the slot.
func LockKey(k []byte) []byte {
	if len(k) == keylessKeyLen && k[0] == prefixTable && k[9] == kindKeyless {
		return k[:keylessKeyLen-4]
	}
	return k
}

// GapSpace names the key space of key for gap locks: its table.
func GapSpace(k []byte) string {
	if len(k) >= 9 && k[0] == prefixTable {
		return string(k[:9])
	}
	return string(k)
}

// count returns n such that member n of group is missing and, if n > 0,
// member n-1 exists. Where members are numbered without a gap (image
// index entries) that is their number; where deletes leave gaps (row
// slots) it is a free slot, the same one for the same data. It probes
// O(log n) keys.
func count(group []byte, get Getter) (uint32, error) {
	has := func(n uint32) (bool, error) {
		_, ok, err := get(member(group, n))
		return ok, err
	}
	ok, err := has(0)
	if err != nil || !ok {
		return 0, err
	}
	// Member lo-1 exists; find hi with member hi-1 missing.
	lo, hi := uint32(1), uint32(2)
	for {
		ok, err := has(hi - 1)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		if hi >= 1<<31 {
			return 0, fmt.Errorf("too many identical rows in a table without a primary key")
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := has(mid - 1)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// KeyOf encodes the given column values (a prefix of an index's columns)
// with no table prefix.
func (t *Table) KeyOf(dst []byte, cols []int, vals []row.Value) ([]byte, error) {
	var err error
	for i, c := range cols {
		dst, err = row.AppendKey(dst, &t.Def.Columns[c], vals[i], t.coll)
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// IndexEntry is one secondary index key/value.
type IndexEntry struct {
	Index int // position in Def.Indexes
	Key   []byte
	Value []byte // the row key
	// UniqueKey is set for unique indexes whose key has no NULL: the key
	// that must not exist for another row.
	UniqueKey bool
}

// IndexEntries computes the secondary index entries of a row.
func (t *Table) IndexEntries(vals []row.Value, rowKey []byte) ([]IndexEntry, error) {
	out := make([]IndexEntry, 0, len(t.Def.Indexes))
	pk := rowKey[len(t.rowPfx):]
	for i, ix := range t.Def.Indexes {
		k := t.IndexPrefix(i)
		hasNull := false
		var err error
		for _, c := range ix.Columns {
			if vals[c] == nil {
				hasNull = true
			}
			k, err = row.AppendKey(k, &t.Def.Columns[c], vals[c], t.coll)
			if err != nil {
				return nil, err
			}
		}
		unique := ix.Unique && !hasNull
		if !unique {
			k = append(k, pk...)
		}
		out = append(out, IndexEntry{Index: i, Key: k, Value: rowKey, UniqueKey: unique})
	}
	return out, nil
}

// Decode decodes a row image.
func (t *Table) Decode(img []byte, vals []row.Value) ([]row.Value, error) {
	v, _, err := row.DecodeImage(img, t.Def.Columns, vals)
	return v, err
}

// Encode encodes a row image.
func (t *Table) Encode(dst []byte, vals []row.Value) ([]byte, error) {
	return row.AppendImage(dst, t.Def.Columns, vals)
}

// Batch is a set of changes applied atomically with a binlog position.
type Batch struct {
	b   *pebble.Batch
	sid binlog.UUID
	gno uint64 // 0: no GTID (a rotation marker)
	// keyless lists the writes of keyless row keys in call order, for
	// their insertion order (order.go).
	keyless []keylessOp
}

// SetGTID names the transaction the batch applies; Apply records the
// highest GTID number applied per source UUID with the position.
func (b *Batch) SetGTID(sid binlog.UUID, gno uint64) { b.sid, b.gno = sid, gno }

// NewBatch starts a batch.
func (e *Engine) NewBatch() *Batch { return &Batch{b: e.db.NewBatch()} }

// Set records a key/value.
func (b *Batch) Set(k, v []byte) error {
	b.noteKeyless(k, opSet)
	return b.b.Set(k, v, nil)
}

// Delete records a deletion.
func (b *Batch) Delete(k []byte) error {
	b.noteKeyless(k, opDel)
	return b.b.Delete(k, nil)
}

// Len is the batch's size in bytes.
func (b *Batch) Len() int { return b.b.Len() }

// Close releases a batch that was not applied.
func (b *Batch) Close() { b.b.Close() }

// Apply applies the batches in order and makes them visible; ends[i] is the
// binlog position batch i reaches. Called by one goroutine at a time, in
// binlog order.
//
// Consecutive small batches are copied into one Pebble batch and committed
// together. Every Pebble commit takes the DB mutex, reserves sequence
// numbers and publishes them; at a replica's rate (tens of thousands of
// transactions a second, hundreds per group) that costs more than copying
// a few hundred bytes. The order of the writes is unchanged, and a group
// becomes visible at once instead of batch by batch, which no reader could
// rely on anyway: visibility is announced per group by the pipeline.
//
// Every Pebble commit carries the position its last batch reaches, so
// whatever prefix of commits a crash leaves flushed, the recorded position
// says exactly which transactions it holds: replay redoes each transaction
// once, which writes that are not idempotent (rows of tables without a
// primary key) depend on.
//
// synced says the binlog bytes of these transactions were synced before
// Apply was called (a durable setting). It is recorded with the position:
// a store recorded as synced can never be ahead of the binlog, so recovery
// treats a binlog that ends before it as damage, while under a relaxed
// setting an OS crash can lose a binlog tail the store has.
func (e *Engine) Apply(batches []*Batch, ends []binlog.Position, synced bool) error {
	if len(batches) != len(ends) {
		return fmt.Errorf("storage apply: %d batches, %d positions", len(batches), len(ends))
	}
	if len(batches) == 0 {
		return nil
	}
	m := merger{db: e.db, relaxed: !synced, seq: sequencer{e: e}}
	for i, b := range batches {
		if err := m.add(b, ends[i]); err != nil {
			return err
		}
	}
	if err := m.flush(); err != nil {
		return err
	}
	pos := ends[len(ends)-1]
	e.applied.Store(&pos)
	return nil
}

const (
	// mergeBatchMax: a batch this large is committed by itself.
	mergeBatchMax = 64 << 10
	// mergeGroupMax: a merged batch is committed once it is this large.
	mergeGroupMax = 4 << 20
)

// merger commits a sequence of batches, merging runs of small ones. A run
// of one is committed as it is, without a copy.
type merger struct {
	db      *pebble.DB
	first   *pebble.Batch // the first small batch of the run, not yet copied
	merged  *pebble.Batch // the run's copy once it has two batches
	end     binlog.Position
	relaxed bool
	high    []gtidMax // highest GTID per UUID in the run
	seq     sequencer
}

type gtidMax struct {
	sid binlog.UUID
	gno uint64
}

func (m *merger) note(b *Batch) {
	if b.gno == 0 {
		return
	}
	for i := range m.high {
		if m.high[i].sid == b.sid {
			m.high[i].gno = max(m.high[i].gno, b.gno)
			return
		}
	}
	m.high = append(m.high, gtidMax{b.sid, b.gno})
}

func (m *merger) add(sb *Batch, end binlog.Position) error {
	if err := m.seq.sequence(sb); err != nil {
		return err
	}
	b := sb.b
	if b.Len() >= mergeBatchMax {
		if err := m.flush(); err != nil {
			return err
		}
		m.note(sb)
		m.first, m.end = b, end
		return m.flush()
	}
	m.note(sb)
	m.end = end
	switch {
	case m.first == nil:
		m.first = b
		return nil
	case m.merged == nil:
		m.merged = m.db.NewBatch()
		if err := m.merged.Apply(m.first, nil); err != nil {
			return err
		}
	}
	if err := m.merged.Apply(b, nil); err != nil {
		return err
	}
	b.Close()
	if m.merged.Len() >= mergeGroupMax {
		return m.flush()
	}
	return nil
}

// flush commits the pending run with the position it reaches.
func (m *merger) flush() error {
	first, merged := m.first, m.merged
	m.first, m.merged = nil, nil
	if first == nil {
		return nil
	}
	b := first
	if merged != nil {
		first.Close()
		b = merged
	}
	var v [17]byte
	binary.BigEndian.PutUint64(v[:], uint64(m.end.File))
	binary.BigEndian.PutUint64(v[8:], uint64(m.end.Pos))
	if m.relaxed {
		v[16] = appliedRelaxed
	}
	if err := b.Set(metaAppliedKey, v[:], nil); err != nil {
		return err
	}
	for _, h := range m.high {
		var g [8]byte
		binary.BigEndian.PutUint64(g[:], h.gno)
		if err := b.Set(gtidMaxKey(h.sid), g[:], nil); err != nil {
			return err
		}
	}
	m.high = m.high[:0]
	return commitBatch(b)
}

func commitBatch(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	return b.Close()
}

// SetMeta stores a small metadata value durably (flushing the store).
func (e *Engine) SetMeta(name string, v []byte) error {
	if err := e.db.Set([]byte("\x00meta/"+name), v, pebble.NoSync); err != nil {
		return err
	}
	return e.db.Flush()
}

// Meta reads a metadata value.
func (e *Engine) Meta(name string) ([]byte, bool, error) {
	v, c, err := e.db.Get([]byte("\x00meta/" + name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	return append([]byte(nil), v...), true, nil
}

// Preview returns an open table for a definition that is not (yet) in the
// catalog, to encode rows and keys under it; PublishCatalog makes the real
// one.
func (e *Engine) Preview(d *TableDef) *Table { return e.newTable(d) }

// CheckIndex builds index ix of nd (t's definition with ix added) over t's
// committed rows into a batch it then drops: the duplicate key error a
// unique index would fail with, without writing anything.
func (e *Engine) CheckIndex(t *Table, nd *TableDef, ix *IndexDef) error {
	return e.buildIndex(&memSink{seen: map[string]bool{}}, t, e.newTable(nd), ix)
}
