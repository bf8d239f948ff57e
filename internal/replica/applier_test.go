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

// TestFailedTransactionStopsAfterEarlierOnes: when a transaction cannot be
// applied, every transaction before it in relay order is still committed,
// as a single-threaded replica would have committed them before meeting
// it, and none after it. Workers used to drop the transactions they had not
// started as soon as any one failed, including earlier ones applied in
// parallel with it. Both ways a transaction fails are run: in the workers
// (a deleted row that is not there, 1032) and in the scheduler, from its
// decoding (a change to a parent table whose foreign-key actions the
// source's binlog does not carry, 1235).
func TestFailedTransactionStopsAfterEarlierOnes(t *testing.T) {
	const before, after = 400, 100
	for _, workers := range []int64{0, 4} {
		for _, kind := range []struct {
			name    string
			errno   uint16
			cascade bool
		}{{"build", 1032, false}, {"decode", 1235, true}} {
			for round := range 4 {
				p, s, tab, r, rl := modelReplica(t, workers, "LOGICAL_CLOCK")
				if kind.cascade {
					r.o.CascadeParent = func(id uint64) bool { return id == tab.Def.ID }
				}
				img := func(k int64) []byte {
					b, err := tab.Encode(nil, []row.Value{k, k})
					if err != nil {
						t.Fatal(err)
					}
					return b
				}
				// Independent inserts (last_committed 0: all may run in
				// parallel), the failing delete, and more inserts.
				for gno := uint64(1); gno <= before+1+after; gno++ {
					var ev binlog.TrxEvents
					ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
					if gno == before+1 {
						ev.AddRow(binlog.DeleteRowsEventV2, tab.Ref(), img(1_000_000), nil)
					} else {
						ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, img(int64(gno)))
					}
					ev.EndStatement()
					ev.AddXID(gno)
					ev.Close()
					g := binlog.GTIDInfo{SID: testUUID, GNO: gno, LastCommitted: 0, SequenceNumber: int64(gno), OriginalCommitUS: 1_700_000_000_000_000}
					appendTrx(t, rl, events(t, ev.Finalize(make([]byte, ev.FinalSize(false)), 4, 1, 1, g)))
				}
				if err := rl.flush(); err != nil {
					t.Fatal(err)
				}
				a := newApplier(r, rl)
				r.sql = a
				go a.run()
				select {
				case <-a.done:
				case <-time.After(30 * time.Second):
					a.close()
					t.Fatalf("workers %d, %s: the applier did not stop at the failed transaction", workers, kind.name)
				}
				r.errMu.Lock()
				code, msg := r.sqlErrno, r.sqlErr
				r.errMu.Unlock()
				if code != kind.errno {
					t.Fatalf("workers %d, %s: SQL thread error %d %q, want %d", workers, kind.name, code, msg, kind.errno)
				}
				vis := p.GTIDVisible()
				for gno := uint64(1); gno <= before+1+after; gno++ {
					if want := gno <= before; vis.Contains(testUUID, gno) != want {
						t.Fatalf("workers %d, %s, round %d: transaction %d executed %v, want %v", workers, kind.name, round, gno, !want, want)
					}
				}
				n := 0
				it, err := s.Latest().NewIter(tab.TablePrefix(), row.PrefixEnd(tab.TablePrefix()))
				if err != nil {
					t.Fatal(err)
				}
				for it.First(); it.Valid(); it.Next() {
					n++
				}
				it.Close()
				// Each row has its primary key and one index entry.
				if n != 2*before {
					t.Fatalf("workers %d, %s: %d keys in the table, want %d", workers, kind.name, n, 2*before)
				}
			}
		}
	}
}
