package replica

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// The applier (the SQL thread). Per transaction:
//
//  1. the coordinator reads it from the relay log and numbers it; a pool of
//     decoders turns its row images into values and plans each row change
//     from them (storage.RowChange: keys, writes, write set; no dependency
//     is needed for that, so they run ahead in parallel, stopping only at
//     DDL);
//  2. the scheduler goroutine takes transactions in relay order, gives each
//     its dependency (schedule.go) and hands runs of consecutive ones to the
//     workers (or applies them itself with 0 or 1 workers); DDL runs here,
//     as a barrier;
//  3. a worker waits until the dependency has reserved its commit slot,
//     checks the rows against its own writes, the overlay of submitted rows
//     and storage (planning a change again if its row is not as the before
//     image says, and a keyless table's changes only now, when the row is
//     found), and builds the storage batch and the replica's own binlog
//     events;
//  4. it waits for its turn (the previous transaction submitted), publishes
//     its rows to the overlay and submits to the commit pipeline, without
//     waiting for the commit.
//
// A completion goroutine waits for the commits in order, removes their rows
// from the overlay once storage shows them, and keeps the statistics. The
// pipeline groups the submitted commits, so even a single-threaded applier
// is not fsync-bound.
//
// Stopping on an error. A transaction that cannot be applied halts the
// applier at its number (halt): every transaction before it in relay order
// is still applied, as a single-threaded replica would have committed them
// before meeting it, and none from it on is submitted. Transactions after
// it may already have been decoded or built (in parallel, even failed
// first), but they wait for their turn, which never comes. Once the last
// one before it is submitted, the applier stops. The SQL thread's error is
// the earliest failed transaction's.
//
// Prefetch. The storage read that checks a row (it must exist for an update
// or delete, must not for an insert) is the costliest part of step 3, and
// step 3 is serial without workers. So the decoders read each row's key
// from storage ahead, and step 3 uses that read instead of its own when it
// can prove nothing it must see was missing from it:
//
//   - the decoder notes, before reading, the applier's visible mark (every
//     transaction up to it is visible in storage) and the pipeline's count
//     of the server's own commits (clients writing on the replica);
//   - step 3 looks the key up in lastWrite, the number of the newest
//     transaction that wrote a key hashing to the same slot (stored when a
//     transaction publishes its rows, so every writer before the reader's
//     dependency has stored it);
//   - the prefetched read stands if that writer was visible at the mark and
//     no own commit became visible since; otherwise the row is read as
//     without prefetch. A slot collision only costs that second read.

// job is one transaction on its way through the applier.
type job struct {
	idx  int64
	trx  *relayTrx
	dep  int64
	skip bool // already executed: only advance the turn

	worker  int       // who applied it
	started time.Time // when its apply began
	decoded bool
	ready   chan struct{} // closed once decoded (or, for DDL, executed)
	err     error         // decoding error
	changes []rowChange
	ws      []uint64
	dbs     []string
	serial  bool     // changes a table without a primary key: applies after everything before it
	keys    []string // overlay keys it wrote
	counted bool     // in the applier's parallelism count until visible
	// finds: it changes an existing row of a table without a primary
	// key. Which of several identical rows is chosen by their places in
	// insertion order, which storage gives a row only once it is applied,
	// so the change is built once everything before it is visible.
	finds bool
}

type rowChange struct {
	kind          byte // *_rows v2 type
	t             *storage.Table
	before, after []byte
	bvals, avals  []row.Value
	// bkey is the key of the row an update or delete changes, akey the
	// key of the row inserted or updated (tables with a primary key).
	bkey, akey []byte
	// at is the row an update or delete acts on, plan the change against
	// the before image at decode and against the current row at build
	// (storage.RowChange). For a table without a primary key both are
	// made at build, when the row is found.
	at      storage.Located
	plan    storage.RowChange
	stmtEnd bool
	event   string // "Write_rows" ...

	// Prefetch of the row key (bkey, or akey for an insert), see above.
	pre      []byte
	preFound bool
	preDone  bool
	preVis   int64  // the visible mark before the read
	preOwn   uint64 // own commits before the read
}

// applyError stops the SQL thread with a MySQL error.
type applyError struct {
	code uint16
	msg  string
}

func (e *applyError) Error() string { return e.msg }

type inflight struct {
	j  *job
	ct *commit.Trx // nil for DDL and skipped transactions (already done)
}

