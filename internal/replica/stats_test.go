package replica

import (
	"testing"
	"time"
)

// TestLagTakesOutTheClockDifference: Seconds_Behind_Source is measured by
// the source's clock. A replica whose wall clock is an hour ahead of its
// source's (or behind it) reports the five seconds it is behind, not an
// hour and five seconds (or nothing), once the difference measured at
// connection is known; with none measured, the raw difference shows.
func TestLagTakesOutTheClockDifference(t *testing.T) {
	committed := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		skew      time.Duration // replica's clock minus the source's
		measured  bool
		wantLag   time.Duration
		wantNoFix time.Duration
	}{
		{"same clocks", 0, true, 5 * time.Second, 5 * time.Second},
		{"replica an hour ahead", time.Hour, true, 5 * time.Second, time.Hour + 5*time.Second},
		{"replica an hour behind", -time.Hour, true, 5 * time.Second, 0},
		{"not measured", time.Hour, false, time.Hour + 5*time.Second, time.Hour + 5*time.Second},
	} {
		var s ApplyStats
		s.pending = []uint64{uint64(committed.UnixMicro())}
		now := committed.Add(5 * time.Second).Add(c.skew) // the replica's clock
		if got := s.Lag(now); got != c.wantNoFix {
			t.Errorf("%s: before measuring, lag %v, want %v", c.name, got, c.wantNoFix)
		}
		if c.measured {
			s.SetClockDiff(c.skew)
		}
		if got := s.Lag(now); got != c.wantLag {
			t.Errorf("%s: lag %v, want %v", c.name, got, c.wantLag)
		}
	}
}
