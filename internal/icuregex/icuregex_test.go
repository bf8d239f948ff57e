package icuregex

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// mysqlLimits are MySQL's defaults for regexp_time_limit and
// regexp_stack_limit.
var mysqlLimits = Limits{Time: 32, Stack: 8000000}

func mustCompile(t *testing.T, pattern string, flags Flags, lim Limits) *Regexp {
	t.Helper()
	re, err := Compile(pattern, flags, lim)
	if err != nil {
		t.Fatalf("Compile(%q): %v", pattern, err)
	}
	t.Cleanup(re.Close)
	return re
}

func code(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		pattern    string
		flags      Flags
		text       string
		start, occ int
		found      bool
		m          Match
	}{
		{pattern: "b+", text: "abcabcabc", occ: 1, found: true, m: Match{1, 2, "b"}},
		{pattern: "a+", text: "abcabcabc", start: 1, occ: 1, found: true, m: Match{3, 4, "a"}},
		{pattern: "a+", text: "abcabcabc", occ: 3, found: true, m: Match{6, 7, "a"}},
		{pattern: "a+", text: "abcabcabc", occ: 4},
		{pattern: "a+", text: "abcabcabc", start: 3, occ: 2, found: true, m: Match{6, 7, "a"}},
		{pattern: "a+", text: "aaabc", occ: 0, found: true, m: Match{0, 3, "aaa"}},
		{pattern: "A+", text: "aaa", occ: 1},
		{pattern: "A+", flags: CaseInsensitive, text: "aaa", occ: 1, found: true, m: Match{0, 3, "aaa"}},
		// Positions count characters, not bytes or UTF-16 units.
		{pattern: "ö", text: "aöb", occ: 1, found: true, m: Match{1, 2, "ö"}},
		{pattern: "b", text: "🍣ab", occ: 1, found: true, m: Match{2, 3, "b"}},
		{pattern: "b", text: "🍣ab", start: 2, occ: 1, found: true, m: Match{2, 3, "b"}},
		{pattern: "^b$", text: "a\nb\nc", occ: 1},
		{pattern: "^b$", flags: Multiline, text: "a\nb\nc", occ: 1, found: true, m: Match{2, 3, "b"}},
		{pattern: "a.c", text: "a\nc", occ: 1},
		{pattern: "a.c", flags: DotAll, text: "a\nc", occ: 1, found: true, m: Match{0, 3, "a\nc"}},
		// A start at the end is a search of nothing.
		{pattern: "x*", text: "ab", start: 2, occ: 1, found: true, m: Match{2, 2, ""}},
		{pattern: "a", text: "", occ: 1},
	} {
		re := mustCompile(t, c.pattern, c.flags, mysqlLimits)
		m, found, err := re.Find(ctx, c.text, c.start, c.occ, true, true)
		if err != nil || found != c.found || m != c.m {
			t.Errorf("Find(%q in %q from %d, #%d) = %+v, %v, %v; want %+v, %v", c.pattern, c.text, c.start, c.occ, m, found, err, c.m, c.found)
		}
	}
}

func TestFindOutOfBounds(t *testing.T) {
	re := mustCompile(t, "a+", 0, mysqlLimits)
	for _, start := range []int{3, -1} {
		if _, _, err := re.Find(context.Background(), "a", start, 1, false, false); code(err) != IndexOutOfBounds {
			t.Errorf("start %d: err = %v, want IndexOutOfBounds", start, err)
		}
	}
	// The matcher is usable after an error.
	if _, found, err := re.Find(context.Background(), "baa", 0, 1, false, false); err != nil || !found {
		t.Fatalf("after an error: %v, %v", found, err)
	}
}

func TestReplace(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		pattern, text, repl string
		start, occ          int
		want                string
	}{
		{"a", "aaa", "X", 0, 0, "XXX"},
		{"b", "abc", "X", 0, 0, "aXc"},
		{"b+", "aaabbccbbddaa", "X", 0, 1, "aaaXccbbddaa"},
		{"b+", "aaabbccbbddaa", "X", 0, 2, "aaabbccXddaa"},
		{"(b+)", "aaabbccbbddaa", "<$1>", 0, 2, "aaabbcc<bb>ddaa"},
		{"x+", "aaabbccbbddaa", "x", 0, 0, "aaabbccbbddaa"},
		{"b+", "aaabbccbbddaa", "x", 0, 0, "aaaxccxddaa"},
		{"b", "aaab", "x", 0, 2, "aaab"},
		{"b", "abcbdb", "X", 2, 0, "abcXdX"},
		{"a", "aaa", "XX", 1, 0, "aXXXX"},
		{"b", "abcbdb", "X", 0, -3, "aXcbdb"},
		{"(?<w>o+)", "foo", "[${w}]", 0, 0, "f[oo]"},
		{"o", "foo", `\$`, 0, 0, "f$$"},
		{"ö", "aöböc", "é", 0, 0, "aébéc"},
		{"b", "🍣abab", "X", 3, 0, "🍣abaX"},
		{"a", "", "X", 0, 0, ""},
	} {
		re := mustCompile(t, c.pattern, 0, mysqlLimits)
		got, err := re.Replace(ctx, c.text, c.repl, c.start, c.occ, 1<<20)
		if err != nil || got != c.want {
			t.Errorf("Replace(%q, %q -> %q, from %d, #%d) = %q, %v; want %q", c.text, c.pattern, c.repl, c.start, c.occ, got, err, c.want)
		}
	}
}

