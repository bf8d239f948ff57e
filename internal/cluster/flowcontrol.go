package cluster

// Flow control: how fast a node admits its sessions' commits when a
// member cannot apply as fast as the cluster commits.
//
// Every member applies every transaction. One that applies more slowly
// than the cluster commits falls behind: its apply queue (committed, not
// yet applied: wsrep_local_recv_queue) grows, and so do the staleness of
// its reads and the time a causal read waits there. Galera bounds the
// queue by stopping the whole cluster: a node whose queue passes
// gcs.fc_limit sends a pause, every node stops replicating until it
// sends a resume (at fc_limit * fc_factor), and one slow node can keep
// the cluster paused most of the time (a published benchmark measured
// 64% with one applier thread; bench/cluster.sh measures 46-81% here).
//
// Here nothing stops. The policy below is a pure function of what it is
// told, with time passed in:
//
//   - Every member measures its apply queue and its apply capacity
//     (transactions applied per second spent applying, a moving mean:
//     what it could apply, not what it was given) and reports them to
//     the others every tick while its queue is not empty (Local,
//     Observe).
//   - An origin throttles only while a member it counts has a queue over
//     Limit, and only as far as needed: its sessions' commits are paced
//     (spaced evenly, not stopped) at its share of the slowest counted
//     member's apply capacity, the share being the origin's part of the
//     cluster's recent commits; the rate is lowered further the more the
//     queue exceeds Limit (down to a quarter), so the queue drains, and
//     pacing ends when it is back at Limit * Factor (gcs.fc_factor).
//   - A member asks the others to slow down when its queue goes over
//     Limit, until it has caught up (back at half the resume point:
//     pacing alone only holds its queue near the limit). The time it
//     spends asking is its debt; the debt shrinks at a third of that
//     rate while it does not ask, so a member that keeps the cluster
//     paced more than a quarter of the time runs it up, and one that
//     needs pacing only now and then does not. A member whose debt
//     reaches DesyncAfter, or whose queue is 64 limits long (back from a
//     long pause, say: pacing cannot drain that soon), desyncs itself:
//     it says so in its reports and the others stop counting it, so one
//     slow member costs the others about DesyncAfter of pacing at a
//     time. It still receives, syncs
//     and votes on every entry, and catches up at its own speed; it
//     syncs again, its debt cleared, once it has caught up. What its
//     clients' reads do meanwhile is the server's setting (they wait for
//     a causal read, or are refused).
//   - Members not heard from for Stale, and members not synced
//     (joining, or outside the primary component), are not counted.
//
// The figures reported as Galera names them: paused is the time during
// which pacing held at least one of this node's commits back (Held:
// wsrep_flow_control_paused_ns, and as a fraction of the time since the
// counters were reset), so pacing that never made a commit wait costs
// nothing there; sent counts the times this node's own queue went over
// Limit (it asked the others to slow down), recv the times this node
// began pacing.
//
// Flow control reads what members say of themselves: a lost, late or
// forged report costs pacing that is too long or too short, never a
// wrong commit.

import (
	"math"
	"time"
)

// FlowConfig is flow control's settings.
type FlowConfig struct {
	// Limit is the apply queue (entries) past which a member asks the
	// others to slow down (gcs.fc_limit).
	Limit uint64
	// Factor: pacing ends once the queue is back at Limit * Factor
	// (gcs.fc_factor, 0..1).
	Factor float64
	// DesyncAfter is how long a member's queue may stay over Limit before
	// it desyncs itself (0: never).
	DesyncAfter time.Duration
	// Stale: a member not heard from for this long is not counted (0:
	// half a second).
	Stale time.Duration
}

// DefaultFlowConfig is Galera's gcs.fc_limit and gcs.fc_factor, and two
// seconds before a slow member desyncs.
var DefaultFlowConfig = FlowConfig{Limit: 16, Factor: 1, DesyncAfter: 2 * time.Second}

const (
	// staleReport is FlowConfig.Stale's default.
	staleReport = 500 * time.Millisecond
	// meterWindow is the time constant of the rates' moving means.
	meterWindow = time.Second
	// minPacedRate is the slowest pacing, in commits a second: a member
	// that reports applying nothing does not stop the others.
	minPacedRate = 10
	// maxOver caps how far over the limit (in limits) slows the pace: at
	// most to a quarter of what the slowest member can apply.
	maxOver = 3
	// farBehind: a member whose queue is this many limits long (back
	// from a long pause, say) desyncs at once instead of running up a
	// debt while the others crawl.
	farBehind = 64
)

