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
		// Not listed: a member joining a running cluster.
		{"gcomm://127.0.0.1:1,127.0.0.1:2", "127.0.0.1:3", 0, ""},
		{"gcomm://127.0.0.1:1,127.0.0.1:2", "127.0.0.1", 0, "needs a host and a port"},
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
		if err != nil || self != tc.self || self != 0 && addrs[self] != tc.node {
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

// A Galera configuration file moves over: the options Lockstep honours
// take their Galera meaning, and those it cannot are refused by name.
func TestGaleraConfigFile(t *testing.T) {
	c := Defaults()
	err := c.applyFileBytes("galera.cnf", []byte(`[galera]
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=prod
wsrep_cluster_address=gcomm://127.0.0.1:4567,127.0.0.1:4568,127.0.0.1:4569
wsrep_node_address=127.0.0.1:4568
wsrep_node_name=db2
wsrep_applier_threads=16
wsrep_provider_options="gcs.fc_limit=64; gcs.fc_factor=0.8"
`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Clustered() || c.Cluster.Name != "prod" || c.Cluster.NodeName != "db2" || c.Cluster.ApplierThreads != 16 {
		t.Fatalf("%+v", c.Cluster)
	}
	if fc := c.Cluster.flowConfig(); fc.Limit != 64 || fc.Factor != 0.8 {
		t.Fatalf("flow control %+v", fc)
	}
	c = Defaults()
	if err := c.applyFileBytes("g.cnf", []byte("[galera]\nwsrep_provider=none\nwsrep_cluster_address=gcomm://127.0.0.1:1\n")); err != nil || c.Clustered() {
		t.Fatalf("wsrep_provider=none: clustered %v, %v", c.Clustered(), err)
	}
	for _, line := range []string{"wsrep_slave_threads=0", "wsrep_sst_method=rsync", "wsrep_provider_options=gcs.fc_limit=0", "wsrep_provider_options=gcs.fc_master_slave=YES"} {
		c := Defaults()
		err := c.applyFileBytes("g.cnf", []byte("[galera]\n"+line+"\n"))
		name := strings.SplitN(line, "=", 2)[0]
		if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), "-", "_"), name) {
			t.Errorf("%s: %v, want a refusal naming it", line, err)
		}
	}
}

func TestSyncKind(t *testing.T) {
	for q, want := range map[string]int64{
		"SELECT 1":                       syncRead,
		"  (SELECT 1)":                   syncRead,
		"begin":                          syncRead,
		"UPDATE t SET v = 1":             syncUpdate,
		"delete from t":                  syncUpdate,
		"INSERT INTO t VALUES (1)":       syncInsert,
		"SHOW TABLES":                    syncShow,
		"CREATE TABLE d.t (id INT)":      syncDDL,
		"alter table t add column c int": syncDDL,
		"DROP DATABASE d":                syncDDL,
		"TRUNCATE t":                     syncDDL,
		"SET autocommit = 0":             0,
		"COMMIT":                         0,
	} {
		if got := syncKind(q); got != want {
			t.Errorf("syncKind(%q) = %d, want %d", q, got, want)
		}
	}
}
