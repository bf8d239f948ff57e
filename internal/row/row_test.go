package row

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

var testCols = []Column{
	{Name: "ti", Type: TypeTiny},
	{Name: "uti", Type: TypeTiny, Unsigned: true},
	{Name: "sm", Type: TypeShort, Nullable: true},
	{Name: "m", Type: TypeInt24},
	{Name: "i", Type: TypeLong},
	{Name: "ui", Type: TypeLong, Unsigned: true},
	{Name: "bi", Type: TypeLongLong},
	{Name: "ubi", Type: TypeLongLong, Unsigned: true},
	{Name: "f", Type: TypeFloat},
	{Name: "d", Type: TypeDouble},
	{Name: "dec", Type: TypeNewDecimal, Precision: 20, Scale: 5},
	{Name: "dec0", Type: TypeNewDecimal, Precision: 9, Scale: 0},
	{Name: "vc", Type: TypeVarchar, MaxBytes: 400, Collation: 255, Nullable: true},
	{Name: "c", Type: TypeString, RealType: TypeString, MaxBytes: 480, Collation: 255},
	{Name: "vb", Type: TypeVarchar, MaxBytes: 20, Collation: CollationBinary},
	{Name: "t", Type: TypeBlob, PackLen: 2, Collation: 255},
	{Name: "b", Type: TypeBlob, PackLen: 3, Collation: CollationBinary},
	{Name: "dt", Type: TypeDate},
	{Name: "dt2", Type: TypeDateTime2, Fsp: 6},
	{Name: "dt0", Type: TypeDateTime2},
	{Name: "ts", Type: TypeTimestamp2, Fsp: 3},
	{Name: "tm", Type: TypeTime2, Fsp: 0},
	{Name: "tm2", Type: TypeTime2, Fsp: 2},
	{Name: "tm4", Type: TypeTime2, Fsp: 4},
	{Name: "tm6", Type: TypeTime2, Fsp: 6},
	{Name: "y", Type: TypeYear},
	{Name: "e", Type: TypeString, RealType: TypeEnum, PackLen: 1, Elements: []string{"a", "b"}},
	{Name: "s", Type: TypeString, RealType: TypeSet, PackLen: 1, Elements: []string{"x", "y"}},
	{Name: "bit1", Type: TypeBit, Precision: 1},
	{Name: "bit12", Type: TypeBit, Precision: 12, Nullable: true},
	{Name: "bit64", Type: TypeBit, Precision: 64},
	{Name: "j", Type: TypeJSON, PackLen: 4, Nullable: true},
	{Name: "g", Type: TypeGeometry, PackLen: 4, Nullable: true},
}

func randString(r *rand.Rand, n int) string {
	const alphabet = "abcXYZ \x00é漢"
	rs := []rune(alphabet)
	var b []rune
	for range r.IntN(n + 1) {
		b = append(b, rs[r.IntN(len(rs))])
	}
	s := string(b)
	for len(s) > n {
		s = s[:len(s)-1]
	}
	return s
}

func randDuration(r *rand.Rand, fsp int) time.Duration {
	us := r.Int64N(838*3600*1e6) - 419*3600*1e6
	return time.Duration(truncFrac(us%1e6, fsp)+us/1e6*1e6) * time.Microsecond
}

