package cluster

// The driver's side of flow control (the policy is flowcontrol.go): each
// tick Run measures this node's apply queue and rates, reports them to
// the other members while there is something to report, and asks the
// policy how fast this node's sessions may commit; Commit waits for its
// turn at that pace (admit) before it sends a transaction to be
// certified. Reports travel as kindFlow packets.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"golang.org/x/time/rate"
)

// pacer is the driver's flow-control state.
type pacer struct {
	mu sync.Mutex // fc, the meters and the limiter's settings
	fc *FlowControl
	// capacity is what this node applies per second of applying; ownM
	// and handedM are the rates of transactions committed by this node's
	// sessions and in the cluster (Run's).
	capacity      capacity
	ownM, handedM meter

	pacing   atomic.Bool // the limiter is in force
	desynced atomic.Bool // this node desynced itself
	limiter  *rate.Limiter

	appliedTrxs atomic.Uint64 // transaction entries applied (the apply loop's)
	applyBusy   atomic.Int64  // nanoseconds spent applying them (the apply loop's)
	handedTrxs  uint64        // transaction entries handed (Run's)

	// The apply queue sampled every tick: the sum and the number of
	// samples (wsrep_local_recv_queue_avg).
	queueSum, queueSamples uint64
}

func newPacer(cfg FlowConfig) *pacer {
	return &pacer{fc: NewFlowControl(cfg, time.Now()), limiter: rate.NewLimiter(rate.Inf, 1)}
}

// countTrxs is the number of transaction entries among es.
func countTrxs(es []raftpb.Entry) uint64 {
	var n uint64
	for i := range es {
		if es[i].Type == raftpb.EntryNormal && len(es[i].Data) > 0 {
			n++
		}
	}
	return n
}

// flowTick measures, reports and sets the pace (on Run's goroutine, every
// tick).
func (d *Driver) flowTick(now time.Time) {
	p := d.pacer
	queue := d.handed - min(d.appliedIndex.Load(), d.handed)
	p.mu.Lock()
	p.queueSum += queue
	p.queueSamples++
	canApply := p.capacity.note(p.appliedTrxs.Load(), time.Duration(p.applyBusy.Load()))
	own := p.ownM.note(now, d.localCommits.Load())
	total := p.handedM.note(now, p.handedTrxs)
	r, send := p.fc.Local(now, queue, canApply, d.Synced())
	p.desynced.Store(r.Desynced)
	share := 1.0
	if total > 0 {
		share = own / total
	}
	pace := p.fc.Pace(now, share)
	if math.IsInf(pace, 1) {
		if p.pacing.Load() {
			p.pacing.Store(false)
			p.limiter.SetLimitAt(now, rate.Inf)
		}
	} else {
		p.limiter.SetLimitAt(now, rate.Limit(pace))
		p.pacing.Store(true)
	}
	p.mu.Unlock()
	if send {
		payload := encodeFlowReport(r)
		for id := range d.transport.peerAddrs() {
			d.transport.SendPacket(Packet{Kind: kindFlow, From: d.node.ID(), To: id, Payload: payload})
		}
	}
}

// flowHeard takes a member's report.
func (d *Driver) flowHeard(from uint64, payload []byte) {
	r, err := decodeFlowReport(payload)
	if err != nil {
		return
	}
	if _, known := d.transport.peerAddrs()[from]; !known {
		return
	}
	d.pacer.mu.Lock()
	d.pacer.fc.Observe(time.Now(), from, r)
	d.pacer.mu.Unlock()
}

// admit waits for this node's turn to send a transaction while the
// cluster is paced; without pacing it returns at once.
func (d *Driver) admit(ctx context.Context) error {
	p := d.pacer
	if !p.pacing.Load() {
		return nil
	}
	now := time.Now()
	r := p.limiter.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	p.mu.Lock()
	p.fc.Held(now, now.Add(delay))
	p.mu.Unlock()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	case <-d.done:
		r.Cancel()
		return ErrStopped
	}
}

// FlowStats returns this node's flow-control counters.
func (d *Driver) FlowStats() FlowStats {
	d.pacer.mu.Lock()
	defer d.pacer.mu.Unlock()
	return d.pacer.fc.Stats(time.Now())
}

// RecvQueueAvg is the mean apply queue, sampled every tick since the
// driver started (wsrep_local_recv_queue_avg).
func (d *Driver) RecvQueueAvg() float64 {
	d.pacer.mu.Lock()
	defer d.pacer.mu.Unlock()
	if d.pacer.queueSamples == 0 {
		return 0
	}
	return float64(d.pacer.queueSum) / float64(d.pacer.queueSamples)
}

// ResetFlowStats starts the counters again (FLUSH STATUS).
func (d *Driver) ResetFlowStats() {
	d.pacer.mu.Lock()
	defer d.pacer.mu.Unlock()
	d.pacer.fc.Reset(time.Now())
}

// FlowConfig is the flow-control settings in force.
func (d *Driver) FlowConfig() FlowConfig {
	d.pacer.mu.Lock()
	defer d.pacer.mu.Unlock()
	return d.pacer.fc.Config()
}

// SetFlowConfig changes the flow-control settings. A report older than
// five ticks (and at least half a second) is stale, whatever cfg says.
func (d *Driver) SetFlowConfig(cfg FlowConfig) {
	cfg.Stale = max(staleReport, 5*d.tick)
	d.pacer.mu.Lock()
	defer d.pacer.mu.Unlock()
	d.pacer.fc.SetConfig(cfg)
}

// Desynced reports whether this node has desynced itself: its apply
// queue stayed over the limit, and the others no longer slow down for it.
func (d *Driver) Desynced() bool { return d.pacer.desynced.Load() }

// A flow report's encoding: a version byte, flags, the queue (uvarint)
// and the rate (float64 bits).
const (
	flowVersion     = 1
	flowDesynced    = 1
	flowSynced      = 2
	maxFlowReport   = 32
	flowReportFixed = 2 + 8
)

func encodeFlowReport(r FlowReport) []byte {
	b := make([]byte, 0, maxFlowReport)
	var flags byte
	if r.Desynced {
		flags |= flowDesynced
	}
	if r.Synced {
		flags |= flowSynced
	}
	b = append(b, flowVersion, flags)
	b = binary.AppendUvarint(b, r.Queue)
	return binary.BigEndian.AppendUint64(b, math.Float64bits(r.Rate))
}

var errBadFlowReport = errors.New("cluster: a bad flow-control report")

func decodeFlowReport(b []byte) (FlowReport, error) {
	var r FlowReport
	if len(b) < flowReportFixed+1 || len(b) > maxFlowReport || b[0] != flowVersion {
		return r, errBadFlowReport
	}
	r.Desynced, r.Synced = b[1]&flowDesynced != 0, b[1]&flowSynced != 0
	q, n := binary.Uvarint(b[2:])
	if n <= 0 || len(b) != 2+n+8 {
		return r, errBadFlowReport
	}
	r.Queue = q
	r.Rate = math.Float64frombits(binary.BigEndian.Uint64(b[2+n:]))
	if math.IsNaN(r.Rate) || r.Rate < 0 {
		return r, errBadFlowReport
	}
	return r, nil
}
