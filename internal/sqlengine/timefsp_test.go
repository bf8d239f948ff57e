package sqlengine

import (
	"testing"
	"time"
)

func TestRoundTime(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		in   time.Duration
		fsp  int
		want time.Duration
	}{
		{10*time.Hour + 500_000*us, 0, 10*time.Hour + time.Second},
		{10*time.Hour + 499_999*us, 0, 10 * time.Hour},
		{-(10*time.Hour + 500_000*us), 0, -(10*time.Hour + time.Second)},
		{-(10*time.Hour + 499_999*us), 0, -10 * time.Hour},
		{1_234_567 * us, 3, 1_235_000 * us},
		{1_234_499 * us, 3, 1_234_000 * us},
		{1_234_567 * us, 6, 1_234_567 * us},
		{maxTime + 500_000*us, 0, maxTime},
		{-(maxTime + 500_000*us), 0, -maxTime},
		{0, 0, 0},
	} {
		if got := roundTime(c.in, c.fsp); got != c.want {
			t.Errorf("roundTime(%v, %d) = %v, want %v", c.in, c.fsp, got, c.want)
		}
	}
}
