package cluster

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"go.etcd.io/raft/v3/raftpb"
)

var testSID = binlog.UUID{0xc1}

// testTrx is a transaction under GTID testSID:gno.
func testTrx(gno uint64) []byte {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	ev.AddXID(gno)
	ev.Close()
	return raftlog.EncodeTrx(nil, ev.Finalize(nil, 4, 1, 1, binlog.GTIDInfo{SID: testSID, GNO: gno, SequenceNumber: int64(gno)}))
}

// describe names an entry for the test output.
func describe(e raftpb.Entry) string {
	switch {
	case e.Type != raftpb.EntryNormal:
		return "conf"
	case len(e.Data) == 0:
		return "empty"
	}
	gno, err := gnoOf(e.Data)
	if err != nil {
		return "bad: " + err.Error()
	}
	return fmt.Sprintf("trx %d", gno)
}

// member is one node of the test cluster with its file system and what it
// applied.
type member struct {
	fs      *vfs.MemFS
	bl      *binlog.Log
	node    *Node
	applied []raftpb.Entry
	down    bool
	// crashInSync, when set, crashes the node in its next Process that
	// writes entries, after it sent the messages that may leave early and
	// before the entries are synced, keeping *crashInSync percent of what
	// was not synced.
	crashInSync *int
}

// env is a cluster driven step by step: messages are queued and delivered
// by stabilize, so runs are deterministic.
type env struct {
	t       *testing.T
	members map[uint64]*member
	ids     []uint64
	queue   []raftpb.Message
	group   map[uint64]int // partition: nodes in different groups cannot talk
	// early: nodes send the messages that may leave before their entries
	// are durable while writing them (Process's early), as the driver
	// does; without, every message leaves after.
	early bool
	seed  uint64
}

func (e *env) open(id uint64, fs *vfs.MemFS, peers []uint64) *member {
	e.t.Helper()
	bl, _, err := binlog.Open(binlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, binlog.GTIDSet{}, binlog.Position{})
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := raftlog.Open(raftlog.Options{FS: fs, Dir: "/data", ServerID: uint32(id)}, bl, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := NewNode(Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1}, l, 0, rosterOf(id, peers), len(peers) > 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return &member{fs: fs, bl: bl, node: n}
}

func (e *env) close() {
	for _, m := range e.members {
		if !m.down {
			m.bl.Close()
		}
	}
}

func (e *env) cut(from, to uint64) bool { return e.group[from] != e.group[to] }

// stabilize processes every node and delivers every message until nothing
// is left to do, and returns what happened, one line per step.
func (e *env) stabilize() string { return e.run(0) }

// run is stabilize in at most rounds rounds (0: until settled); a round
// has every node process its Ready and then delivers what they sent.
func (e *env) run(rounds int) string {
	var b strings.Builder
	for round := 0; round < 1000; round++ {
		if rounds > 0 && round == rounds {
			return b.String()
		}
		busy := false
		for _, id := range e.ids {
			m := e.members[id]
			if m.down || !m.node.HasReady() {
				continue
			}
			busy = true
			var early func([]raftpb.Message)
			var crashed *vfs.MemFS
			if e.early {
				early = func(msgs []raftpb.Message) {
					e.queue = append(e.queue, msgs...)
					if m.crashInSync != nil {
						crashed = m.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: *m.crashInSync, RNG: rand.New(rand.NewPCG(e.seed, uint64(round)))})
					}
				}
			}
			out, err := m.node.Process(early)
			if crashed != nil {
				// The machine failed before the entries were synced: what
				// Process did after that is lost with it.
				m.bl.Close()
				e.members[id] = &member{fs: crashed, down: true}
				fmt.Fprintf(&b, "n%d: crashed while syncing\n", id)
				continue
			}
			if err != nil {
				fmt.Fprintf(&b, "n%d: %v\n", id, err)
				continue
			}
			m.applied = append(m.applied, out.Committed...)
			e.queue = append(e.queue, out.Messages...)
		}
		msgs := e.queue
		e.queue = nil
		for _, msg := range msgs {
			busy = true
			to := e.members[msg.To]
			if to == nil || to.down || e.cut(msg.From, msg.To) {
				continue
			}
			if err := to.node.Step(msg); err != nil {
				fmt.Fprintf(&b, "n%d: step %v: %v\n", msg.To, msg.Type, err)
			}
		}
		if !busy {
			return b.String()
		}
	}
	e.t.Fatal("the cluster did not settle in 1000 rounds")
	return ""
}

func (e *env) status() string {
	var b strings.Builder
	for _, id := range e.ids {
		m := e.members[id]
		if m.down {
			fmt.Fprintf(&b, "n%d: down\n", id)
			continue
		}
		st := m.node.Status()
		fmt.Fprintf(&b, "n%d: %s term=%d lead=%d commit=%d applied=%d\n", id, strings.ToLower(strings.TrimPrefix(st.RaftState.String(), "State")), st.Term, st.Lead, st.Commit, len(m.applied))
	}
	return b.String()
}

