package sqlengine

import "testing"

func TestHostRank(t *testing.T) {
	for _, c := range []struct {
		pattern, client string
		ok              bool
	}{
		{"%", "10.0.0.5", true},
		{"", "10.0.0.5", true},
		{"10.0.0.5", "10.0.0.5", true},
		{"10.0.0.%", "10.0.0.5", true},
		{"10.0.0._", "10.0.0.5", true},
		{"10.0.0._", "10.0.0.55", false},
		{"10.0.%", "10.1.0.5", false},
		{"localhost", "127.0.0.1", true},
		{"localhost", "::1", true},
		{"localhost", "10.0.0.5", false},
		{"LOCALHOST", "localhost", true},
		{"127.0.0.1", "::1", false},
		{"local%", "127.0.0.1", true},
		{"10.0.0.0/255.255.255.0", "10.0.0.77", true},
		{"10.0.0.0/255.255.255.0", "10.0.1.77", false},
		{"10.0.0.0/255.255.255.0", "localhost", false},
	} {
		if _, ok := hostRank(c.pattern, c.client); ok != c.ok {
			t.Errorf("hostRank(%q, %q) admits = %v, want %v", c.pattern, c.client, ok, c.ok)
		}
	}
	// More specific first, for a client at 127.0.0.1.
	order := []string{"127.0.0.1", "localhost", "127.0.0.%", "127.%", "%", ""}
	for i := 1; i < len(order); i++ {
		a, _ := hostRank(order[i-1], "127.0.0.1")
		b, _ := hostRank(order[i], "127.0.0.1")
		if a <= b {
			t.Errorf("%q (%d) should rank above %q (%d)", order[i-1], a, order[i], b)
		}
	}
}

func TestLikeFold(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"%", "", true}, {"a%c", "abbbc", true}, {"a%c", "abbb", false}, {"%.example.com", "db.EXAMPLE.com", true},
		{"a_c", "abc", true}, {"a_c", "ac", false}, {"%a%b%", "xxaxxbxx", true}, {"abc", "abcd", false},
	} {
		if got := likeFold(c.p, c.s); got != c.want {
			t.Errorf("likeFold(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
