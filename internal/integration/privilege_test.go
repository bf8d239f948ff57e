package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	mysqldrv "github.com/go-sql-driver/mysql"
)

// as opens a connection pool for an account.
func (s *server) as(t *testing.T, user, password string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/", user, password, s.port))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one session: SET gtid_next, BEGIN and COMMIT share it
	t.Cleanup(func() { db.Close() })
	return db
}

func errNumber(err error) uint16 {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// TestPrivileges logs in as accounts without the privileges each statement
// and protocol command needs, expecting MySQL's errors, then as accounts
// that hold them (directly or through a role), expecting success. It
// covers what Lockstep answers itself (binlog administration, replica
// control and status, gtid_next, replication commands) and what
// go-mysql-server left unchecked (SET GLOBAL, LOAD_FILE, INTO OUTFILE and
// DUMPFILE, secure_file_priv).
func TestPrivileges(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--skip-replica-start")
	root := s.db("")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY)",
		"CREATE USER low@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, INSERT ON app.* TO low@'%'",
		"CREATE USER monitor@'%' IDENTIFIED BY 'pw'",
		"GRANT REPLICATION CLIENT, PROCESS ON *.* TO monitor@'%'",
		"CREATE USER ops@'%' IDENTIFIED BY 'pw'",
		"GRANT RELOAD, FILE, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO ops@'%'",
		"CREATE ROLE replicator",
		"GRANT REPLICATION_SLAVE_ADMIN ON *.* TO replicator",
		"GRANT replicator TO ops@'%'",
		"CREATE USER boss@'%' IDENTIFIED BY 'pw'",
		"GRANT SUPER ON *.* TO boss@'%'",
	} {
		mustExec(t, root, q)
	}
	secure := filepath.Join(dir, "data", "secure-files")
	if st, err := os.Stat(secure); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("secure_file_priv folder: %v %v", st, err)
	}
	var sfp, bind string
	if err := root.QueryRow("SELECT @@secure_file_priv, @@bind_address").Scan(&sfp, &bind); err != nil || sfp != secure || bind != "127.0.0.1" {
		t.Fatalf("secure_file_priv = %q, bind_address = %q (%v), want %s and 127.0.0.1", sfp, bind, err, secure)
	}
	var uuid string
	if err := root.QueryRow("SELECT @@server_uuid").Scan(&uuid); err != nil {
		t.Fatal(err)
	}
	stmts := []struct {
		q    string
		want uint16 // error for low and monitor
	}{
		{"SET GLOBAL read_only = ON", 1227},
		{"SET GLOBAL sync_binlog = 0", 1227},
		{"SET GLOBAL innodb_flush_log_at_trx_commit = 0", 1227},
		{"SELECT LOAD_FILE('" + filepath.Join(dir, "data", "mysql.db") + "')", 1227},
		{"SELECT 1 INTO OUTFILE '" + filepath.Join(secure, "low.txt") + "'", 1227},
		{"SELECT 'x' INTO DUMPFILE '" + filepath.Join(secure, "low.bin") + "'", 1227},
		{"FLUSH BINARY LOGS", 1227},
		{"PURGE BINARY LOGS TO 'binlog.000001'", 1227},
		{"PURGE BINARY LOGS BEFORE '2030-01-01 00:00:00'", 1227},
		{"SHOW REPLICAS", 1227},
		{"SHOW SLAVE HOSTS", 1227},
		{"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=1", 1227},
		{"START REPLICA", 1227},
		{"STOP REPLICA", 1227},
		{"RESET REPLICA", 1227},
		{"SET gtid_next = '" + uuid + ":1000'", 1227},
		{"CREATE USER x@'%'", 1227},
		{"DROP USER root@localhost", 1227},
		// Without GRANT OPTION: MySQL's error for the level granted at.
		{"GRANT SELECT ON app.* TO monitor@'%'", 1044},
		{"REVOKE SELECT ON app.* FROM low@'%'", 1044},
		{"GRANT SELECT ON app.t TO monitor@'%'", 1142},
		{"GRANT SELECT ON *.* TO monitor@'%'", 1227},
		// INSERT and DELETE on mysql.component, as in MySQL.
		{"INSTALL COMPONENT 'file://component_validate_password'", 1142},
		{"UNINSTALL COMPONENT 'file://component_validate_password'", 1142},
	}
	low := s.as(t, "low", "pw")
	monitor := s.as(t, "monitor", "pw")
	for _, c := range stmts {
		for name, db := range map[string]*sql.DB{"low": low, "monitor": monitor} {
			_, err := db.Exec(c.q)
			if errNumber(err) != c.want {
				t.Errorf("%s: %s: got %v, want error %d", name, c.q, err, c.want)
			}
		}
	}
	// ALTER USER: one's own account only, not another host's account of
	// the same name, without CREATE USER.
	mustExec(t, root, "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "CREATE USER app@'10.9.8.7' IDENTIFIED BY 'other'")
	app := s.as(t, "app", "pw")
	if _, err := app.Exec("ALTER USER app@'10.9.8.7' IDENTIFIED BY 'mine'"); errNumber(err) != 1227 {
		t.Errorf("app@%%: ALTER USER app@'10.9.8.7': %v, want 1227", err)
	}
	if _, err := app.Exec("ALTER USER app@'%' IDENTIFIED BY 'pw2'"); err != nil {
		t.Errorf("app@%%: ALTER USER of its own account: %v", err)
	}
	// Account options go-mysql-server would ignore are refused; their
	// defaults are accepted.
	for _, q := range []string{
		"CREATE USER l1@'%' ACCOUNT LOCK",
		"CREATE USER l2@'%' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 2",
		"CREATE USER l3@'%' WITH MAX_USER_CONNECTIONS 5",
		"CREATE USER l4@'%' PASSWORD EXPIRE INTERVAL 90 DAY",
	} {
		if _, err := root.Exec(q); errNumber(err) != 1235 {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	mustExec(t, root, "CREATE USER l5@'%' IDENTIFIED BY 'p' PASSWORD EXPIRE DEFAULT ACCOUNT UNLOCK")

	// A table privilege missing is 1142, on the fast path and off it.
	for _, q := range []string{"UPDATE app.t SET id = 2 WHERE id = 1", "DELETE FROM app.t", "SELECT COUNT(*) FROM app.t t1 JOIN app.t t2"} {
		_, err := monitor.Exec(q)
		if errNumber(err) != 1142 {
			t.Errorf("monitor: %s: %v, want 1142", q, err)
		}
	}
	// DROP TABLE of a missing table is 1051 for an account that may drop
	// it, and 1142 for one that may not, as for an existing table: the
	// answer does not tell it which tables exist.
	if _, err := root.Exec("DROP TABLE app.t, app.nosuch, app.nosuch2"); errNumber(err) != 1051 ||
		!strings.Contains(err.Error(), "Unknown table 'app.nosuch,app.nosuch2'") {
		t.Errorf("root: DROP TABLE of missing tables: %v, want 1051 naming both", err)
	}
	for _, q := range []string{"DROP TABLE app.nosuch", "DROP TABLE app.t"} {
		if _, err := monitor.Exec(q); errNumber(err) != 1142 {
			t.Errorf("monitor: %s: %v, want 1142", q, err)
		}
	}
	// Status is REPLICATION CLIENT's: the monitor sees it, low does not.
	if _, err := low.Exec("SHOW REPLICA STATUS"); errNumber(err) != 1227 {
		t.Errorf("low: SHOW REPLICA STATUS: %v", err)
	}
	if _, err := monitor.Exec("SHOW REPLICA STATUS"); err != nil {
		t.Errorf("monitor: SHOW REPLICA STATUS: %v", err)
	}
	// A file outside secure_file_priv is not read, even with FILE.
	var content sql.NullString
	if err := root.QueryRow("SELECT LOAD_FILE('/etc/hostname')").Scan(&content); err == nil && content.Valid {
		t.Errorf("LOAD_FILE outside secure_file_priv returned %q", content.String)
	}
	if _, err := root.Exec("SELECT 'x' INTO DUMPFILE '" + filepath.Join(dir, "outside.bin") + "'"); err == nil {
		t.Error("INTO DUMPFILE outside secure_file_priv succeeded")
	}

	// The replication protocol: registering and dumping need REPLICATION
	// SLAVE.
	for _, user := range []string{"low", "monitor"} {
		cfg := replication.BinlogSyncerConfig{ServerID: 900, Flavor: gomysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port), User: user, Password: "pw"}
		cfg.Logger = nil
		b := replication.NewBinlogSyncer(cfg)
		st, err := b.StartSync(gomysql.Position{Name: "binlog.000001", Pos: 4})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = st.GetEvent(ctx)
			cancel()
		}
		b.Close()
		if err == nil || !strings.Contains(err.Error(), "1227") && !strings.Contains(err.Error(), "REPLICATION SLAVE") {
			t.Errorf("%s: binlog dump: %v", user, err)
		}
	}

	// The same as accounts that hold each privilege: ops holds RELOAD,
	// FILE and the replication privileges, and REPLICATION_SLAVE_ADMIN
	// through a role; boss holds SUPER, which stands for the dynamic
	// privileges go-mysql-server cannot grant yet (SYSTEM_VARIABLES_ADMIN,
	// BINLOG_ADMIN, REPLICATION_APPLIER).
	ops := s.as(t, "ops", "pw")
	boss := s.as(t, "boss", "pw")
	for _, c := range []struct {
		db *sql.DB
		q  string
	}{
		{ops, "SELECT 'x' INTO DUMPFILE '" + filepath.Join(secure, "ops.bin") + "'"},
		{ops, "FLUSH BINARY LOGS"},
		{ops, "SHOW REPLICAS"},
		{ops, "SHOW REPLICA STATUS"},
		{ops, "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=1, SOURCE_USER='x'"},
		{ops, "RESET REPLICA ALL"},
		{boss, "SET GLOBAL sync_binlog = 1"},
		{boss, "PURGE BINARY LOGS BEFORE '2000-01-01 00:00:00'"},
		{boss, "SET gtid_next = '" + uuid + ":1000'"},
		{boss, "BEGIN"},
		{boss, "COMMIT"},
	} {
		if _, err := c.db.Exec(c.q); err != nil {
			t.Errorf("%s: %v", c.q, err)
		}
	}
	if err := ops.QueryRow("SELECT LOAD_FILE('" + filepath.Join(secure, "ops.bin") + "')").Scan(&content); err != nil || content.String != "x" {
		t.Errorf("ops: LOAD_FILE in secure_file_priv: %q %v", content.String, err)
	}
	// LOAD_FILE still works after max_allowed_packet is set, and returns
	// NULL for a file larger than it.
	mustExec(t, root, "SET GLOBAL max_allowed_packet = 1024")
	if err := os.WriteFile(filepath.Join(secure, "big.bin"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ops.QueryRow("SELECT LOAD_FILE('" + filepath.Join(secure, "big.bin") + "')").Scan(&content); err != nil || content.Valid {
		t.Errorf("ops: LOAD_FILE of a file over max_allowed_packet: %q %v", content.String, err)
	}
	if err := ops.QueryRow("SELECT LOAD_FILE('" + filepath.Join(secure, "ops.bin") + "')").Scan(&content); err != nil || content.String != "x" {
		t.Errorf("ops: LOAD_FILE after SET GLOBAL max_allowed_packet: %q %v", content.String, err)
	}
	// A link out of the folder is not followed.
	if err := os.Symlink(filepath.Join(dir, "data", "mysql.db"), filepath.Join(secure, "link")); err != nil {
		t.Fatal(err)
	}
	if err := ops.QueryRow("SELECT LOAD_FILE('" + filepath.Join(secure, "link") + "')").Scan(&content); err != nil || content.Valid {
		t.Errorf("ops: LOAD_FILE through a link out of secure_file_priv: %d bytes, %v", len(content.String), err)
	}
	// LOAD DATA and INTO OUTFILE neither follow a link out of the folder
	// nor take a sibling folder whose name starts with its name: 1290.
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "rows.txt"), []byte("1\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(secure, "out")); err != nil {
		t.Fatal(err)
	}
	sibling := secure + "-x"
	if err := os.MkdirAll(sibling, 0o700); err != nil {
		t.Fatal(err)
	}
	mustExec(t, root, "CREATE TABLE app.loaded (v INT)")
	mustExec(t, root, "GRANT INSERT ON app.loaded TO ops@'%'")
	for _, q := range []string{
		"LOAD DATA INFILE '" + filepath.Join(secure, "out", "rows.txt") + "' INTO TABLE app.loaded",
		"SELECT 'x' INTO OUTFILE '" + filepath.Join(secure, "out", "new.txt") + "'",
		"SELECT 'x' INTO DUMPFILE '" + filepath.Join(sibling, "new.bin") + "'",
	} {
		if _, err := ops.Exec(q); errNumber(err) != 1290 {
			t.Errorf("ops: %s: %v, want 1290", q, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("INTO OUTFILE wrote through a link out of secure_file_priv")
	}
	if err := os.WriteFile(filepath.Join(secure, "rows.txt"), []byte("1\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ops, "LOAD DATA INFILE '"+filepath.Join(secure, "rows.txt")+"' INTO TABLE app.loaded")
	var loaded int
	if err := root.QueryRow("SELECT COUNT(*) FROM app.loaded").Scan(&loaded); err != nil || loaded != 2 {
		t.Errorf("LOAD DATA inside secure_file_priv: %d rows, %v", loaded, err)
	}
	mustExec(t, root, "SET GLOBAL max_allowed_packet = 67108864")
	cfg := replication.BinlogSyncerConfig{ServerID: 901, Flavor: gomysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port), User: "ops", Password: "pw"}
	cfg.Logger = nil
	b := replication.NewBinlogSyncer(cfg)
	defer b.Close()
	st, err := b.StartSync(gomysql.Position{Name: "binlog.000001", Pos: 4})
	if err != nil {
		t.Fatalf("ops: binlog dump: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.GetEvent(ctx); err != nil {
		t.Fatalf("ops: binlog dump: %v", err)
	}
}

// TestHTTPEndpointDefaults: the profiler is off unless asked for; the
// metrics are there.
func TestHTTPEndpointDefaults(t *testing.T) {
	for _, pprof := range []bool{false, true} {
		var args []string
		if pprof {
			args = []string{"--lockstep-http-pprof=ON"}
		}
		s := startServer(t, t.TempDir(), args...)
		for path, want := range map[string]int{"/metrics": 200, "/debug/pprof/": map[bool]int{false: 404, true: 200}[pprof]} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", s.httpPort, path))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("pprof=%v: GET %s: %d, want %d", pprof, path, resp.StatusCode, want)
			}
		}
		// A request naming another host (a page that rebound its name to
		// 127.0.0.1) is refused; localhost is served.
		for host, want := range map[string]int{"attacker.example": 421, fmt.Sprintf("attacker.example:%d", s.httpPort): 421, "localhost": 200, fmt.Sprintf("[::1]:%d", s.httpPort): 200} {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/metrics", s.httpPort), nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET /metrics with Host %s: %d, want %d", host, resp.StatusCode, want)
			}
		}
		s.stop()
	}
}

// TestDroppedRootStaysDropped: the passwordless root a new server starts
// with does not come back after DROP USER and a restart.
func TestDroppedRootStaysDropped(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER admin@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT ALL ON *.* TO admin@'%' WITH GRANT OPTION")
	mustExec(t, root, "DROP USER root@localhost")
	s.stop()
	s.start()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); errNumber(err) != 1045 {
		t.Fatalf("root after DROP USER and a restart: %v, want 1045", err)
	}
	admin := s.as(t, "admin", "pw")
	if _, err := admin.Exec("CREATE DATABASE still_admin"); err != nil {
		t.Fatal(err)
	}
}

