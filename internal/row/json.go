package row

// MySQL's binary JSON: how a JSON column's value is stored and written to
// the binlog (sql/json_binary.h in MySQL's source describes it). A
// document is a type byte followed by its value:
//
//	0x00 / 0x01  object, small / large
//	0x02 / 0x03  array, small / large
//	0x04         literal: 0x00 null, 0x01 true, 0x02 false
//	0x05 / 0x06  int16 / uint16
//	0x07 / 0x08  int32 / uint32
//	0x09 / 0x0a  int64 / uint64
//	0x0b         double
//	0x0c         string: a variable-length length, then utf8mb4 bytes
//	0x0f         opaque: a MySQL field type, a variable-length length, data
//
// All integers are little-endian. An object is its element count and its
// total size in bytes, a key entry (offset, 2-byte length) per key, a
// value entry (type, offset) per value, then the keys and the values; an
// array the same without keys. Offsets count from the element count.
// Counts, sizes and offsets take 2 bytes in the small form and 4 in the
// large one; the small form is used when everything fits in it. Values
// small enough live in their entry instead of at an offset: literals,
// int16 and uint16, and in the large form int32 and uint32. Keys are
// sorted by length, then bytewise, and are unique. A variable-length
// length is 7 bits a byte, least significant first, the high bit set on
// every byte but the last.
//
// Go values on this side of the encoding (JSONValue's Doc):
//
//	null                 nil
//	true, false          bool
//	integers             int64, uint64
//	doubles              float64
//	strings              string
//	objects, arrays      map[string]any, []any
//	DECIMAL (opaque)     decimal.Decimal
//	DATE, DATETIME,      time.Time (UTC)
//	TIMESTAMP (opaque)
//
// Encoding also takes the other Go integer and float types and
// json.Number. A double with an integral value within int64's range is
// stored as an integer: a JSON parser that reads every number as a double
// (go-mysql-server's) cannot tell 1 from 1.0, and MySQL reads 1 as an
// integer. Decoding turns a TIME and any other opaque value into the text
// MySQL shows for it.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// JSONValue is a JSON column's value: Doc is the document (nil is JSON's
// null, not SQL's NULL, which is a nil Value).
type JSONValue struct{ Doc any }

// JSONMaxDepth is MySQL's limit on a document's nesting.
const JSONMaxDepth = 100

const (
	jsonSmallObject = 0x00
	jsonLargeObject = 0x01
	jsonSmallArray  = 0x02
	jsonLargeArray  = 0x03
	jsonLiteral     = 0x04
	jsonInt16       = 0x05
	jsonUint16      = 0x06
	jsonInt32       = 0x07
	jsonUint32      = 0x08
	jsonInt64       = 0x09
	jsonUint64      = 0x0a
	jsonDouble      = 0x0b
	jsonString      = 0x0c
	jsonOpaque      = 0x0f

	jsonNull  = 0x00
	jsonTrue  = 0x01
	jsonFalse = 0x02
)

// ErrJSONDepth is returned for a document nested deeper than JSONMaxDepth.
var ErrJSONDepth = fmt.Errorf("the JSON document exceeds the maximum depth (%d)", JSONMaxDepth)

// AppendJSON appends the binary encoding of doc to dst.
func AppendJSON(dst []byte, doc any) ([]byte, error) {
	pos := len(dst)
	dst, typ, err := appendJSONValue(append(dst, 0), doc, 1)
	if err != nil {
		return dst[:pos], err
	}
	dst[pos] = typ
	return dst, nil
}