type applier struct {
	r       *Replica
	relay   *relayLog
	stop    chan struct{}
	done    chan struct{}
	workers int
	mode    string

	seq  sequencer
	ov   overlay
	jobs chan []*job // runs of consecutive transactions, one worker each
	infl chan inflight
	wg   sync.WaitGroup
	cwg  sync.WaitGroup
	xid  atomic.Uint64
	maps sync.Map // *storage.Table -> binlog.TableMap of its own columns
	busy atomic.Int64
	// visible is the newest transaction number visible in storage, with
	// all before it; lastWrite the newest to write a key of each slot.
	visible   atomic.Int64
	lastWrite []atomic.Int64
	seed      maphash.Seed
	once      sync.Once
	state     atomic.Value

	// limit is the number of the earliest transaction that failed
	// (math.MaxInt64 while none has): nothing from it on is applied.
	// halted closes when it is first set.
	haltMu   sync.Mutex
	limit    atomic.Int64
	halted   chan struct{}
	haltOnce sync.Once
}

func newApplier(r *Replica, rl *relayLog) *applier {
	mode, _ := r.Settings.Type.Load().(string)
	a := &applier{
		r:       r,
		relay:   rl,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		halted:  make(chan struct{}),
		workers: int(r.Settings.Workers.Load()),
		mode:    mode,
		infl:    make(chan inflight, 8192),
		// 2^18 slots: a few thousand transactions in flight collide
		// rarely.
		lastWrite: make([]atomic.Int64, 1<<18),
		seed:      maphash.MakeSeed(),
	}
	a.ov.init()
	a.limit.Store(math.MaxInt64)
	a.state.Store("Replica has read all relay log; waiting for more updates")
	return a
}

func (a *applier) State() string {
	s, _ := a.state.Load().(string)
	return s
}

func (a *applier) close() {
	a.once.Do(func() { close(a.stop) })
	<-a.done
}

// fail records err as the SQL thread's error and stops the applier at
// once: for errors not of one transaction (the commit pipeline's).
func (a *applier) fail(err error) {
	a.r.setSQLError(sqlError(err))
	a.r.logf("replica SQL thread stopped: %v", err)
	a.once.Do(func() { close(a.stop) })
}

// halt stops the applier at transaction idx, which cannot be applied (see
// the top comment): the transactions before it are still applied, then the
// applier stops with err, unless an earlier transaction failed too.
func (a *applier) halt(idx int64, err error) {
	a.haltMu.Lock()
	if idx >= a.limit.Load() {
		a.haltMu.Unlock()
		return
	}
	a.limit.Store(idx)
	a.r.setSQLError(sqlError(err))
	reached := a.seq.haltAt(idx)
	a.haltMu.Unlock()
	a.r.logf("replica SQL thread stopped: %v", err)
	a.haltOnce.Do(func() { close(a.halted) })
	if reached {
		a.once.Do(func() { close(a.stop) })
	}
}

// dropped reports whether j comes at or after a failed transaction (or the
// applier stopped): it is not applied.
func (a *applier) dropped(j *job) bool {
	return j.idx >= a.limit.Load() || a.stopped()
}

// advance marks transaction idx submitted; the applier stops if it was the
// last one before a failed one.
func (a *applier) advance(idx int64) {
	if a.seq.advance(idx) {
		a.once.Do(func() { close(a.stop) })
	}
}

// sqlError is the MySQL error number and message the SQL thread stops with.
func sqlError(err error) (uint16, string) {
	var ae *applyError
	var un unsupported
	switch {
	case errors.As(err, &ae):
		return ae.code, ae.msg
	case errors.As(err, &un):
		return 13146, "Replica SQL thread stopped: " + un.msg
	default:
		return 13117, "Replica SQL thread stopped: " + err.Error()
	}
}

func (a *applier) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

func (a *applier) run() {
	defer close(a.done)
	defer a.r.sqlStopped(a)
	st := &a.r.Stats
	from, asmState := st.resumePoint()
	rr := a.relay.reader(from, a.stop)
	defer rr.close()
	asm := assembler{keep: true, sourceFile: asmState.sourceFile, gen: asmState.gen}
	a.seq.done = 0

	a.cwg.Add(1)
	go a.complete()
	parallel := a.workers > 1
	if parallel {
		a.jobs = make(chan []*job, a.workers*2)
		for w := range a.workers {
			a.wg.Add(1)
			go a.worker(w + 1)
		}
	}
	// Decoding (row images to values and keys) needs no dependency: a pool
	// of decoders does it ahead, in parallel, while the scheduler goroutine
	// takes transactions in relay order as they are decoded.
	decoders := max(a.workers, 2)
	decodeQ := make(chan *job, 1024)
	order := make(chan *job, 1024)
	var dwg sync.WaitGroup
	for range decoders {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			for j := range decodeQ {
				if !a.dropped(j) {
					j.err = a.decode(j)
				}
				close(j.ready)
			}
		}()
	}
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		a.schedule(order, parallel)
	}()

	executed := func(t *relayTrx) bool {
		return a.r.o.Pipe.Executed(t.GTID.SID, t.GTID.GNO)
	}
	var idx int64
