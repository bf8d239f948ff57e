package server

import (
	"strings"
	"testing"
)

func TestClusterMembers(t *testing.T) {
	for _, tc := range []struct {
		addr, node string
		self       uint64
		err        string
	}{
		{"gcomm://127.0.0.1:1,127.0.0.2:2,localhost:3", "127.0.0.2:2", 2, ""},
		{"gcomm://127.0.0.1:1, 127.0.0.1:2 ,[::1]:3", "[::1]:3", 3, ""},
		{"127.0.0.1:1,127.0.0.1:2", "127.0.0.1:1", 0, "must start with gcomm://"},
		{"gcomm://127.0.0.1:1,127.0.0.1:2", "127.0.0.1:3", 0, "is not one of the members"},
		{"gcomm://127.0.0.1:1,127.0.0.1:1", "127.0.0.1:1", 0, "listed twice"},
		{"gcomm://127.0.0.1,127.0.0.1:2", "127.0.0.1:2", 0, "needs a host and a port"},
		{"gcomm://", "127.0.0.1:1", 0, "needs a host and a port"},
		{"gcomm://10.0.0.1:1,127.0.0.1:2", "127.0.0.1:2", 0, "not on a loopback address"},
	} {
		addrs, self, err := ClusterConfig{Address: tc.addr, NodeAddress: tc.node}.members()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s / %s: error %v, want %q", tc.addr, tc.node, err, tc.err)
			}
			continue
		}
		if err != nil || self != tc.self || addrs[self] != tc.node {
			t.Errorf("%s / %s: %v %d %v", tc.addr, tc.node, addrs, self, err)
		}
	}
}

func TestClusterUUID(t *testing.T) {
	a, b := ClusterUUID("one"), ClusterUUID("two")
	if a != ClusterUUID("one") || a == b {
		t.Fatal("the cluster UUID must be a function of the name")
	}
	if s := a.String(); s[14] != '5' {
		t.Fatalf("%s is not laid out as a version 5 UUID", s)
	}
}