// TestMaxConnections: past max_connections a client gets 1040 (at login;
// past one more, before the handshake), except one more connection for an
// account with SUPER; closing connections makes room.
func TestMaxConnections(t *testing.T) {
	s := startServer(t, t.TempDir(), "--max-connections", "4")
	root := s.db("")
	mustExec(t, root, "CREATE USER low@'%' IDENTIFIED BY 'pw'")
	root.Close()
	// open makes one connection in a pool of its own (closing the pool
	// closes the connection).
	open := func(user, pw string) (*sql.DB, error) {
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/", user, pw, s.port))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return db, db.PingContext(ctx)
	}
	retry := func(user, pw string) (*sql.DB, error) {
		var db *sql.DB
		var err error
		for range 50 { // a closed connection leaves the count a moment later
			if db, err = open(user, pw); err == nil {
				return db, nil
			}
			db.Close()
			time.Sleep(100 * time.Millisecond)
		}
		return nil, err
	}
	var held []*sql.DB
	for i := range 4 {
		db, err := retry("low", "pw")
		if err != nil {
			t.Fatalf("connection %d of 4: %v", i+1, err)
		}
		held = append(held, db)
	}
	if _, err := open("low", "pw"); errNumber(err) != 1040 {
		t.Fatalf("a fifth connection without SUPER: %v, want 1040", err)
	}
	// The refused connection leaves the count a moment after its client
	// has the error: retry.
	admin, err := retry("root", "")
	if err != nil {
		t.Fatalf("the connection kept for SUPER: %v", err)
	}
	if _, err := open("root", ""); errNumber(err) != 1040 {
		t.Fatalf("a second connection past the limit: %v, want 1040", err)
	}
	if _, err := admin.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	// Four are open again (three of low's and root's): one of low's
	// closing makes room for another.
	admin.Close()
	held[0].Close()
	if _, err := retry("low", "pw"); err != nil {
		t.Fatalf("after one connection closed: %v", err)
	}
}