// appendJSONValue appends v's value (without its type byte) and returns
// its type.
func appendJSONValue(dst []byte, v any, depth int) ([]byte, byte, error) {
	if depth > JSONMaxDepth {
		return dst, 0, ErrJSONDepth
	}
	switch x := v.(type) {
	case nil:
		return append(dst, jsonNull), jsonLiteral, nil
	case bool:
		if x {
			return append(dst, jsonTrue), jsonLiteral, nil
		}
		return append(dst, jsonFalse), jsonLiteral, nil
	case int64:
		return appendJSONInt(dst, x)
	case int:
		return appendJSONInt(dst, int64(x))
	case int8:
		return appendJSONInt(dst, int64(x))
	case int16:
		return appendJSONInt(dst, int64(x))
	case int32:
		return appendJSONInt(dst, int64(x))
	case uint64:
		return appendJSONUint(dst, x)
	case uint:
		return appendJSONUint(dst, uint64(x))
	case uint8:
		return appendJSONUint(dst, uint64(x))
	case uint16:
		return appendJSONUint(dst, uint64(x))
	case uint32:
		return appendJSONUint(dst, uint64(x))
	case float32:
		return appendJSONDouble(dst, float64(x))
	case float64:
		return appendJSONDouble(dst, x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return appendJSONInt(dst, i)
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return appendJSONUint(dst, u)
		}
		f, err := x.Float64()
		if err != nil {
			return dst, 0, fmt.Errorf("json: bad number %q", string(x))
		}
		return appendJSONDouble(dst, f)
	case string:
		dst = appendVarLen(dst, len(x))
		return append(dst, x...), jsonString, nil
	case decimal.Decimal:
		return appendJSONDecimal(dst, x)
	case time.Time:
		dst = append(dst, TypeDateTime, 8)
		return binary.LittleEndian.AppendUint64(dst, uint64(packDatetime(x.UTC()))), jsonOpaque, nil
	case []any:
		return appendJSONContainer(dst, nil, x, depth)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if len(a) != len(b) {
				return len(a) - len(b)
			}
			return strings.Compare(a, b)
		})
		vals := make([]any, len(keys))
		for i, k := range keys {
			if len(k) > math.MaxUint16 {
				return dst, 0, fmt.Errorf("json: object key of %d bytes (at most %d)", len(k), math.MaxUint16)
			}
			vals[i] = x[k]
		}
		return appendJSONContainer(dst, keys, vals, depth)
	}
	return dst, 0, fmt.Errorf("json: cannot encode a %T", v)
}

func appendJSONInt(dst []byte, x int64) ([]byte, byte, error) {
	switch {
	case x >= math.MinInt16 && x <= math.MaxInt16:
		return binary.LittleEndian.AppendUint16(dst, uint16(x)), jsonInt16, nil
	case x >= math.MinInt32 && x <= math.MaxInt32:
		return binary.LittleEndian.AppendUint32(dst, uint32(x)), jsonInt32, nil
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(x)), jsonInt64, nil
}

func appendJSONUint(dst []byte, x uint64) ([]byte, byte, error) {
	switch {
	case x <= math.MaxUint16:
		return binary.LittleEndian.AppendUint16(dst, uint16(x)), jsonUint16, nil
	case x <= math.MaxUint32:
		return binary.LittleEndian.AppendUint32(dst, uint32(x)), jsonUint32, nil
	}
	return binary.LittleEndian.AppendUint64(dst, x), jsonUint64, nil
}

func appendJSONDouble(dst []byte, x float64) ([]byte, byte, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return dst, 0, fmt.Errorf("json: %v is not a JSON number", x)
	}
	// -2^63 <= x < 2^63: exactly the doubles int64 holds.
	if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
		return appendJSONInt(dst, int64(x))
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x)), jsonDouble, nil
}

// appendJSONDecimal stores d as MySQL does: opaque NEWDECIMAL data, its
// precision and scale, then the decimal's binary form. One that DECIMAL
// cannot hold (more than 65 digits or 30 decimals) is stored as a double.
func appendJSONDecimal(dst []byte, d decimal.Decimal) ([]byte, byte, error) {
	scale := max(0, -int(d.Exponent()))
	intDigits := len(d.Abs().Truncate(0).String())
	if d.Abs().LessThan(decimal.New(1, 0)) {
		intDigits = 0
	}
	precision := max(1, intDigits+scale)
	if precision > 65 || scale > 30 {
		f, _ := d.Float64()
		return appendJSONDouble(dst, f)
	}
	body, err := AppendDecimal([]byte{byte(precision), byte(scale)}, d, precision, scale)
	if err != nil {
		return dst, 0, err
	}
	dst = append(dst, TypeNewDecimal)
	dst = appendVarLen(dst, len(body))
	return append(dst, body...), jsonOpaque, nil
}

