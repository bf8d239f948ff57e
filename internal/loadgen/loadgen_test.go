package loadgen

import (
	"math/rand/v2"
	"regexp"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	// The true p95 is 950 ms; buckets are 5% wide.
	if p := h.quantile(0.95); p < 950*time.Millisecond || p > 1000*time.Millisecond {
		t.Fatalf("p95 %v", p)
	}
	var o histogram
	o.add(time.Hour) // beyond the last bucket: clamped, still counted
	h.merge(&o)
	if h.n != 1001 {
		t.Fatalf("merged count %d", h.n)
	}
	var empty histogram
	if empty.quantile(0.95) != 0 {
		t.Fatal("empty histogram has a p95")
	}
}

func TestValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c, pad := cValue(r), padValue(r)
	// sysbench's c is 10 groups of 11 digits (119 chars), pad 5 (59): they fit CHAR(120)/CHAR(60).
	if !regexp.MustCompile(`^(\d{11}-){9}\d{11}$`).MatchString(c) || len(pad) != 59 {
		t.Fatalf("c %q pad %q", c, pad)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if _, err := Run(t.Context(), nil, Config{Workload: "oltp_nothing"}, nil); err == nil {
		t.Fatal("unknown workload accepted")
	}
	if _, err := Run(t.Context(), nil, Config{Workload: "oltp_update_index"}, nil); err == nil {
		t.Fatal("zero threads accepted")
	}
}
