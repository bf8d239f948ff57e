package source

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// TestSemiSyncPolicy drives semi-sync's decisions (semisync.go) with the
// commands in testdata/semisync. Positions are file:offset.
//
//	step acks=<pos,...> end=<pos> need=<n> [no_replica=<bool>] [off] left=<ms>
//	    -> what a group's wait does next; clients are the acks given
//	returns [disabled] [active] pos=<pos> latest=<pos>
//	    -> whether an acknowledgement of pos ends a fallback to async
func TestSemiSyncPolicy(t *testing.T) {
	datadriven.RunTest(t, "testdata/semisync", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string][]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = a.Vals
		}
		pos := func(s string) binlog.Position {
			f, o, ok := strings.Cut(s, ":")
			fn, err1 := strconv.ParseInt(f, 10, 64)
			on, err2 := strconv.ParseInt(o, 10, 64)
			if !ok || err1 != nil || err2 != nil {
				d.Fatalf(t, "bad position %q", s)
			}
			return binlog.Position{File: int(fn), Pos: on}
		}
		one := func(k string) string {
			if len(args[k]) != 1 {
				d.Fatalf(t, "%s: want one value", k)
			}
			return args[k][0]
		}
		num := func(k string) int64 {
			n, err := strconv.ParseInt(one(k), 10, 64)
			if err != nil {
				d.Fatalf(t, "bad %s", k)
			}
			return n
		}
		_, off := args["off"]
		switch d.Cmd {
		case "step":
			var acks []binlog.Position
			for _, a := range strings.Split(strings.Join(args["acks"], ","), ",") {
				if a != "" {
					acks = append(acks, pos(a))
				}
			}
			noReplica := true
			if v, ok := args["no_replica"]; ok {
				noReplica = v[0] == "true"
			}
			need := num("need")
			ok := acked(acks, pos(one("end")), need)
			return waitStep(ok, len(acks), need, noReplica, !off, time.Duration(num("left"))*time.Millisecond).String()
		case "returns":
			_, disabled := args["disabled"]
			_, active := args["active"]
			return fmt.Sprint(returns(!disabled, active, pos(one("pos")), pos(one("latest"))))
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}
