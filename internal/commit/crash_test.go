package commit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

var crashUUID = binlog.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func newConfig(syncBinlog int64, parallel bool, maxSize int64) *Config {
	c := &Config{ServerID: 1, ServerUUID: crashUUID}
	c.SyncBinlog.Store(syncBinlog)
	c.FlushLogAtTrxCommit.Store(syncBinlog) // 1 with 1, relaxed otherwise
	if syncBinlog != 1 {
		c.FlushLogAtTrxCommit.Store(2)
	}
	c.ParallelFlush.Store(parallel)
	c.MaxBinlogSize.Store(maxSize)
	c.Tracking.Store(int32(WriteSet))
	c.HistorySize.Store(25000)
	return c
}

func openAt(t testing.TB, fs vfs.FS, cfg *Config) (*Pipeline, *storage.Engine, Recovery) {
	t.Helper()
	p, s, _, rec, err := Open(OpenOptions{FS: fs, Dir: "/data", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return p, s, rec
}

var kvCols = []row.Column{{Name: "k", Type: row.TypeLongLong}, {Name: "v", Type: row.TypeLongLong}}

func createTable(t testing.TB, p *Pipeline, s *storage.Engine) *storage.Table {
	t.Helper()
	for _, c := range []*storage.CatalogChange{
		{Op: "create_db", DB: &storage.DatabaseDef{Name: "db"}},
		{Op: "create_table", Table: &storage.TableDef{ID: s.NewTableID(), DB: "db", Name: "kv", Columns: kvCols, PK: []int{0}}},
	} {
		err := p.CommitExclusive(Caller{}, func() (*Trx, error) {
			return CatalogTrx(s, c, "db", "DDL", binlog.QueryOptions{})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tab, ok := s.Table("db", "kv")
	if !ok {
		t.Fatal("table not created")
	}
	return tab
}

// put commits one transaction setting keys to values; old holds the
// previous values (absent = insert).
func put(p *Pipeline, s *storage.Engine, tab *storage.Table, kv map[int64]int64, old map[int64]int64) error {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	b := s.NewBatch()
	var ws []uint64
	for k, v := range kv {
		after, _ := tab.Encode(nil, []row.Value{k, v})
		key, _ := tab.RowKey(nil, []row.Value{k, v})
		if ov, ok := old[k]; ok {
			before, _ := tab.Encode(nil, []row.Value{k, ov})
			ev.AddRow(binlog.UpdateRowsEventV2, tab.Ref(), before, after)
		} else {
			ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, after)
		}
		if err := b.Set(key, after); err != nil {
			return err
		}
		ws = append(ws, uint64(k)*0x9E3779B97F4A7C15)
	}
	ev.AddXID(1)
	return p.Commit(&Trx{Events: &ev, Batch: b, WriteSet: ws})
}

func readAllRows(t testing.TB, s *storage.Engine, tab *storage.Table) map[int64]int64 {
	t.Helper()
	it, err := s.Latest().NewIter(tab.PrimaryPrefix(), row.PrefixEnd(tab.PrimaryPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[int64]int64{}
	for it.First(); it.Valid(); it.Next() {
		vals, err := tab.Decode(it.Value(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out[vals[0].(int64)] = vals[1].(int64)
	}
	return out
}

// TestCrashRecovery runs concurrent committers, takes crash images of the
// filesystem at random moments (keeping a random share of unsynced data,
// so binlog tails are torn at random places), recovers each image and
// checks it against the model: with sync_binlog=1 every acknowledged commit
// survives and each worker's keys reflect a prefix of its commits.
//
// LOCKSTEP_CRASH_ROUNDS sets the number of crash images (default 200).
func TestCrashRecovery(t *testing.T) {
	rounds := 200
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		parallel := round%2 == 0
		maxSize := int64(1 << 20)
		if round%3 == 0 {
			maxSize = 2048 // rotate often
		}
		syncBinlog := int64(1)
		if round%4 == 1 {
			syncBinlog = 0 // relaxed: unsynced tails get torn at random
		}
		flushes := round%4 == 2 // the store flushes during the run
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			crashRound(t, uint64(round), parallel, maxSize, syncBinlog, flushes, nil)
		})
	}
}

type worker struct {
	id      int64
	history []map[int64]int64 // state after each commit
	acked   atomic.Int64
}

// crashRound runs one crash image; with clock set, the pipeline's wall
// clock is clock and jumps (jumpingClock) while the workers commit.
func crashRound(t *testing.T, seed uint64, parallel bool, maxSize, syncBinlog int64, flushes bool, clock *jumpingClock) {
	r := rand.New(rand.NewPCG(seed, 99))
	fs := vfs.NewCrashableMem()
	cfg := newConfig(syncBinlog, parallel, maxSize)
	if clock != nil {
		cfg.Clock = clock.Now
		// A sync delay makes every group wait on the pipeline's own
		// timing, which a jump must not stretch or cut.
		cfg.SyncDelay.Store(int64(r.IntN(3)) * 300)
	}
	p, s, _ := openAt(t, fs, cfg)
	tab := createTable(t, p, s)

	const nWorkers = 4
	workers := make([]*worker, nWorkers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wk := &worker{id: int64(w), history: []map[int64]int64{{}}}
		workers[w] = wk
		wseed := r.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := rand.New(rand.NewPCG(wseed, 1))
			for i := 0; i < 400; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cur := wk.history[len(wk.history)-1]
				kv := map[int64]int64{}
				for range 1 + wr.IntN(3) {
					kv[wk.id*1000+wr.Int64N(20)] = wr.Int64()
				}
				next := map[int64]int64{}
				for k, v := range cur {
					next[k] = v
				}
				for k, v := range kv {
					next[k] = v
				}
				wk.history = append(wk.history, next)
				if err := put(p, s, tab, kv, cur); err != nil {
					wk.history = wk.history[:len(wk.history)-1]
					return
				}
				wk.acked.Add(1)
			}
		}()
	}
	if clock != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clock.run(stop, rand.New(rand.NewPCG(seed, 3)))
		}()
	}
	if flushes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					if _, err := s.Flush(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	// Crash at a random moment while commits are in flight.
	for range 1 + r.IntN(200) {
		if workers[0].acked.Load() >= 400 {
			break
		}
		runtimeYield()
	}
	ackedBefore := make([]int64, nWorkers)
	for i, w := range workers {
		if syncBinlog == 1 {
			// Only a durable setting promises acknowledged commits survive.
			ackedBefore[i] = w.acked.Load()
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, 7))})
	close(stop)
	wg.Wait()
	p.Close()
	s.Close()

	p2, s2, rec := openAt(t, crashed, newConfig(syncBinlog, parallel, maxSize))
	defer func() { p2.Close(); s2.Close() }()
	tab2, ok := s2.Table("db", "kv")
	if !ok {
		t.Fatal("table lost")
	}
	got := readAllRows(t, s2, tab2)
	for i, w := range workers {
		mine := map[int64]int64{}
		for k, v := range got {
			if k/1000 == w.id {
				mine[k] = v
			}
		}
		match := -1
		for n := int(ackedBefore[i]); n < len(w.history); n++ {
			if mapsEqual(mine, w.history[n]) {
				match = n
				break
			}
		}
		if match < 0 {
			t.Fatalf("worker %d: recovered state matches no commit prefix >= %d acknowledged (replayed %d, truncated %d bytes)", i, ackedBefore[i], rec.Replayed, rec.Truncated)
		}
	}
	// The recovered server keeps committing, and its binlog reads cleanly.
	if err := put(p2, s2, tab2, map[int64]int64{999999: 1}, nil); err != nil {
		t.Fatal(err)
	}
	checkBinlogDecodes(t, crashed)
}

