package server

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/cluster"
)

// A joiner asks the member that answered it first, then every other
// member in id order, never itself.
func TestDonorsOf(t *testing.T) {
	r := cluster.Roster{Self: 4, Addrs: map[uint64]string{1: "a:1", 2: "b:1", 3: "c:1", 4: "me:1"}}
	if got, want := donorsOf(r, "b:1"), []string{"b:1", "a:1", "c:1"}; !slices.Equal(got, want) {
		t.Fatalf("donors %v, want %v", got, want)
	}
}

// A donor that refuses or fails is passed over for the next; all failing
// go round again until patience runs out, and the last refusal is said.
func TestCopyFromDonors(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var asked []string
	fetch := func(d string) (uint64, error) {
		asked = append(asked, d)
		if d == "c:1" {
			return 42, nil
		}
		return 0, errors.New(d + " gives no state: a witness keeps no data")
	}
	donor, index, err := copyFromDonors([]string{"w:1", "b:1", "c:1"}, fetch, time.Minute, log)
	if err != nil || donor != "c:1" || index != 42 {
		t.Fatalf("copy: %q %d %v", donor, index, err)
	}
	if want := []string{"w:1", "b:1", "c:1"}; !slices.Equal(asked, want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}

	// Nobody gives a copy: it goes round until patience runs out.
	asked = nil
	rounds := 0
	never := func(d string) (uint64, error) {
		if d == "w:1" {
			rounds++
		}
		asked = append(asked, d)
		return 0, errors.New("no answer")
	}
	_, _, err = copyFromDonors([]string{"w:1", "b:1"}, never, 1500*time.Millisecond, log)
	if err == nil || rounds < 2 {
		t.Fatalf("no donor: %v after %d rounds", err, rounds)
	}

	// A donor that gives a copy on its second try (it was leading, and
	// handed leadership over meanwhile).
	tries := 0
	later := func(d string) (uint64, error) {
		tries++
		if tries < 3 {
			return 0, errors.New("not yet")
		}
		return 7, nil
	}
	if d, i, err := copyFromDonors([]string{"a:1"}, later, time.Minute, log); err != nil || d != "a:1" || i != 7 {
		t.Fatalf("second round: %q %d %v", d, i, err)
	}
}
