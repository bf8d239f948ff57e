package failover

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// TestChoose runs testdata/choose: each case lists replicas' gtid_executed
// sets, one per line ("-" for the empty set), and expects the replica
// Choose promotes, or what each lacks when they diverged.
func TestChoose(t *testing.T) {
	datadriven.RunTest(t, "testdata/choose", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "choose" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var sets []binlog.GTIDSet
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			line = strings.TrimSpace(line)
			if line == "-" {
				line = ""
			}
			s, err := binlog.ParseGTIDSet(line)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			sets = append(sets, s)
		}
		i, err := Choose(sets)
		var div *DivergenceError
		switch {
		case errors.As(err, &div):
			var b strings.Builder
			b.WriteString("diverged\n")
			for n, l := range div.Lacks {
				fmt.Fprintf(&b, "%d lacks %s\n", n+1, orEmpty(l.String()))
			}
			return b.String()
		case err != nil:
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("promote %d\n", i+1)
	})
}
