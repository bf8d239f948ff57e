package server

import "testing"

func TestBareStatement(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"KILL 5", "KILL 5"},
		{"/* app */ KILL 5", "  KILL 5"},
		{"KILL /* c */ 5", "KILL   5"},
		{"KILL 5 -- why\n", "KILL 5  \n"},
		{"KILL 5 -- why", "KILL 5  "},
		{"KILL 5 # why", "KILL 5  "},
		{"# note\nFLUSH TABLES WITH READ LOCK", " \nFLUSH TABLES WITH READ LOCK"},
		{"SELECT 1--1", "SELECT 1--1"},
		{"SELECT '/* not */', \"-- not\", `#not`", "SELECT '/* not */', \"-- not\", `#not`"},
		{`SELECT 'it''s /*', 'a\' -- b'`, `SELECT 'it''s /*', 'a\' -- b'`},
		{"/*!50000 KILL 5 */", "  KILL 5  "},
		{"/*! KILL 5 */", "  KILL 5  "},
		{"/*!90000 KILL 5 */ SELECT 1", "  SELECT 1"},
		{"/*M!100101 SET x=1 */ SELECT 1", "  SELECT 1"},
		{"/*+ hint */ SELECT 1", "  SELECT 1"},
		{"/* unterminated", " "},
		{"SELECT 'unterminated", "SELECT 'unterminated"},
	} {
		if got := bareStatement(tc.in); got != tc.want {
			t.Errorf("bareStatement(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzBareStatement(f *testing.F) {
	for _, s := range []string{"/* a */ KILL 1", "/*!50000 x */", "'a\\'b' -- c", "#\n--\n/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out := bareStatement(q)
		if len(out) > len(q) {
			t.Fatalf("bareStatement grew %q to %q", q, out)
		}
	})
}
