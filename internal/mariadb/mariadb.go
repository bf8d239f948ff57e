// Package mariadb says once how Lockstep's comparison tools set up
// MariaDB: a data directory made by mariadb-install-db, what a Galera
// cluster needs installed, and the options that make a server a node of
// a Galera cluster. The benchmarks (internal/bench) and the fault
// campaigns (internal/workload) start and watch their servers their own
// way; what a MariaDB or Galera server is, is here.
package mariadb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// GaleraProvider is Debian's galera-4 library.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// InstallDB makes dataDir a MariaDB data directory with mariadb-install-db
// (root with an empty password, no test database), the server to run as
// user. The tool is looked for on the PATH, then beside mariadbd (its
// bin/ next to the server's sbin/). The tool's output comes back with
// the error.
func InstallDB(mariadbd, dataDir, user string) error {
	tool, err := installDBTool(mariadbd)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	out, err := exec.Command(tool, "--no-defaults", "--user="+user, "--datadir="+dataDir,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	return nil
}

// installDBTool finds mariadb-install-db.
func installDBTool(mariadbd string) (string, error) {
	if p, err := exec.LookPath("mariadb-install-db"); err == nil {
		return p, nil
	}
	dir := filepath.Dir(mariadbd)
	for _, p := range []string{filepath.Join(dir, "mariadb-install-db"), filepath.Join(dir, "..", "bin", "mariadb-install-db"),
		filepath.Join(dir, "..", "scripts", "mariadb-install-db")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mariadb-install-db is neither on the PATH nor beside mariadbd")
}

// CanInstall reports why InstallDB cannot run for mariadbd, or nil.
func CanInstall(mariadbd string) error {
	_, err := installDBTool(mariadbd)
	return err
}

// GaleraInstalled reports why a Galera cluster cannot be started here
// with provider (its state transfer is by mariabackup over socat), or
// nil.
func GaleraInstalled(provider string) error {
	if _, err := os.Stat(provider); err != nil {
		return fmt.Errorf("the Galera provider library is not installed (apt-get install galera-4): %w", err)
	}
	for _, b := range []string{"mariabackup", "socat"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("a Galera state transfer needs %s (apt-get install mariadb-backup socat)", b)
		}
	}
	return nil
}

// Node is where one Galera node is reached: its name, the host the other
// nodes reach it at, and its group communication, incremental and full
// state transfer ports.
type Node struct {
	Name            string
	Host            string
	GComm, IST, SST int
}

// Addr is where the other nodes reach n's group communication.
func (n Node) Addr() string { return n.Host + ":" + strconv.Itoa(n.GComm) }

// Option is one option of a server's option file.
type Option struct{ Name, Value string }

// Line is the option as an option-file line: a value with a separator,
// blank or quote in it is quoted.
func (o Option) Line() string {
	if strings.ContainsAny(o.Value, "; \t#\"") {
		return o.Name + "=" + strconv.Quote(o.Value)
	}
	return o.Name + "=" + o.Value
}

// GaleraOptions are the options that make a server node i of the Galera
// cluster named cluster whose nodes are nodes, through provider, with a
// write-set cache of gcache (e.g. "512M"); state transfers are by
// mariabackup (as root over the socket). The first node starts the
// cluster when given --wsrep-new-cluster at its first start.
func GaleraOptions(cluster string, i int, nodes []Node, provider, gcache string) []Option {
	addrs := make([]string, len(nodes))
	for j, n := range nodes {
		addrs[j] = n.Addr()
	}
	me := nodes[i]
	return []Option{
		{"wsrep_on", "ON"}, {"wsrep_provider", provider}, {"wsrep_cluster_name", cluster},
		{"wsrep_cluster_address", "gcomm://" + strings.Join(addrs, ",")},
		{"wsrep_node_name", me.Name}, {"wsrep_node_address", me.Addr()},
		{"wsrep_provider_options", fmt.Sprintf("base_host=%s;base_port=%d;gmcast.listen_addr=tcp://%s;ist.recv_addr=%s:%d;gcache.size=%s",
			me.Host, me.GComm, me.Addr(), me.Host, me.IST, gcache)},
		{"wsrep_sst_method", "mariabackup"}, {"wsrep_sst_auth", "root:"},
		{"wsrep_sst_receive_address", me.Host + ":" + strconv.Itoa(me.SST)},
		{"innodb_autoinc_lock_mode", "2"},
	}
}