func TestReplaceErrors(t *testing.T) {
	ctx := context.Background()
	re := mustCompile(t, "a", 0, mysqlLimits)
	if _, err := re.Replace(ctx, "a", "b", 3, 0, 100); code(err) != IndexOutOfBounds {
		t.Errorf("start past the end: %v", err)
	}
	if _, err := re.Replace(ctx, strings.Repeat("a", 10), "b", 0, 0, 10); err != nil {
		t.Errorf("a result of exactly the limit: %v", err)
	}
	if _, err := re.Replace(ctx, strings.Repeat("a", 10), "bb", 0, 0, 10); code(err) != BufferOverflow {
		t.Errorf("a result past the limit: %v", err)
	}
	if _, err := re.Replace(ctx, "a", "$9", 0, 0, 100); code(err) != IndexOutOfBounds {
		t.Errorf("a group that does not exist: %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		pattern      string
		code         Code
		line, offset int
	}{
		{pattern: "   **", code: Syntax, line: 1, offset: 5},
		{pattern: " \n  **", code: Syntax, line: 2, offset: 4},
		{pattern: `\`, code: BadEscape},
		{pattern: "(", code: MismatchedParen},
		{pattern: "a{}", code: BadInterval},
		{pattern: "a{2,1}", code: MaxLessThanMin},
		{pattern: `\1`, code: InvalidBackRef},
		{pattern: "a[", code: MissingCloseBracket},
		{pattern: "[b-a]", code: InvalidRange},
		{pattern: "[[:invalid_bracket_expression:]]", code: IllegalArgument},
		{pattern: "(?{})", code: Unimplemented},
		{pattern: "(?<=a+)b", code: LookBehindLimit},
	} {
		_, err := Compile(c.pattern, 0, mysqlLimits)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || c.line != 0 && (e.Line != c.line || e.Offset != c.offset) {
			t.Errorf("Compile(%q) = %v (%+v); want code %d at %d:%d", c.pattern, err, e, c.code, c.line, c.offset)
		}
	}
}

// TestCatastrophicBacktracking is the reason this package exists: without
// a time limit this match takes ICU seconds, and twice as long for each
// further character.
func TestCatastrophicBacktracking(t *testing.T) {
	text := strings.Repeat("a", 40) + "c"
	re := mustCompile(t, "(a+)+b", 0, mysqlLimits)
	start := time.Now()
	_, _, err := re.Find(context.Background(), text, 0, 1, false, false)
	if code(err) != TimeOut {
		t.Fatalf("err = %v, want TimeOut", err)
	}
	t.Logf("timed out after %v", time.Since(start))
	if _, err := re.Replace(context.Background(), text, "x", 0, 0, 1<<20); code(err) != TimeOut {
		t.Fatalf("Replace: err = %v, want TimeOut", err)
	}
}

func TestStackLimit(t *testing.T) {
	text := strings.Repeat("ab", 200000)
	re := mustCompile(t, "(a|b)*c", 0, Limits{Stack: 1000})
	if _, _, err := re.Find(context.Background(), text, 0, 1, false, false); code(err) != StackOverflow {
		t.Fatalf("err = %v, want StackOverflow", err)
	}
}

// TestCancel stops a match that no time limit bounds.
func TestCancel(t *testing.T) {
	text := strings.Repeat("a", 60) + "c"
	re := mustCompile(t, "(a+)+b", 0, Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := re.Find(ctx, text, 0, 1, false, false)
	if code(err) != Stopped {
		t.Fatalf("err = %v, want Stopped", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the match stopped %v after its context", d)
	}
	// A cancelled context stops the next search before it starts; a fresh
	// one runs.
	if _, _, err := re.Find(ctx, "b", 0, 1, false, false); code(err) != Stopped {
		t.Fatalf("with a done context: %v", err)
	}
	if _, found, err := re.Find(context.Background(), "ab", 0, 1, false, false); err != nil || !found {
		t.Fatalf("after a cancelled search: %v, %v", found, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	re := mustCompile(t, "b+", 0, mysqlLimits)
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 500; i++ {
				text := strings.Repeat("a", i%7) + "bb"
				m, found, err := re.Find(context.Background(), text, 0, 1, true, true)
				if err != nil || !found || m.Start != i%7 || m.Text != "bb" {
					done <- errors.New("wrong match under concurrent use")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestClosed(t *testing.T) {
	re, err := Compile("a", 0, mysqlLimits)
	if err != nil {
		t.Fatal(err)
	}
	re.Close()
	re.Close()
	if _, _, err := re.Find(context.Background(), "a", 0, 1, false, false); err == nil {
		t.Fatal("a closed Regexp matched")
	}
}

// FuzzRegexp: any pattern, subject and replacement from a client compiles
// or fails with an Error, and any match ends within the limits, without
// crashing the process.
func FuzzRegexp(f *testing.F) {
	f.Add("(a+)+b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaac", "$1", 0, 0)
	f.Add("(?<n>ö+)", "aöö🍣", "${n}\\$", 1, 2)
	f.Add("[[:alpha:]]{2,}", "ab cd", "\\u0041", 2, -1)
	f.Fuzz(func(t *testing.T, pattern, text, repl string, start, occ int) {
		re, err := Compile(pattern, CaseInsensitive, Limits{Time: 4, Stack: 100000})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile: %v is not an *Error", err)
			}
			return
		}
		defer re.Close()
		ctx := context.Background()
		if m, found, err := re.Find(ctx, text, start%8, occ%4, true, true); err == nil && found && (m.Start > m.End || m.End > len([]rune(text))+1) {
			t.Fatalf("Find: match %+v outside %q", m, text)
		}
		_, _ = re.Replace(ctx, text, repl, start%8, occ%4, 1<<16)
	})
}