loop:
	for {
		ev, pos, err := rr.next()
		if err != nil {
			if !errors.Is(err, errStopped) {
				a.halt(idx+1, err)
			}
			break
		}
		t, err := asm.add(ev)
		if err != nil {
			a.halt(idx+1, err)
			break
		}
		if t == nil {
			continue
		}
		t.RelayEnd = pos
		idx++
		// skip is settled before the scheduler can see the job: it reads
		// it without waiting for ready (an executed DDL is not run).
		j := &job{idx: idx, trx: t, ready: make(chan struct{}), skip: executed(t)}
		st.pushPending(t.GTID.OriginalCommitUS)
		select {
		case order <- j:
		case <-a.halted:
			break loop
		case <-a.stop:
			break loop
		}
		switch {
		case j.skip:
			// Fetched again after a restart (file/position mode) or
			// already applied: skip it, in order.
			close(j.ready)
		case t.DDL != nil:
			// A barrier: nothing after it is decoded before it has run
			// (it may create or change the tables they use).
			select {
			case <-j.ready:
			case <-a.halted:
				break loop
			case <-a.stop:
				break loop
			}
		default:
			select {
			case decodeQ <- j:
			case <-a.halted:
				break loop
			case <-a.stop:
				break loop
			}
		}
	}
	close(decodeQ)
	close(order)
	<-schedDone
	dwg.Wait()
	if parallel {
		close(a.jobs)
		a.wg.Wait()
	}
	close(a.infl)
	a.cwg.Wait()
	a.state.Store("")
}

// schedule takes decoded transactions in relay order, gives each its
// dependency and hands them to the workers in runs (or applies them itself
// without workers). It also runs DDL, as a barrier.
func (a *applier) schedule(order <-chan *job, parallel bool) {
	st := &a.r.Stats
	sched := newScheduler(a.mode)
	// Runs: consecutive transactions already decoded, up to batchMax, go
	// to one worker, so a hand-off between goroutines is paid per run.
	const batchMax = 16
	var batch []*job
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case a.jobs <- batch:
			batch = nil
			return true
		case <-a.stop:
			return false
		}
	}
	for j := range order {
		if a.dropped(j) {
			continue
		}
		t := j.trx
		// A DDL statement already executed (fetched again after a
		// restart) is skipped like any other transaction: its ready
		// channel is already closed.
		if t.DDL != nil && !j.skip {
			if !flush() || !a.seq.wait(j.idx-1, a.stop) {
				continue
			}
			a.state.Store("Executing DDL from the source")
			ddlStart := time.Now()
			err := a.r.o.Exec.ExecDDL(*t.DDL, binlog.GTIDInfo{SID: t.GTID.SID, GNO: t.GTID.GNO, OriginalCommitUS: t.GTID.OriginalCommitUS})
			if err != nil && !errors.Is(err, commit.ErrGTIDExecuted) {
				a.halt(j.idx, a.describe(0, j, "Query", nil, err))
				continue
			}
			sched.barrier(j.idx)
			st.worker(0).visible(t, ddlStart, time.Now())
			a.infl <- inflight{j: j}
			a.advance(j.idx)
			a.state.Store("Replica has read all relay log; waiting for more updates")
			close(j.ready)
			continue
		}
		select {
		case <-j.ready:
		case <-a.stop:
			continue
		}
		if j.skip {
			j.dep = j.idx - 1
		} else {
			if j.err != nil {
				// The batch holds transactions before this one: they
				// are still applied.
				if parallel {
					flush()
				}
				a.halt(j.idx, a.describe(0, j, "", nil, j.err))
				continue
			}
			j.dep = sched.dep(j.idx, schedInput{Gen: t.Gen, Maria: t.Maria, CommitID: t.CommitID,
				LastCommitted: t.GTID.LastCommitted, SequenceNumber: t.GTID.SequenceNumber, WriteSet: j.ws, DBs: j.dbs})
			if j.serial {
				// Rows without a primary key are found by image against
				// the data as everything before left it (a source's
				// groups do not say two such changes are independent).
				j.dep = j.idx - 1
			}
		}
		st.depDistance(j.idx - j.dep)
		if !parallel {
			if err := a.process(0, j); err != nil && !errors.Is(err, errStopped) {
				a.halt(j.idx, err)
			}
			continue
		}
		batch = append(batch, j)
		if len(batch) >= batchMax || len(order) == 0 {
			flush()
		}
	}
	if parallel {
		flush()
	}
}

