package commit

// Recovery: what Open makes of a data directory after a clean stop, a crash
// or damage. The rule is one answer per case: recover exactly, or refuse to
// start (a RefusalError naming the file and offset, changing nothing).
//
// What each file is and what is inferred from it:
//
//   - The binlog files are the log: every acknowledged transaction, and its
//     GTID, is in them (under sync_binlog=1, synced before it was
//     acknowledged). binlog.Inspect checks them, the index and the synced
//     mark (binlog/recover.go has the rules: the files present are the
//     truth, the index is rebuilt from them; damage in synced bytes or in
//     any file but the last is refused; a torn tail past the synced mark is
//     cut).
//   - The store holds the effects of the transactions up to the position it
//     records (storage.Applied), flushed lazily (Pebble's WAL is off), with
//     a flag saying whether that position's binlog bytes were synced first,
//     and the highest GTID number it holds per source UUID.
//
// Against each other:
//
//   - Store behind the binlog (the usual case after a crash): the
//     transactions after the store's position are replayed from the binlog,
//     each once. The position must be a transaction boundary of a file
//     present.
//   - Store empty or new (first start, or its directory lost): rebuilt by
//     replaying the whole binlog if the binlog holds all history (the first
//     file's Previous_gtids is empty); refused if history was purged.
//   - Store position before the first binlog file: the transactions in
//     between were purged; refused.
//   - Store ahead of the binlog's end: if the store recorded its position as
//     synced, binlog bytes that were synced are gone: refused. If it was
//     written under a relaxed setting, an OS crash lost a binlog tail that
//     the store had already flushed; the server starts (as MySQL does with
//     sync_binlog=0), says so, and the GTIDs the store holds beyond the
//     binlog count as executed, so none is issued again.
//   - No binlog file but a store that holds transactions: refused.
//
// The next binlog file is numbered after every file present and after the
// store's position, so positions only grow and replay never skips a new
// transaction. No GTID is issued twice: the executed set is every GTID in
// the binlog plus those the store holds beyond it.

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// OpenOptions say where the store and the binlog live.
type OpenOptions struct {
	FS       vfs.FS
	Dir      string // data directory: binlog files here, the store in Dir/store
	Collator row.Collator
	Config   *Config
	// CacheSize is the store's block cache size.
	CacheSize int64
	// Logger receives the store's (Pebble's) messages; nil is quiet.
	Logger storage.Logger
	// Warn receives the store's disk-full episodes (storage.Options.Warn).
	Warn func(msg string)
}

// Recovery reports what Open did.
type Recovery struct {
	Replayed  int   // transactions replayed from the binlog
	Truncated int64 // bytes of torn binlog tail cut
	// End is where the binlog found ended (after any cut): the last
	// file's end, before Open started a new file.
	End         binlog.Position
	StoreAhead  bool // storage held transactions the binlog had lost
	DurableFrom binlog.Position
	// StoreOnly are the GTIDs of transactions the store holds and the
	// binlog lost (StoreAhead).
	StoreOnly binlog.GTIDSet
	// Notes say what was repaired (a rebuilt index, a removed leftover).
	Notes []string
}

// RefusalError is a data directory Open will not start from.
type RefusalError struct{ Err error }

func (e *RefusalError) Error() string {
	return fmt.Sprintf("refusing to start: %v. Nothing was changed. Safe ways out: put back the missing or damaged file from a backup, or restore the whole data directory from a backup, or re-seed this server from a replica (see \"Recovery\" in the README)", e.Err)
}

func (e *RefusalError) Unwrap() error { return e.Err }

// IsRefusal reports whether err is a refusal to start.
func IsRefusal(err error) bool {
	var r *RefusalError
	return errors.As(err, &r)
}

func refuse(format string, a ...any) error { return &RefusalError{Err: fmt.Errorf(format, a...)} }

