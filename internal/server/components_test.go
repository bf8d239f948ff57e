package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

func TestParseComponentURNs(t *testing.T) {
	for _, c := range []struct {
		in   string
		urns []string
		rest string
		bad  bool
	}{
		{in: `'file://a'`, urns: []string{"file://a"}},
		{in: `"file://a" , 'file://b'`, urns: []string{"file://a", "file://b"}},
		{in: `'file://a' SET GLOBAL x = 1`, urns: []string{"file://a"}, rest: "SET GLOBAL x = 1"},
		{in: `'file://a',`, bad: true},
		{in: `file://a`, bad: true},
		{in: ``, bad: true},
		{in: `'it''s'`, urns: []string{"it"}, rest: "'s'"},
	} {
		urns, rest, err := parseComponentURNs(c.in)
		if (err != nil) != c.bad || !slices.Equal(urns, c.urns) || rest != c.rest {
			t.Errorf("%q: %q %q %v; want %q %q, error %v", c.in, urns, rest, err, c.urns, c.rest, c.bad)
		}
	}
}

// TestLoadComponents: the installed components come back at start; a
// damaged file, or one naming a component this server does not have,
// stops the start rather than run without the policy.
func TestLoadComponents(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { sqlengine.SetPasswordValidation(false) })
	s := &Server{cfg: Config{DataDir: dir}}
	if err := s.loadComponents(); err != nil || sqlengine.PasswordValidation() {
		t.Fatalf("no file: %v, policy %v", err, sqlengine.PasswordValidation())
	}
	path := filepath.Join(dir, componentsFile)
	write := func(content string) {
		if err := atomicfile.WriteChecked(vfs.Default, path, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"installed":["file://component_validate_password"]}`)
	if err := s.loadComponents(); err != nil || !sqlengine.PasswordValidation() || len(s.components) != 1 {
		t.Fatalf("installed: %v, policy %v, %v", err, sqlengine.PasswordValidation(), s.components)
	}
	write(`{"installed":["file://component_x"]}`)
	if err := s.loadComponents(); err == nil || !strings.Contains(err.Error(), "does not have") {
		t.Fatalf("an unknown component: %v", err)
	}
	b, _ := os.ReadFile(path)
	b[5] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.loadComponents(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged file: %v", err)
	}
}