func (a *applier) worker(id int) {
	defer a.wg.Done()
	for run := range a.jobs {
		for _, j := range run {
			if a.dropped(j) {
				break
			}
			if err := a.process(id, j); err != nil {
				if !errors.Is(err, errStopped) {
					a.halt(j.idx, err)
				}
				break
			}
		}
	}
}

// process runs steps 1-3 for one transaction.
func (a *applier) process(worker int, j *job) (err error) {
	st := &a.r.Stats
	ws := st.worker(worker)
	t0 := time.Now()
	if !j.skip {
		j.worker, j.started = worker, t0
		ws.begin(j.trx, t0)
		defer func() {
			if err != nil && !errors.Is(err, errStopped) {
				ws.failed(sqlError(err))
			} else {
				ws.handedOff()
			}
		}()
	}
	if j.skip {
		if !a.seq.wait(j.idx-1, a.stop) {
			return errStopped
		}
		a.infl <- inflight{j: j}
		a.advance(j.idx)
		return nil
	}
	tw := time.Now()
	if !a.seq.wait(j.dep, a.stop) {
		return errStopped
	}
	if j.finds && !a.waitVisible(j.idx-1) {
		return errStopped
	}
	waited := time.Since(tw)
	// Parallelism: transactions between the start of their apply here and
	// becoming visible (complete() counts them out), sampled as each starts.
	st.concurrency(a.busy.Add(1))
	ct, local, err := a.build(worker, j)
	if err != nil {
		a.busy.Add(-1)
		return err
	}
	tw2 := time.Now()
	if !a.seq.wait(j.idx-1, a.stop) {
		a.busy.Add(-1)
		ct.Batch.Close()
		return errStopped
	}
	j.counted = true
	waited += time.Since(tw2)
	j.keys = a.ov.publish(local, j.idx)
	for _, k := range j.keys {
		a.lastWrite[a.slot(k)].Store(j.idx)
	}
	if err := a.r.o.Pipe.Submit(ct); err != nil {
		ct.Batch.Close()
		a.ov.remove(j.keys, j.idx)
		if !errors.Is(err, commit.ErrGTIDExecuted) {
			return err
		}
		ct = nil
	}
	a.infl <- inflight{j: j, ct: ct}
	a.advance(j.idx)
	ws.Applied.Add(1)
	ws.WaitNanos.Add(uint64(waited))
	ws.BusyNanos.Add(uint64(time.Since(t0) - waited))
	return nil
}

// waitVisible waits until every transaction up to idx is visible in
// storage, or the applier stops (false).
func (a *applier) waitVisible(idx int64) bool {
	for a.visible.Load() < idx {
		select {
		case <-a.stop:
			return false
		case <-time.After(100 * time.Microsecond):
		}
	}
	return true
}

// complete waits for submitted transactions in order.
func (a *applier) complete() {
	defer a.cwg.Done()
	st := &a.r.Stats
	auto := a.r.Source().AutoPosition
	lastSave := time.Now()
	var file string
	var pos uint32
	relayFile := 1
	for in := range a.infl {
		if in.ct != nil {
			if err := in.ct.Wait(); err != nil {
				a.fail(err)
			}
			a.ov.remove(in.j.keys, in.j.idx)
		}
		a.visible.Store(in.j.idx)
		if in.j.counted {
			a.busy.Add(-1)
		}
		t := in.j.trx
		if in.ct != nil {
			st.worker(in.j.worker).visible(t, in.j.started, time.Now())
		}
		st.applied(t, in.j.skip)
		if t.RelayEnd.File > relayFile {
			relayFile = t.RelayEnd.File
			a.relay.removeBefore(relayFile)
		}
		file, pos = t.SourceFile, t.SourceEnd
		if !auto && time.Since(lastSave) > time.Second {
			a.r.saveExecPosition(file, pos)
			lastSave = time.Now()
		}
	}
	if !auto {
		a.r.saveExecPosition(file, pos)
	}
}

var eventNames = map[byte]string{
	binlog.WriteRowsEventV2:  "Write_rows",
	binlog.UpdateRowsEventV2: "Update_rows",
	binlog.DeleteRowsEventV2: "Delete_rows",
}