// TestPacketLimits: a command larger than max_allowed_packet gets 1153 and
// its connection ends, before the server buffers it; a client that has
// not logged in cannot send more than 64 KiB; a statement nested too deep
// gets 1436; others go on being served.
func TestPacketLimits(t *testing.T) {
	s := startServer(t, t.TempDir(), "--max-allowed-packet", "1M")
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE p")
	mustExec(t, db, "CREATE TABLE p.t (id INT PRIMARY KEY, v LONGTEXT)")
	var max int64
	if err := db.QueryRow("SELECT @@max_allowed_packet").Scan(&max); err != nil || max != 1<<20 {
		t.Fatalf("max_allowed_packet = %d, %v", max, err)
	}
	big := strings.Repeat("x", 2<<20)
	_, err := db.Exec("INSERT INTO p.t VALUES (1, '" + big + "')")
	if errNumber(err) != 1153 {
		t.Fatalf("a 2 MiB command with max_allowed_packet 1M: %v", err)
	}
	// The server ends the connection after 1153, as mysqld does; the pool
	// may hand out that connection once more, so use a new pool.
	db = s.db("")
	if _, err := db.Exec("INSERT INTO p.t VALUES (2, ?)", strings.Repeat("y", 512<<10)); err != nil {
		t.Fatalf("a 512 KiB command: %v", err)
	}
	// Before login: a 1 MiB "handshake response" is refused.
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	greeting := make([]byte, 4096)
	if _, err := c.Read(greeting); err != nil {
		t.Fatal(err)
	}
	n := 1 << 20
	pkt := append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1}, make([]byte, n)...)
	c.Write(pkt)
	buf := make([]byte, 256)
	for {
		if _, err := c.Read(buf); err != nil {
			break // the server closed it
		}
	}
	// An expression bomb is refused at once (1436) instead of holding a
	// CPU for minutes.
	if _, err := db.Exec("SELECT 1" + strings.Repeat("+1", 20000)); errNumber(err) != 1436 {
		t.Fatalf("SELECT 1+1+... (20,000 terms): %v, want 1436", err)
	}
	// Parameters sent in pieces (COM_STMT_SEND_LONG_DATA: the driver sends
	// an argument longer than half its packet size so) count together: 512
	// KiB in 64 KiB pieces passes, 3 MiB is refused before it is all kept.
	pieces := func() *sql.DB {
		p, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?maxAllowedPacket=65536", s.port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	if _, err := pieces().Exec("INSERT INTO p.t VALUES (3, ?)", strings.Repeat("z", 512<<10)); err != nil {
		t.Fatalf("a 512 KiB parameter in pieces: %v", err)
	}
	if _, err := pieces().Exec("INSERT INTO p.t VALUES (4, ?)", strings.Repeat("z", 3<<20)); err == nil {
		t.Fatal("a 3 MiB parameter in pieces with max_allowed_packet 1M was accepted")
	}
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM p.t").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("after the refused packets: %d rows, %v", rows, err)
	}
}

