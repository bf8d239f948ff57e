package sqlengine

import (
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/row"
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

func TestRoundFloat(t *testing.T) {
	for _, c := range []struct {
		m, d int
		in   float64
		want float64
		out  bool
	}{
		{7, 4, 13.37, 13.37, false},
		{7, 4, 13.37005, 13.3700, false}, // 13.37005 is a hair below the half
		{7, 4, 999.99994, 999.9999, false},
		{7, 4, 999.99996, 999.9999, true},
		{7, 4, -1000, -999.9999, true},
		{10, 2, -0.004, 0, false},
		{5, 1, 0.25, 0.2, false}, // to even, as MySQL's rint
		{5, 1, 0.35, 0.4, false}, // 0.35 * 10 is 3.5 in binary arithmetic, as in MySQL
		{5, 0, 2.5, 2, false},
		{3, 3, 0.9995, 0.999, true},
	} {
		col := row.Column{Name: "c", Type: row.TypeDouble, Precision: c.m, Scale: c.d}
		got, out := roundFloat(&col, c.in)
		if got != c.want || out != c.out {
			t.Errorf("FLOAT(%d,%d) of %v = %v (out of range %v), want %v (%v)", c.m, c.d, c.in, got, out, c.want, c.out)
		}
		if again, _ := roundFloat(&col, got); again != got {
			t.Errorf("FLOAT(%d,%d): %v rounds again to %v", c.m, c.d, got, again)
		}
	}
}
