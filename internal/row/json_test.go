package row

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"
)

func TestJSONDataDriven(t *testing.T) {
	datadriven.RunTest(t, "testdata/json", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "encode":
			dec := json.NewDecoder(strings.NewReader(d.Input))
			dec.UseNumber()
			var doc any
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			b, err := AppendJSON(nil, doc)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			back, err := DecodeJSON(b)
			if err != nil {
				return fmt.Sprintf("%s\nerror decoding it: %v\n", spacedHex(b), err)
			}
			return fmt.Sprintf("%s\n%s\n%s\n", spacedHex(b), describeJSON(back), AppendJSONText(nil, back))
		case "decode":
			b, err := hex.DecodeString(strings.Join(strings.Fields(d.Input), ""))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := DecodeJSON(b)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return describeJSON(doc) + "\n" + string(AppendJSONText(nil, doc)) + "\n"
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func spacedHex(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%02x", c)
	}
	return s.String()
}

// describeJSON prints a decoded document with its Go types visible.
func describeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10) + "i"
	case uint64:
		return strconv.FormatUint(x, 10) + "u"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64) + "d"
	case string:
		return strconv.Quote(x)
	case decimal.Decimal:
		return "decimal " + x.String()
	case time.Time:
		return "datetime " + x.Format("2006-01-02 15:04:05.000000")
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = describeJSON(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + describeJSON(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("unexpected %T", v)
}

// randomJSON makes a random document of at most depth levels.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(10)
	if depth <= 1 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return int64(r.Uint64()) >> r.IntN(64)
	case 3:
		return r.Uint64() >> r.IntN(64)
	case 4:
		return r.NormFloat64() * 1e6
	case 5:
		return strings.Repeat("é", r.IntN(3)) + strconv.Itoa(r.IntN(1000))
	case 6:
		return decimal.New(r.Int64N(1e12)-5e11, -int32(r.IntN(8)))
	case 7, 8:
		n, d := r.IntN(6), depth-1
		if r.IntN(20) == 0 {
			n, d = 3000+r.IntN(3000), 1 // scalars enough for the large form
		}
		a := make([]any, n)
		for i := range a {
			a[i] = randomJSON(r, d)
		}
		return a
	}
	m := map[string]any{}
	for range r.IntN(6) {
		m[strconv.Itoa(r.IntN(1e6))] = randomJSON(r, depth-1)
	}
	return m
}

// TestJSONRandomRoundTrip: random documents decode to what was encoded,
// and another implementation of MySQL's format (vitess's, which prints a
// document as SQL) reads the same encodings as the same documents.
func TestJSONRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		doc := randomJSON(r, 5)
		b, err := AppendJSON(nil, doc)
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		back, err := DecodeJSON(b)
		if err != nil {
			t.Fatalf("document %d: decoding %x: %v", i, b, err)
		}
		if got, want := describeJSON(back), describeJSON(normalJSON(doc)); got != want {
			t.Fatalf("document %d: decoded\n%s\nwant\n%s", i, got, want)
		}
		if _, err := mysql.ConvertBinaryJSONToSQL(b); err != nil {
			t.Fatalf("document %d: vitess cannot read %x: %v", i, b, err)
		}
		// Encoding what was decoded gives the same bytes.
		again, err := AppendJSON(nil, back)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("document %d: encoded again differently (%v)", i, err)
		}
	}
}

// normalJSON is doc as decoding gives it back: integral doubles become
// integers, decimals keep their digits.
func normalJSON(doc any) any {
	switch x := doc.(type) {
	case float64:
		if x == float64(int64(x)) && x >= -(1<<63) && x < 1<<63 {
			return int64(x)
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalJSON(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalJSON(e)
		}
		return out
	}
	return doc
}

func TestJSONDepth(t *testing.T) {
	var doc any = 1
	for range JSONMaxDepth - 1 {
		doc = []any{doc}
	}
	b, err := AppendJSON(nil, doc)
	if err != nil {
		t.Fatalf("depth %d: %v", JSONMaxDepth, err)
	}
	if _, err := DecodeJSON(b); err != nil {
		t.Fatalf("depth %d: %v", JSONMaxDepth, err)
	}
	if _, err := AppendJSON(nil, []any{doc}); err != ErrJSONDepth {
		t.Fatalf("depth %d: %v, want %v", JSONMaxDepth+1, err, ErrJSONDepth)
	}
	// A damaged encoding nested past the limit is refused, not followed.
	deep := bytes.Repeat([]byte{0x02, 0x01, 0x00, 0xff, 0xff, 0x02, 0x09, 0x00}, 200)
	if _, err := DecodeJSON(deep); err == nil {
		t.Fatal("a document nested 200 deep decoded")
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, doc := range []any{map[string]any{"a": []any{int64(1), "x", nil}}, "s", 3.5, []any{}} {
		b, _ := AppendJSON(nil, doc)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := DecodeJSON(b)
		if err != nil {
			return
		}
		// What decodes encodes, and decodes to the same document.
		again, err := AppendJSON(nil, doc)
		if err != nil {
			t.Fatalf("decoded %x, cannot encode it: %v", b, err)
		}
		back, err := DecodeJSON(again)
		if err != nil || describeJSON(back) != describeJSON(normalJSON(doc)) {
			t.Fatalf("%x: decoded, encoded and decoded again differently (%v)", b, err)
		}
	})
}
