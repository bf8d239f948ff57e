package certify

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestCertify drives an Index with the commands in testdata/certify:
//
//	certify snapshot=<n> [x=<k,...>] [s=<k,...>] [seq=<n>]
//	    -> the verdict; with seq, a passing transaction is appended
//	purge low=<n>
//	rewind to=<n>
//	state -> low, head and keys held
//
// Keys are small numbers used as hashes; x are exclusive, s shared.
func TestCertify(t *testing.T) {
	var x Index
	datadriven.RunTest(t, "testdata/certify", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
		num := func(k string) uint64 {
			n, err := strconv.ParseUint(args[k], 10, 64)
			if err != nil {
				d.Fatalf(t, "bad %s=%q", k, args[k])
			}
			return n
		}
		keys := func() []Key {
			var ks []Key
			for _, kind := range []string{"x", "s"} {
				for f := range strings.SplitSeq(args[kind], ",") {
					if f == "" {
						continue
					}
					h, err := strconv.ParseUint(f, 10, 64)
					if err != nil {
						d.Fatalf(t, "bad key %q", f)
					}
					ks = append(ks, Key{Hash: h, Shared: kind == "s"})
				}
			}
			return ks
		}
		switch d.Cmd {
		case "certify":
			ks := keys()
			v := x.Certify(num("snapshot"), ks)
			if _, ok := args["seq"]; ok && v.OK {
				if err := x.Append(num("seq"), ks); err != nil {
					return err.Error()
				}
			}
			return v.String()
		case "purge":
			x.Purge(num("low"))
			return "ok"
		case "rewind":
			if err := x.Rewind(num("to")); err != nil {
				return err.Error()
			}
			return "ok"
		case "state":
			return fmt.Sprintf("low=%d head=%d keys=%d", x.Low(), x.Head(), x.Len())
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}

// model certifies by brute force over the whole history.
type model struct {
	hist []entry // certified, in order
	low  uint64
}

func (m *model) certify(snapshot uint64, keys []Key) Verdict {
	if snapshot < m.low {
		return Verdict{TooOld: true}
	}
	dep := m.low
	for _, e := range m.hist {
		if e.seq <= m.low {
			continue
		}
		for _, mine := range keys {
			for _, theirs := range e.keys {
				if mine.Hash != theirs.Hash || mine.Shared && theirs.Shared {
					continue
				}
				if e.seq > snapshot {
					// The first conflicting key in my order decides which
					// transaction is named: find it below.
					return m.firstConflict(snapshot, keys)
				}
				dep = max(dep, e.seq)
			}
		}
	}
	return Verdict{OK: true, DependsOn: dep}
}

// firstConflict names, for the first of keys that conflicts, the newest
// transaction it conflicts with (as the index reports it).
func (m *model) firstConflict(snapshot uint64, keys []Key) Verdict {
	for _, mine := range keys {
		var excl, shared uint64
		for _, e := range m.hist {
			if e.seq <= m.low {
				continue
			}
			for _, theirs := range e.keys {
				if theirs.Hash != mine.Hash {
					continue
				}
				if theirs.Shared {
					shared = e.seq
				} else {
					excl = e.seq
				}
			}
		}
		if excl > snapshot {
			return Verdict{ConflictWith: excl}
		}
		if !mine.Shared && shared > snapshot {
			return Verdict{ConflictWith: shared}
		}
	}
	panic("no conflict found")
}

// TestIndexAgainstModel certifies random transactions with an Index and
// by brute force, with purges and rewinds, and requires the same verdicts
// and dependencies. LOCKSTEP_SEED replays a run.
func TestIndexAgainstModel(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for run := 0; run < 50; run++ {
		var x Index
		var m model
		seq := uint64(0)
		nkeys := 2 + r.IntN(30)
		for step := 0; step < 400; step++ {
			switch op := r.IntN(100); {
			case op < 3 && seq > 0:
				low := m.low + uint64(r.IntN(int(seq-m.low)+1))
				x.Purge(low)
				m.low = max(m.low, min(low, seq))
			case op < 6 && seq > m.low:
				to := m.low + uint64(r.IntN(int(seq-m.low)+1))
				if err := x.Rewind(to); err != nil {
					t.Fatal(err)
				}
				n := len(m.hist)
				for n > 0 && m.hist[n-1].seq > to {
					n--
				}
				m.hist = m.hist[:n]
				seq = to
			default:
				var keys []Key
				for k := r.IntN(4); k >= 0; k-- {
					keys = append(keys, Key{Hash: uint64(r.IntN(nkeys)), Shared: r.IntN(3) == 0})
				}
				lag := uint64(r.IntN(6))
				snapshot := uint64(0)
				if seq > lag {
					snapshot = seq - lag
				}
				got, want := x.Certify(snapshot, keys), m.certify(snapshot, keys)
				if got != want {
					t.Fatalf("seed %d run %d step %d: certify(snapshot=%d, %v) = %v, model says %v", seed, run, step, snapshot, keys, got, want)
				}
				if got.OK {
					seq++
					if err := x.Append(seq, keys); err != nil {
						t.Fatal(err)
					}
					m.hist = append(m.hist, entry{seq: seq, keys: keys})
				}
			}
			if x.Low() != m.low || x.Head() != seq {
				t.Fatalf("seed %d: low/head %d/%d, model %d/%d", seed, x.Low(), x.Head(), m.low, seq)
			}
		}
	}
}

// Start knows nothing before its point: older snapshots are too old,
// newer ones certify against what is appended after it.
func TestStartAndClone(t *testing.T) {
	x := Start(100)
	if v := x.Certify(99, []Key{{Hash: 1}}); !v.TooOld {
		t.Fatalf("snapshot before the start: %v", v)
	}
	if v := x.Certify(100, []Key{{Hash: 1}}); !v.OK || v.DependsOn != 100 {
		t.Fatalf("snapshot at the start: %v", v)
	}
	if err := x.Append(101, []Key{{Hash: 1}}); err != nil {
		t.Fatal(err)
	}
	c := x.Clone()
	if err := c.Append(102, []Key{{Hash: 2}}); err != nil {
		t.Fatal(err)
	}
	if v := x.Certify(101, []Key{{Hash: 2}}); !v.OK {
		t.Fatalf("the original saw the clone's append: %v", v)
	}
	if v := c.Certify(101, []Key{{Hash: 2}}); v.OK || v.ConflictWith != 102 {
		t.Fatalf("the clone lost its own append: %v", v)
	}
	if v := c.Certify(100, []Key{{Hash: 1}}); v.OK || v.ConflictWith != 101 {
		t.Fatalf("the clone lost the original's keys: %v", v)
	}
}