// decode resolves tables and decodes every row image of j, computing keys
// and the write set.
func (a *applier) decode(j *job) error {
	tables := map[uint64]*storage.Table{}
	store := a.r.o.Store
	for _, ev := range j.trx.Events {
		typ := ev[4]
		body := ev[binlog.HeaderSize : len(ev)-binlog.ChecksumSize]
		if typ == binlog.TableMapEvent {
			m, err := binlog.ParseTableMap(body)
			if err != nil {
				return err
			}
			t, ok := store.Table(m.DB, m.Table)
			if !ok {
				return &applyError{1146, fmt.Sprintf("Table '%s.%s' doesn't exist", m.DB, m.Table)}
			}
			if err := a.checkColumns(t, m); err != nil {
				return err
			}
			tables[m.TableID] = t
			db := strings.ToLower(t.Def.DB)
			found := false
			for _, d := range j.dbs {
				found = found || d == db
			}
			if !found {
				j.dbs = append(j.dbs, db)
			}
			continue
		}
		kind, ok := binlog.RowsKind(typ)
		if !ok {
			continue
		}
		rows, err := binlog.ParseRows(typ, body)
		if err != nil {
			return err
		}
		t, ok := tables[rows.TableID]
		if !ok {
			return fmt.Errorf("rows event for table id %d without a table map", rows.TableID)
		}
		if rows.NCols != len(t.Def.Columns) {
			return &applyError{13146, fmt.Sprintf("rows event for %s.%s has %d columns, the replica's table has %d", t.Def.DB, t.Def.Name, rows.NCols, len(t.Def.Columns))}
		}
		if kind != binlog.WriteRowsEventV2 && rows.Flags&binlog.RowsFlagNoForeignKeyChecks == 0 && !a.r.sourceLogsCascades.Load() &&
			a.r.o.CascadeParent != nil && a.r.o.CascadeParent(t.Def.ID) {
			// The children this change would cascade to are not in the
			// source's binlog, and the applier applies rows only:
			// applying it would leave them behind, silently.
			return &applyError{1235, fmt.Sprintf("This version of Lockstep doesn't yet support applying the ON DELETE / ON UPDATE actions of foreign keys referencing %s.%s from a MySQL or MariaDB source (their binlog does not have the rows those actions change); remove the actions from the replica's constraints, or replicate from a Lockstep source", t.Def.DB, t.Def.Name)}
		}
		data := rows.Data
		first := len(j.changes)
		for len(data) > 0 {
			c := rowChange{kind: kind, t: t, event: eventNames[kind]}
			img := func() ([]byte, []row.Value, error) {
				vals, n, err := row.DecodeImage(data, t.Def.Columns, nil)
				if err != nil {
					return nil, nil, err
				}
				im := data[:n]
				data = data[n:]
				return im, vals, nil
			}
			if kind != binlog.WriteRowsEventV2 {
				if c.before, c.bvals, err = img(); err != nil {
					return err
				}
			}
			if kind != binlog.DeleteRowsEventV2 {
				if c.after, c.avals, err = img(); err != nil {
					return err
				}
			}
			if t.Keyless() {
				j.serial = true // build finds the row
				j.finds = j.finds || kind != binlog.WriteRowsEventV2
			} else {
				if err := c.planFromImages(); err != nil {
					return err
				}
				j.ws = append(j.ws, c.plan.WriteSet...)
			}
			j.changes = append(j.changes, c)
		}
		if rows.Flags&binlog.RowsFlagStmtEnd != 0 && len(j.changes) > first {
			j.changes[len(j.changes)-1].stmtEnd = true
		}
	}
	if n := len(j.changes); n > 0 {
		j.changes[n-1].stmtEnd = true
	}
	j.decoded = true
	if !j.serial {
		return a.prefetch(j)
	}
	return nil
}

// prefetch reads the current value of each change's row key (see the top
// of the file).
func (a *applier) prefetch(j *job) error {
	vis, own := a.visible.Load(), a.r.o.Pipe.OwnCommits()
	db := a.r.o.Store.Latest()
	for i := range j.changes {
		c := &j.changes[i]
		c.preVis, c.preOwn = vis, own
		k := c.checked()
		found, err := db.View(k, func(v []byte) error {
			c.pre = append(make([]byte, 0, len(v)), v...) // non-nil: nil is a tombstone
			return nil
		})
		if err != nil {
			return err
		}
		c.preFound, c.preDone = found, true
	}
	return nil
}

