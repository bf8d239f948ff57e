package workload

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/internal/launch"
	"github.com/lockstepdb/lockstep/internal/mariadb"
)

// Binary is the server program a run starts and injects faults into:
// Lockstep (this binary, or another build of it), or MariaDB's mariadbd,
// so that the same workloads under the same faults can be compared.
//
// A MariaDB server is started the way a careful operator runs one: its
// data directory made by mariadb-install-db (package mariadb; root with
// an empty password, reached over TCP from 127.0.0.1, which MariaDB
// resolves to localhost), durable (the binary log on, sync_binlog=1,
// innodb_flush_log_at_trx_commit=1, ROW format), its options, and only
// those, in an option file of its own. Cluster members are a Galera
// cluster through Provider (mariadb.GaleraOptions): the first member
// bootstraps it, the others join by state transfer, and a member started
// again after a fault rejoins by incremental state transfer or a full
// one.
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
	if err := mariadb.CanInstall(path); err != nil {
		return Binary{}, err
	}
	return Binary{Path: path, MariaDB: true, Provider: provider}, nil
}

// serverArgs are the options of a server listening on 127.0.0.1:port
// (of its network namespace) with its data in data and its other files
// (socket, pid file) in dir, before the caller's extra options.
func (b Binary) serverArgs(dir, data string, port int) []string {
	if !b.MariaDB {
		return launch.Lockstep{DataDir: data, Port: port}.Args()
	}
	return []string{"--datadir=" + data,
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--log-bin=binlog", "--binlog-format=ROW", "--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1",
		"--innodb-buffer-pool-size=256M", "--max-connections=500", "--performance-schema=OFF"}
}

// memberArgs are the options that make a server member i of the cluster
// whose members are ms (after serverArgs).
func (b Binary) memberArgs(i int, ms []mariadb.Node) ([]string, error) {
	if !b.MariaDB {
		addrs := make([]string, len(ms))
		for j, m := range ms {
			addrs[j] = m.Addr()
		}
		return []string{"--server-id=" + strconv.Itoa(i+1),
			"--wsrep-cluster-address=gcomm://" + strings.Join(addrs, ","), "--wsrep-node-address=" + ms[i].Addr(),
			"--wsrep-cluster-name=workload"}, nil
	}
	if b.Provider == "" {
		return nil, errors.New("a MariaDB cluster needs Galera's provider library (galera-4's libgalera_smm.so)")
	}
	if err := mariadb.GaleraInstalled(b.Provider); err != nil {
		return nil, err
	}
	args := []string{"--server-id=" + strconv.Itoa(i+1)}
	for _, o := range mariadb.GaleraOptions("workload", i, ms, b.Provider, "256M") {
		args = append(args, "--"+o.Name+"="+o.Value)
	}
	return args, nil
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
		if !ok {
			cnf.WriteString(name + "\n")
			continue
		}
		cnf.WriteString(mariadb.Option{Name: name, Value: value}.Line() + "\n")
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
	return mariadb.InstallDB(b.Path, data, "root")
}