// appendJSONContainer appends an object (keys not nil) or an array, in
// the small form when it fits, else in the large one.
func appendJSONContainer(dst []byte, keys []string, vals []any, depth int) ([]byte, byte, error) {
	start := len(dst)
	out, err := appendJSONContainerAs(dst, keys, vals, depth, false)
	large := false
	if err == errJSONTooLarge {
		large = true
		out, err = appendJSONContainerAs(dst[:start], keys, vals, depth, true)
	}
	if err != nil {
		return dst[:start], 0, err
	}
	typ := byte(jsonSmallArray)
	if keys != nil {
		typ = jsonSmallObject
	}
	if large {
		typ++
	}
	return out, typ, nil
}

var errJSONTooLarge = fmt.Errorf("json: too large for the small form")

func appendJSONContainerAs(dst []byte, keys []string, vals []any, depth int, large bool) ([]byte, error) {
	start := len(dst)
	w := 2 // the width of counts, sizes and offsets
	if large {
		w = 4
	}
	put := func(at, x int) error {
		if !large && x > math.MaxUint16 || x > math.MaxUint32 {
			return errJSONTooLarge
		}
		if large {
			binary.LittleEndian.PutUint32(dst[at:], uint32(x))
		} else {
			binary.LittleEndian.PutUint16(dst[at:], uint16(x))
		}
		return nil
	}
	n := len(vals)
	header := 2 * w
	keyEntries := header
	valueEntries := keyEntries
	if keys != nil {
		valueEntries += n * (w + 2)
	}
	end := valueEntries + n*(1+w)
	dst = slices.Grow(dst, end)[:start+end]
	if err := put(start, n); err != nil {
		return dst, err
	}
	for i, k := range keys {
		at := start + keyEntries + i*(w+2)
		if err := put(at, len(dst)-start); err != nil {
			return dst, err
		}
		binary.LittleEndian.PutUint16(dst[at+w:], uint16(len(k)))
		dst = append(dst, k...)
	}
	for i, v := range vals {
		at := start + valueEntries + i*(1+w)
		// Encode at the end, then move an inlinable value into its entry.
		off := len(dst)
		var typ byte
		var err error
		dst, typ, err = appendJSONValue(dst, v, depth+1)
		if err != nil {
			return dst, err
		}
		dst[at] = typ
		if inlined(typ, large) {
			clear(dst[at+1 : at+1+w])
			copy(dst[at+1:], dst[off:])
			dst = dst[:off]
			continue
		}
		if err := put(at+1, off-start); err != nil {
			return dst, err
		}
	}
	if err := put(start+w, len(dst)-start); err != nil {
		return dst, err
	}
	return dst, nil
}

// inlined reports whether a value of type typ lives in its value entry.
func inlined(typ byte, large bool) bool {
	switch typ {
	case jsonLiteral, jsonInt16, jsonUint16:
		return true
	case jsonInt32, jsonUint32:
		return large
	}
	return false
}

func appendVarLen(dst []byte, n int) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

// DecodeJSON decodes a binary document. An empty one is JSON's null (MySQL
// writes that for a JSON column set to null in some events).
func DecodeJSON(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	v, err := decodeJSONValue(b[0], b[1:], 1)
	if err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", ErrCorrupt, err)
	}
	return v, nil
}