// TestInteraction drives a cluster of nodes with the commands in
// testdata/raft (interaction, membership):
//
//	new n=<nodes>                  bootstrap a cluster of nodes 1..n
//	campaign node=<id>
//	forget-leader node=<id>        (a follower grants votes at once)
//	propose node=<id> trx=<gno>    a transaction with that GTID number
//	propose node=<id> raw=<text>   a proposal that is not a transaction
//	tick node=<id,...> n=<ticks>
//	stabilize                      process and deliver until quiet
//	partition <ids> [| <ids> ...]  messages between groups are lost
//	heal
//	crash node=<id> keep=<pct>     the node's machine fails, keeping pct%
//	                               of what was not synced
//	restart node=<id>
//	status                         each node's raft state
//	applied                        what each node applied, in order
//	log node=<id>                  the entries in the node's binlog
//	join id=<id>                   start a node with an empty log that is
//	                               no member yet (no bootstrap)
//	add-learner node=<id> id=<id>  configuration changes, proposed on node
//	promote node=<id> id=<id>
//	remove node=<id> id=<id>
//	config                         each node's raft configuration and roster
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata/raft", func(t *testing.T, path string) {
		e := &env{t: t, members: map[uint64]*member{}}
		defer e.close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string][]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = a.Vals
			}
			num := func(k string) uint64 {
				if len(args[k]) != 1 {
					d.Fatalf(t, "%s: want one value", k)
				}
				n, err := strconv.ParseUint(args[k][0], 10, 64)
				if err != nil {
					d.Fatalf(t, "bad %s", k)
				}
				return n
			}
			node := func() *member {
				m := e.members[num("node")]
				if m == nil || m.down {
					d.Fatalf(t, "node %d is not running", num("node"))
				}
				return m
			}
			switch d.Cmd {
			case "new":
				n := num("n")
				for id := uint64(1); id <= n; id++ {
					e.ids = append(e.ids, id)
				}
				for _, id := range e.ids {
					e.members[id] = e.open(id, vfs.NewCrashableMem(), e.ids)
				}
				return "ok"
			case "campaign":
				if err := node().node.Campaign(); err != nil {
					return err.Error()
				}
				return "ok"
			case "forget-leader":
				if err := node().node.rn.ForgetLeader(); err != nil {
					return err.Error()
				}
				return "ok"
			case "propose":
				data := []byte(strings.Join(args["raw"], ","))
				if _, ok := args["trx"]; ok {
					data = testTrx(num("trx"))
				}
				if err := node().node.Propose(data); err != nil {
					return err.Error()
				}
				return "ok"
			case "tick":
				for _, v := range args["node"] {
					id, _ := strconv.ParseUint(v, 10, 64)
					for range num("n") {
						e.members[id].node.Tick()
					}
				}
				return "ok"
			case "stabilize":
				if d.HasArg("rounds") {
					return e.run(int(num("rounds"))) + e.status()
				}
				return e.stabilize() + e.status()
			case "partition":
				e.group = map[uint64]int{}
				g := 0
				for _, a := range d.CmdArgs {
					if a.Key == "|" {
						g++
						continue
					}
					id, err := strconv.ParseUint(a.Key, 10, 64)
					if err != nil {
						d.Fatalf(t, "bad node %q", a.Key)
					}
					e.group[id] = g
				}
				return "ok"
			case "heal":
				e.group = nil
				return "ok"
			case "crash":
				m := node()
				id := num("node")
				crashed := m.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: int(num("keep")), RNG: rand.New(rand.NewPCG(id, 1))})
				m.bl.Close()
				e.members[id] = &member{fs: crashed, down: true}
				return "ok"
			case "restart":
				id := num("node")
				m := e.members[id]
				if m == nil || !m.down {
					d.Fatalf(t, "node %d is not down", id)
				}
				e.members[id] = e.open(id, m.fs, nil)
				return "ok"
			case "join":
				id := num("id")
				e.ids = append(e.ids, id)
				e.members[id] = e.open(id, vfs.NewCrashableMem(), nil)
				return "ok"
			case "add-learner", "promote", "remove":
				typ := map[string]raftpb.ConfChangeType{"add-learner": raftpb.ConfChangeAddLearnerNode, "promote": raftpb.ConfChangeAddNode, "remove": raftpb.ConfChangeRemoveNode}[d.Cmd]
				mc := memberContext{Addr: fmt.Sprintf("node%d:1", num("id"))}
				if d.HasArg("replaces") {
					mc.Replaces = num("replaces")
				}
				cc := raftpb.ConfChangeV2{
					Changes: []raftpb.ConfChangeSingle{{Type: typ, NodeID: num("id")}},
					Context: mc.encode(),
				}
				if d.Cmd == "promote" {
					// As the leader's driver promotes: with the voter the
					// learner replaces, if any, removed in the same change.
					m := node()
					cc = promotion(m.node.Roster(), m.node.Status().Config.Voters.IDs(), num("id"))
				}
				if err := node().node.ProposeConfChange(cc); err != nil {
					return err.Error()
				}
				return "ok"
			case "config":
				var b strings.Builder
				for _, id := range e.ids {
					m := e.members[id]
					if m.down {
						fmt.Fprintf(&b, "n%d: down\n", id)
						continue
					}
					v, l := m.node.Config()
					r := m.node.Roster()
					fmt.Fprintf(&b, "n%d: voters=%v learners=%v roster=%v removed=%v", id, v, l, slices.Sorted(maps.Keys(r.Addrs)), r.Removed)
					if m.node.Joint() {
						cfg := m.node.Status().Config
						fmt.Fprintf(&b, " joint=%v&%v", slices.Sorted(maps.Keys(cfg.Voters[0])), slices.Sorted(maps.Keys(cfg.Voters[1])))
					}
					if len(r.Replacing) > 0 {
						fmt.Fprintf(&b, " replacing=%v", r.Replacing)
					}
					if len(r.Leaving) > 0 {
						fmt.Fprintf(&b, " leaving=%v", r.Leaving)
					}
					b.WriteString("\n")
				}
				return b.String()
			case "status":
				return e.status()
			case "applied":
				var b strings.Builder
				for _, id := range e.ids {
					var names []string
					for _, c := range e.members[id].applied {
						names = append(names, fmt.Sprintf("%d:%s", c.Index, describe(c)))
					}
					fmt.Fprintf(&b, "n%d: %s\n", id, strings.Join(names, ", "))
				}
				return b.String()
			case "log":
				m := node()
				last, _ := m.node.log.LastIndex()
				es, err := m.node.log.Entries(1, last+1, 1<<40)
				if err != nil {
					return err.Error()
				}
				var names []string
				for _, en := range es {
					names = append(names, fmt.Sprintf("%d/%d:%s", en.Index, en.Term, describe(en)))
				}
				return strings.Join(names, "\n") + "\n"
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// TestRandomFaults drives three nodes through random proposals,
// partitions, crashes that keep a random share of unsynced data,
// restarts, ticks and elections, and checks after every step that no two
// nodes ever applied different entries at one index (including across a
// node's restarts), and at the end, with every node back and connected,
// that every transaction acknowledged to its proposer (applied there) is
// applied everywhere, once. LOCKSTEP_SEED replays a run (raft's own
// election timeouts are random too, but the checks hold for any).
func TestRandomFaults(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	for run := 0; run < 8; run++ {
		// Half the runs send a leader's appends while it syncs them, and
		// crash nodes in that window.
		e := &env{t: t, members: map[uint64]*member{}, ids: []uint64{1, 2, 3}, early: run%2 == 1, seed: seed}
		for _, id := range e.ids {
			e.members[id] = e.open(id, vfs.NewCrashableMem(), e.ids)
		}
		// seen is every entry any node applied, by index.
		seen := map[uint64]string{}
		check := func(step int, what string) {
			for _, id := range e.ids {
				m := e.members[id]
				for _, c := range m.applied {
					d := fmt.Sprintf("%d/%s", c.Term, describe(c))
					if prev, ok := seen[c.Index]; ok && prev != d {
						e.close()
						t.Fatalf("seed %d run %d step %d (%s): node %d applied %s at %d, another node %s", seed, run, step, what, id, d, c.Index, prev)
					}
					seen[c.Index] = d
				}
			}
		}
		acked := map[uint64]bool{} // GTID numbers applied on their proposer
		proposer := map[uint64]uint64{}
		gno := uint64(0)
		up := func() []uint64 {
			var ids []uint64
			for _, id := range e.ids {
				if !e.members[id].down {
					ids = append(ids, id)
				}
			}
			return ids
		}
		for step := 0; step < 150; step++ {
			ids := up()
			id := ids[r.IntN(len(ids))]
			m := e.members[id]
			var what string
			switch op := r.IntN(100); {
			case op < 40:
				gno++
				if m.node.Propose(testTrx(gno)) == nil {
					proposer[gno] = id
				}
				what = fmt.Sprintf("propose %d on %d", gno, id)
			case op < 50:
				_ = m.node.Campaign()
				what = fmt.Sprintf("campaign %d", id)
			case op < 55:
				_ = m.node.rn.ForgetLeader()
				what = fmt.Sprintf("forget-leader %d", id)
			case op < 75:
				for range 1 + r.IntN(12) {
					m.node.Tick()
				}
				what = fmt.Sprintf("tick %d", id)
			case op < 82:
				e.group = map[uint64]int{id: 1}
				what = fmt.Sprintf("isolate %d", id)
			case op < 88:
				e.group = nil
				what = "heal"
			case op < 91 && len(ids) == 3 && e.early:
				keep := r.IntN(101)
				m.crashInSync = &keep
				what = fmt.Sprintf("crash %d in its next sync, keep %d", id, keep)
			case op < 94 && len(ids) == 3:
				keep := r.IntN(101)
				crashed := m.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(seed, uint64(step)))})
				m.bl.Close()
				e.members[id] = &member{fs: crashed, down: true}
				what = fmt.Sprintf("crash %d keep %d", id, keep)
			default:
				for _, d := range e.ids {
					if dm := e.members[d]; dm.down {
						e.members[d] = e.open(d, dm.fs, nil)
						what = fmt.Sprintf("restart %d", d)
						break
					}
				}
			}
			if out := e.stabilize(); out != "" && !onlyCrashes(out) {
				e.close()
				t.Fatalf("seed %d run %d step %d (%s): %s", seed, run, step, what, out)
			}
			check(step, what)
			for _, id := range e.ids {
				for _, c := range e.members[id].applied {
					if c.Type == raftpb.EntryNormal && len(c.Data) > 0 {
						if g, err := gnoOf(c.Data); err == nil && proposer[g] == id {
							acked[g] = true
						}
					}
				}
			}
		}
		// Everyone back, connected, and a leader elected.
		e.group = nil
		for _, id := range e.ids {
			e.members[id].crashInSync = nil
			if m := e.members[id]; m.down {
				e.members[id] = e.open(id, m.fs, nil)
			}
		}
		e.stabilize()
		// Rounds of elections and heartbeats until every node applied
		// everything the leader has. A node whose log is behind cannot
		// win, and an isolated one may still think it leads an older
		// term: campaign in turn until a leader holds the highest term.
		converged := false
		for round := 0; round < 60 && !converged; round++ {
			var leader *member
			for _, o := range e.ids {
				st := e.members[o].node.Status()
				if st.RaftState.String() == "StateLeader" && (leader == nil || st.Term > leader.node.Status().Term) {
					leader = e.members[o]
				}
			}
			if leader == nil {
				id := e.ids[round%len(e.ids)]
				for _, o := range e.ids {
					if o != id {
						_ = e.members[o].node.rn.ForgetLeader()
					}
				}
				_ = e.members[id].node.Campaign()
			} else {
				leader.node.Tick()
			}
			e.stabilize()
			if leader != nil {
				last, _ := leader.node.log.LastIndex()
				converged = true
				for _, o := range e.ids {
					st := e.members[o].node.Status()
					if st.Term != leader.node.Status().Term || st.Applied != last {
						converged = false
					}
				}
			}
		}
		if !converged {
			t.Log(e.status())
			e.close()
			t.Fatalf("seed %d run %d: the nodes did not converge with every node up and connected", seed, run)
		}
		check(-1, "final")
		for _, id := range e.ids {
			count := map[uint64]int{}
			for _, c := range e.members[id].applied {
				if c.Type == raftpb.EntryNormal && len(c.Data) > 0 {
					g, _ := gnoOf(c.Data)
					count[g]++
				}
			}
			for g := range acked {
				if count[g] != 1 {
					t.Log(e.status())
					for _, x := range e.ids {
						m := e.members[x]
						last, _ := m.node.log.LastIndex()
						es, _ := m.node.log.Entries(1, last+1, 1<<40)
						var names []string
						for _, en := range es {
							names = append(names, fmt.Sprintf("%d/%d:%s", en.Index, en.Term, describe(en)))
						}
						t.Logf("n%d log: %s", x, strings.Join(names, " "))
					}
					e.close()
					t.Fatalf("seed %d run %d: acknowledged transaction %d applied %d times on node %d", seed, run, g, count[g], id)
				}
			}
		}
		e.close()
	}
}

// onlyCrashes reports whether stabilize's output says only that nodes
// crashed while syncing (as they were told to).
func onlyCrashes(out string) bool {
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(l, ": crashed while syncing") {
			return false
		}
	}
	return true
}

// rosterOf is node id's roster when the members are peers, at made-up
// addresses (the interaction tests deliver messages themselves).
func rosterOf(id uint64, peers []uint64) Roster {
	r := Roster{Self: id, Addrs: map[uint64]string{}}
	for _, p := range peers {
		r.Addrs[p] = fmt.Sprintf("node%d:1", p)
	}
	if len(peers) == 0 {
		r.Addrs[id] = fmt.Sprintf("node%d:1", id)
	}
	return r
}
