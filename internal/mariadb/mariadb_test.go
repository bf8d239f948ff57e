package mariadb

import (
	"strings"
	"testing"
)

// TestGaleraOptions: node i's options name the whole cluster, its own
// addresses and ports, and render as option-file lines, the provider
// options (separated by semicolons) quoted.
func TestGaleraOptions(t *testing.T) {
	nodes := []Node{
		{Name: "g1", Host: "10.0.0.1", GComm: 4567, IST: 4568, SST: 4444},
		{Name: "g2", Host: "10.0.0.2", GComm: 4567, IST: 4568, SST: 4444},
	}
	var lines []string
	for _, o := range GaleraOptions("c", 1, nodes, "/lib/galera.so", "64M") {
		lines = append(lines, o.Line())
	}
	got := strings.Join(lines, "\n")
	want := `wsrep_on=ON
wsrep_provider=/lib/galera.so
wsrep_cluster_name=c
wsrep_cluster_address=gcomm://10.0.0.1:4567,10.0.0.2:4567
wsrep_node_name=g2
wsrep_node_address=10.0.0.2:4567
wsrep_provider_options="base_host=10.0.0.2;base_port=4567;gmcast.listen_addr=tcp://10.0.0.2:4567;ist.recv_addr=10.0.0.2:4568;gcache.size=64M"
wsrep_sst_method=mariabackup
wsrep_sst_auth=root:
wsrep_sst_receive_address=10.0.0.2:4444
innodb_autoinc_lock_mode=2`
	if got != want {
		t.Fatalf("options:\n%s\nwant:\n%s", got, want)
	}
}
