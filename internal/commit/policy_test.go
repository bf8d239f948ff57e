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
//	    -> the trigger that closes the group, or "open wait=<us>"
//	write sync_binlog=<n> flush=<n> [force]
//	    -> "sync" (the flusher syncs; the policy records it) or "unsynced"
//	tick flush=<n>
//	    -> "sync" or "nothing": the once-a-second timer
//	reset
//	    -> a new flusher's policy
//	ack wait=<bool> after_sync=<bool> trxs=<n>
//	    -> where the group waits for replicas
func TestPolicy(t *testing.T) {
	var sp syncPolicy
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
			tr, wait := closeGroup(us("delay"), int(num("count")), int(num("queued")), flag("lock_wait"), us("elapsed"))
			if tr == triggerOpen {
				return fmt.Sprintf("open wait=%d", wait.Microseconds())
			}
			return tr.String()
		case "reset":
			sp = syncPolicy{}
			return "ok"
		case "write":
			if sp.written(flag("force"), num("sync_binlog"), num("flush")) {
				sp.synced()
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
