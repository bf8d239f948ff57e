package elle

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCheck checks histories of 10,000 transactions over 50 keys from
// a serial database (no cycles), a snapshot isolation database (write
// skew) and a read committed database (many cycles of every weak kind),
// with real-time and process edges.
func BenchmarkCheck(b *testing.B) {
	cfg := simConfig{txns: 10_000, keys: 50, maxOps: 8, clients: 10, pFail: 0.05, pInfo: 0.02}
	for _, bc := range []struct {
		name string
		gen  func(*rand.Rand) History
	}{
		{"serial", func(rng *rand.Rand) History { return genSerial(rng, cfg) }},
		{"snapshot-isolation", func(rng *rand.Rand) History { return genConcurrent(rng, cfg, true) }},
		{"read-committed", func(rng *rand.Rand) History { return genConcurrent(rng, cfg, false) }},
	} {
		h := bc.gen(rand.New(rand.NewPCG(1, 5)))
		b.Run(bc.name, func(b *testing.B) {
			var res *Result
			for b.Loop() {
				var err error
				if res, err = Check(h, Options{Isolation: StrictSerializable, ProcessOrder: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.Anomalies)), "anomalies")
			b.ReportMetric(float64(res.Stats.Edges), "edges")
			if len(res.Incomplete) > 0 {
				b.Errorf("search incomplete for %v", res.Incomplete)
			}
		})
	}
}

// TestSearchBudget checks that a search cut short by MaxSearchSteps is
// reported. The history has a long G-single (a ww chain T1 -> ... -> Tn
// closed by rw edges that jump back k transactions) and no G2-item, so the
// G2-item search must explore everything to prove that.
func TestSearchBudget(t *testing.T) {
	const n, k = 400, 200
	var h History
	order := make([]int64, n)
	for i := 1; i <= n; i++ {
		order[i-1] = int64(i)
		txn := Txn{ID: int64(i), Status: StatusOK, Ops: []Op{AppendOp("x", int64(i))}}
		if i+k <= n {
			txn.Ops = append(txn.Ops, AppendOp("z"+strconv.Itoa(i), 1))
		}
		if i > k {
			txn.Ops = append(txn.Ops, ReadOp("z"+strconv.Itoa(i-k)))
		}
		h = append(h, txn)
	}
	h = append(h, Txn{ID: n + 1, Status: StatusOK, Ops: []Op{ReadOp("x", order...)}})

	res := mustCheck(t, h, Options{})
	if got := res.Counts(); len(got) != 1 || got[0].Class != GSingle || len(res.Anomalies[0].Cycle) != k+1 || len(res.Incomplete) != 0 {
		t.Fatalf("want one G-single of %d edges and a complete search, got %v, incomplete %v:\n%s", k+1, got, res.Incomplete, res.Report())
	}
	res = mustCheck(t, h, Options{MaxSearchSteps: 10_000})
	if !slices.Contains(res.Incomplete, G2Item) || !strings.Contains(res.Report(), "G2-item: search stopped at the step limit") {
		t.Fatalf("want an incomplete G2-item search, got %v:\n%s", res.Incomplete, res.Report())
	}
}
