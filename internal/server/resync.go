package server

// A member behind the cluster's purged log takes a copy of a member's
// data by itself (Galera's automatic SST).
//
// The other members purge their logs (PURGE BINARY LOGS, expiry); a
// member that was stopped or cut off meanwhile is then behind the first
// entry they hold, and raft can no longer catch it up from the log: its
// leader sends a snapshot message, and the node stops with
// cluster.ErrBehind. What the member holds is then of no use: everything
// committed is on a majority of the others, and its own entries past
// what it applied were never acknowledged (or are on the others too).
//
// So the member marks its data directory (resyncFile, "stale"), and the
// server restarts in the same process (Run). A start that finds the
// mark sets the member's store, binlog and raft state aside under
// staleDir (the previous set kept there is dropped), changes the mark to
// "joining", and starts as a member with an empty log: it asks the
// running members for its place as any member that lost its data does
// (it rejoins under a new id) and is sent a copy of a member's state,
// or the log.
//
// Invariants:
//   - The stale data is never served and never given to another member:
//     the mark is written and synced before the server restarts, and a
//     start that finds "stale" sets the data aside before it opens
//     anything.
//   - A member whose data was set aside never starts a new cluster: with
//     the mark present, no answer from the members means waiting, not
//     bootstrapping an empty cluster beside the real one. The mark goes
//     once the member's log records its place again (a later start finds
//     a roster in it).
//   - Setting aside is idempotent: a crash in it leaves "stale", and the
//     next start moves what is still in place.

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
)

const (
	// resyncFile marks a member's data directory: "stale" (its data is
	// behind the cluster's purged log) or "joining" (set aside, the
	// member joins again).
	resyncFile = "lockstep.resync"
	// staleDir holds the data a member set aside.
	staleDir = "stale-data"

	resyncStale   = "stale"
	resyncJoining = "joining"
)

// resyncState is the mark in dir ("" without one).
func resyncState(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, resyncFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	switch st := strings.TrimSpace(string(b)); st {
	case resyncStale, resyncJoining:
		return st, nil
	default:
		return "", fmt.Errorf("%s holds %q: remove it, or write %q to have the member take a copy of another's data", filepath.Join(dir, resyncFile), st, resyncStale)
	}
}

// markResync writes the mark, durably.
func markResync(dir, state string) error {
	return atomicfile.Write(vfs.Default, filepath.Join(dir, resyncFile), []byte(state+"\n"))
}

// clearResync removes the mark, durably.
func clearResync(dir string) error {
	if err := os.Remove(filepath.Join(dir, resyncFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(vfs.Default, dir)
}

// memberFiles are the names, in a member's data directory, of what it
// holds of the cluster: the store, its binlog (the raft log) and raft's
// state.
func memberFiles(dir, storeDir string) []string {
	return append(logFiles(dir), filepath.Base(storeDir), "raft.state")
}

// logFiles are the names, in a member's data directory, of its binlog
// (the raft log): its files, their index and the synced mark.
func logFiles(dir string) []string {
	names := []string{"binlog.index", "binlog.synced"}
	matches, _ := filepath.Glob(filepath.Join(dir, "binlog.[0-9]*"))
	for _, m := range matches {
		names = append(names, filepath.Base(m))
	}
	return names
}

// removeLog removes a member's binlog (logFiles) from dir.
func removeLog(dir string) {
	for _, name := range logFiles(dir) {
		os.Remove(filepath.Join(dir, name))
	}
}

// setAsideStale moves a stale member's data under staleDir, if the mark
// says "stale", and changes the mark to "joining". It returns the mark
// as it then stands.
func setAsideStale(dir, storeDir string, log *slog.Logger) (string, error) {
	state, err := resyncState(dir)
	if err != nil || state != resyncStale {
		return state, err
	}
	aside := filepath.Join(dir, staleDir)
	if err := os.RemoveAll(aside); err != nil {
		return "", err
	}
	if err := os.Mkdir(aside, 0o750); err != nil {
		return "", err
	}
	for _, name := range memberFiles(dir, storeDir) {
		err := os.Rename(filepath.Join(dir, name), filepath.Join(aside, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("setting the stale data aside: %w", err)
		}
	}
	if err := atomicfile.SyncDir(vfs.Default, aside); err != nil {
		return "", err
	}
	if err := atomicfile.SyncDir(vfs.Default, dir); err != nil {
		return "", err
	}
	if err := markResync(dir, resyncJoining); err != nil {
		return "", err
	}
	log.Warn("this member was behind the cluster's purged log: its data is set aside, and it joins again with a copy of a member's", "set_aside", aside)
	return resyncJoining, nil
}