// Open opens the store and the binlog, recovers them by the rule above, and
// starts the pipeline.
func Open(o OpenOptions) (*Pipeline, *storage.Engine, *binlog.Log, Recovery, error) {
	var rec Recovery
	store, err := storage.Open(storage.Options{FS: o.FS, Dir: filepath.Join(o.Dir, "store"), Collator: o.Collator, CacheSize: o.CacheSize, Logger: o.Logger, Warn: o.Warn})
	if err != nil {
		return nil, nil, nil, rec, &RefusalError{Err: fmt.Errorf("opening the store: %w", err)}
	}
	fail := func(err error) (*Pipeline, *storage.Engine, *binlog.Log, Recovery, error) {
		store.Close()
		return nil, nil, nil, rec, err
	}
	sp := store.Applied()
	relaxed := store.OpenedRelaxed()
	rec.DurableFrom = sp
	known := sp
	if relaxed {
		known = binlog.Position{}
	}
	bopts := binlog.Options{FS: o.FS, Dir: o.Dir, BaseName: "binlog", ServerID: o.Config.ServerID}
	found, err := binlog.Inspect(bopts, known)
	if err != nil {
		if binlog.IsDamage(err) {
			return fail(&RefusalError{Err: err})
		}
		return fail(err)
	}
	rec.Notes = append(rec.Notes, found.Notes...)
	name := func(p binlog.Position) string { return fmt.Sprintf("%s:%d", bopts.FileName(p.File), p.Pos) }
	high, err := store.GTIDHighWater()
	if err != nil {
		return fail(&RefusalError{Err: fmt.Errorf("reading the store: %w", err)})
	}
	var storeOnly binlog.GTIDSet
	for sid, gno := range high {
		if m := found.GTIDs.MaxGNO(sid); gno > m {
			storeOnly.AddRange(sid, m+1, gno+1)
		}
	}
	zero := binlog.Position{}
	replayFrom := sp
	switch {
	case len(found.Files) == 0:
		if sp != zero {
			return fail(refuse("the store holds transactions up to %s but no binlog file exists", name(sp)))
		}
	case sp == zero:
		if !found.First.IsEmpty() {
			return fail(refuse("the store is empty (new, or its directory was lost) but the binlog starts at %s after purged history (%s): the store cannot be rebuilt from it", found.Files[0].Name, found.First))
		}
		if !found.GTIDs.IsEmpty() {
			rec.Notes = append(rec.Notes, "the store is empty: rebuilding it from the binlog")
		}
		replayFrom = binlog.Position{File: found.Files[0].Num}
	case sp.File < found.Files[0].Num:
		return fail(refuse("the store is at %s but the binlog starts at %s: the transactions in between were purged", name(sp), found.Files[0].Name))
	case found.End.Less(sp):
		if !relaxed {
			return fail(refuse("the store applied transactions up to %s after they were synced to the binlog, but the binlog ends at %s: binlog files were lost or truncated", name(sp), name(found.End)))
		}
		rec.StoreAhead = true
		rec.StoreOnly = storeOnly
		replayFrom = found.End
	}
	if !storeOnly.IsEmpty() && !rec.StoreAhead {
		return fail(refuse("the store holds GTIDs %s that are in no binlog file, though its position %s is within the binlog", storeOnly, name(sp)))
	}
	next := max(found.NextFile(), sp.File+1)
	log, err := binlog.OpenFound(found, storeOnly, next)
	if err != nil {
		return fail(err)
	}
	rec.Truncated = found.Cut
	rec.End = found.End
	fail = func(err error) (*Pipeline, *storage.Engine, *binlog.Log, Recovery, error) {
		log.Close()
		store.Close()
		return nil, nil, nil, rec, err
	}
	if !rec.StoreAhead {
		if err := replay(store, log, found, replayFrom, &rec); err != nil {
			return fail(err)
		}
	}
	if rec.Replayed > 0 {
		if _, err := store.Flush(); err != nil {
			return fail(err)
		}
	}
	gtids := found.GTIDs.Clone()
	gtids.AddSet(storeOnly)
	p := New(o.Config, log, store, gtids)
	return p, store, log, rec, nil
}

// replay applies every transaction from position from (a transaction
// boundary, or a file's start) to the end of the binlog files found.
func replay(store *storage.Engine, log *binlog.Log, found *binlog.Found, from binlog.Position, rec *Recovery) error {
	for _, f := range found.Files {
		if f.Num < from.File {
			continue
		}
		data, err := log.ReadFile(f.Num)
		if err != nil {
			return err
		}
		start := int64(0)
		if f.Num == from.File {
			start = from.Pos
			if head, _ := found.HeaderEnd(f.Num); start != 0 && start != head {
				// The store's position must be where a transaction ends.
				ok := false
				_, _ = binlog.ScanFile(data, func(t *binlog.Transaction) error {
					ok = ok || t.End == start
					return nil
				})
				if !ok {
					return refuse("the store's position %s:%d is not the end of a transaction in that file", f.Name, start)
				}
			}
		}
		_, err = binlog.ScanFrom(data, start, func(t *binlog.Transaction) error {
			rec.Replayed++
			return store.Replay(t, binlog.Position{File: f.Num, Pos: t.End})
		})
		if err != nil {
			return fmt.Errorf("replaying %s: %w", f.Name, err)
		}
	}
	return nil
}