// FlowReport is what a member says of its apply queue.
type FlowReport struct {
	Queue    uint64  // entries committed and not applied
	Rate     float64 // apply capacity: transactions a second of applying (moving mean; +Inf: not measured yet)
	Desynced bool
	Synced   bool // in the primary component and caught up (Driver.Synced)
}

// FlowControl is one node's flow-control state.
type FlowControl struct {
	cfg   FlowConfig
	peers map[uint64]heardReport
	self  FlowReport

	asking    bool          // own queue went over Limit, not caught up since
	debt      time.Duration // time asking, less a third of the time not
	lastLocal time.Time     // the last Local call

	pacing bool
	rate   float64 // commits a second while pacing

	// Counters since the last Reset: the time commits were held (the
	// union of the intervals Held was given; heldUntil is the end of the
	// last).
	held       time.Duration
	heldUntil  time.Time
	sent, recv uint64
	resetAt    time.Time
}

type heardReport struct {
	FlowReport
	at time.Time
}

// NewFlowControl returns the flow-control state of a node started at now.
func NewFlowControl(cfg FlowConfig, now time.Time) *FlowControl {
	return &FlowControl{cfg: cfg.valid(), peers: map[uint64]heardReport{}, resetAt: now, self: FlowReport{Synced: true}}
}

func (cfg FlowConfig) valid() FlowConfig {
	if cfg.Factor < 0 || cfg.Factor > 1 {
		cfg.Factor = 1
	}
	if cfg.Limit == 0 {
		cfg.Limit = 1
	}
	if cfg.Stale <= 0 {
		cfg.Stale = staleReport
	}
	return cfg
}

// Config is the settings in force.
func (f *FlowControl) Config() FlowConfig { return f.cfg }

// SetConfig changes the settings (SET GLOBAL); they apply from the next
// step.
func (f *FlowControl) SetConfig(cfg FlowConfig) { f.cfg = cfg.valid() }

func (f *FlowControl) resume() float64 { return float64(f.cfg.Limit) * f.cfg.Factor }

// Local takes this node's own measurements at now: its apply queue and
// capacity, and whether it is synced. It returns the report to send the
// others, and whether to send it (every step while the queue is not
// empty or the desync state changed, so that the last report a peer
// holds is never a stale high queue).
func (f *FlowControl) Local(now time.Time, queue uint64, rate float64, synced bool) (FlowReport, bool) {
	prev := f.self
	r := FlowReport{Queue: queue, Rate: rate, Desynced: prev.Desynced, Synced: synced}
	if !f.lastLocal.IsZero() {
		if dt := now.Sub(f.lastLocal); dt > 0 {
			if f.asking {
				f.debt += dt
			} else {
				f.debt = max(f.debt-dt/3, 0)
			}
		}
	}
	f.lastLocal = now
	switch {
	case queue > f.cfg.Limit && !f.asking:
		f.asking = true
		f.sent++
	case float64(queue) <= f.resume()/2 && f.asking:
		// Caught up, not merely held near the limit by the others'
		// pacing.
		f.asking = false
	}
	if f.asking && !r.Desynced && f.cfg.DesyncAfter > 0 && (f.debt >= f.cfg.DesyncAfter || queue > farBehind*f.cfg.Limit) {
		r.Desynced = true
	}
	if r.Desynced && !f.asking {
		r.Desynced = false
		f.debt = 0
	}
	f.self = r
	send := queue > 0 || prev.Queue > 0 || r.Desynced != prev.Desynced || r.Synced != prev.Synced
	return r, send
}

// Self is this node's last own report.
func (f *FlowControl) Self() FlowReport { return f.self }

// Observe takes member id's report, received at now.
func (f *FlowControl) Observe(now time.Time, id uint64, r FlowReport) {
	f.peers[id] = heardReport{FlowReport: r, at: now}
}