// randValue returns a random canonical value for c, already normalised the
// way the column stores it (so decode(encode(v)) == v).
func randValue(r *rand.Rand, c *Column) Value {
	if c.Nullable && r.IntN(5) == 0 {
		return nil
	}
	switch c.Type {
	case TypeJSON:
		return JSONValue{normalJSON(randomJSON(r, 3))}
	case TypeGeometry:
		// The codec keeps a geometry's bytes as they are (SRID, WKB).
		b := make([]byte, 4+r.IntN(60))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case TypeTiny:
		if c.Unsigned {
			return uint64(r.IntN(256))
		}
		return int64(r.IntN(256) - 128)
	case TypeShort:
		return int64(r.IntN(65536) - 32768)
	case TypeInt24:
		return int64(r.IntN(1<<24) - 1<<23)
	case TypeLong:
		if c.Unsigned {
			return uint64(r.Uint32())
		}
		return int64(int32(r.Uint32()))
	case TypeLongLong:
		if c.Unsigned {
			return r.Uint64()
		}
		return int64(r.Uint64())
	case TypeFloat:
		return float32(r.NormFloat64() * 1e3)
	case TypeDouble:
		return r.NormFloat64() * 1e9
	case TypeNewDecimal:
		ip := r.Int64N(1_000_000_000_000_000) * int64(1-2*r.IntN(2))
		d := decimal.New(ip, -int32(c.Scale))
		if c.Precision-c.Scale < 15 {
			d = decimal.New(r.Int64N(999_999_999), 0)
		}
		return d
	case TypeVarchar, TypeBlob, TypeString:
		switch c.realType() {
		case TypeEnum:
			return uint64(r.IntN(3))
		case TypeSet:
			return uint64(r.IntN(4))
		}
		s := randString(r, 20)
		if c.Type == TypeString {
			for len(s) > 0 && s[len(s)-1] == ' ' {
				s = s[:len(s)-1]
			}
		}
		if !c.IsText() {
			return []byte(s)
		}
		return s
	case TypeDate:
		return time.Date(1000+r.IntN(8000), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	case TypeDateTime2:
		us := truncFrac(r.Int64N(1e6), c.Fsp)
		return time.Date(1000+r.IntN(8000), time.Month(1+r.IntN(12)), 1+r.IntN(28),
			r.IntN(24), r.IntN(60), r.IntN(60), int(us)*1000, time.UTC)
	case TypeTimestamp2:
		us := truncFrac(r.Int64N(1e6), c.Fsp)
		return time.Unix(r.Int64N(1<<31), us*1000).UTC()
	case TypeTime2:
		return randDuration(r, c.Fsp)
	case TypeYear:
		return int64(1901 + r.IntN(255))
	case TypeBit:
		if c.Precision == 64 {
			return r.Uint64()
		}
		return r.Uint64() >> (64 - c.Precision)
	}
	panic("no generator")
}

func TestImageRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range testCols {
		if err := testCols[i].Validate(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2000 {
		vals := make([]Value, len(testCols))
		for i := range testCols {
			vals[i] = randValue(r, &testCols[i])
		}
		img, err := AppendImage(nil, testCols, vals)
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := DecodeImage(img, testCols, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(img) {
			t.Fatalf("consumed %d of %d bytes", n, len(img))
		}
		for i := range vals {
			if !valuesEqual(vals[i], got[i]) {
				t.Fatalf("column %s: wrote %#v read %#v", testCols[i].Name, vals[i], got[i])
			}
		}
		// Decoding a random subset of the columns gives the same values
		// for those and consumes the same bytes.
		want := make([]bool, len(testCols))
		for i := range want {
			want[i] = r.IntN(2) == 0
		}
		some, n2, err := DecodeImageSome(img, testCols, nil, want)
		if err != nil || n2 != len(img) {
			t.Fatalf("partial decode: %v, consumed %d of %d bytes", err, n2, len(img))
		}
		for i := range vals {
			if want[i] && !valuesEqual(vals[i], some[i]) || !want[i] && some[i] != nil {
				t.Fatalf("partial decode, column %s (wanted %v): wrote %#v read %#v", testCols[i].Name, want[i], vals[i], some[i])
			}
		}
		// Every strict prefix must fail to decode, never panic.
		cut := r.IntN(len(img))
		if _, _, err := DecodeImageSome(img[:cut], testCols, nil, want); err == nil && cut < len(img) {
			t.Fatalf("partially decoding a %d-byte prefix of a %d-byte image succeeded", cut, len(img))
		}
		if _, _, err := DecodeImage(img[:cut], testCols, nil); err == nil && cut < len(img) {
			t.Fatalf("decoding a %d-byte prefix of a %d-byte image succeeded", cut, len(img))
		}
	}
}

func valuesEqual(a, b Value) bool {
	switch x := a.(type) {
	case decimal.Decimal:
		y, ok := b.(decimal.Decimal)
		return ok && x.Equal(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case JSONValue:
		y, ok := b.(JSONValue)
		return ok && describeJSON(x.Doc) == describeJSON(y.Doc)
	}
	return reflect.DeepEqual(a, b)
}

func TestNotNullRejected(t *testing.T) {
	cols := []Column{{Name: "a", Type: TypeLong}}
	if _, err := AppendImage(nil, cols, []Value{nil}); err == nil {
		t.Fatal("NULL accepted for a NOT NULL column")
	}
	if _, err := AppendImage(nil, []Column{{Name: "a", Type: TypeTiny}}, []Value{int64(300)}); err == nil {
		t.Fatal("300 accepted for TINYINT")
	}
	if _, err := AppendImage(nil, []Column{{Name: "v", Type: TypeVarchar, MaxBytes: 3, Collation: 255}}, []Value{"abcd"}); err == nil {
		t.Fatal("4 bytes accepted for a 3-byte VARCHAR")
	}
}

// compareModel is the SQL order of two canonical values of one column, with
// NULL first (text by bytes, as BinaryCollator orders it).
func compareModel(c *Column, a, b Value) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	switch x := a.(type) {
	case int64:
		return cmpOrdered(x, b.(int64))
	case uint64:
		return cmpOrdered(x, b.(uint64))
	case float32:
		return cmpOrdered(x, b.(float32))
	case float64:
		return cmpOrdered(x, b.(float64))
	case decimal.Decimal:
		return x.Cmp(b.(decimal.Decimal))
	case string:
		return bytes.Compare([]byte(x), []byte(b.(string)))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case time.Time:
		return x.Compare(b.(time.Time))
	case time.Duration:
		return cmpOrdered(x, b.(time.Duration))
	}
	panic("type")
}

func cmpOrdered[T int64 | uint64 | float32 | float64 | time.Duration](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestKeyOrderMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for ci := range testCols {
		c := &testCols[ci]
		if c.Type == TypeJSON || c.Type == TypeGeometry {
			// Never a key: MySQL indexes JSON only through generated
			// columns, and geometries only in SPATIAL indexes.
			continue
		}
		c2 := *c
		c2.Nullable = true
		vals := make([]Value, 300)
		for i := range vals {
			vals[i] = randValue(r, &c2)
		}
		keys := make([][]byte, len(vals))
		for i, v := range vals {
			k, err := AppendKey(nil, c, v, BinaryCollator{})
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			keys[i] = k
		}
		for range 3000 {
			i, j := r.IntN(len(vals)), r.IntN(len(vals))
			want := compareModel(c, vals[i], vals[j])
			// Tuple keys: a second component must never change the order
			// decided by the first.
			ki := append(slices.Clone(keys[i]), keys[j]...)
			kj := append(slices.Clone(keys[j]), keys[i]...)
			got := bytes.Compare(keys[i], keys[j])
			if want != 0 && bytes.Compare(ki, kj) != want {
				t.Fatalf("%s: tuple order of %#v, %#v wrong", c.Name, vals[i], vals[j])
			}
			if got != want {
				t.Fatalf("%s: key order of %#v vs %#v = %d, want %d", c.Name, vals[i], vals[j], got, want)
			}
		}
	}
}

func TestDecimalKnownBytes(t *testing.T) {
	// From MySQL's decimal2bin documentation: 1234567890.1234 as
	// DECIMAL(14,4) is 81 0D FB 38 D2 04 D2 and its negation the inverse.
	d := decimal.RequireFromString("1234567890.1234")
	got, err := AppendDecimal(nil, d, 14, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % X want % X", got, want)
	}
	neg, _ := AppendDecimal(nil, d.Neg(), 14, 4)
	wantNeg := []byte{0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D}
	if !bytes.Equal(neg, wantNeg) {
		t.Fatalf("got % X want % X", neg, wantNeg)
	}
	if _, err := AppendDecimal(nil, decimal.RequireFromString("100"), 4, 2); err == nil {
		t.Fatal("100 accepted for DECIMAL(4,2)")
	}
}

// FuzzDecodeImage: a row image from a replication source or a damaged
// store is decoded without panicking, whatever its bytes. (Decoding is
// lenient where the source may differ, NULL in a column declared NOT
// NULL here for one, so what decodes need not encode again.)
func FuzzDecodeImage(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		vals := make([]Value, len(testCols))
		for i, c := range testCols {
			vals[i] = randValue(r, &c)
		}
		if img, err := AppendImage(nil, testCols, vals); err == nil {
			f.Add(img)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = DecodeImage(b, testCols, nil)
	})
}

// The zero date ('0000-00-00') is stored as MySQL stores it, every field
// 0, reads back as itself, and sorts before every other date. Its Go form
// (time.Date(0, 0, 0, ...), 30 November of year -1) was once stored as a
// year that overflowed the field, and the row could not be read again.
func TestZeroDate(t *testing.T) {
	cols := []Column{
		{Name: "d", Type: TypeDate},
		{Name: "dt", Type: TypeDateTime2},
		{Name: "dt6", Type: TypeDateTime2, Fsp: 6},
		{Name: "ts", Type: TypeTimestamp2},
	}
	vals := []Value{ZeroDate, ZeroDate, ZeroDate, ZeroDate}
	img, err := AppendImage(nil, cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	// null bitmap (1 byte), then DATE 3, DATETIME2 5, DATETIME2(6) 8, TIMESTAMP2 4.
	want := []byte{0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(img, want) {
		t.Fatalf("zero dates stored as %x, want MySQL's %x", img, want)
	}
	got, _, err := DecodeImage(img, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if tm, ok := v.(time.Time); !ok || !IsZeroDate(tm) {
			t.Errorf("column %s reads back as %v", cols[i].Name, v)
		}
	}
	for _, c := range cols[:3] {
		zk, _ := AppendKey(nil, &c, ZeroDate, nil)
		lk, _ := AppendKey(nil, &c, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), nil)
		if bytes.Compare(zk, lk) >= 0 {
			t.Errorf("%s: the zero date does not sort before 1000-01-01", c.Name)
		}
	}
}

// Zero dates stored by earlier versions (their year overflowed) read as
// the zero date.
func TestLegacyZeroDate(t *testing.T) {
	cols := []Column{{Name: "d", Type: TypeDate}, {Name: "dt", Type: TypeDateTime2}}
	// A null bitmap, then what the old encoders wrote for
	// time.Date(0, 0, 0, ...).
	img := []byte{0, 0x7e, 0xff, 0xff, 0x7f, 0xff, 0xbc, 0, 0}
	got, _, err := DecodeImage(img, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if tm, ok := v.(time.Time); !ok || !IsZeroDate(tm) {
			t.Errorf("column %s: %v", cols[i].Name, v)
		}
	}
}

// BIT(M) values go as MySQL's row format has them: (M+7)/8 bytes, big
// endian; a value wider than M bits is refused; the table map carries
// M%8 and M/8.
func TestBitKnownBytes(t *testing.T) {
	c := Column{Name: "b", Type: TypeBit, Precision: 12}
	got, err := AppendValue(nil, &c, uint64(0xabc))
	if err != nil || !bytes.Equal(got, []byte{0x0a, 0xbc}) {
		t.Fatalf("BIT(12) 0xabc: %x %v", got, err)
	}
	if _, err := AppendValue(nil, &c, uint64(1<<12)); err == nil {
		t.Fatal("a 13-bit value fit a BIT(12)")
	}
	if m := c.Meta(); !bytes.Equal(m, []byte{4, 1}) {
		t.Fatalf("BIT(12) metadata %v, want [4 1]", m)
	}
	if err := (&Column{Name: "z", Type: TypeBit}).Validate(); err == nil {
		t.Fatal("BIT(0) validated")
	}
}