func decodeJSONValue(typ byte, b []byte, depth int) (any, error) {
	if depth > JSONMaxDepth {
		return nil, ErrJSONDepth
	}
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("type %#x: %d bytes, need %d", typ, len(b), n)
		}
		return nil
	}
	switch typ {
	case jsonSmallObject, jsonLargeObject, jsonSmallArray, jsonLargeArray:
		return decodeJSONContainer(typ, b, depth)
	case jsonLiteral:
		if err := need(1); err != nil {
			return nil, err
		}
		switch b[0] {
		case jsonNull:
			return nil, nil
		case jsonTrue:
			return true, nil
		case jsonFalse:
			return false, nil
		}
		return nil, fmt.Errorf("literal %#x", b[0])
	case jsonInt16:
		if err := need(2); err != nil {
			return nil, err
		}
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case jsonUint16:
		if err := need(2); err != nil {
			return nil, err
		}
		return uint64(binary.LittleEndian.Uint16(b)), nil
	case jsonInt32:
		if err := need(4); err != nil {
			return nil, err
		}
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	case jsonUint32:
		if err := need(4); err != nil {
			return nil, err
		}
		return uint64(binary.LittleEndian.Uint32(b)), nil
	case jsonInt64:
		if err := need(8); err != nil {
			return nil, err
		}
		return int64(binary.LittleEndian.Uint64(b)), nil
	case jsonUint64:
		if err := need(8); err != nil {
			return nil, err
		}
		return binary.LittleEndian.Uint64(b), nil
	case jsonDouble:
		if err := need(8); err != nil {
			return nil, err
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("double %v", f)
		}
		return f, nil
	case jsonString:
		s, err := varLenData(b)
		return string(s), err
	case jsonOpaque:
		if err := need(1); err != nil {
			return nil, err
		}
		data, err := varLenData(b[1:])
		if err != nil {
			return nil, err
		}
		return decodeJSONOpaque(b[0], data)
	}
	return nil, fmt.Errorf("unknown type %#x", typ)
}

// varLenData returns the bytes a variable-length length at the start of b
// announces.
func varLenData(b []byte) ([]byte, error) {
	n, i := 0, 0
	for ; ; i++ {
		if i == len(b) || i == 5 {
			return nil, fmt.Errorf("bad length")
		}
		n |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			break
		}
	}
	b = b[i+1:]
	if n > len(b) {
		return nil, fmt.Errorf("data of %d bytes, %d left", n, len(b))
	}
	return b[:n], nil
}

func decodeJSONContainer(typ byte, b []byte, depth int) (any, error) {
	large := typ == jsonLargeObject || typ == jsonLargeArray
	object := typ == jsonSmallObject || typ == jsonLargeObject
	w := 2
	if large {
		w = 4
	}
	get := func(at int) int {
		if large {
			return int(binary.LittleEndian.Uint32(b[at:]))
		}
		return int(binary.LittleEndian.Uint16(b[at:]))
	}
	if len(b) < 2*w {
		return nil, fmt.Errorf("container header of %d bytes", len(b))
	}
	n, size := get(0), get(w)
	if size > len(b) || size < 2*w {
		return nil, fmt.Errorf("container of %d bytes, %d left", size, len(b))
	}
	b = b[:size]
	entries := 2 * w
	valueEntries := entries
	if object {
		valueEntries += n * (w + 2)
	}
	if n > size || valueEntries+n*(1+w) > size {
		return nil, fmt.Errorf("%d entries in a container of %d bytes", n, size)
	}
	var keys []string
	if object {
		keys = make([]string, n)
		for i := range n {
			at := entries + i*(w+2)
			off, l := get(at), int(binary.LittleEndian.Uint16(b[at+w:]))
			if off+l > size {
				return nil, fmt.Errorf("key %d out of its object", i)
			}
			keys[i] = string(b[off : off+l])
		}
	}
	vals := make([]any, n)
	for i := range n {
		at := valueEntries + i*(1+w)
		t := b[at]
		var v any
		var err error
		if inlined(t, large) {
			v, err = decodeJSONValue(t, b[at+1:at+1+w], depth+1)
		} else {
			off := get(at + 1)
			if off >= size {
				return nil, fmt.Errorf("value %d out of its container", i)
			}
			v, err = decodeJSONValue(t, b[off:], depth+1)
		}
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	if !object {
		return vals, nil
	}
	m := make(map[string]any, n)
	for i, k := range keys {
		m[k] = vals[i]
	}
	return m, nil
}

// decodeJSONOpaque decodes a value of MySQL field type t.
func decodeJSONOpaque(t byte, data []byte) (any, error) {
	switch t {
	case TypeNewDecimal:
		if len(data) < 2 {
			return nil, fmt.Errorf("opaque decimal of %d bytes", len(data))
		}
		p, s := int(data[0]), int(data[1])
		if p < 1 || p > 65 || s > 30 || s > p || len(data)-2 < DecimalBinarySize(p, s) {
			return nil, fmt.Errorf("opaque DECIMAL(%d,%d) of %d bytes", p, s, len(data))
		}
		return DecodeDecimal(data[2:2+DecimalBinarySize(p, s)], p, s)
	case TypeDate, TypeDateTime, TypeTimestamp, TypeTime:
		if len(data) < 8 {
			return nil, fmt.Errorf("opaque temporal value of %d bytes", len(data))
		}
		packed := int64(binary.LittleEndian.Uint64(data))
		if t == TypeTime {
			return unpackTime(packed), nil
		}
		return unpackDatetime(packed)
	}
	return fmt.Sprintf("base64:type%d:%s", t, base64.StdEncoding.EncodeToString(data)), nil
}

// packDatetime is MySQL's TIME_to_longlong_datetime_packed.
func packDatetime(t time.Time) int64 {
	ymd := (int64(t.Year())*13+int64(t.Month()))<<5 | int64(t.Day())
	hms := int64(t.Hour())<<12 | int64(t.Minute())<<6 | int64(t.Second())
	return (ymd<<17|hms)<<24 + int64(t.Nanosecond()/1000)
}

func unpackDatetime(packed int64) (time.Time, error) {
	if packed < 0 {
		return time.Time{}, fmt.Errorf("negative datetime %d", packed)
	}
	us := packed % (1 << 24)
	v := packed >> 24
	ymd, hms := v>>17, v%(1<<17)
	ym := ymd >> 5
	year, month, day := ym/13, ym%13, ymd%(1<<5)
	h, mi, s := hms>>12, (hms>>6)%(1<<6), hms%(1<<6)
	if month < 1 || day < 1 || h > 23 || mi > 59 || s > 59 || us > 999999 {
		return time.Time{}, fmt.Errorf("bad datetime %d", packed)
	}
	return time.Date(int(year), time.Month(month), int(day), int(h), int(mi), int(s), int(us)*1000, time.UTC), nil
}

// unpackTime is a packed TIME as MySQL shows it inside a document.
func unpackTime(packed int64) string {
	sign := ""
	if packed < 0 {
		sign, packed = "-", -packed
	}
	us := packed % (1 << 24)
	hms := packed >> 24
	return fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, (hms>>12)%(1<<10), (hms>>6)%(1<<6), hms%(1<<6), us)
}