// checked is the key a change's row check reads: the row it changes, or
// for an insert the key the row takes.
func (c *rowChange) checked() []byte {
	if c.kind == binlog.WriteRowsEventV2 {
		return c.akey
	}
	return c.bkey
}

// planFromImages plans a change of a table with a primary key from the
// event's images alone, the before image taken as the current row: its
// keys and write set are known before the data is read.
func (c *rowChange) planFromImages() error {
	if c.kind == binlog.WriteRowsEventV2 {
		err := c.t.PlanInsert(&c.plan, c.after, c.avals, nil, nil)
		c.akey = c.plan.Key
		return err
	}
	var err error
	if c.at, err = c.t.Locate(c.before, c.bvals, nil, nil, nil); err != nil {
		return err
	}
	c.bkey = c.at.Key
	if c.kind == binlog.DeleteRowsEventV2 {
		return c.t.PlanDelete(&c.plan, c.at, c.bvals)
	}
	err = c.t.PlanUpdate(&c.plan, c.at, c.before, c.bvals, c.after, c.avals, nil, nil)
	c.akey = c.plan.Key
	return err
}

func (a *applier) slot(k string) uint32 {
	return uint32(maphash.String(a.seed, k)) & uint32(len(a.lastWrite)-1)
}

// prefetched returns c's prefetched read of key if it is still the value
// storage holds for j (see the top of the file).
func (a *applier) prefetched(c *rowChange, key []byte) (v []byte, found, ok bool) {
	if c == nil || !c.preDone {
		return nil, false, false
	}
	want := c.checked()
	if !bytes.Equal(key, want) {
		return nil, false, false
	}
	if a.lastWrite[a.slot(string(key))].Load() > c.preVis || a.r.o.Pipe.OwnCommits() != c.preOwn {
		a.r.Stats.PrefetchStale.Add(1)
		return nil, false, false
	}
	a.r.Stats.PrefetchUsed.Add(1)
	return c.pre, c.preFound, true
}

// checkColumns verifies that the source's column types are the replica
// table's, byte for byte: the row images go to storage as they are.
func (a *applier) checkColumns(t *storage.Table, m binlog.TableMap) error {
	var own binlog.TableMap
	if v, ok := a.maps.Load(t); ok {
		own = v.(binlog.TableMap)
	} else {
		ref := t.Ref()
		var err error
		if own, err = binlog.ParseTableMap(ref.Map); err != nil {
			return err
		}
		a.maps.Store(t, own)
	}
	if msg := binlog.ColumnMismatch(own, m); msg != "" {
		return &applyError{13146, msg + " (Lockstep replicas need the source's column types)"}
	}
	return nil
}

// lookup calls fn with a key's current value, if it has one: the
// transaction's own writes, then change c's prefetched read (c may be nil),
// then the overlay of submitted transactions, then storage. fn must not keep
// the value.
func (a *applier) lookup(c *rowChange, local map[string][]byte, key []byte, fn func(v []byte) error) (bool, error) {
	v, ok := local[string(key)]
	if !ok {
		var found bool
		if v, found, ok = a.prefetched(c, key); ok && !found {
			return false, nil
		}
	}
	if !ok {
		v, ok = a.ov.get(key)
	}
	if !ok {
		return a.r.o.Store.Latest().View(key, fn)
	}
	if v == nil {
		return false, nil
	}
	if fn == nil {
		return true, nil
	}
	return true, fn(v)
}

// tombstone marks a deleted key in the overlay maps.
var tombstone []byte

