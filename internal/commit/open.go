package commit

import (
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
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
	Logger pebble.Logger
}

// Recovery reports what Open did.
type Recovery struct {
	Replayed    int   // transactions replayed from the binlog
	Truncated   int64 // bytes of torn binlog tail cut
	StoreAhead  bool  // storage held transactions the binlog had lost
	DurableFrom binlog.Position
}

// Open opens the store and the binlog, replays into the store every
// transaction logged after the position the store had flushed, and starts
// the pipeline.
func Open(o OpenOptions) (*Pipeline, *storage.Engine, *binlog.Log, Recovery, error) {
	var rec Recovery
	store, err := storage.Open(storage.Options{FS: o.FS, Dir: filepath.Join(o.Dir, "store"), Collator: o.Collator, CacheSize: o.CacheSize, Logger: o.Logger})
	if err != nil {
		return nil, nil, nil, rec, fmt.Errorf("opening the store: %w", err)
	}
	durable := store.Applied()
	rec.DurableFrom = durable
	log, lr, err := binlog.Open(binlog.Options{FS: o.FS, Dir: o.Dir, BaseName: "binlog", ServerID: o.Config.ServerID}, binlog.GTIDSet{}, durable)
	if err != nil {
		store.Close()
		return nil, nil, nil, rec, err
	}
	rec.Truncated = lr.Truncated
	if lr.End.Less(durable) {
		// The store has transactions the binlog lost (a relaxed sync setting
		// and an OS crash). They stay; replicas will not see them.
		rec.StoreAhead = true
	}
	for _, f := range log.Files() {
		if f.Num == log.Current().File || f.Num < durable.File {
			continue
		}
		from := int64(0)
		if f.Num == durable.File {
			from = durable.Pos
		}
		data, err := log.ReadFile(f.Num)
		if err != nil {
			store.Close()
			return nil, nil, nil, rec, err
		}
		_, err = binlog.ScanFrom(data, from, func(t *binlog.Transaction) error {
			rec.Replayed++
			return store.Replay(t, binlog.Position{File: f.Num, Pos: t.End})
		})
		if err != nil && !binlog.IsTornTail(err) {
			store.Close()
			return nil, nil, nil, rec, fmt.Errorf("replaying %s: %w", f.Name, err)
		}
	}
	if rec.Replayed > 0 {
		if _, err := store.Flush(); err != nil {
			store.Close()
			return nil, nil, nil, rec, err
		}
	}
	p := New(o.Config, log, store, lr.GTIDs)
	return p, store, log, rec, nil
}