// AppendJSONText appends doc as MySQL prints a JSON value: ", " and ": "
// between elements, object keys in their stored order (by length, then
// bytes), strings escaped as JSON requires and no more, doubles in the
// shortest form that reads back the same (1.5, 1e300, 1e-5), decimals
// with their scale, datetimes as quoted text with microseconds.
func AppendJSONText(dst []byte, doc any) []byte {
	switch x := doc.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case float64:
		return appendJSONDoubleText(dst, x)
	case string:
		return appendJSONString(dst, x)
	case decimal.Decimal:
		return append(dst, x.StringFixed(max(0, -x.Exponent()))...)
	case time.Time:
		return appendJSONString(dst, x.UTC().Format("2006-01-02 15:04:05.000000"))
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendJSONText(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if len(a) != len(b) {
				return len(a) - len(b)
			}
			return strings.Compare(a, b)
		})
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ": "...)
			dst = AppendJSONText(dst, x[k])
		}
		return append(dst, '}')
	}
	return fmt.Appendf(dst, "%q", fmt.Sprint(doc))
}

// appendJSONDoubleText prints a double as MySQL's my_gcvt does: positional
// between 1e-4 and 1e15, else in exponent form without a plus sign or
// leading zeros in the exponent; the fewest digits that read back as x.
func appendJSONDoubleText(dst []byte, x float64) []byte {
	if x != 0 {
		if e := math.Floor(math.Log10(math.Abs(x))); e < -4 || e >= 15 {
			s := strconv.FormatFloat(x, 'e', -1, 64)
			i := strings.IndexByte(s, 'e')
			exp, _ := strconv.Atoi(s[i+1:])
			dst = append(dst, s[:i+1]...)
			return strconv.AppendInt(dst, int64(exp), 10)
		}
	}
	return strconv.AppendFloat(dst, x, 'f', -1, 64)
}

// appendJSONString quotes s as MySQL does: the escapes JSON requires
// (quote, backslash, control characters), nothing else.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			if c < 0x20 {
				dst = fmt.Appendf(dst, `\u%04x`, c)
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}
