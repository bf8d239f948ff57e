package sqlengine

import (
	"math"
	"testing"
)

// TestAppendDouble checks MySQL's text for doubles and floats; the
// expected strings are what MariaDB 10.11 (whose my_gcvt is MySQL's)
// writes for the same values.
func TestAppendDouble(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // not constants: Go would add them exactly
	for _, c := range []struct {
		f      float64
		single bool
		want   string
	}{
		{8385959, false, "8385959"},
		{1234567.5, false, "1234567.5"},
		{1e15, false, "1e15"},
		{123456789012345, false, "123456789012345"},
		{1e15 - 1, false, "999999999999999"},
		{2.5e15, false, "2.5e15"},
		{1e16, false, "1e16"},
		{1e20, false, "1e20"},
		{0.0001, false, "0.0001"},
		{0.00001, false, "0.00001"},
		{1e-14, false, "0.00000000000001"},
		{1e-15, false, "0.000000000000001"},
		{1.5e-15, false, "0.0000000000000015"},
		{1e-16, false, "1e-16"},
		{-1.5e-7, false, "-0.00000015"},
		{tenth + fifth, false, "0.30000000000000004"},
		{123456789.123456789, false, "123456789.12345679"},
		{math.MaxFloat64, false, "1.7976931348623157e308"},
		{4.9e-324, false, "5e-324"},
		{-1e300, false, "-1e300"},
		{123, false, "123"},
		{float64(float32(1234567)), true, "1234570"},
		{float64(float32(1e13)), true, "10000000000000"},
		{float64(float32(3.4e38)), true, "3.4e38"},
		{float64(float32(1.1)), true, "1.1"},
		{float64(float32(0.000001234567)), true, "0.00000123457"},
		{float64(float32(1e-10)), true, "0.0000000001"},
		{float64(float32(123456789012)), true, "123457000000"},
		{float64(float32(16777217)), true, "16777200"},
		{float64(float32(-2.5e-5)), true, "-0.000025"},
		{float64(float32(3.4028235e38)), true, "3.40282e38"},
		{0, false, "0"},
	} {
		if got := string(AppendDouble(nil, c.f, c.single)); got != c.want {
			t.Errorf("AppendDouble(%v, single=%v) = %s, want %s", c.f, c.single, got, c.want)
		}
	}
}
