package workload

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Binary is the server program a run starts and injects faults into:
// Lockstep (this binary, or another build of it), or MariaDB's mariadbd,
// so that the same workloads under the same faults can be compared.
//
// A MariaDB server is started the way a careful operator runs one: its
// data directory made by mariadb-install-db (root with an empty password,
// reached over TCP from 127.0.0.1, which MariaDB resolves to localhost),
// durable (the binary log on, sync_binlog=1,
// innodb_flush_log_at_trx_commit=1, ROW format), and no option file read
// but the options given. Cluster members are a Galera cluster through
// Provider (galera-4's libgalera_smm.so): the first member bootstraps it,
// the others join by state transfer (mariabackup over socat), and a member started again
// after a fault rejoins by incremental state transfer or a full one.
type Binary struct {
	Path     string
	MariaDB  bool
	Provider string // Galera's library, for MariaDB cluster members
}

// Lockstep is the Binary of a Lockstep server at path.
func Lockstep(path string) Binary { return Binary{Path: path} }

// MariaDB is the Binary of MariaDB's mariadbd at path, with Galera's
// provider library for clusters ("": no clusters).
func MariaDB(path, provider string) (Binary, error) {
	if _, err := exec.LookPath(path); err != nil {
		return Binary{}, fmt.Errorf("mariadbd: %w", err)
	}
	if _, err := installDB(path); err != nil {
		return Binary{}, err
	}
	return Binary{Path: path, MariaDB: true, Provider: provider}, nil
}

// installDB finds mariadb-install-db: on the PATH, or beside mariadbd
// (bin/ next to its sbin/).
func installDB(mariadbd string) (string, error) {
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

// serverArgs are the options of a server listening on 127.0.0.1:port
// (of its network namespace) with its data in data and its other files
// (socket, pid file) in dir, before the caller's extra options.
func (b Binary) serverArgs(dir, data string, port int) []string {
	if !b.MariaDB {
		return []string{"serve", "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port),
			"--http-port=0", "--datadir=" + data}
	}
	return []string{"--datadir=" + data,
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--log-bin=binlog", "--binlog-format=ROW", "--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1",
		"--innodb-buffer-pool-size=256M", "--max-connections=500", "--performance-schema=OFF"}
}

// member is the address plan of one cluster member: where the others
// reach it (host:port), and for Galera the ports of its incremental and
// full state transfers.
type member struct {
	host               string
	port, ist, sstPort int
}

func (m member) addr() string { return m.host + ":" + strconv.Itoa(m.port) }

// memberArgs are the options that make a server member i of the cluster
// whose members are ms (after serverArgs).
func (b Binary) memberArgs(i int, ms []member) ([]string, error) {
	addrs := make([]string, len(ms))
	for j, m := range ms {
		addrs[j] = m.addr()
	}
	me := ms[i]
	if !b.MariaDB {
		return []string{"--server-id=" + strconv.Itoa(i+1),
			"--wsrep-cluster-address=gcomm://" + strings.Join(addrs, ","), "--wsrep-node-address=" + me.addr(),
			"--wsrep-cluster-name=workload"}, nil
	}
	if b.Provider == "" {
		return nil, errors.New("a MariaDB cluster needs Galera's provider library (galera-4's libgalera_smm.so)")
	}
	if _, err := os.Stat(b.Provider); err != nil {
		return nil, fmt.Errorf("the Galera provider: %w", err)
	}
	for _, tool := range []string{"mariabackup", "socat"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("state transfer between Galera nodes is by mariabackup over socat here: %s is not installed", tool)
		}
	}
	opts := fmt.Sprintf("base_host=%s;base_port=%d;gmcast.listen_addr=tcp://%s;ist.recv_addr=%s:%d;gcache.size=256M",
		me.host, me.port, me.addr(), me.host, me.ist)
	return []string{"--server-id=" + strconv.Itoa(i+1), "--wsrep-on=ON", "--wsrep-provider=" + b.Provider,
		"--wsrep-cluster-name=workload", "--wsrep-cluster-address=gcomm://" + strings.Join(addrs, ","),
		"--wsrep-node-name=member" + strconv.Itoa(i+1), "--wsrep-node-address=" + me.addr(),
		"--wsrep-provider-options=" + opts, "--wsrep-sst-method=mariabackup", "--wsrep-sst-auth=root:",
		"--wsrep-sst-receive-address=" + me.host + ":" + strconv.Itoa(me.sstPort),
		"--innodb-autoinc-lock-mode=2"}, nil
}

// bootstrapArgs are the options of the first start of the cluster's
// first member: a Galera cluster is made by one member that starts it
// (Lockstep's members find each other).
func (b Binary) bootstrapArgs() []string {
	if b.MariaDB {
		return []string{"--wsrep-new-cluster"}
	}
	return nil
}

// command is the argument list that starts the server with the given
// options. MariaDB's options go into an option file in dir, which
// mariadbd is pointed at: Galera's state-transfer scripts read the
// server's settings from it.
func (b Binary) command(dir string, opts []string) ([]string, error) {
	if !b.MariaDB {
		return opts, nil
	}
	var cnf strings.Builder
	cnf.WriteString("[mariadbd]\n")
	for _, o := range opts {
		name, value, ok := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		switch {
		case !ok:
			cnf.WriteString(name + "\n")
		case strings.ContainsAny(value, "; \t#\""):
			cnf.WriteString(name + "=" + strconv.Quote(value) + "\n")
		default:
			cnf.WriteString(name + "=" + value + "\n")
		}
	}
	path := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(path, []byte(cnf.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{"--defaults-file=" + path, "--user=root"}, nil
}

// prepare makes data ready for the server's start: MariaDB needs its
// system tables in an empty data directory (at the first start, and after
// a wipe); Lockstep makes its own.
func (b Binary) prepare(dir, data string) error {
	if !b.MariaDB {
		return nil
	}
	if _, err := os.Stat(filepath.Join(data, "mysql")); err == nil {
		return nil
	}
	tool, err := installDB(b.Path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	out, err := exec.Command(tool, "--no-defaults", "--user=root", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		_ = os.WriteFile(filepath.Join(dir, "install.log"), out, 0o644)
		return fmt.Errorf("mariadb-install-db: %v (see %s)", err, filepath.Join(dir, "install.log"))
	}
	return nil
}