// TestHTTPAuthAndTLS: with --http-auth and --http-ssl every path of the
// HTTP endpoint needs the password and is served over HTTPS with the
// server's certificate; exposing the profiler off loopback without
// authentication is refused at start.
func TestHTTPAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--http-auth=monitor:s3cret", "--http-ssl=ON", "--lockstep-http-pprof=ON")
	pem, err := os.ReadFile(filepath.Join(dir, "data", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(scheme, path, user, pw string) (int, error) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, s.httpPort, path), nil)
		if user != "" {
			req.SetBasicAuth(user, pw)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, path := range []string{"/metrics", "/", "/debug/pprof/"} {
		if code, err := get("https", path, "", ""); err != nil || code != 401 {
			t.Errorf("GET %s without a password: %d %v, want 401", path, code, err)
		}
		if code, err := get("https", path, "monitor", "wrong"); err != nil || code != 401 {
			t.Errorf("GET %s with a wrong password: %d %v, want 401", path, code, err)
		}
		if code, err := get("https", path, "monitor", "s3cret"); err != nil || code != 200 {
			t.Errorf("GET %s with the password: %d %v, want 200", path, code, err)
		}
	}
	if code, err := get("http", "/metrics", "monitor", "s3cret"); err == nil && code == 200 {
		t.Error("plain HTTP served with --http-ssl")
	}
	// 192.0.2.1 (TEST-NET-1) is never bound: the refusal comes first.
	_, log := tryStart(t, filepath.Join(t.TempDir(), "data"), "--http-bind-address=192.0.2.1", "--lockstep-http-pprof=ON")
	if !strings.Contains(log, "without --http-auth") {
		t.Errorf("profiler off loopback without authentication: %s", log)
	}
}

