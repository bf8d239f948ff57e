package row

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// Value is one column value in canonical form:
//
//	NULL                          nil
//	signed integers, YEAR         int64
//	unsigned integers             uint64
//	ENUM (1-based index), SET     uint64
//	FLOAT                         float32
//	DOUBLE                        float64
//	DECIMAL                       decimal.Decimal
//	CHAR, VARCHAR, TEXT           string
//	BINARY, VARBINARY, BLOB       []byte (string is accepted on encode)
//	DATE, DATETIME, TIMESTAMP     time.Time (UTC)
//	TIME                          time.Duration
//	BIT(M)                        uint64 (at most M bits)
//	JSON                          JSONValue (json.go)
type Value = any

// ErrCorrupt is returned (wrapped) when an image cannot be decoded.
var ErrCorrupt = errors.New("corrupt row image")

// AppendImage appends the row image of vals (one per column, all columns) to
// dst: a null bitmap of len(cols) bits followed by the non-NULL values.
func AppendImage(dst []byte, cols []Column, vals []Value) ([]byte, error) {
	if len(vals) != len(cols) {
		return dst, fmt.Errorf("row has %d values, table has %d columns", len(vals), len(cols))
	}
	nb := (len(cols) + 7) / 8
	start := len(dst)
	for range nb {
		dst = append(dst, 0)
	}
	var err error
	for i := range cols {
		if vals[i] == nil {
			if !cols[i].Nullable {
				return dst[:start], fmt.Errorf("column %q cannot be null", cols[i].Name)
			}
			dst[start+i/8] |= 1 << (i % 8)
			continue
		}
		dst, err = AppendValue(dst, &cols[i], vals[i])
		if err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// DecodeImage decodes a full row image into vals (reusing its storage when it
// is long enough) and returns the number of bytes consumed.
func DecodeImage(img []byte, cols []Column, vals []Value) ([]Value, int, error) {
	return DecodeImageSome(img, cols, vals, nil)
}

// DecodeImageSome is DecodeImage that materialises only the columns want
// marks (all if want is nil); the others are left nil, and text and blob
// values among them are skipped without copying.
func DecodeImageSome(img []byte, cols []Column, vals []Value, want []bool) ([]Value, int, error) {
	nb := (len(cols) + 7) / 8
	if len(img) < nb {
		return nil, 0, fmt.Errorf("%w: short null bitmap", ErrCorrupt)
	}
	if cap(vals) >= len(cols) {
		vals = vals[:len(cols)]
	} else {
		vals = make([]Value, len(cols))
	}
	pos := nb
	for i := range cols {
		if img[i/8]&(1<<(i%8)) != 0 {
			vals[i] = nil
			continue
		}
		var v Value
		var n int
		var err error
		if want != nil && !want[i] {
			n, err = skipValue(img[pos:], &cols[i])
		} else {
			v, n, err = DecodeValue(img[pos:], &cols[i])
		}
		if err != nil {
			return nil, 0, fmt.Errorf("column %q: %w", cols[i].Name, err)
		}
		vals[i] = v
		pos += n
	}
	return vals, pos, nil
}

// ValueLen returns the encoded length of the non-NULL value of column c
// at the start of b, reading no more of it than it must.
func ValueLen(b []byte, c *Column) (int, error) { return skipValue(b, c) }

// skipValue returns the encoded length of one non-NULL value, reading
// only the length prefix of text and blob values.
func skipValue(b []byte, c *Column) (int, error) {
	lp := 0
	switch {
	case c.Type == TypeVarchar || c.Type == TypeVarString:
		lp = c.lenPrefixBytes()
	case c.Type == TypeString && c.realType() != TypeEnum && c.realType() != TypeSet:
		lp = c.lenPrefixBytes()
	case c.Type == TypeBlob || c.Type == TypeJSON || c.Type == TypeGeometry:
		if len(b) < c.PackLen {
			return 0, fmt.Errorf("%w: short length prefix", ErrCorrupt)
		}
		n := 0
		for i := range c.PackLen {
			n |= int(b[i]) << (8 * i)
		}
		if len(b) < c.PackLen+n {
			return 0, fmt.Errorf("%w: value of %d bytes truncated", ErrCorrupt, n)
		}
		return c.PackLen + n, nil
	default:
		_, n, err := DecodeValue(b, c)
		return n, err
	}
	if len(b) < lp {
		return 0, fmt.Errorf("%w: short length prefix", ErrCorrupt)
	}
	n := int(b[0])
	if lp == 2 {
		n = int(binary.LittleEndian.Uint16(b))
	}
	if len(b) < lp+n {
		return 0, fmt.Errorf("%w: value of %d bytes truncated", ErrCorrupt, n)
	}
	return lp + n, nil
}

// AppendValue appends the binlog encoding of one non-NULL value.
func AppendValue(dst []byte, c *Column, v Value) ([]byte, error) {
	switch c.Type {
	case TypeTiny:
		x, err := intBits(c, v, 8)
		return append(dst, byte(x)), err
	case TypeShort:
		x, err := intBits(c, v, 16)
		return binary.LittleEndian.AppendUint16(dst, uint16(x)), err
	case TypeInt24:
		x, err := intBits(c, v, 24)
		return append(dst, byte(x), byte(x>>8), byte(x>>16)), err
	case TypeLong:
		x, err := intBits(c, v, 32)
		return binary.LittleEndian.AppendUint32(dst, uint32(x)), err
	case TypeLongLong:
		x, err := intBits(c, v, 64)
		return binary.LittleEndian.AppendUint64(dst, x), err
	case TypeBit:
		x, ok := v.(uint64)
		if !ok {
			return dst, typeErr(c, v)
		}
		if c.Precision < 64 && x>>c.Precision != 0 {
			return dst, rangeErr(c)
		}
		// Big-endian, (M+7)/8 bytes, as MySQL's row format has it.
		for i := c.bitBytes() - 1; i >= 0; i-- {
			dst = append(dst, byte(x>>(8*i)))
		}
		return dst, nil
	case TypeYear:
		y, ok := v.(int64)
		if !ok {
			return dst, typeErr(c, v)
		}
		if y != 0 {
			y -= 1900
		}
		return append(dst, byte(y)), nil
	case TypeFloat:
		f, ok := v.(float32)
		if !ok {
			return dst, typeErr(c, v)
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
	case TypeDouble:
		f, ok := v.(float64)
		if !ok {
			return dst, typeErr(c, v)
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case TypeNewDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			return dst, typeErr(c, v)
		}
		return AppendDecimal(dst, d, c.Precision, c.Scale)
	case TypeVarchar, TypeVarString:
		b, err := bytesOf(c, v)
		if err != nil {
			return dst, err
		}
		if len(b) > c.MaxBytes {
			return dst, fmt.Errorf("value too long for column %q (%d > %d bytes)", c.Name, len(b), c.MaxBytes)
		}
		if c.lenPrefixBytes() == 1 {
			dst = append(dst, byte(len(b)))
		} else {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(len(b)))
		}
		return append(dst, b...), nil
	case TypeJSON:
		j, ok := v.(JSONValue)
		if !ok {
			return dst, typeErr(c, v)
		}
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst, err := AppendJSON(dst, j.Doc)
		if err != nil {
			return dst[:at], fmt.Errorf("column %q: %w", c.Name, err)
		}
		n := len(dst) - at - 4
		if n > math.MaxUint32 {
			return dst[:at], fmt.Errorf("value too long for column %q (%d bytes)", c.Name, n)
		}
		binary.LittleEndian.PutUint32(dst[at:], uint32(n))
		return dst, nil
	case TypeBlob, TypeGeometry:
		b, err := bytesOf(c, v)
		if err != nil {
			return dst, err
		}
		if max := uint64(1)<<(8*c.PackLen) - 1; uint64(len(b)) > max {
			return dst, fmt.Errorf("value too long for column %q (%d > %d bytes)", c.Name, len(b), max)
		}
		for i := range c.PackLen {
			dst = append(dst, byte(len(b)>>(8*i)))
		}
		return append(dst, b...), nil
	case TypeString:
		switch c.realType() {
		case TypeEnum, TypeSet:
			x, ok := v.(uint64)
			if !ok {
				return dst, typeErr(c, v)
			}
			for i := range c.PackLen {
				dst = append(dst, byte(x>>(8*i)))
			}
			return dst, nil
		}
		b, err := bytesOf(c, v)
		if err != nil {
			return dst, err
		}
		// CHAR values are stored without their trailing pad (MySQL strips
		// spaces for text and keeps BINARY's zero padding).
		if c.IsText() {
			for len(b) > 0 && b[len(b)-1] == ' ' {
				b = b[:len(b)-1]
			}
		}
		if len(b) > c.MaxBytes {
			return dst, fmt.Errorf("value too long for column %q (%d > %d bytes)", c.Name, len(b), c.MaxBytes)
		}
		if c.lenPrefixBytes() == 1 {
			dst = append(dst, byte(len(b)))
		} else {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(len(b)))
		}
		return append(dst, b...), nil
	case TypeDate:
		t, ok := v.(time.Time)
		if !ok {
			return dst, typeErr(c, v)
		}
		var x uint32 // the zero date: all fields 0, as MySQL stores it
		if !IsZeroDate(t) {
			x = uint32(t.Day()) | uint32(t.Month())<<5 | uint32(t.Year())<<9
		}
		return append(dst, byte(x), byte(x>>8), byte(x>>16)), nil
	case TypeDateTime2:
		t, ok := v.(time.Time)
		if !ok {
			return dst, typeErr(c, v)
		}
		return appendDatetime2(dst, t, c.Fsp), nil
	case TypeTimestamp2:
		t, ok := v.(time.Time)
		if !ok {
			return dst, typeErr(c, v)
		}
		if IsZeroDate(t) {
			dst = binary.BigEndian.AppendUint32(dst, 0) // as MySQL stores it
			return appendFrac(dst, 0, c.Fsp), nil
		}
		sec := t.Unix()
		if sec < 0 || sec > math.MaxUint32 {
			return dst, fmt.Errorf("value out of range for TIMESTAMP column %q", c.Name)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(sec))
		return appendFrac(dst, int64(t.Nanosecond()/1000), c.Fsp), nil
	case TypeTime2:
		d, ok := v.(time.Duration)
		if !ok {
			return dst, typeErr(c, v)
		}
		return appendTime2(dst, d, c.Fsp), nil
	}
	return dst, fmt.Errorf("column %q: binlog type %d is not supported", c.Name, c.Type)
}

// DecodeValue decodes one non-NULL value and returns its size in bytes.
func DecodeValue(b []byte, c *Column) (Value, int, error) {
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("%w: need %d bytes, have %d", ErrCorrupt, n, len(b))
		}
		return nil
	}
	switch c.Type {
	case TypeTiny:
		if err := need(1); err != nil {
			return nil, 0, err
		}
		if c.Unsigned {
			return uint64(b[0]), 1, nil
		}
		return int64(int8(b[0])), 1, nil
	case TypeShort:
		if err := need(2); err != nil {
			return nil, 0, err
		}
		x := binary.LittleEndian.Uint16(b)
		if c.Unsigned {
			return uint64(x), 2, nil
		}
		return int64(int16(x)), 2, nil
	case TypeInt24:
		if err := need(3); err != nil {
			return nil, 0, err
		}
		x := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		if c.Unsigned {
			return uint64(x), 3, nil
		}
		return int64(int32(x<<8) >> 8), 3, nil
	case TypeLong:
		if err := need(4); err != nil {
			return nil, 0, err
		}
		x := binary.LittleEndian.Uint32(b)
		if c.Unsigned {
			return uint64(x), 4, nil
		}
		return int64(int32(x)), 4, nil
	case TypeLongLong:
		if err := need(8); err != nil {
			return nil, 0, err
		}
		x := binary.LittleEndian.Uint64(b)
		if c.Unsigned {
			return x, 8, nil
		}
		return int64(x), 8, nil
	case TypeBit:
		n := c.bitBytes()
		if err := need(n); err != nil {
			return nil, 0, err
		}
		var x uint64
		for _, by := range b[:n] {
			x = x<<8 | uint64(by)
		}
		return x, n, nil
	case TypeYear:
		if err := need(1); err != nil {
			return nil, 0, err
		}
		if b[0] == 0 {
			return int64(0), 1, nil
		}
		return int64(b[0]) + 1900, 1, nil
	case TypeFloat:
		if err := need(4); err != nil {
			return nil, 0, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), 4, nil
	case TypeDouble:
		if err := need(8); err != nil {
			return nil, 0, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), 8, nil
	case TypeNewDecimal:
		n := DecimalBinarySize(c.Precision, c.Scale)
		if err := need(n); err != nil {
			return nil, 0, err
		}
		d, err := DecodeDecimal(b[:n], c.Precision, c.Scale)
		return d, n, err
	case TypeVarchar, TypeVarString:
		return decodeLenPrefixed(b, c, c.lenPrefixBytes())
	case TypeBlob, TypeJSON, TypeGeometry:
		if err := need(c.PackLen); err != nil {
			return nil, 0, err
		}
		var n int
		for i := range c.PackLen {
			n |= int(b[i]) << (8 * i)
		}
		if err := need(c.PackLen + n); err != nil {
			return nil, 0, err
		}
		data := b[c.PackLen : c.PackLen+n]
		if c.Type != TypeJSON {
			return strOrBytes(c, data), c.PackLen + n, nil
		}
		doc, err := DecodeJSON(data)
		if err != nil {
			return nil, 0, err
		}
		return JSONValue{doc}, c.PackLen + n, nil
	case TypeString:
		switch c.realType() {
		case TypeEnum, TypeSet:
			if err := need(c.PackLen); err != nil {
				return nil, 0, err
			}
			var x uint64
			for i := range c.PackLen {
				x |= uint64(b[i]) << (8 * i)
			}
			return x, c.PackLen, nil
		}
		return decodeLenPrefixed(b, c, c.lenPrefixBytes())
	case TypeDate:
		if err := need(3); err != nil {
			return nil, 0, err
		}
		x := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		if x == 0 || x == legacyZeroDate {
			return ZeroDate, 3, nil
		}
		return time.Date(int(x>>9), time.Month((x>>5)&15), int(x&31), 0, 0, 0, 0, time.UTC), 3, nil
	case TypeDateTime2:
		n := 5 + fracBytes(c.Fsp)
		if err := need(n); err != nil {
			return nil, 0, err
		}
		return decodeDatetime2(b, c.Fsp), n, nil
	case TypeTimestamp2:
		n := 4 + fracBytes(c.Fsp)
		if err := need(n); err != nil {
			return nil, 0, err
		}
		sec := int64(binary.BigEndian.Uint32(b))
		us := decodeFrac(b[4:], c.Fsp)
		if sec == 0 && us == 0 {
			return ZeroDate, n, nil // MySQL's zero TIMESTAMP
		}
		return time.Unix(sec, us*1000).UTC(), n, nil
	case TypeTime2:
		n := 3 + fracBytes(c.Fsp)
		if err := need(n); err != nil {
			return nil, 0, err
		}
		return decodeTime2(b, c.Fsp), n, nil
	}
	return nil, 0, fmt.Errorf("binlog type %d is not supported", c.Type)
}