// build checks j's rows against the current data and makes its commit.
func (a *applier) build(worker int, j *job) (*commit.Trx, map[string][]byte, error) {
	local := make(map[string][]byte, len(j.changes)*2)
	b := a.r.o.Store.NewBatch()
	ev := &binlog.TrxEvents{}
	// The replica logs about what the source did: BEGIN, the same row
	// images and table maps.
	size := 128
	for _, e := range j.trx.Events {
		size += len(e)
	}
	ev.Grow(size)
	began := false
	fail := func(c *rowChange, err error) (*commit.Trx, map[string][]byte, error) {
		b.Close()
		return nil, nil, a.describe(worker, j, c.event, c, err)
	}
	set := func(k, v []byte) error {
		local[string(k)] = v
		return b.Set(k, v)
	}
	del := func(k []byte) error {
		local[string(k)] = tombstone
		return b.Delete(k)
	}
	for i := range j.changes {
		c := &j.changes[i]
		if !began {
			ev.AddQuery(c.t.Def.DB, "BEGIN", binlog.QueryOptions{})
			began = true
		}
		err := a.plan(c, local)
		if err == nil {
			err = a.checkAbsent(c, local)
		}
		if err == nil {
			err = storage.WriteChange(&c.plan, set, del)
		}
		var ae *applyError
		if err != nil && errors.As(err, &ae) && a.r.skipError(ae.code) {
			a.r.Stats.SkippedErrors.Add(1)
			err = nil
			if c.stmtEnd {
				ev.EndStatement()
			}
			continue
		}
		if err != nil {
			return fail(c, err)
		}
		ev.AddRow(c.kind, c.t.Ref(), c.before, c.after)
		if c.stmtEnd {
			ev.EndStatement()
		}
	}
	if !began {
		ev.AddQuery("", "BEGIN", binlog.QueryOptions{})
	}
	ev.AddXID(a.xid.Add(1))
	ct := &commit.Trx{Events: ev, Batch: b, WriteSet: j.ws, KeepGTID: true,
		GTID: binlog.GTIDInfo{SID: j.trx.GTID.SID, GNO: j.trx.GTID.GNO, OriginalCommitUS: j.trx.GTID.OriginalCommitUS}}
	if len(ct.WriteSet) == 0 || j.serial {
		ct.WriteSet = nil
	}
	return ct, local, nil
}

