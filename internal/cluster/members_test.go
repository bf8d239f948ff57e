package cluster

import "testing"

// TestMembersAnnounce: every node hears every other's announcement (its
// service facts and counters); a stopped node stops being reachable; an
// announcement that is too large, does not decode or names an unknown
// node is dropped (checked once node 3 is stopped, so that none of its
// own arrives meanwhile).
func TestMembersAnnounce(t *testing.T) {
	nodes := startCluster(t, 3)
	waitFor(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	commitOn(t, nodes[:1], 2, func(i int) uint64 { return uint64(100 + i) })
	waitFor(t, "every node to hear every other with node 1's commits", func() bool {
		for _, r := range nodes {
			ms := r.d.Members()
			if len(ms) != 3 {
				return false
			}
			for _, m := range ms {
				if !r.d.Reachable(m) || !m.Primary || (m.ID == 1 && m.Committed != 2) {
					return false
				}
			}
		}
		return true
	})
	self := nodes[1].d.Self()
	if !self.Self || self.ID != 2 || self.Addr == "" {
		t.Fatalf("Self: %+v", self)
	}

	nodes[2].stop()
	waitFor(t, "node 3 to be unreachable from node 1", func() bool {
		return !nodes[0].d.Reachable(nodes[0].d.Members()[2])
	})

	// Bad announcements are dropped: none of these is kept.
	big := []byte(`{"committed":77,"service":{"x":"`)
	for len(big) <= maxAnnouncement {
		big = append(big, 'x')
	}
	big = append(big, `"}}`...)
	nodes[0].d.heard(3, big)
	nodes[0].d.heard(3, []byte(`{"committed":77`))
	nodes[0].d.heard(9, []byte(`{"committed":77}`))
	for _, m := range nodes[0].d.Members() {
		if m.Committed == 77 || m.ID == 9 {
			t.Fatalf("a bad announcement was kept: %+v", m)
		}
	}
	nodes[0].d.heard(3, []byte(`{"committed":77}`))
	if m := nodes[0].d.Members()[2]; m.Committed != 77 {
		t.Fatalf("a good announcement was not kept: %+v", m)
	} else if !nodes[0].d.Reachable(m) {
		t.Fatalf("a node just heard from is unreachable: %+v", m)
	}

}