// TestSuperIsNotTablePrivileges: an account with SUPER alone administers
// (SET GLOBAL) but cannot read, change, create or drop tables, on the fast
// path and through go-mysql-server, as in MySQL; with SELECT on the
// database it reads, and still cannot update.
func TestSuperIsNotTablePrivileges(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.t VALUES (1, 1)",
		"CREATE USER boss@'%' IDENTIFIED BY 'pw'",
		"GRANT SUPER ON *.* TO boss@'%'",
	} {
		mustExec(t, root, q)
	}
	boss := s.as(t, "boss", "pw")
	for _, fast := range []string{"ON", "OFF"} {
		mustExec(t, boss, "SET lockstep_fast_path = "+fast)
		for _, q := range []string{
			"SELECT v FROM app.t WHERE id = 1",
			"SELECT COUNT(*) FROM app.t",
			"INSERT INTO app.t VALUES (2, 2)",
			"UPDATE app.t SET v = v + 1 WHERE id = 1",
			"DELETE FROM app.t WHERE id = 1",
			"DROP TABLE app.t",
			"CREATE TABLE app.u (id INT PRIMARY KEY)",
		} {
			if _, err := boss.Exec(q); errNumber(err) != 1142 && errNumber(err) != 1044 {
				t.Errorf("fast path %s: SUPER alone: %s: %v, want 1142", fast, q, err)
			}
		}
	}
	mustExec(t, boss, "SET GLOBAL sync_binlog = 1")
	mustExec(t, root, "GRANT SELECT ON app.* TO boss@'%'")
	var v int
	if err := boss.QueryRow("SELECT v FROM app.t WHERE id = 1").Scan(&v); err != nil || v != 1 {
		t.Fatalf("SUPER and SELECT on app: %d %v", v, err)
	}
	if _, err := boss.Exec("UPDATE app.t SET v = 5 WHERE id = 1"); errNumber(err) != 1142 {
		t.Fatalf("SUPER and SELECT, UPDATE: %v, want 1142", err)
	}
}