// plan makes c's plan against the data the transaction sees now: the
// row an update or delete acts on as it is (normally the source's before
// image, which the plan made at decode assumed), and for a table without
// a primary key the row found by its image, or the key a new row takes,
// as the source did (see package storage).
func (a *applier) plan(c *rowChange, local map[string][]byte) error {
	if c.t.Keyless() {
		get := func(k []byte) ([]byte, bool, error) {
			var out []byte
			ok, err := a.lookup(nil, local, k, func(v []byte) error {
				out = append([]byte(nil), v...)
				return nil
			})
			return out, ok, err
		}
		c.plan.Reset()
		if c.kind == binlog.WriteRowsEventV2 {
			return c.t.PlanInsert(&c.plan, c.after, c.avals, get, nil)
		}
		at, err := c.t.Locate(c.before, c.bvals, nil, get, nil)
		if err != nil {
			return err
		}
		if at.Key == nil {
			return notFound(c.t, c.bvals)
		}
		if c.kind == binlog.DeleteRowsEventV2 {
			return c.t.PlanDelete(&c.plan, at, c.bvals)
		}
		return c.t.PlanUpdate(&c.plan, at, c.before, c.bvals, c.after, c.avals, get, nil)
	}
	if c.kind == binlog.WriteRowsEventV2 {
		return nil // an insert's plan does not depend on the data
	}
	var cur []byte
	ok, err := a.lookup(c, local, c.bkey, func(v []byte) error {
		if !bytes.Equal(v, c.before) {
			cur = append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return notFound(c.t, c.bvals)
	}
	if cur == nil {
		return nil
	}
	vals, err := c.t.Decode(cur, nil)
	if err != nil {
		return err
	}
	c.plan.Reset()
	if c.kind == binlog.DeleteRowsEventV2 {
		return c.t.PlanDelete(&c.plan, c.at, vals)
	}
	return c.t.PlanUpdate(&c.plan, c.at, cur, vals, c.after, c.avals, nil, nil)
}

// checkAbsent fails with 1062 if a key c's plan must not find exists.
func (a *applier) checkAbsent(c *rowChange, local map[string][]byte) error {
	for _, k := range c.plan.Absent {
		if ok, err := a.lookup(c, local, k.Key, nil); err != nil {
			return err
		} else if ok {
			return dupError(c.t, k.Index, c.avals)
		}
	}
	return nil
}

func keyText(t *storage.Table, vals []row.Value, cols []int) string {
	var parts []string
	for _, c := range cols {
		v := vals[c]
		switch x := v.(type) {
		case nil:
			parts = append(parts, "NULL")
		case []byte:
			parts = append(parts, string(x))
		default:
			parts = append(parts, fmt.Sprint(x))
		}
	}
	return strings.Join(parts, "-")
}

func dupError(t *storage.Table, index int, vals []row.Value) error {
	name, cols := "PRIMARY", t.Def.PK
	if index >= 0 {
		name, cols = t.Def.Indexes[index].Name, t.Def.Indexes[index].Columns
	}
	return &applyError{1062, fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", keyText(t, vals, cols), t.Def.Name, name)}
}

func notFound(t *storage.Table, vals []row.Value) error {
	var kv []string
	for _, c := range t.Def.PK {
		kv = append(kv, t.Def.Columns[c].Name+"="+keyText(t, vals, []int{c}))
	}
	return &applyError{1032, fmt.Sprintf("Can't find record in '%s' (primary key %s)", t.Def.Name, strings.Join(kv, ", "))}
}

// describe wraps an apply error as MySQL reports it: the worker, the GTID,
// the source position, the event and table.
func (a *applier) describe(worker int, j *job, event string, c *rowChange, err error) error {
	var ae *applyError
	code := uint16(13117)
	msg := err.Error()
	if errors.As(err, &ae) {
		code, msg = ae.code, ae.msg
	}
	t := j.trx
	where := fmt.Sprintf("Worker %d failed executing transaction '%s:%d' at source log %s, end_log_pos %d", worker, t.GTID.SID, t.GTID.GNO, t.SourceFile, t.SourceEnd)
	if c != nil {
		handler := ""
		switch code {
		case 1032:
			handler = "; handler error HA_ERR_KEY_NOT_FOUND"
		case 1062:
			handler = "; handler error HA_ERR_FOUND_DUPP_KEY"
		}
		msg = fmt.Sprintf("Could not execute %s event on table %s.%s; %s, Error_code: %d%s", event, c.t.Def.DB, c.t.Def.Name, msg, code, handler)
	} else if event == "Query" {
		msg = fmt.Sprintf("Error '%s' on query. Default database: '%s'. Query: '%.200s'", msg, t.DDL.DB, t.DDL.Query)
	}
	return &applyError{code, where + "; " + msg}
}

// sequencer tracks the newest transaction number that has reserved its
// commit slot; all before it have too.
type sequencer struct {
	mu      sync.Mutex
	done    int64
	waiters []seqWaiter
	limit   int64 // a failed transaction's number, 0 if none
}

type seqWaiter struct {
	idx int64
	ch  chan struct{}
}

// wait returns true once transaction idx has been submitted (idx <= 0 at
// once), false if stop closes first.
func (s *sequencer) wait(idx int64, stop <-chan struct{}) bool {
	s.mu.Lock()
	if s.done >= idx {
		s.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, seqWaiter{idx, ch})
	s.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-stop:
		return false
	}
}

// advance marks transaction idx submitted and reports whether it is the
// last one before the limit.
func (s *sequencer) advance(idx int64) (reached bool) {
	s.mu.Lock()
	s.done = idx
	reached = s.limit > 0 && idx >= s.limit-1
	keep := s.waiters[:0]
	for _, w := range s.waiters {
		if w.idx <= idx {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	s.waiters = keep
	s.mu.Unlock()
	return reached
}

// haltAt sets the limit to idx, a failed transaction, and reports whether
// every transaction before it is already submitted.
func (s *sequencer) haltAt(idx int64) (reached bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == 0 || idx < s.limit {
		s.limit = idx
	}
	return s.done >= s.limit-1
}

// overlay holds the rows of transactions submitted to the pipeline but not
// yet visible in storage: key -> newest image (tombstone for a delete),
// tagged with the transaction number that wrote it.
type overlay struct {
	shards [64]ovShard
}

type ovShard struct {
	mu sync.RWMutex
	m  map[string]ovEntry
}

type ovEntry struct {
	idx int64
	v   []byte
}

func (o *overlay) init() {
	for i := range o.shards {
		o.shards[i].m = map[string]ovEntry{}
	}
}

func (o *overlay) shard(k string) *ovShard {
	h := uint32(2166136261)
	for i := 0; i < len(k); i++ {
		h = (h ^ uint32(k[i])) * 16777619
	}
	return &o.shards[h%uint32(len(o.shards))]
}

func (o *overlay) get(k []byte) ([]byte, bool) {
	s := o.shard(string(k))
	s.mu.RLock()
	e, ok := s.m[string(k)]
	s.mu.RUnlock()
	return e.v, ok
}

func (o *overlay) publish(local map[string][]byte, idx int64) []string {
	keys := make([]string, 0, len(local))
	for k, v := range local {
		s := o.shard(k)
		s.mu.Lock()
		s.m[k] = ovEntry{idx, v}
		s.mu.Unlock()
		keys = append(keys, k)
	}
	return keys
}

func (o *overlay) remove(keys []string, idx int64) {
	for _, k := range keys {
		s := o.shard(k)
		s.mu.Lock()
		if e, ok := s.m[k]; ok && e.idx == idx {
			delete(s.m, k)
		}
		s.mu.Unlock()
	}
}
