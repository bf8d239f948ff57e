package cluster

import (
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	"go.etcd.io/raft/v3/tracker"
)

// TestHandOffTarget: an elected witness hands leadership only to a data
// member it heard from lately, the one with the most of its log; never to
// one that is down, whatever its log (a transfer to it would stall every
// write for an election timeout).
func TestHandOffTarget(t *testing.T) {
	status := func(prs map[uint64]tracker.Progress) raft.Status {
		var st raft.Status
		st.Config.Voters[0] = quorum.MajorityConfig{}
		for id := range prs {
			st.Config.Voters[0][id] = struct{}{}
		}
		st.Progress = prs
		return st
	}
	for _, tc := range []struct {
		name string
		prs  map[uint64]tracker.Progress
		want uint64
	}{
		{"the active member with the longer log", map[uint64]tracker.Progress{
			1: {Match: 90, RecentActive: true}, 2: {Match: 100, RecentActive: true}, 3: {Match: 100, RecentActive: true}}, 2},
		{"a member that is down, however long its log", map[uint64]tracker.Progress{
			1: {Match: 90, RecentActive: true}, 2: {Match: 120, RecentActive: false}, 3: {Match: 120, RecentActive: true}}, 1},
		{"equal logs: the lowest id, every time", map[uint64]tracker.Progress{
			1: {Match: 100, RecentActive: true}, 2: {Match: 100, RecentActive: true}, 3: {Match: 100, RecentActive: true}}, 1},
		{"none heard from yet", map[uint64]tracker.Progress{
			1: {Match: 100}, 2: {Match: 100}, 3: {Match: 100, RecentActive: true}}, 0},
	} {
		for range 20 { // map order must not matter
			if got := handOffTarget(status(tc.prs), 3); got != tc.want {
				t.Fatalf("%s: handed to %d, want %d", tc.name, got, tc.want)
			}
		}
	}
}
