package row

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// MySQL's binary DECIMAL (decimal2bin): the integer and fractional digits are
// stored in groups of nine decimal digits per big-endian 4-byte word, with a
// shorter leading (integer) or trailing (fraction) group for the remainder;
// negative numbers have every byte inverted, and the first byte's top bit is
// flipped so that the encoding is memcomparable. The key encoding reuses it.

var digitsToBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// DecimalBinarySize is the encoded size of DECIMAL(precision, scale).
func DecimalBinarySize(precision, scale int) int {
	intg := precision - scale
	return intg/9*4 + digitsToBytes[intg%9] + scale/9*4 + digitsToBytes[scale%9]
}

// AppendDecimal appends d, rounded to scale, in MySQL's binary format.
func AppendDecimal(dst []byte, d decimal.Decimal, precision, scale int) ([]byte, error) {
	intg := precision - scale
	d = d.Round(int32(scale))
	neg := d.Sign() < 0
	s := d.Abs().StringFixed(int32(scale))
	ip, fp := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		ip, fp = s[:i], s[i+1:]
	}
	ip = strings.TrimLeft(ip, "0")
	if len(ip) > intg {
		return dst, fmt.Errorf("value %s out of range for DECIMAL(%d,%d)", d.String(), precision, scale)
	}
	ip = strings.Repeat("0", intg-len(ip)) + ip
	start := len(dst)
	// Integer part: leading partial group, then full groups.
	lead := intg % 9
	if lead > 0 {
		dst = appendDigitGroup(dst, ip[:lead], digitsToBytes[lead])
	}
	for i := lead; i < intg; i += 9 {
		dst = appendDigitGroup(dst, ip[i:i+9], 4)
	}
	// Fraction: full groups, then the trailing partial group.
	full := scale / 9 * 9
	for i := 0; i < full; i += 9 {
		dst = appendDigitGroup(dst, fp[i:i+9], 4)
	}
	if rest := scale % 9; rest > 0 {
		dst = appendDigitGroup(dst, fp[full:], digitsToBytes[rest])
	}
	if neg {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	if len(dst) > start {
		dst[start] ^= 0x80
	}
	return dst, nil
}

func appendDigitGroup(dst []byte, digits string, size int) []byte {
	var x uint32
	for i := 0; i < len(digits); i++ {
		x = x*10 + uint32(digits[i]-'0')
	}
	for i := size - 1; i >= 0; i-- {
		dst = append(dst, byte(x>>(8*i)))
	}
	return dst
}

// DecodeDecimal decodes exactly DecimalBinarySize(precision, scale) bytes.
func DecodeDecimal(b []byte, precision, scale int) (decimal.Decimal, error) {
	size := DecimalBinarySize(precision, scale)
	if len(b) < size {
		return decimal.Decimal{}, fmt.Errorf("%w: short decimal", ErrCorrupt)
	}
	buf := make([]byte, size)
	copy(buf, b)
	if size == 0 {
		return decimal.Zero, nil
	}
	neg := buf[0]&0x80 == 0
	buf[0] ^= 0x80
	if neg {
		for i := range buf {
			buf[i] = ^buf[i]
		}
	}
	var sb strings.Builder
	if neg {
		sb.WriteByte('-')
	}
	intg := precision - scale
	pos := 0
	group := func(size, digits int) error {
		var x uint32
		for i := range size {
			x = x<<8 | uint32(buf[pos+i])
		}
		pos += size
		s := fmt.Sprintf("%0*d", digits, x)
		if len(s) > digits {
			return fmt.Errorf("%w: decimal digit group %d too large", ErrCorrupt, x)
		}
		sb.WriteString(s)
		return nil
	}
	if lead := intg % 9; lead > 0 {
		if err := group(digitsToBytes[lead], lead); err != nil {
			return decimal.Decimal{}, err
		}
	}
	for i := intg % 9; i < intg; i += 9 {
		if err := group(4, 9); err != nil {
			return decimal.Decimal{}, err
		}
	}
	if intg == 0 {
		sb.WriteByte('0')
	}
	if scale > 0 {
		sb.WriteByte('.')
		for i := 0; i < scale/9; i++ {
			if err := group(4, 9); err != nil {
				return decimal.Decimal{}, err
			}
		}
		if rest := scale % 9; rest > 0 {
			if err := group(digitsToBytes[rest], rest); err != nil {
				return decimal.Decimal{}, err
			}
		}
	}
	return decimal.NewFromString(sb.String())
}
