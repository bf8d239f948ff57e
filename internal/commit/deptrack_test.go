package commit

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDependencyTracking drives the last_committed tracker with the
// commands in testdata/deptrack:
//
//	reset mode=<COMMIT_ORDER|WRITESET|WRITESET_SESSION> history=<n>
//	commit seq=<n> parent=<n> [keys=a,b] [session=<n>]   -> last_committed
//	rotate                                              (new binlog file)
//
// keys=none (or no keys) is a transaction without a write set (DDL).
func TestDependencyTracking(t *testing.T) {
	var tr tracker
	mode, size := WriteSet, 25000
	datadriven.RunTest(t, "testdata/deptrack", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
		num := func(k string) int64 {
			n, err := strconv.ParseInt(args[k], 10, 64)
			if err != nil {
				d.Fatalf(t, "bad %s=%q", k, args[k])
			}
			return n
		}
		switch d.Cmd {
		case "reset":
			m, ok := ParseTracking(args["mode"])
			if !ok {
				d.Fatalf(t, "bad mode %q", args["mode"])
			}
			mode, size = m, int(num("history"))
			tr = tracker{}
			tr.reset(0)
			return "ok"
		case "rotate":
			tr.reset(0)
			return "ok"
		case "commit":
			var ws []uint64
			if k, ok := args["keys"]; ok && k != "none" {
				ws = []uint64{}
				for key := range strings.SplitSeq(k, ",") {
					h := fnv.New64a()
					h.Write([]byte(key))
					ws = append(ws, h.Sum64())
				}
			}
			var session uint64
			if _, ok := args["session"]; ok {
				session = uint64(num("session"))
			}
			lc := tr.lastCommitted(mode, size, ws, num("seq"), num("parent"), session)
			return fmt.Sprintf("last_committed=%d", lc)
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}
