package commit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPolicy drives the pipeline's decisions (policy.go) with the commands
// in testdata/policy. Times are in microseconds, as the system variables
// give them.
//
//	group delay=<us> count=<n> queued=<n> elapsed=<us> [lock_wait]
//	      [expected=<n> patience=<us> [quiet=<us>]] [arrived=<n> lull=<us>]
//	    -> the trigger that closes the group, or "open wait=<us>"
//	    (expected and patience: what gathering planned, none by default;
//	    quiet: how long arrivals had stopped, the patience by default;
//	    arrived: transactions queued while gathering, lull: since the
//	    last of them; none by default)
//	committed at=<us> sessions=<id>[,<id>...]
//	    -> the sessions' transactions entered a group at that time
//	synced us=<us>
//	    -> an fsync took that long; prints the moving average
//	plan at=<us> [sync=<bool>]
//	    -> how a group starting to gather then gathers
//	forget
//	    -> a new flusher's committers
//	write sync_binlog=<n> flush=<n> [force]
//	    -> "sync" (the flusher syncs; the policy records it) or "unsynced"
//	will_sync sync_binlog=<n> flush=<n>
//	    -> "sync" if the next group written will be synced unless forced
//	tick flush=<n>
//	    -> "sync" or "nothing": the once-a-second timer
//	reset
//	    -> a new flusher's policy
//	ack wait=<bool> after_sync=<bool> trxs=<n>
//	    -> where the group waits for replicas
func TestPolicy(t *testing.T) {
	var sp syncPolicy
	var seen committers
	datadriven.RunTest(t, "testdata/policy", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
		flag := func(k string) bool {
			v, ok := args[k]
			if !ok {
				return false
			}
			if v == "" {
				return true
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				d.Fatalf(t, "bad %s=%q", k, v)
			}
			return b
		}
		num := func(k string) int64 {
			n, err := strconv.ParseInt(args[k], 10, 64)
			if err != nil {
				d.Fatalf(t, "bad or missing %s=%q", k, args[k])
			}
			return n
		}
		us := func(k string) time.Duration { return time.Duration(num(k)) * time.Microsecond }
		switch d.Cmd {
		case "group":
			var g gather
			if _, ok := args["expected"]; ok {
				g = gather{expected: int(num("expected")), patience: us("patience"), quiet: us("patience")}
				if _, ok := args["quiet"]; ok {
					g.quiet = us("quiet")
				}
			}
			st := groupState{queued: int(num("queued")), lockWait: flag("lock_wait"), elapsed: us("elapsed"), lull: us("elapsed")}
			if _, ok := args["arrived"]; ok {
				st.arrived, st.lull = int(num("arrived")), us("lull")
			}
			tr, wait := closeGroup(us("delay"), int(num("count")), st, g)
			if tr == triggerOpen {
				return fmt.Sprintf("open wait=%d", wait.Microseconds())
			}
			return tr.String()
		case "committed":
			for _, id := range strings.Split(args["sessions"], ",") {
				n, err := strconv.ParseUint(id, 10, 64)
				if err != nil {
					d.Fatalf(t, "bad session %q", id)
				}
				seen.grouped(n, us("at"))
			}
			return "ok"
		case "synced":
			seen.synced(us("us"))
			return fmt.Sprintf("fsync=%d", seen.fsync.Microseconds())
		case "plan":
			sync := true
			if _, ok := args["sync"]; ok {
				sync = flag("sync")
			}
			g := seen.plan(us("at"), sync)
			return fmt.Sprintf("expected=%d patience=%d remembered=%d", g.expected, g.patience.Microseconds(), len(seen.last))
		case "forget":
			seen = committers{}
			return "ok"
		case "reset":
			sp = syncPolicy{}
			return "ok"
		case "write":
			if sp.written(flag("force"), num("sync_binlog"), num("flush")) {
				sp.synced()
				return "sync"
			}
			return "unsynced"
		case "will_sync":
			if sp.willSync(num("sync_binlog"), num("flush")) {
				return "sync"
			}
			return "unsynced"
		case "tick":
			if sp.tick(num("flush")) {
				sp.synced()
				return "sync"
			}
			return "nothing"
		case "ack":
			return waitPoint(flag("wait"), flag("after_sync"), int(num("trxs"))).String()
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}