func mapsEqual(a, b map[int64]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkBinlogDecodes parses every binlog file with go-mysql, verifying
// checksums, and checks that last_committed < sequence_number.
func checkBinlogDecodes(t *testing.T, fs vfs.FS) { checkBinlogDecodesIn(t, fs, "/data") }

func checkBinlogDecodesIn(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if len(n) != len("binlog.000001") || n[:7] != "binlog." {
			continue
		}
		f, err := fs.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(f)
		f.Close()
		pr := replication.NewBinlogParser()
		pr.SetVerifyChecksum(true)
		err = pr.ParseReader(bytes.NewReader(data[4:]), func(e *replication.BinlogEvent) error {
			if g, ok := e.Event.(*replication.GTIDEvent); ok && g.LastCommitted >= g.SequenceNumber {
				return fmt.Errorf("last_committed %d >= sequence_number %d", g.LastCommitted, g.SequenceNumber)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

func TestWriteSetParallelism(t *testing.T) {
	fs := vfs.NewMem()
	p, s, _ := openAt(t, fs, newConfig(0, true, 1<<30))
	tab := createTable(t, p, s)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := put(p, s, tab, map[int64]int64{int64(w*1000 + i): 1}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.Close()
	s.Close()
	// Every transaction wrote a distinct key, so with WRITESET each depends
	// only on the history start of the file (the DDL before them).
	f, _ := fs.Open("/data/binlog.000001")
	data, _ := io.ReadAll(f)
	f.Close()
	maxLC, n := int64(0), 0
	_, err := binlog.ScanFile(data, func(tr *binlog.Transaction) error {
		if len(tr.Events) > 0 && tr.Events[0].Type == binlog.QueryEvent {
			n++
			if tr.GTID.SequenceNumber > 2 {
				maxLC = max(maxLC, tr.GTID.LastCommitted)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 400 {
		t.Fatalf("found %d transactions", n)
	}
	if maxLC > 2 {
		t.Fatalf("independent transactions got last_committed up to %d, want <= 2", maxLC)
	}
}

// TestFsyncFailureRefusesCommits: a group whose fsync failed is not
// acknowledged, its outcome is unknown (the OS may have written its
// bytes: it may be there after a restart), it never becomes visible, and
// later commits are refused.
func TestFsyncFailureRefusesCommits(t *testing.T) {
	mem := vfs.NewMem()
	ffs := &failFS{FS: mem}
	cfg := newConfig(1, false, 1<<30)
	var warned []string
	cfg.Warn = func(msg string, args ...any) { warned = append(warned, fmt.Sprintln(append([]any{msg}, args...)...)) }
	p, s, _ := openAt(t, ffs, cfg)
	tab := createTable(t, p, s)
	if err := put(p, s, tab, map[int64]int64{1: 1}, nil); err != nil {
		t.Fatal(err)
	}
	ffs.failSync.Store(true)
	if err := put(p, s, tab, map[int64]int64{2: 2}, nil); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("commit whose fsync failed: %v, want ErrOutcomeUnknown", err)
	}
	if err := put(p, s, tab, map[int64]int64{3: 3}, nil); err == nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("commit after an fsync failure: %v, want a refusal", err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "refusing further commits") || !strings.Contains(warned[0], "binlog.000001:") {
		t.Fatalf("warnings after the fsync failure: %q", warned)
	}
	got := readAllRows(t, s, tab)
	if _, ok := got[2]; ok {
		t.Fatal("a transaction whose fsync failed became visible")
	}
	p.Close()
	s.Close()
}

// TestDiskFullUndoesAndResumes: a write the disk refuses, for lack of
// space (ENOSPC) or because it is read-only (EROFS), is never
// acknowledged; the group is cut from the binlog and taken back, and
// commits resume by themselves once writes succeed again, with the GTID
// and sequence numbers the failed ones would have had. Run on memory
// (nothing written before the error) and, for a full disk, on a real
// directory with half of the group written before the error (cut back
// with the file's descriptor).
func TestDiskFullUndoesAndResumes(t *testing.T) {
	for _, c := range []struct {
		errno   syscall.Errno
		partial bool
	}{{syscall.ENOSPC, false}, {syscall.ENOSPC, true}, {syscall.EROFS, false}} {
		partial := c.partial
		t.Run(fmt.Sprintf("%v,partial=%v", c.errno, partial), func(t *testing.T) {
			var base vfs.FS = vfs.NewMem()
			dir := "/data"
			if partial {
				base, dir = vfs.Default, t.TempDir()
			}
			ffs := &failFS{FS: base, errno: c.errno}
			ffs.partial.Store(partial)
			cfg := newConfig(1, true, 1<<30)
			var warned []string
			cfg.Warn = func(msg string, args ...any) { warned = append(warned, fmt.Sprintln(append([]any{msg}, args...)...)) }
			p, s, _, _, err := Open(OpenOptions{FS: ffs, Dir: dir, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			tab := createTable(t, p, s)
			if err := put(p, s, tab, map[int64]int64{1: 1}, nil); err != nil {
				t.Fatal(err)
			}
			before := p.GTIDExecuted().MaxGNO(crashUUID)
			ffs.failWrite.Store(true)
			for k := range int64(3) {
				err := put(p, s, tab, map[int64]int64{10 + k: 1}, nil)
				if !errors.Is(err, ErrWriteRefused) || !errors.Is(err, c.errno) {
					t.Fatalf("commit with a failing write: %v", err)
				}
			}
			if g := p.GTIDExecuted().MaxGNO(crashUUID); g != before {
				t.Fatalf("failed commits kept GTIDs up to %d (had %d)", g, before)
			}
			// One line when the episode starts, naming the last synced end.
			if len(warned) != 1 || !strings.Contains(warned[0], "refused a binlog write") || !strings.Contains(warned[0], "binlog.000001:") {
				t.Fatalf("warnings during the refusals: %q", warned)
			}
			ffs.failWrite.Store(false)
			if err := put(p, s, tab, map[int64]int64{3: 3}, nil); err != nil {
				t.Fatalf("commit after space returned: %v", err)
			}
			if len(warned) != 2 || !strings.Contains(warned[1], "takes binlog writes again") {
				t.Fatalf("warnings after the disk took writes again: %q", warned)
			}
			if g := p.GTIDExecuted().MaxGNO(crashUUID); g != before+1 {
				t.Fatalf("the commit after the failures took GTID %d, want %d", g, before+1)
			}
			if got := readAllRows(t, s, tab); !mapsEqual(got, map[int64]int64{1: 1, 3: 3}) {
				t.Fatalf("rows after the failures: %v", got)
			}
			p.Close()
			s.Close()
			checkBinlogDecodesIn(t, base, dir)
			p, s, _, rec, err := Open(OpenOptions{FS: base, Dir: dir, Config: newConfig(1, true, 1<<30)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { p.Close(); s.Close() }()
			tab, _ = s.Table("db", "kv")
			if got := readAllRows(t, s, tab); !mapsEqual(got, map[int64]int64{1: 1, 3: 3}) || rec.Truncated != 0 {
				t.Fatalf("rows after reopening: %v (cut %d)", got, rec.Truncated)
			}
		})
	}
}

type failFS struct {
	vfs.FS
	errno     syscall.Errno // what a failing write returns (ENOSPC if 0)
	failSync  atomic.Bool
	failWrite atomic.Bool
	partial   atomic.Bool // a failing write writes half its bytes first
}

func (f *failFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(name, "binlog.0") {
		return file, nil
	}
	return &failFile{File: file, fs: f}, nil
}

type failFile struct {
	vfs.File
	fs *failFS
}

func (f *failFile) Sync() error {
	if f.fs.failSync.Load() {
		return fmt.Errorf("injected fsync failure")
	}
	return f.File.Sync()
}

func (f *failFS) writeErr() error {
	if f.errno == 0 {
		return syscall.ENOSPC
	}
	return f.errno
}

func runtimeYield() { time.Sleep(100 * time.Microsecond) }

func (f *failFile) SyncData() error { return f.Sync() }

func (f *failFile) Write(p []byte) (int, error) {
	if f.fs.failWrite.Load() {
		if f.fs.partial.Load() {
			n, _ := f.File.Write(p[:len(p)/2])
			return n, f.fs.writeErr()
		}
		return 0, f.fs.writeErr()
	}
	return f.File.Write(p)
}

// WriteAt is how the binlog appends.
func (f *failFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.failWrite.Load() {
		if f.fs.partial.Load() {
			n, _ := f.File.WriteAt(p[:len(p)/2], off)
			return n, f.fs.writeErr()
		}
		return 0, f.fs.writeErr()
	}
	return f.File.WriteAt(p, off)
}

// TestSubmittedDependencies: transactions submitted one behind the other
// (a replica's applier, which reads the effects of those not yet
// visible) are logged as depending on the one before them, or under
// WRITESET on the last writer of their keys: never as independent
// because nothing was visible when they entered. A replica of this
// server that applies in parallel relies on it; the rule of Commit
// (depend on what was visible) let such a replica apply an update
// before the insert of its row.
func TestSubmittedDependencies(t *testing.T) {
	for _, mode := range []Tracking{CommitOrder, WriteSet} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			cfg := newConfig(1, false, 1<<30)
			cfg.Tracking.Store(int32(mode))
			p, s, _ := openAt(t, fs, cfg)
			tab := createTable(t, p, s)
			// Keys 1, 2, 1, 3, 2: each submitted before the previous is
			// visible.
			keys := []int64{1, 2, 1, 3, 2}
			var trxs []*Trx
			for i, k := range keys {
				var ev binlog.TrxEvents
				ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
				after, _ := tab.Encode(nil, []row.Value{k, int64(i)})
				key, _ := tab.RowKey(nil, []row.Value{k, int64(i)})
				ev.AddRow(binlog.WriteRowsEventV2, tab.Ref(), nil, after)
				ev.AddXID(uint64(i + 1))
				b := s.NewBatch()
				if err := b.Set(key, after); err != nil {
					t.Fatal(err)
				}
				tr := &Trx{Events: &ev, Batch: b, WriteSet: []uint64{uint64(k) * 0x9E3779B97F4A7C15}}
				if err := p.Submit(tr); err != nil {
					t.Fatal(err)
				}
				trxs = append(trxs, tr)
			}
			var got []string
			for _, tr := range trxs {
				if err := tr.Wait(); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%d<-%d", tr.GTID.SequenceNumber, tr.GTID.LastCommitted))
			}
			p.Close()
			s.Close()
			// Sequence numbers 3..7 (the two DDL statements are 1 and 2).
			want := map[Tracking]string{
				CommitOrder: "3<-2 4<-3 5<-4 6<-5 7<-6",
				// Keys 1, 2, 1, 3, 2: the history starts at the DDL (2).
				WriteSet: "3<-2 4<-2 5<-3 6<-2 7<-4",
			}[mode]
			if g := strings.Join(got, " "); g != want {
				t.Fatalf("sequence<-last_committed: %s, want %s", g, want)
			}
		})
	}
}

// jumpingClock is a wall clock that jumps: run moves it, every few
// hundred microseconds, to one of jumps away from the real time (back a
// year or an hour, forward an hour or three years, or back to the real
// time), as an NTP step, a VM restored from a snapshot or an operator's
// `date -s` would.
type jumpingClock struct {
	offset atomic.Int64 // nanoseconds from the real time
}

var jumps = []time.Duration{-365 * 24 * time.Hour, -time.Hour, 0, time.Hour, 3 * 365 * 24 * time.Hour}

func (c *jumpingClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *jumpingClock) run(stop <-chan struct{}, r *rand.Rand) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(100+r.IntN(400)) * time.Microsecond):
			c.offset.Store(int64(jumps[r.IntN(len(jumps))]))
		}
	}
}

// TestCrashRecoveryUnderClockJumps is the crash test with the pipeline's
// wall clock jumping back and forth by up to years while transactions
// commit (in-process, as the wall clock of a real machine cannot be moved
// under one test): every acknowledged commit survives the crash image,
// GTIDs stay gapless and increasing in the binlog, groups still close on
// time (a sync delay measured on the wall clock would wait an hour after
// a jump back), and the events are dated by the clock, jumps included.
func TestCrashRecoveryUnderClockJumps(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			start := time.Now()
			seed := uint64(1000 + round)
			crashRound(t, seed, round%2 == 0, []int64{1 << 20, 2048}[round%2], 1, round%3 == 0, &jumpingClock{})
			if d := time.Since(start); d > time.Minute {
				t.Fatalf("a round took %v: a jump held commits back", d)
			}
		})
	}
	// The dates: a run long enough to see every jump, read back from the
	// binlog.
	fs := vfs.NewMem()
	clock := &jumpingClock{}
	cfg := newConfig(1, true, 1<<20)
	cfg.Clock = clock.Now
	p, s, _ := openAt(t, fs, cfg)
	tab := createTable(t, p, s)
	begin := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { clock.run(stop, rand.New(rand.NewPCG(5, 5))); close(done) }()
	for i := range 3000 {
		if err := put(p, s, tab, map[int64]int64{int64(i % 50): int64(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	end := time.Now()
	p.Close()
	s.Close()
	seen := map[time.Duration]int{}
	var lastGNO int64
	forEachGTID(t, fs, func(g *replication.GTIDEvent, ts uint32) {
		if g.GNO != lastGNO+1 {
			t.Fatalf("GTID %d follows %d", g.GNO, lastGNO)
		}
		lastGNO = g.GNO
		when := time.Unix(int64(ts), 0)
		for _, j := range jumps {
			if !when.Before(begin.Add(j).Add(-time.Second)) && !when.After(end.Add(j).Add(time.Second)) {
				seen[j]++
				return
			}
		}
		t.Fatalf("GTID %d dated %v: no jump of the clock gives that", g.GNO, when)
	})
	if len(seen) != len(jumps) {
		t.Fatalf("dates by jump %v: the events are not dated by the pipeline's clock", seen)
	}
}

// forEachGTID calls f with every GTID event of the binlog in /data, in
// order, and its header's timestamp.
func forEachGTID(t *testing.T, fs vfs.FS, f func(g *replication.GTIDEvent, ts uint32)) {
	t.Helper()
	names, err := fs.List("/data")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		if len(n) != len("binlog.000001") || n[:7] != "binlog." {
			continue
		}
		file, err := fs.Open(filepath.Join("/data", n))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(file)
		file.Close()
		pr := replication.NewBinlogParser()
		err = pr.ParseReader(bytes.NewReader(data[4:]), func(e *replication.BinlogEvent) error {
			if g, ok := e.Event.(*replication.GTIDEvent); ok {
				f(g, e.Header.Timestamp)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}