// TestPrivilegesSuperAndPrepared: SUPER alone does not give the global
// privileges it never stood for in MySQL (granting, accounts, FILE,
// PROCESS, RELOAD); prepared statements are checked as text ones are, at
// prepare and at each execution; binlog status needs REPLICATION CLIENT.
func TestPrivilegesSuperAndPrepared(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	root := s.db("")
	for _, q := range []string{
		"CREATE DATABASE secret",
		"CREATE TABLE secret.s (id INT PRIMARY KEY)",
		"INSERT INTO secret.s VALUES (1)",
		"CREATE USER low@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON secret.* TO low@'%'",
		"CREATE USER boss@'%' IDENTIFIED BY 'pw'",
		"GRANT SUPER ON *.* TO boss@'%'",
	} {
		mustExec(t, root, q)
	}
	secure := filepath.Join(dir, "data", "secure-files")
	boss := s.as(t, "boss", "pw")
	for _, c := range []struct {
		q    string
		want uint16
	}{
		{"GRANT SELECT ON secret.* TO boss@'%'", 1044},
		{"GRANT ALL ON *.* TO boss@'%' WITH GRANT OPTION", 1227},
		{"CREATE USER x@'%'", 1227},
		{"DROP USER low@'%'", 1227},
		{"ALTER USER low@'%' IDENTIFIED BY 'taken'", 1227},
		{"SELECT LOAD_FILE('" + filepath.Join(dir, "data", "mysql.db") + "')", 1227},
		{"SELECT 1 INTO OUTFILE '" + filepath.Join(secure, "boss.txt") + "'", 1227},
		{"FLUSH BINARY LOGS", 1227},
		{"SELECT * FROM secret.s", 1142},
	} {
		_, err := boss.Exec(c.q)
		if errNumber(err) != c.want {
			t.Errorf("SUPER alone: %s: %v, want error %d", c.q, err, c.want)
		}
	}
	if _, err := boss.Exec("SELECT * FROM secret.s"); errNumber(err) != 1142 {
		t.Errorf("SUPER alone read secret.s after its GRANT attempts: %v", err)
	}
	// What SUPER does stand for.
	for _, q := range []string{"SET GLOBAL sync_binlog = 1", "SHOW MASTER STATUS", "SHOW BINARY LOGS"} {
		if _, err := boss.Exec(q); err != nil {
			t.Errorf("SUPER: %s: %v", q, err)
		}
	}
	// Others' connections are PROCESS's.
	rows, err := boss.Query("SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if user := fmt.Sprintf("%s", vals[1]); user != "boss" {
			t.Errorf("SUPER without PROCESS sees %s's connection", user)
		}
	}
	rows.Close()

	low := s.as(t, "low", "pw")
	// A database the account has nothing on is MySQL's 1044.
	if _, err := low.Exec("USE mysql"); errNumber(err) != 1044 {
		t.Errorf("low: USE mysql: %v, want 1044", err)
	}
	for _, q := range []string{"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", "SHOW BINARY LOGS"} {
		if _, err := low.Exec(q); errNumber(err) != 1227 {
			t.Errorf("low: %s: %v, want 1227", q, err)
		}
	}
	// Prepared (COM_STMT_PREPARE), as go-sql-driver sends placeholders.
	path := filepath.Join(secure, "lowp.bin")
	if st, err := low.Prepare("SELECT ? INTO DUMPFILE '" + path + "'"); errNumber(err) != 1227 {
		if err == nil {
			_, err = st.Exec("x")
			st.Close()
		}
		t.Errorf("low: prepared INTO DUMPFILE: %v, want 1227", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("low wrote %s through a prepared statement", path)
	}
	// Prepared while the account held FILE, executed after it lost it.
	mustExec(t, root, "GRANT FILE ON *.* TO low@'%'")
	st, err := low.Prepare("SELECT ? INTO DUMPFILE '" + path + "'")
	if err != nil {
		t.Fatalf("low with FILE: prepare: %v", err)
	}
	defer st.Close()
	mustExec(t, root, "REVOKE FILE ON *.* FROM low@'%'")
	if _, err := st.Exec("x"); errNumber(err) != 1227 {
		t.Errorf("low: a statement prepared with FILE, executed without: %v, want 1227", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("low wrote %s after losing FILE", path)
	}
}

// TestLockingReadPrivileges: SELECT ... FOR UPDATE / FOR SHARE / LOCK IN
// SHARE MODE needs one of DELETE, LOCK TABLES or UPDATE beside SELECT (MySQL
// 8), on the fast path, through go-mysql-server and prepared; with SELECT
// alone an account could hold row locks that stall writers.
func TestLockingReadPrivileges(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE lr")
	mustExec(t, root, "CREATE TABLE lr.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, root, "INSERT INTO lr.t VALUES (1, 1), (2, 2)")
	mustExec(t, root, "CREATE USER reader@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT SELECT ON lr.* TO reader@'%'")
	reader := s.as(t, "reader", "pw")
	// A database the account holds nothing on: a statement on its table
	// is MySQL's 1142 naming the command and the table; the database
	// itself (SHOW TABLES) is 1044.
	mustExec(t, root, "CREATE DATABASE other")
	mustExec(t, root, "CREATE TABLE other.t (id INT PRIMARY KEY)")
	for q, want := range map[string]string{
		"SELECT * FROM other.t":            "SELECT command denied to user 'reader'@'%' for table 't'",
		"INSERT INTO other.t VALUES (1)":   "INSERT command denied to user 'reader'@'%' for table 't'",
		"DELETE FROM other.t WHERE id = 1": "DELETE command denied to user 'reader'@'%' for table 't'",
	} {
		_, err := reader.Exec(q)
		if errNumber(err) != 1142 || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want 1142 %q", q, err, want)
		}
	}
	// A database the account holds SELECT on: the same, for checks on
	// the table and on the database (CREATE TABLE, CREATE VIEW).
	for q, want := range map[string]string{
		"INSERT INTO lr.t VALUES (9, 9)":  "INSERT command denied to user 'reader'@'%' for table 't'",
		"REPLACE INTO lr.t VALUES (9, 9)": "INSERT command denied to user 'reader'@'%' for table 't'",
		"UPDATE lr.t SET v = 0":           "UPDATE command denied to user 'reader'@'%' for table 't'",
		"DROP TABLE lr.t":                 "DROP command denied to user 'reader'@'%' for table 't'",
		"TRUNCATE lr.t":                   "DROP command denied to user 'reader'@'%' for table 't'",
		"ALTER TABLE lr.t ADD c INT":      "ALTER command denied to user 'reader'@'%' for table 't'",
		"CREATE INDEX i ON lr.t (v)":      "INDEX command denied to user 'reader'@'%' for table 't'",
		"CREATE TABLE lr.x (id INT)":      "CREATE command denied to user 'reader'@'%' for table 'x'",
		"CREATE VIEW lr.v AS SELECT 1":    "CREATE VIEW command denied to user 'reader'@'%' for table 'v'",
	} {
		_, err := reader.Exec(q)
		if errNumber(err) != 1142 || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want 1142 %q", q, err, want)
		}
	}
	// REPLACE needs INSERT and DELETE: the one missing is named.
	mustExec(t, root, "GRANT INSERT ON lr.t TO reader@'%'")
	if _, err := reader.Exec("REPLACE INTO lr.t VALUES (9, 9)"); errNumber(err) != 1142 || !strings.Contains(err.Error(), "DELETE command denied to user 'reader'@'%' for table 't'") {
		t.Fatalf("REPLACE with INSERT but not DELETE: %v", err)
	}
	mustExec(t, root, "REVOKE INSERT ON lr.t FROM reader@'%'")
	for _, q := range []string{"SHOW TABLES FROM other", "SHOW TABLES FROM mysql", "USE mysql"} {
		if _, err := reader.Exec(q); errNumber(err) != 1044 {
			t.Fatalf("%s, a database the account holds nothing on: %v, want 1044", q, err)
		}
	}
	locking := []string{
		"SELECT v FROM lr.t WHERE id = 1 FOR UPDATE",
		"SELECT v FROM lr.t WHERE id = 1 FOR SHARE",
		"SELECT COUNT(*) FROM lr.t FOR UPDATE",
		"SELECT v FROM lr.t WHERE id = 2 LOCK IN SHARE MODE",
		"SELECT a.v FROM lr.t a JOIN lr.t b ON a.id = b.id WHERE a.id = 1 FOR SHARE",
	}
	var v int
	for _, q := range locking {
		if err := reader.QueryRow(q).Scan(&v); errNumber(err) != 1142 {
			t.Fatalf("%s with SELECT only: %v, want 1142", q, err)
		}
	}
	if err := reader.QueryRow("SELECT v FROM lr.t WHERE id = ? FOR UPDATE", 1).Scan(&v); errNumber(err) != 1142 {
		t.Fatalf("a prepared locking read with SELECT only: %v, want 1142", err)
	}
	if err := reader.QueryRow("SELECT v FROM lr.t WHERE id = 1").Scan(&v); err != nil {
		t.Fatalf("a plain read: %v", err)
	}
	for _, grant := range []string{"LOCK TABLES", "UPDATE"} {
		mustExec(t, root, "REVOKE ALL ON lr.* FROM reader@'%'")
		mustExec(t, root, "GRANT SELECT, "+grant+" ON lr.* TO reader@'%'")
		for _, q := range locking {
			if err := reader.QueryRow(q).Scan(&v); err != nil {
				t.Fatalf("%s with SELECT and %s: %v", q, grant, err)
			}
		}
		if err := reader.QueryRow("SELECT v FROM lr.t WHERE id = ? FOR UPDATE", 1).Scan(&v); err != nil {
			t.Fatalf("a prepared locking read with SELECT and %s: %v", grant, err)
		}
	}
}

