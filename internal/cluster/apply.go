package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"github.com/lockstepdb/lockstep/internal/storage"
	"go.etcd.io/raft/v3/raftpb"
)

// Applier makes committed entries visible in the store, in log order.
//
// Every node applies every transaction the same way, from its events
// (storage.Replay: rows and catalog changes), the origin included, whose
// own write buffer is not used: one path, and the store holds exactly
// what the log says. Each apply records the entry's end in this node's
// binlog as the store's position, so after a restart the store names the
// last entry it holds (raftlog.IndexAt) and raft hands out the entries
// after it again: nothing is applied twice or skipped.
//
// Entries are applied one at a time, in order; parallel apply with the
// dependencies certification computed is not built yet.
type Applier struct {
	sid   binlog.UUID
	store *storage.Engine
	log   *raftlog.Log
	gno   atomic.Uint64 // GTID number of the last transaction applied
}

// NewApplier returns the applier of a node whose store and log are open,
// and the index of the last entry the store holds (raft's Applied).
func NewApplier(sid binlog.UUID, store *storage.Engine, log *raftlog.Log) (*Applier, uint64, error) {
	a := &Applier{sid: sid, store: store, log: log}
	high, err := store.GTIDHighWater()
	if err != nil {
		return nil, 0, err
	}
	a.gno.Store(high[sid])
	var applied uint64
	first, _ := log.FirstIndex()
	if pos := store.Applied(); pos.File == 0 && first > 1 && store.Transferred() {
		// A store copied from another member's at the entry before the
		// log's first (a state transfer), nothing of this log applied
		// yet.
		applied = first - 1
	} else if pos.File != 0 {
		i, ok := log.IndexAt(pos)
		if !ok {
			if high[sid] > 0 || first > 1 {
				return nil, 0, fmt.Errorf("cluster: the store's position %v is not the end of any entry of the raft log", pos)
			}
			// A store that holds only history from before the node's first
			// entry (it never applied one).
		}
		applied = i
	}
	return a, applied, nil
}

// Apply applies committed entries in order.
func (a *Applier) Apply(es []raftpb.Entry) error {
	for _, e := range es {
		if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
			_, events, err := raftlog.DecodeTrx(e.Data)
			if err != nil {
				return fmt.Errorf("cluster: entry %d: %w", e.Index, err)
			}
			t, err := binlog.ParseTransaction(events)
			if err != nil {
				return fmt.Errorf("cluster: entry %d: %w", e.Index, err)
			}
			end, ok := a.log.Position(e.Index)
			if !ok {
				return fmt.Errorf("cluster: committed entry %d is not in the log", e.Index)
			}
			if err := a.store.Replay(t, end); err != nil {
				return fmt.Errorf("cluster: applying entry %d: %w", e.Index, err)
			}
			if t.GTID.SID == a.sid {
				a.gno.Store(t.GTID.GNO)
			}
		}
	}
	return nil
}

// Snapshot is the GTID number of the last cluster transaction applied: the
// snapshot of a transaction that reads the store now.
func (a *Applier) Snapshot() uint64 { return a.gno.Load() }