// Pace decides, at now, how fast this node admits its sessions' commits:
// share is its part of the cluster's recent commits (0..1). It returns
// the commits a second to pace at, or +Inf when there is no pacing.
func (f *FlowControl) Pace(now time.Time, share float64) float64 {
	// The counted member with the longest queue, and the slowest apply
	// rate among those over the limit.
	var worst uint64
	slowest := math.Inf(1)
	count := func(r FlowReport) {
		if r.Desynced || !r.Synced {
			return
		}
		worst = max(worst, r.Queue)
		if r.Queue > f.cfg.Limit {
			slowest = min(slowest, r.Rate)
		}
	}
	count(f.self)
	for _, p := range f.peers {
		if now.Sub(p.at) < f.cfg.Stale {
			count(p.FlowReport)
		}
	}
	switch {
	case worst > f.cfg.Limit && !math.IsInf(slowest, 1):
		// The further over the limit, the slower: at twice the limit the
		// cluster admits half what the slowest member can apply, and
		// never less than a quarter (a queue far over the limit is a
		// member that desyncs, not one to wait for).
		over := min(float64(worst-f.cfg.Limit)/float64(f.cfg.Limit), maxOver)
		target := slowest / (1 + over)
		share = min(max(share, 0.05), 1)
		rate := max(target*share, minPacedRate)
		if !f.pacing {
			f.pacing = true
			f.recv++
		}
		f.rate = rate
		return rate
	case f.pacing && float64(worst) > f.resume():
		// Between the resume point and the limit: keep the last rate.
		return f.rate
	}
	f.pacing = false
	return math.Inf(1)
}

// Held records that pacing held a commit back from from until until.
func (f *FlowControl) Held(from, until time.Time) {
	if !until.After(from) {
		return
	}
	switch {
	case from.After(f.heldUntil):
		f.held += until.Sub(from)
	case until.After(f.heldUntil):
		f.held += until.Sub(f.heldUntil)
	}
	if until.After(f.heldUntil) {
		f.heldUntil = until
	}
}

// FlowStats are flow control's counters, as Galera names them.
type FlowStats struct {
	// Paused is the time commits were held back since the counters were
	// reset, and PausedFraction that time over the time since then
	// (wsrep_flow_control_paused).
	Paused         time.Duration
	PausedFraction float64
	Sent, Recv     uint64
	Active         bool    // pacing now (wsrep_flow_control_active)
	Requested      bool    // own queue over the limit (_requested)
	Desynced       bool    // this node desynced itself
	Rate           float64 // the pacing rate while Active
}

// Stats returns the counters at now.
func (f *FlowControl) Stats(now time.Time) FlowStats {
	s := FlowStats{Paused: f.held, Sent: f.sent, Recv: f.recv, Active: f.pacing, Requested: f.asking, Desynced: f.self.Desynced}
	if f.heldUntil.After(now) {
		s.Paused -= f.heldUntil.Sub(now) // not over yet
	}
	if f.pacing {
		s.Rate = f.rate
	}
	if d := now.Sub(f.resetAt); d > 0 {
		s.PausedFraction = min(float64(s.Paused)/float64(d), 1)
	}
	return s
}

// Reset starts the counters again at now (FLUSH STATUS).
func (f *FlowControl) Reset(now time.Time) {
	f.held, f.sent, f.recv, f.resetAt = 0, 0, 0, now
	if f.heldUntil.After(now) {
		f.held = f.heldUntil.Sub(now)
	}
}

// capacity is a moving mean of what a member applies per second of
// applying, fed running counts of transactions applied and of time spent
// applying; each sample weighs by its time spent applying, so a member
// that was idle keeps its estimate.
type capacity struct {
	trxs  uint64
	busy  time.Duration
	rate  float64
	begun bool
}

// note takes the counts and returns the capacity (+Inf until something
// was applied).
func (c *capacity) note(trxs uint64, busy time.Duration) float64 {
	if !c.begun {
		c.begun, c.trxs, c.busy, c.rate = true, trxs, busy, math.Inf(1)
		return c.rate
	}
	dt, db := trxs-c.trxs, busy-c.busy
	if db <= 0 || dt == 0 {
		return c.rate
	}
	inst := float64(dt) / db.Seconds()
	if math.IsInf(c.rate, 1) {
		c.rate = inst
	} else {
		alpha := min(float64(db)/float64(meterWindow/10), 1)
		c.rate += alpha * (inst - c.rate)
	}
	c.trxs, c.busy = trxs, busy
	return c.rate
}

// meter is a moving mean of a rate, fed a running count at chosen
// instants.
type meter struct {
	last  uint64
	at    time.Time
	rate  float64
	begun bool
}

// note takes the count at now and returns the rate (per second).
func (m *meter) note(now time.Time, count uint64) float64 {
	if !m.begun {
		m.begun, m.last, m.at = true, count, now
		return 0
	}
	dt := now.Sub(m.at)
	if dt <= 0 {
		return m.rate
	}
	inst := float64(count-m.last) / dt.Seconds()
	alpha := min(float64(dt)/float64(meterWindow), 1)
	m.rate += alpha * (inst - m.rate)
	m.last, m.at = count, now
	return m.rate
}
