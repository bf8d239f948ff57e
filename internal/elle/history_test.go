package elle

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// normalize gives reads of committed transactions non-nil lists, as Read
// does, so that histories can be compared.
func normalize(h History) History {
	h = cloneHistory(h)
	for i := range h {
		if len(h[i].Ops) == 0 {
			h[i].Ops = []Op{}
		}
		for j := range h[i].Ops {
			op := &h[i].Ops[j]
			if op.Kind == OpRead && op.List == nil && h[i].Status == StatusOK {
				op.List = []int64{}
			}
		}
	}
	return h
}

func randomHistories() []History {
	var hs []History
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 4))
		cfg := simConfig{txns: 1 + rng.IntN(30), keys: 1 + rng.IntN(4), maxOps: 1 + rng.IntN(5), clients: 1 + rng.IntN(3),
			pFail: 0.2, pInfo: 0.2}
		hs = append(hs, genSerial(rng, cfg), genConcurrent(rng, cfg, seed%2 == 0))
	}
	return hs
}

func TestJSONLinesRoundTrip(t *testing.T) {
	hs := randomHistories()
	hs = append(hs, History{
		{ID: -5, Process: 1 << 40, Status: StatusInfo, Start: -100, End: 1<<62 - 1, Error: "conn \"reset\"\n",
			Ops: []Op{AppendOp("k\u00e9y with spaces", -1<<63), {Kind: OpRead, Key: ""}, ReadOp("x")}},
		{ID: 7, Status: StatusOK, Ops: []Op{ReadOp("x", 1<<63-1, -3), {Kind: OpRead, Key: "y"}}},
	})
	for i, h := range hs {
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			t.Fatalf("history %d: Write: %v", i, err)
		}
		if n := strings.Count(buf.String(), "\n"); n != len(h) {
			t.Fatalf("history %d: %d lines for %d transactions", i, n, len(h))
		}
		got, err := Read(&buf)
		if err != nil {
			t.Fatalf("history %d: Read: %v\n%s", i, err, buf.String())
		}
		if want := normalize(h); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("history %d: round trip differs:\ngot  %+v\nwant %+v", i, got, want)
		}
	}
}

func TestTextRoundTrip(t *testing.T) {
	for i, h := range randomHistories() {
		got, err := ParseText(FormatText(h))
		if err != nil {
			t.Fatalf("history %d: %v\n%s", i, err, FormatText(h))
		}
		if want := normalize(h); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("history %d: round trip differs:\ngot  %+v\nwant %+v", i, got, want)
		}
	}
}

func TestWriteRejectsBadTransactions(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTxn(&buf, Txn{ID: 1, Status: "maybe"}); err == nil {
		t.Error("unknown status written")
	}
	if err := WriteTxn(&buf, Txn{ID: 1, Status: StatusOK, Ops: []Op{{Kind: "cas", Key: "x"}}}); err == nil {
		t.Error("unknown op kind written")
	}
}