// TestDataDirectoryModes: a new data directory is 0700, and the secrets
// in it (TLS keys, the RSA key pair) are 0600.
func TestDataDirectoryModes(t *testing.T) {
	s := startServer(t, t.TempDir())
	dir := filepath.Join(s.dir, "data")
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("the data directory is %v, want 0700", st.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "key.pem") {
			continue
		}
		seen++
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
	if seen == 0 {
		t.Fatalf("no key files in %s", dir)
	}
}

// TestTemporaryTablePrivileges: creating a temporary table needs CREATE
// TEMPORARY TABLES, and using it needs nothing more, as in MySQL; a
// permanent table of the same name, or named beside it, is checked as
// ever.
func TestTemporaryTablePrivileges(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.p (id INT PRIMARY KEY)",
		"INSERT INTO app.p VALUES (1)",
		"CREATE USER reader@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON app.* TO reader@'%'",
		"CREATE USER temper@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, CREATE TEMPORARY TABLES ON app.* TO temper@'%'",
	} {
		mustExec(t, root, q)
	}
	reader := s.as(t, "reader", "pw")
	if _, err := reader.Exec("CREATE TEMPORARY TABLE app.x (a INT)"); err == nil {
		t.Fatal("CREATE TEMPORARY TABLE without CREATE TEMPORARY TABLES succeeded")
	}
	temper := s.as(t, "temper", "pw")
	temper.SetMaxOpenConns(1) // one session: its temporary tables
	for _, q := range []string{
		"CREATE TEMPORARY TABLE app.x (a INT PRIMARY KEY)",
		"INSERT INTO app.x VALUES (1), (2)",
		"UPDATE app.x SET a = a + 10",
		"DELETE FROM app.x WHERE a = 12",
		"REPLACE INTO app.x VALUES (11)",
		"INSERT INTO app.x SELECT id + 100 FROM app.p",
		"CREATE TEMPORARY TABLE app.p (id INT)",
		"INSERT INTO app.p VALUES (5)",
	} {
		mustExec(t, temper, q)
	}
	var n int
	if err := temper.QueryRow("SELECT COUNT(*) FROM app.x").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the temporary table: %d rows, %v", n, err)
	}
	mustExec(t, temper, "DROP TEMPORARY TABLE app.p")
	for _, q := range []string{
		"INSERT INTO app.p VALUES (2)", // the permanent table again
		"DROP TABLE app.p",
		"CREATE TABLE app.x (a INT)", // a permanent table of the temporary one's name
		"UPDATE app.p JOIN app.x SET app.p.id = 3",
	} {
		if _, err := temper.Exec(q); errNumber(err) != 1142 {
			t.Errorf("%s: %v, want 1142", q, err)
		}
	}
	mustExec(t, temper, "DROP TABLE app.x")
	if err := root.QueryRow("SELECT COUNT(*) FROM app.p").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the permanent table: %d rows, %v", n, err)
	}
}