func decodeLenPrefixed(b []byte, c *Column, lp int) (Value, int, error) {
	if len(b) < lp {
		return nil, 0, fmt.Errorf("%w: short length prefix", ErrCorrupt)
	}
	n := int(b[0])
	if lp == 2 {
		n = int(binary.LittleEndian.Uint16(b))
	}
	if len(b) < lp+n {
		return nil, 0, fmt.Errorf("%w: value of %d bytes truncated", ErrCorrupt, n)
	}
	return strOrBytes(c, b[lp:lp+n]), lp + n, nil
}

func strOrBytes(c *Column, b []byte) Value {
	if c.IsText() {
		return string(b)
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

func bytesOf(c *Column, v Value) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	return nil, typeErr(c, v)
}

// intBits range-checks an integer value for a column of the given width and
// returns its two's-complement bits.
func intBits(c *Column, v Value, bits uint) (uint64, error) {
	switch x := v.(type) {
	case int64:
		if c.Unsigned {
			if x < 0 || (bits < 64 && uint64(x) >= 1<<bits) {
				return 0, rangeErr(c)
			}
			return uint64(x), nil
		}
		if bits < 64 && (x < -(1<<(bits-1)) || x >= 1<<(bits-1)) {
			return 0, rangeErr(c)
		}
		return uint64(x), nil
	case uint64:
		if c.Unsigned {
			if bits < 64 && x >= 1<<bits {
				return 0, rangeErr(c)
			}
			return x, nil
		}
		if x >= 1<<(bits-1) {
			return 0, rangeErr(c)
		}
		return x, nil
	}
	return 0, typeErr(c, v)
}

func rangeErr(c *Column) error { return fmt.Errorf("out of range value for column %q", c.Name) }

func typeErr(c *Column, v Value) error {
	return fmt.Errorf("column %q (binlog type %d): unexpected value of Go type %T", c.Name, c.Type, v)
}

// fracBytes is the size of the fractional-seconds part for a precision.
func fracBytes(fsp int) int { return (fsp + 1) / 2 }

// appendFrac appends microseconds us at precision fsp, big-endian, as MySQL
// stores the fractional part of DATETIME2/TIMESTAMP2.
func appendFrac(dst []byte, us int64, fsp int) []byte {
	switch fracBytes(fsp) {
	case 1:
		return append(dst, byte(us/10000))
	case 2:
		x := us / 100
		return append(dst, byte(x>>8), byte(x))
	case 3:
		return append(dst, byte(us>>16), byte(us>>8), byte(us))
	}
	return dst
}

func decodeFrac(b []byte, fsp int) int64 {
	switch fracBytes(fsp) {
	case 1:
		return int64(b[0]) * 10000
	case 2:
		return (int64(b[0])<<8 | int64(b[1])) * 100
	case 3:
		return int64(b[0])<<16 | int64(b[1])<<8 | int64(b[2])
	}
	return 0
}

// truncFrac drops microseconds beyond the column's precision.
func truncFrac(us int64, fsp int) int64 {
	p := int64(math.Pow10(6 - fsp))
	return us / p * p
}

const datetimeIntOfs = 0x8000000000

// ZeroDate is MySQL's zero date ('0000-00-00', '0000-00-00 00:00:00') as
// go-mysql-server holds it: year 0, month 0, day 0, which time.Date
// normalises to 30 November of year -1. Stored and logged, it is MySQL's
// zero date (every field 0).
var ZeroDate = time.Date(0, 0, 0, 0, 0, 0, 0, time.UTC)

// IsZeroDate reports whether t is the zero date.
func IsZeroDate(t time.Time) bool { return t.Equal(ZeroDate) }

// Earlier versions stored the zero date's Go form field by field, year -1
// overflowing into these values (read as year 32767 or so, which made the
// row unreadable). No real date has them (years end at 9999), so they read
// as the zero date again.
const (
	legacyZeroDate     uint32 = 0xFFFF7E     // day 30 | month 11 << 5 | year -1 << 9, in 24 bits
	legacyZeroDatetime uint64 = 0x7FFFBC0000 // ((-1*13+11) << 5 | 30) << 17 + offset, in 40 bits
)

func appendDatetime2(dst []byte, t time.Time, fsp int) []byte {
	if IsZeroDate(t) {
		x := uint64(datetimeIntOfs)
		dst = append(dst, byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
		return appendFrac(dst, 0, fsp)
	}
	ym := uint64(t.Year()*13 + int(t.Month()))
	ymd := ym<<5 | uint64(t.Day())
	hms := uint64(t.Hour())<<12 | uint64(t.Minute())<<6 | uint64(t.Second())
	x := (ymd<<17 | hms) + datetimeIntOfs
	dst = append(dst, byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	return appendFrac(dst, truncFrac(int64(t.Nanosecond()/1000), fsp), fsp)
}

func decodeDatetime2(b []byte, fsp int) time.Time {
	x := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	if x == legacyZeroDatetime {
		return ZeroDate
	}
	x -= datetimeIntOfs
	ymd, hms := x>>17, x&(1<<17-1)
	ym := ymd >> 5
	us := decodeFrac(b[5:], fsp)
	if ymd == 0 && hms == 0 && us == 0 {
		return ZeroDate
	}
	return time.Date(int(ym/13), time.Month(ym%13), int(ymd&31),
		int(hms>>12), int((hms>>6)&63), int(hms&63), int(us)*1000, time.UTC)
}

const (
	timeIntOfs = 0x800000
	timeOfs    = 0x800000000000
)

// timePacked is MySQL's TIME_to_longlong_time_packed.
func timePacked(d time.Duration, fsp int) int64 {
	neg := d < 0
	if neg {
		d = -d
	}
	us := int64(d / time.Microsecond)
	sec := us / 1e6
	frac := truncFrac(us%1e6, fsp)
	hms := (sec/3600)<<12 | ((sec/60)%60)<<6 | sec%60
	p := hms<<24 + frac
	if neg {
		return -p
	}
	return p
}

func appendTime2(dst []byte, d time.Duration, fsp int) []byte {
	nr := timePacked(d, fsp)
	put3 := func(x int64) { dst = append(dst, byte(x>>16), byte(x>>8), byte(x)) }
	switch fracBytes(fsp) {
	case 0:
		put3(timeIntOfs + nr>>24)
	case 1:
		put3(timeIntOfs + nr>>24)
		dst = append(dst, byte(int8((nr%(1<<24))/10000)))
	case 2:
		put3(timeIntOfs + nr>>24)
		f := (nr % (1 << 24)) / 100
		dst = append(dst, byte(f>>8), byte(f))
	default:
		x := nr + timeOfs
		dst = append(dst, byte(x>>40), byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	}
	return dst
}

func decodeTime2(b []byte, fsp int) time.Duration {
	get3 := func() int64 { return int64(b[0])<<16 | int64(b[1])<<8 | int64(b[2]) }
	var nr int64
	switch fracBytes(fsp) {
	case 0:
		nr = (get3() - timeIntOfs) << 24
	case 1:
		ip, f := get3()-timeIntOfs, int64(b[3])
		if ip < 0 && f != 0 {
			ip++
			f -= 0x100
		}
		nr = ip<<24 + f*10000
	case 2:
		ip, f := get3()-timeIntOfs, int64(b[3])<<8|int64(b[4])
		if ip < 0 && f != 0 {
			ip++
			f -= 0x10000
		}
		nr = ip<<24 + f*100
	default:
		x := int64(b[0])<<40 | int64(b[1])<<32 | int64(b[2])<<24 | int64(b[3])<<16 | int64(b[4])<<8 | int64(b[5])
		nr = x - timeOfs
	}
	neg := nr < 0
	if neg {
		nr = -nr
	}
	hms, frac := nr>>24, nr%(1<<24)
	us := ((hms>>12)*3600+((hms>>6)&63)*60+hms&63)*1e6 + frac
	d := time.Duration(us) * time.Microsecond
	if neg {
		d = -d
	}
	return d
}
