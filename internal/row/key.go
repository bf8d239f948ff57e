package row

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// Key encoding. Every component starts with a NULL marker (0x00 NULL, 0x01
// value) so NULL sorts first, as in MySQL. Values are then encoded so that
// bytes.Compare agrees with SQL comparison and every component is
// self-delimiting, which makes a tuple's encoding the concatenation of its
// components' encodings and a prefix of the tuple a prefix of the key:
//
//	integers       8 bytes big-endian, sign bit flipped for signed types
//	FLOAT/DOUBLE   IEEE bits, sign-adjusted
//	DECIMAL        MySQL's binary decimal (already memcomparable)
//	text           collation weights (Collator), escaped and terminated
//	binary         bytes, escaped and terminated (BINARY keeps its padding)
//	temporal       big-endian packed forms
//	ENUM/SET       index / bits, 8 bytes big-endian
//
// Escaping: 0x00 -> 0x00 0xFF; terminator 0x00 0x01. A shorter string thus
// sorts before any string it is a prefix of.

// Collator turns text into the bytes that order it under a collation. Equal
// strings under the collation must give equal bytes.
type Collator interface {
	AppendWeights(dst []byte, collation uint16, s string) []byte
}

// BinaryCollator orders text by its bytes (a stand-in for tests and for
// binary collations).
type BinaryCollator struct{}

// AppendWeights implements Collator.
func (BinaryCollator) AppendWeights(dst []byte, _ uint16, s string) []byte {
	return append(dst, s...)
}

const (
	keyNull  = 0x00
	keyValue = 0x01
)

// AppendKey appends the key encoding of v (which may be nil) for column c.
func AppendKey(dst []byte, c *Column, v Value, coll Collator) ([]byte, error) {
	if v == nil {
		return append(dst, keyNull), nil
	}
	dst = append(dst, keyValue)
	switch c.Type {
	case TypeTiny, TypeShort, TypeInt24, TypeLong, TypeLongLong:
		switch x := v.(type) {
		case int64:
			if c.Unsigned {
				if x < 0 {
					return dst, rangeErr(c)
				}
				return binary.BigEndian.AppendUint64(dst, uint64(x)), nil
			}
			return binary.BigEndian.AppendUint64(dst, uint64(x)^(1<<63)), nil
		case uint64:
			if !c.Unsigned {
				if x >= 1<<63 {
					return dst, rangeErr(c)
				}
				return binary.BigEndian.AppendUint64(dst, x^(1<<63)), nil
			}
			return binary.BigEndian.AppendUint64(dst, x), nil
		}
	case TypeBit:
		if x, ok := v.(uint64); ok {
			return binary.BigEndian.AppendUint64(dst, x), nil
		}
	case TypeYear:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint16(dst, uint16(x)), nil
		}
	case TypeFloat:
		if f, ok := v.(float32); ok {
			return binary.BigEndian.AppendUint64(dst, floatKey(float64(f))), nil
		}
	case TypeDouble:
		if f, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(dst, floatKey(f)), nil
		}
	case TypeNewDecimal:
		if d, ok := v.(decimal.Decimal); ok {
			return AppendDecimal(dst, d, c.Precision, c.Scale)
		}
	case TypeVarchar, TypeVarString, TypeBlob, TypeString:
		if c.Type == TypeString && (c.realType() == TypeEnum || c.realType() == TypeSet) {
			if x, ok := v.(uint64); ok {
				return binary.BigEndian.AppendUint64(dst, x), nil
			}
			break
		}
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			return dst, typeErr(c, v)
		}
		if c.IsText() {
			var w []byte
			if coll != nil {
				w = coll.AppendWeights(nil, c.Collation, s)
			} else {
				w = []byte(s)
			}
			return appendEscaped(dst, w), nil
		}
		return appendEscaped(dst, []byte(s)), nil
	case TypeDate, TypeDateTime2:
		if t, ok := v.(time.Time); ok {
			return appendDatetime2(dst, t, 6), nil
		}
	case TypeTimestamp2:
		if t, ok := v.(time.Time); ok {
			dst = binary.BigEndian.AppendUint64(dst, uint64(t.Unix())^(1<<63))
			return binary.BigEndian.AppendUint32(dst, uint32(t.Nanosecond()/1000)), nil
		}
	case TypeTime2:
		if d, ok := v.(time.Duration); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(int64(d))^(1<<63)), nil
		}
	default:
		return dst, fmt.Errorf("column %q: binlog type %d cannot be a key", c.Name, c.Type)
	}
	return dst, typeErr(c, v)
}

func floatKey(f float64) uint64 {
	if f == 0 {
		f = 0 // fold -0 into +0
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

// AppendTupleKey appends the key of the columns idx of vals.
func AppendTupleKey(dst []byte, cols []Column, idx []int, vals []Value, coll Collator) ([]byte, error) {
	var err error
	for _, i := range idx {
		dst, err = AppendKey(dst, &cols[i], vals[i], coll)
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// PrefixEnd returns the smallest key greater than every key with prefix p, or
// nil if there is none.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
