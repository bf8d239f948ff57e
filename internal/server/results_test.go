package server

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestEncodeText: UTF-8 text into a single-byte character set, as MySQL
// converts results: each character the set holds as its byte, '?' for
// one it does not, ASCII untouched (and reported unchanged), and bytes
// that are not UTF-8 (a client's own set's, read raw) passed as they are.
func TestEncodeText(t *testing.T) {
	for _, c := range []struct {
		cs       sql.CharacterSetID
		in, want string
		changed  bool
	}{
		{sql.CharacterSet_latin1, "abc", "abc", false},
		{sql.CharacterSet_latin1, "", "", false},
		{sql.CharacterSet_latin1, "caf\u00e9", "caf\xe9", true},
		{sql.CharacterSet_latin1, "\u20ac5", "\x805", true}, // MySQL's latin1 is cp1252
		{sql.CharacterSet_latin1, "\u65e5\u672c!", "??!", true},
		{sql.CharacterSet_latin1, "caf\xe9", "caf\xe9", false},   // raw, not UTF-8
		{sql.CharacterSet_latin1, "\xe6\x97", "\xe6\x97", false}, // a cut sequence
		{sql.CharacterSet_latin1, "a\u00e9\xffb\u4e00", "a\xe9\xffb?", true},
		{sql.CharacterSet_cp1257, "\u0161\u00e9", "\xf0\xe9", true},
		{sql.CharacterSet_ascii, "\u00e9a", "?a", true},
	} {
		got, changed := encodeText(c.cs.Encoder(), []byte(c.in))
		if string(got) != c.want || changed != c.changed {
			t.Errorf("%s %q: %q (changed %v), want %q (%v)", c.cs.Name(), c.in, got, changed, c.want, c.changed)
		}
	}
}