func TestCheckRejectsMalformedHistories(t *testing.T) {
	for name, h := range map[string]History{
		"duplicate id":     {{ID: 1, Status: StatusOK}, {ID: 1, Status: StatusOK}},
		"duplicate append": {{ID: 1, Status: StatusOK, Ops: []Op{AppendOp("x", 1)}}, {ID: 2, Status: StatusFail, Ops: []Op{AppendOp("x", 1)}}},
		"bad status":       {{ID: 1, Status: "committed"}},
		"bad op":           {{ID: 1, Status: StatusOK, Ops: []Op{{Kind: "w", Key: "x"}}}},
	} {
		if _, err := Check(h, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Check(nil, Options{Isolation: "snapshot"}); err == nil {
		t.Error("unknown isolation level accepted")
	}
	// A nil read list in a committed transaction is the empty list.
	h := History{{ID: 1, Status: StatusOK, Ops: []Op{AppendOp("x", 1)}}, {ID: 2, Status: StatusOK, Ops: []Op{{Kind: OpRead, Key: "x"}}}}
	res, err := Check(h, Options{})
	if err != nil || !res.Valid() {
		t.Errorf("nil read: %v %v", err, res)
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, in := range []string{
		"X1 ok", "T1", "Tx ok", "T1 maybe", "T1 ok a:x", "T1 ok a:x:y", "T1 ok r:x:1", "T1 ok r:x:[1", "T1 ok r:x:[a]",
		"T1 ok r:x:?", "T1 ok w:x:1", "T1 ok p=z", "T1 ok t=1", "T1 ok t=a..2", "T1 ok t=1..b", "T1 ok a::1",
		"T1 ok a:x:1\nT2 ok a:x:1",
	} {
		if _, err := ParseText(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseIsolation(t *testing.T) {
	for in, want := range map[string]Isolation{
		"": Serializable, "Snapshot Isolation": SnapshotIsolation, "read_committed": ReadCommitted,
		"strict-serializable": StrictSerializable,
	} {
		if got, err := ParseIsolation(in); err != nil || got != want {
			t.Errorf("ParseIsolation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// FuzzReadHistory feeds arbitrary bytes to Read and whatever it accepts to
// Check, neither of which may panic; accepted histories must also survive
// a round trip.
func FuzzReadHistory(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"process":2,"status":"ok","start":100,"end":250,"ops":[{"f":"append","k":"x","v":1},{"f":"r","k":"y","v":[]}]}`,
		"{\"id\":1,\"status\":\"ok\",\"ops\":[{\"f\":\"append\",\"k\":\"x\",\"v\":1}]}\n{\"id\":2,\"status\":\"ok\",\"ops\":[{\"f\":\"r\",\"k\":\"x\",\"v\":[1,1]}]}",
		"{\"id\":1,\"status\":\"ok\",\"start\":1,\"end\":2,\"ops\":[{\"f\":\"append\",\"k\":\"x\",\"v\":1},{\"f\":\"r\",\"k\":\"y\",\"v\":[2]}]}\n" +
			"{\"id\":2,\"status\":\"info\",\"start\":3,\"end\":4,\"ops\":[{\"f\":\"append\",\"k\":\"y\",\"v\":2},{\"f\":\"r\",\"k\":\"x\",\"v\":null}]}\n" +
			"{\"id\":3,\"status\":\"fail\",\"ops\":[{\"f\":\"append\",\"k\":\"x\",\"v\":3}]}\n" +
			"{\"id\":4,\"status\":\"ok\",\"ops\":[{\"f\":\"r\",\"k\":\"x\",\"v\":[3,1]},{\"f\":\"r\",\"k\":\"y\",\"v\":[]}]}",
		`{"id":1,"status":"ok","ops":[{"f":"r","k":"x","v":[1,"a"]}]}`,
		`{"id":1,"status":"ok","ops":[]} {"id":2}`,
		"",
		"\n\n",
	} {
		f.Add([]byte(s))
	}
	for _, h := range randomHistories()[:6] {
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Read(bytes.NewReader(data))
		if err != nil {
			if h != nil {
				t.Fatal("history returned with an error")
			}
			return
		}
		for _, opts := range []Options{{}, {Isolation: StrictSerializable, ProcessOrder: true}} {
			res, err := Check(h, opts)
			if err != nil {
				t.Fatalf("Check rejected a history Read accepted: %v", err)
			}
			_ = res.Report()
		}
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			t.Fatalf("Write: %v", err)
		}
		h2, err := Read(&buf)
		if err != nil {
			t.Fatalf("re-reading written history: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(normalize(h), normalize(h2)) && len(h)+len(h2) > 0 {
			t.Fatalf("round trip differs:\n%+v\n%+v", h, h2)
		}
	})
}

// FuzzParseText does the same for the text notation.
func FuzzParseText(f *testing.F) {
	f.Add("T1 ok p=1 t=0..10 a:x:1 r:y:[1,2]\nT2 info r:x:?\n# c\nT3 fail a:y:1")
	f.Add("T1 ok r:x:[] r:x:[1]\nT2 ok a:x:1")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseText(s)
		if err != nil {
			return
		}
		if _, err := Check(h, Options{Isolation: StrictSerializable, ProcessOrder: true}); err != nil {
			t.Fatalf("Check rejected a history ParseText accepted: %v", err)
		}
	})
}
