package replica

import (
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// ddlExec commits each DDL statement as an empty transaction under its
// GTID, as the SQL layer would, and records what it ran.
type ddlExec struct {
	pipe  *commit.Pipeline
	store *storage.Engine
	mu    sync.Mutex
	ran   []uint64
}

func (d *ddlExec) ExecDDL(q binlog.Query, g binlog.GTIDInfo) error {
	var ev binlog.TrxEvents
	ev.AddQuery(q.DB, q.Query, binlog.QueryOptions{})
	if err := d.pipe.Commit(&commit.Trx{Events: &ev, Batch: d.store.NewBatch(), KeepGTID: true, GTID: g, ForceSync: true}); err != nil {
		return err
	}
	d.mu.Lock()
	d.ran = append(d.ran, g.GNO)
	d.mu.Unlock()
	return nil
}

// TestExecutedDDLInRelayIsSkipped: a relay log may hold a transaction twice
// (the receiver fetched it again after a reconnect). A DDL transaction seen
// the second time is already executed and must be skipped; the scheduler
// used to run it again and close its ready channel twice, which panicked
// and took the server down.
func TestExecutedDDLInRelayIsSkipped(t *testing.T) {
	for _, workers := range []int64{0, 4} {
		cfg := &commit.Config{ServerID: 2, ServerUUID: binlog.UUID{9}}
		cfg.SyncBinlog.Store(1)
		cfg.MaxBinlogSize.Store(1 << 30)
		p, s, _, _, err := commit.Open(commit.OpenOptions{FS: vfs.NewMem(), Dir: "/data", Collator: row.BinaryCollator{}, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		exec := &ddlExec{pipe: p, store: s}
		dir := t.TempDir()
		r, err := New(Options{Dir: dir, ServerID: 2, Store: s, Pipe: p, Exec: exec})
		if err != nil {
			t.Fatal(err)
		}
		r.Settings.Workers.Store(workers)
		rl, err := openRelay(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		r.relay = rl
		for _, trx := range [][][]byte{ddlTrx(t, 1, "CREATE DATABASE a"), ddlTrx(t, 1, "CREATE DATABASE a"), ddlTrx(t, 2, "CREATE DATABASE b")} {
			appendTrx(t, rl, trx)
		}
		if err := rl.flush(); err != nil {
			t.Fatal(err)
		}
		a := newApplier(r, rl)
		r.sql = a
		go a.run()
		deadline := time.Now().Add(10 * time.Second)
		for !p.Executed(testUUID, 2) {
			if time.Now().After(deadline) {
				t.Fatalf("workers %d: the second DDL was never applied", workers)
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.close()
		exec.mu.Lock()
		if len(exec.ran) != 2 || exec.ran[0] != 1 || exec.ran[1] != 2 {
			t.Fatalf("workers %d: DDL ran for GTIDs %v, want [1 2]", workers, exec.ran)
		}
		exec.mu.Unlock()
		rl.close()
		p.Close()
		s.Close()
	}
}

// appendTrx writes one transaction's events to the relay log.
func appendTrx(t *testing.T, rl *relayLog, evs [][]byte) {
	t.Helper()
	for i, ev := range evs {
		if err := rl.append(ev, i == 0); err != nil {
			t.Fatal(err)
		}
	}
}
