package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver

	"github.com/lockstepdb/lockstep/internal/launch"
	"github.com/lockstepdb/lockstep/internal/mariadb"
)

// server is a database process this package started on loopback.
type server interface {
	// Label names the server in results ("lockstep", "mariadb").
	Label() string
	Port() int
	PID() int
	DB(dbname string) (*sql.DB, error)
	Stop() error
	// DataPaths are its data (not its logs), to remove once it stopped.
	DataPaths() []string
}

// stopGrace is how long a server may take to stop before it is killed.
const stopGrace = 60 * time.Second

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// lockstepServer is a `lockstep serve` process.
type lockstepServer struct {
	p        *launch.Process
	port     int
	httpPort int
	dir      string
}

// startLockstep starts binary serve with a fresh data directory under dir,
// on port (and httpPort for its HTTP endpoint), with the given extra
// options (mysqld-style, --name=value).
func startLockstep(binary, dir string, serverID, port, httpPort int, opts ...string) (*lockstepServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := launch.Lockstep{DataDir: filepath.Join(dir, "data"), Port: port, HTTPPort: httpPort, ServerID: serverID, Extra: opts}.Args()
	p, err := launch.Start(exec.Command(binary, args...), filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	s := &lockstepServer{p: p, port: port, httpPort: httpPort, dir: dir}
	if err := p.WaitAnswers(s.dsn(""), 60*time.Second); err != nil {
		p.Stop(stopGrace)
		return nil, err
	}
	return s, nil
}

func (s *lockstepServer) Label() string { return "lockstep" }
func (s *lockstepServer) Port() int     { return s.port }
func (s *lockstepServer) PID() int      { return s.p.Cmd.Process.Pid }
func (s *lockstepServer) Stop() error   { s.p.Stop(stopGrace); return nil }
func (s *lockstepServer) DataPaths() []string {
	return []string{filepath.Join(s.dir, "data")}
}

// dsn: interpolateParams sends each statement as text in one round trip,
// as sysbench --db-ps-mode=disable does (the driver otherwise prepares,
// executes and closes a statement per query).
func (s *lockstepServer) dsn(dbname string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?interpolateParams=true", s.port, dbname)
}
func (s *lockstepServer) DB(dbname string) (*sql.DB, error) { return sql.Open("mysql", s.dsn(dbname)) }

// mariadbServer is a mariadbd process with its own data directory.
type mariadbServer struct {
	p    *launch.Process
	port int
	dir  string
}

// mariadbInstalled reports whether mariadbd and mariadb-install-db are on PATH.
func mariadbInstalled() bool {
	for _, b := range []string{"mariadbd", "mariadb-install-db"} {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	return true
}

// startMariaDB initialises a data directory under dir and starts mariadbd
// with settings comparable to Lockstep's (ROW binlog, GTIDs, a buffer pool
// that holds the data) plus extra my.cnf lines.
func startMariaDB(dir string, serverID, port int, extra ...string) (*mariadbServer, error) {
	return startMariaDBWith(dir, serverID, port, nil, extra...)
}

// startMariaDBWith is startMariaDB with extra mariadbd arguments (a
// Galera cluster's first node: --wsrep-new-cluster).
func startMariaDBWith(dir string, serverID, port int, args []string, extra ...string) (*mariadbServer, error) {
	if !mariadbInstalled() {
		return nil, errors.New("mariadbd is not installed (apt-get install mariadb-server)")
	}
	data := filepath.Join(dir, "data")
	if err := mariadb.InstallDB("mariadbd", data, currentUser()); err != nil {
		return nil, err
	}
	cnf := fmt.Sprintf(`[mariadbd]
user=%s
datadir=%s
socket=%s
pid-file=%s
log-error=%s
port=%d
bind-address=127.0.0.1
skip-name-resolve
server-id=%d
log-bin=%s
log-slave-updates=ON
binlog_format=ROW
max_connections=500
performance_schema=OFF
innodb_buffer_pool_size=512M
innodb_log_file_size=512M
innodb_log_buffer_size=32M
innodb_io_capacity=2000
character-set-server=utf8mb4
%s
`, currentUser(), data, filepath.Join(dir, "mysqld.sock"), filepath.Join(dir, "mariadbd.pid"), filepath.Join(dir, "error.log"),
		port, serverID, filepath.Join(dir, "binlog"), strings.Join(extra, "\n"))
	cnfPath := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnfPath, []byte(cnf), 0o644); err != nil {
		return nil, err
	}
	p, err := launch.Start(exec.Command("mariadbd", append([]string{"--defaults-file=" + cnfPath}, args...)...), filepath.Join(dir, "stdout.log"))
	if err != nil {
		return nil, err
	}
	s := &mariadbServer{p: p, port: port, dir: dir}
	if err := p.WaitAnswers(s.dsn(""), 120*time.Second); err != nil {
		p.Stop(stopGrace)
		return nil, fmt.Errorf("%w\nerror.log:\n%s", err, tail(filepath.Join(dir, "error.log"), 20))
	}
	return s, nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}

func (s *mariadbServer) Label() string { return "mariadb" }
func (s *mariadbServer) Port() int     { return s.port }
func (s *mariadbServer) PID() int      { return s.p.Cmd.Process.Pid }
func (s *mariadbServer) Stop() error   { s.p.Stop(stopGrace); return nil }
func (s *mariadbServer) DataPaths() []string {
	paths := []string{filepath.Join(s.dir, "data")}
	binlogs, _ := filepath.Glob(filepath.Join(s.dir, "binlog.*"))
	return append(paths, binlogs...)
}
func (s *mariadbServer) dsn(dbname string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?interpolateParams=true", s.port, dbname)
}
func (s *mariadbServer) DB(dbname string) (*sql.DB, error) { return sql.Open("mysql", s.dsn(dbname)) }

// globalStatus reads SHOW GLOBAL STATUS into numbers (non-numeric values
// are left out). Names are as the server spells them.
func globalStatus(ctx context.Context, db *sql.DB) (map[string]float64, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var name, value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		if v, err := strconv.ParseFloat(value.String, 64); err == nil {
			out[strings.ToLower(name.String)] = v
		}
	}
	return out, rows.Err()
}

// cpuOf is the user+system CPU time of s's processes (every node of a
// cluster).
func cpuOf(s server) float64 {
	if g, ok := s.(interface{ PIDs() []int }); ok {
		var t float64
		for _, pid := range g.PIDs() {
			t += cpuSeconds(pid)
		}
		return t
	}
	return cpuSeconds(s.PID())
}

// cpuSeconds is a process's user+system CPU time from /proc (0 if unknown).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after ") ".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// replicaStatus is the first row of SHOW SLAVE STATUS (which Lockstep and
// MariaDB both answer) by column name; empty when the server is no replica.
func replicaStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if !rows.Next() {
		return out, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out, rows.Err()
}

// replicaBroken says why a replica cannot catch up: its SQL thread stopped
// with an error, or its I/O thread has failed to connect for longer than
// the source's retry could explain.
func replicaBroken(st map[string]string, ioFailingFor time.Duration) error {
	if n := st["Last_SQL_Errno"]; n != "" && n != "0" {
		return fmt.Errorf("SQL thread error %s: %s", n, st["Last_SQL_Error"])
	}
	if st["Slave_SQL_Running"] == "No" {
		return fmt.Errorf("SQL thread is not running")
	}
	if n := st["Last_IO_Errno"]; n != "" && n != "0" && ioFailingFor > time.Minute {
		return fmt.Errorf("I/O thread error %s for %v: %s", n, ioFailingFor.Round(time.Second), st["Last_IO_Error"])
	}
	return nil
}
