package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSetAsideStale(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"store/000001.sst", "binlog.000001", "binlog.000002", "binlog.index", "raft.state", "auto.cnf", "ca.pem"} {
		write(f, f)
	}
	log := slog.New(slog.DiscardHandler)

	// No mark: nothing moves.
	if st, err := setAsideStale(dir, store, log); err != nil || st != "" {
		t.Fatalf("without a mark: %q %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.state")); err != nil {
		t.Fatal("moved without a mark")
	}

	// A stale mark: the member's data goes aside, its identity and
	// certificates stay, and the mark says joining.
	if err := markResync(dir, resyncStale); err != nil {
		t.Fatal(err)
	}
	st, err := setAsideStale(dir, store, log)
	if err != nil || st != resyncJoining {
		t.Fatalf("stale: %q %v", st, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"auto.cnf", "ca.pem", resyncFile, staleDir}; !slices.Equal(left, want) {
		t.Fatalf("left in the data directory: %v, want %v", left, want)
	}
	for _, f := range []string{"store/000001.sst", "binlog.000001", "binlog.000002", "binlog.index", "raft.state"} {
		if b, err := os.ReadFile(filepath.Join(dir, staleDir, f)); err != nil || string(b) != f {
			t.Fatalf("%s set aside: %q %v", f, b, err)
		}
	}

	// Joining: a new log and store are not set aside again.
	write("raft.state", "new")
	if st, err := setAsideStale(dir, store, log); err != nil || st != resyncJoining {
		t.Fatalf("joining: %q %v", st, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "raft.state")); string(b) != "new" {
		t.Fatal("a joining member's new state was set aside")
	}

	// Stale again: the set kept before is replaced by this one.
	if err := markResync(dir, resyncStale); err != nil {
		t.Fatal(err)
	}
	if _, err := setAsideStale(dir, store, log); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, staleDir, "raft.state")); string(b) != "new" {
		t.Fatalf("the stale set: raft.state %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, staleDir, "binlog.000001")); err == nil {
		t.Fatal("the previous stale set was kept beside the new one")
	}

	if err := clearResync(dir); err != nil {
		t.Fatal(err)
	}
	if st, err := resyncState(dir); err != nil || st != "" {
		t.Fatalf("after clearing: %q %v", st, err)
	}

	// A damaged mark is an error that says what to do, never a guess.
	write(resyncFile, "garbage")
	if _, err := setAsideStale(dir, store, log); err == nil {
		t.Fatal("a damaged mark was taken")
	}
}
