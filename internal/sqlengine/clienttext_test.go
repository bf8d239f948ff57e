package sqlengine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestTranslateLiterals runs testdata/clienttext: "translate" prints a
// client's text in the parser's form (args: nbe for NO_BACKSLASH_ESCAPES,
// ansi for ANSI_QUOTES) and, for each ';' outside strings and comments
// of the translation, what undo gives back for the rest after it.
func TestTranslateLiterals(t *testing.T) {
	datadriven.RunTest(t, "testdata/clienttext", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "translate" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		q := strings.TrimSuffix(d.Input, "\n")
		var ins []int
		text := translateLiterals(q, d.HasArg("ansi"), d.HasArg("nbe"), &ins)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n", text)
		undo := undoFor(q, text, ins)
		if got := undo(text); got != q {
			t.Errorf("undo of the whole translation: %q, want %q", got, q)
		}
		for _, at := range statementEnds(text, d.HasArg("ansi")) {
			rest := text[at:]
			fmt.Fprintf(&b, "rest %q -> %q\n", rest, undo(rest))
		}
		return b.String()
	})
}

// statementEnds are the offsets just after each ';' of a translated text
// that is outside its strings (read with backslash escapes).
func statementEnds(text string, ansi bool) []int {
	var ends []int
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'' || c == '"' && !ansi:
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case c == ';':
			ends = append(ends, i+1)
		}
	}
	return ends
}

// FuzzTranslateLiterals: the translation only adds backslashes, where
// ins says, undo of it gives the client's text back, and translating the
// parser's form again without NO_BACKSLASH_ESCAPES changes nothing (what
// a replica does to a source's DDL, and a stored text may meet).
func FuzzTranslateLiterals(f *testing.F) {
	for _, s := range []string{`SELECT 'a\_b'; SELECT "x\%"`, `'a\b' -- c\_`, `/*! 'x\%' */ /* '\_' */`, "`a\\_` 'b\\'", `'it''s\'`} {
		f.Add(s, false, false)
		f.Add(s, true, true)
	}
	f.Fuzz(func(t *testing.T, q string, ansi, nbe bool) {
		var ins []int
		text := translateLiterals(q, ansi, nbe, &ins)
		if len(text) != len(q)+len(ins) {
			t.Fatalf("%q -> %q: %d bytes added, %d recorded", q, text, len(text)-len(q), len(ins))
		}
		for k, i := range ins {
			if text[i+k] != '\\' || q[i] != '\\' {
				t.Fatalf("%q -> %q: added backslash %d at %d is not before a backslash", q, text, k, i)
			}
		}
		if got := undoFor(q, text, ins)(text); got != q {
			t.Fatalf("undo of %q: %q", text, got)
		}
		if again := translateLiterals(text, ansi, false, nil); again != text {
			t.Fatalf("%q -> %q, and again -> %q", q, text, again)
		}
	})
}
