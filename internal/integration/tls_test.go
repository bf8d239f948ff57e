package integration

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

var tlsConfigs atomic.Int64

// tlsConfig registers a go-sql-driver TLS configuration that verifies the
// server against ca (its generated CA unless given) for 127.0.0.1, and
// presents the generated client certificate when withCert. It returns the
// name to use as tls= in a DSN.
func (s *server) tlsConfig(t *testing.T, ca string, withCert bool) string {
	t.Helper()
	if ca == "" {
		ca = filepath.Join(s.dir, "data", "ca.pem")
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", ca)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if withCert {
		data := filepath.Join(s.dir, "data")
		cert, err := tls.LoadX509KeyPair(filepath.Join(data, "client-cert.pem"), filepath.Join(data, "client-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	name := fmt.Sprintf("lockstep-test-%d", tlsConfigs.Add(1))
	if err := mysqldrv.RegisterTLSConfig(name, cfg); err != nil {
		t.Fatal(err)
	}
	return name
}

// login opens one connection as user and runs a query on it; tlsName is a
// registered configuration or "" for no TLS. It returns the query's error.
func (s *server) login(t *testing.T, user, password, tlsName string) error {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/?timeout=10s", user, password, s.port)
	if tlsName != "" {
		dsn += "&tls=" + tlsName
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cipher string
	if err := db.QueryRow("SELECT 1").Scan(&cipher); err != nil {
		return err
	}
	return nil
}

// TestTLSAndAuthentication: with no options the server makes its own
// certificates and offers TLS; clients verify it with the generated CA.
// mysql_native_password and caching_sha2_password accounts log in over TLS
// and without it (caching_sha2_password by the RSA exchange, then from
// its cache), accounts that REQUIRE SSL, X509 or a SUBJECT are held to it,
// and require_secure_transport refuses plain logins with MySQL's 3159.
func TestTLSAndAuthentication(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	root := s.db("")
	verified := s.tlsConfig(t, "", false)
	withCert := s.tlsConfig(t, "", true)

	var have string
	if err := root.QueryRow("SELECT @@have_ssl").Scan(&have); err != nil || have != "YES" {
		t.Fatalf("@@have_ssl = %q, %v", have, err)
	}
	for _, q := range []string{
		"CREATE USER 'nat'@'%' IDENTIFIED BY 'pw-nat'",
		"CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw-sha'",
		"CREATE USER 'needssl'@'%' IDENTIFIED BY 'pw-ssl' REQUIRE SSL",
		"CREATE USER 'needcert'@'%' IDENTIFIED BY 'pw-cert' REQUIRE X509",
		"CREATE USER 'subject'@'%' IDENTIFIED BY 'pw-subj' REQUIRE SUBJECT '/CN=Lockstep_Auto_Generated_Client_Certificate'",
		"CREATE USER 'other'@'%' IDENTIFIED BY 'pw-other' REQUIRE SUBJECT '/CN=someone else'",
	} {
		mustExec(t, root, q)
	}

	check := func(what, user, password, tlsName string, want uint16) {
		t.Helper()
		err := s.login(t, user, password, tlsName)
		if got := errNumber(err); got != want || (want == 0 && err != nil) {
			t.Errorf("%s: error %v (number %d), want %d", what, err, got, want)
		}
	}
	check("native, plain", "nat", "pw-nat", "", 0)
	check("native, TLS", "nat", "pw-nat", verified, 0)
	check("native, wrong password", "nat", "nope", verified, 1045)
	check("unknown account", "ghost", "pw", "", 1045)

	// No RSA key before the first login that needs one.
	keyFile := filepath.Join(dir, "data", "private_key.pem")
	if _, err := os.Stat(keyFile); err == nil {
		t.Fatal("the RSA key exists before any login needed it")
	}
	check("sha2, plain, RSA exchange", "sha", "pw-sha", "", 0)
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("RSA key after a plain caching_sha2_password login: %v %v", st, err)
	}
	check("sha2, plain, from the cache", "sha", "pw-sha", "", 0)
	check("sha2, TLS", "sha", "pw-sha", verified, 0)
	check("sha2, wrong password over TLS", "sha", "nope", verified, 1045)
	check("sha2, wrong password without TLS", "sha", "nope", "", 1045)
	mustExec(t, root, "ALTER USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw-sha-2'")
	check("sha2, the old password after a change", "sha", "pw-sha", "", 1045)
	check("sha2, the new password", "sha", "pw-sha-2", "", 0)

	check("REQUIRE SSL, plain", "needssl", "pw-ssl", "", 1045)
	check("REQUIRE SSL, TLS", "needssl", "pw-ssl", verified, 0)
	check("REQUIRE X509, no certificate", "needcert", "pw-cert", verified, 1045)
	check("REQUIRE X509, certificate", "needcert", "pw-cert", withCert, 0)
	check("REQUIRE SUBJECT, matching", "subject", "pw-subj", withCert, 0)
	check("REQUIRE SUBJECT, another subject", "other", "pw-other", withCert, 1045)

	if n := atoi(t, statusOf(t, root, "Ssl_finished_accepts")); n < 9 { // the TLS logins above
		t.Errorf("Ssl_finished_accepts = %d after the TLS logins", n)
	}

	// A client that verifies against another CA refuses this server.
	other := t.TempDir()
	o := startServer(t, other)
	if err := s.login(t, "root", "", o.tlsConfig(t, "", false)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA: %v, want a certificate error", err)
	}
	o.stop()

	mustExec(t, root, "SET GLOBAL require_secure_transport = ON")
	check("require_secure_transport, plain", "root", "", "", 3159)
	check("require_secure_transport, TLS", "root", "", verified, 0)
	mustExec(t, root, "SET GLOBAL require_secure_transport = OFF")

	// After a restart the cache is empty: the RSA exchange again, with the
	// key saved at first use.
	s.stop()
	s.start()
	check("sha2 after restart, plain", "sha", "pw-sha-2", "", 0)

	// --ssl=OFF: no TLS, and the variables say so.
	off := startServer(t, t.TempDir(), "--ssl=OFF")
	if err := off.login(t, "root", "", "skip-verify"); err == nil {
		t.Error("a TLS login succeeded with --ssl=OFF")
	}
	if err := off.db("").QueryRow("SELECT @@have_ssl").Scan(&have); err != nil || have != "DISABLED" {
		t.Errorf("@@have_ssl with --ssl=OFF = %q, %v", have, err)
	}
	_, log := tryStart(t, filepath.Join(t.TempDir(), "data"), "--ssl=OFF", "--require-secure-transport")
	if !strings.Contains(log, "needs TLS") {
		t.Errorf("--require-secure-transport with --ssl=OFF started or said: %s", log)
	}
}

// TestReplicationOverTLS: a semi-synchronous Lockstep replica, a MariaDB
// replica and a python-mysql-replication consumer stream the binlog over
// TLS, each verifying the source's certificate, with accounts that
// REQUIRE SSL (caching_sha2_password for the first and last; MariaDB's
// replication client speaks mysql_native_password). Semi-sync ACKs travel
// back over the same TLS connection. A replica that trusts another CA
// does not connect.
func TestReplicationOverTLS(t *testing.T) {
	mport := fixedPort(t)
	dir := t.TempDir()
	p := startServer(t, dir, "--rpl-semi-sync-source-enabled", "--rpl-semi-sync-source-timeout=600000",
		"--rpl-semi-sync-source-wait-no-replica=OFF",
		"--mariadb-port", fmt.Sprint(mport))
	pdb := p.db("")
	ca := filepath.Join(dir, "data", "ca.pem")
	for _, q := range []string{
		"CREATE USER 'repl'@'%' IDENTIFIED WITH caching_sha2_password BY 'repl-pw' REQUIRE SSL",
		"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'repl'@'%'",
		"GRANT SELECT ON *.* TO 'repl'@'%'", // python-mysql-replication reads table definitions
		"CREATE USER 'mrepl'@'%' IDENTIFIED BY 'mrepl-pw' REQUIRE SSL",
		"GRANT REPLICATION SLAVE ON *.* TO 'mrepl'@'%'",
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))",
	} {
		mustExec(t, pdb, q)
	}
	// Where a MariaDB replica starts: MariaDB has no caching_sha2_password,
	// so it is seeded with the schema and replicates what follows.
	var setup string
	pdb.QueryRow("SELECT @@global.gtid_executed").Scan(&setup)
	seeded := "0-1-" + setup[strings.LastIndex(setup, "-")+1:]

	r := startServer(t, t.TempDir(), "--server-id=2", "--skip-replica-start", "--rpl-semi-sync-replica-enabled")
	rdb := r.db("")
	mustExec(t, rdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, "+
		"SOURCE_USER='repl', SOURCE_PASSWORD='repl-pw', SOURCE_SSL=1, SOURCE_SSL_CA='%s', "+
		"SOURCE_SSL_VERIFY_SERVER_CERT=1, SOURCE_CONNECT_RETRY=1", p.port, ca))
	mustExec(t, rdb, "START REPLICA")
	waitStatus(t, pdb, "Rpl_semi_sync_source_clients", "1", "the TLS replica never registered as semi-sync")
	for i := range 20 {
		mustExec(t, pdb, "INSERT INTO app.t VALUES (?, ?)", i, fmt.Sprint("v", i))
	}
	if yes := atoi(t, statusOf(t, pdb, "Rpl_semi_sync_source_yes_tx")); yes < 20 {
		t.Fatalf("Rpl_semi_sync_source_yes_tx = %d after 20 commits: ACKs did not come back over TLS", yes)
	}
	waitCaughtUp(t, pdb, rdb, 20*time.Second)
	st := replicaStatus(t, rdb)
	if st["Source_SSL_Allowed"] != "Yes" || st["Source_SSL_CA_File"] != ca || st["Source_SSL_Verify_Server_Cert"] != "Yes" {
		t.Errorf("SHOW REPLICA STATUS TLS columns: allowed %q, CA %q, verify %q",
			st["Source_SSL_Allowed"], st["Source_SSL_CA_File"], st["Source_SSL_Verify_Server_Cert"])
	}

	// Another CA: the replica refuses the source.
	other := t.TempDir()
	o := startServer(t, other)
	o.stop()
	bad := startServer(t, t.TempDir(), "--server-id=3", "--skip-replica-start")
	bdb := bad.db("")
	mustExec(t, bdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, "+
		"SOURCE_USER='repl', SOURCE_PASSWORD='repl-pw', SOURCE_SSL=1, SOURCE_SSL_CA='%s', SOURCE_CONNECT_RETRY=1",
		p.port, filepath.Join(other, "data", "ca.pem")))
	mustExec(t, bdb, "START REPLICA")
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := replicaStatus(t, bdb)
		if strings.Contains(st["Last_IO_Error"], "certificate") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a replica trusting another CA: Last_IO_Error %q", st["Last_IO_Error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And a replica without TLS is refused by the account.
	mustExec(t, bdb, "STOP REPLICA")
	mustExec(t, bdb, "CHANGE REPLICATION SOURCE TO SOURCE_SSL=0")
	mustExec(t, bdb, "START REPLICA")
	deadline = time.Now().Add(20 * time.Second)
	for {
		st := replicaStatus(t, bdb)
		if st["Last_IO_Errno"] == "1045" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a plain replica for a REQUIRE SSL account: %q %q", st["Last_IO_Errno"], st["Last_IO_Error"])
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("python-mysql-replication", func(t *testing.T) {
		needTool(t, "python3")
		if err := tool(t, time.Minute, "python3", "-c", "import pymysqlreplication, cryptography").Run(); err != nil {
			if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
				t.Fatal("python-mysql-replication and cryptography are required")
			}
			t.Skip("python-mysql-replication or cryptography not installed")
		}
		cmd := tool(t, 2*time.Minute, "python3", "testdata/pyrepl.py", fmt.Sprint(p.port), "file")
		cmd.Env = append(os.Environ(), "PYREPL_USER=repl", "PYREPL_PASSWORD=repl-pw", "PYREPL_SSL_CA="+ca)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), "WriteRowsEvent") != 20 {
			t.Fatalf("pyrepl over TLS: %v\n%s", err, out)
		}
	})

	t.Run("MariaDB replica", func(t *testing.T) {
		m := startMariaDB(t, 4)
		mdb := m.db()
		for _, q := range []string{
			"CREATE DATABASE app CHARACTER SET utf8mb4",
			"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))",
			"SET GLOBAL gtid_slave_pos = '" + seeded + "'",
			fmt.Sprintf("CHANGE MASTER TO master_host='127.0.0.1', master_port=%d, master_user='mrepl', "+
				"master_password='mrepl-pw', master_use_gtid=slave_pos, master_ssl=1, master_ssl_ca='%s', "+
				"master_ssl_verify_server_cert=1, master_connect_retry=1", mport, ca),
			"START SLAVE",
		} {
			if _, err := mdb.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		mustExec(t, pdb, "INSERT INTO app.t VALUES (100, 'after')")
		deadline := time.Now().Add(60 * time.Second)
		for {
			var n int
			if mdb.QueryRow("SELECT COUNT(*) FROM app.t").Scan(&n) == nil && n == 21 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the MariaDB replica has %d rows, want 21; slave errors: %s", n, slaveErrors(mdb))
			}
			time.Sleep(200 * time.Millisecond)
		}
		rows, err := mdb.Query("SHOW SLAVE STATUS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if !rows.Next() {
			t.Fatal("SHOW SLAVE STATUS returned no row")
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, c := range cols {
			if c == "Master_SSL_Allowed" && vals[i].String != "Yes" {
				t.Errorf("Master_SSL_Allowed = %q", vals[i].String)
			}
		}
	})
}

// TestTLSClients: the mariadb CLI and PyMySQL log in over TLS, verifying
// the server's certificate with the generated CA, and PyMySQL logs in to
// a caching_sha2_password account with and without TLS.
func TestTLSClients(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	ca := filepath.Join(dir, "data", "ca.pem")
	mustExec(t, s.db(""), "CREATE USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY 'app-pw' REQUIRE SSL")
	mustExec(t, s.db(""), "CREATE USER 'plain'@'%' IDENTIFIED WITH caching_sha2_password BY 'plain-pw'")

	t.Run("mariadb CLI", func(t *testing.T) {
		cli := needTool(t, "mariadb")
		out, err := tool(t, time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot",
			"--ssl-ca="+ca, "--ssl-verify-server-cert", "-e", "status").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Cipher in use is") {
			t.Fatalf("mariadb over verified TLS: %v\n%s", err, out)
		}
		// A CA that did not sign the server's certificate: refused.
		other := t.TempDir()
		o := startServer(t, other)
		o.stop()
		out, err = tool(t, time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot",
			"--ssl-ca="+filepath.Join(other, "data", "ca.pem"), "--ssl-verify-server-cert", "-e", "SELECT 1").CombinedOutput()
		if err == nil {
			t.Fatalf("mariadb trusting another CA connected:\n%s", out)
		}
	})

	t.Run("PyMySQL", func(t *testing.T) {
		py := needTool(t, "python3")
		if err := tool(t, time.Minute, py, "-c", "import pymysql, cryptography").Run(); err != nil {
			if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
				t.Fatal("PyMySQL and cryptography are required (LOCKSTEP_REQUIRE_TOOLS=1)")
			}
			t.Skip("PyMySQL or cryptography not installed")
		}
		script := fmt.Sprintf(`
import pymysql
def q(c, sql):
    cur = c.cursor()
    cur.execute(sql)
    return cur.fetchall()
c = pymysql.connect(host="127.0.0.1", port=%[1]d, user="app", password="app-pw", ssl={"ca": %[2]q})
assert c._sock.version() in ("TLSv1.2", "TLSv1.3"), c._sock.version()
assert q(c, "SELECT CURRENT_USER()")[0][0] == "app@%%"
c.close()
# No TLS (PyMySQL uses it when offered unless told not to): the RSA
# exchange (PyMySQL asks for the key), then the cache.
for _ in range(2):
    c = pymysql.connect(host="127.0.0.1", port=%[1]d, user="plain", password="plain-pw", ssl_disabled=True)
    assert not hasattr(c._sock, "version")
    assert q(c, "SELECT 1")[0][0] == 1
    c.close()
try:
    pymysql.connect(host="127.0.0.1", port=%[1]d, user="app", password="app-pw", ssl_disabled=True)
    raise SystemExit("a REQUIRE SSL account logged in without TLS")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e
print("ok")
`, s.port, ca)
		out, err := tool(t, time.Minute, py, "-c", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("PyMySQL: %v\n%s", err, out)
		}
	})
}

// TestConnectorJ logs in with MySQL Connector/J (LOCKSTEP_CONNECTOR_J
// names its jar; .ci/run fetches it from Maven Central) to a
// caching_sha2_password account: over TLS verifying the server's name and
// certificate, then without TLS by the RSA exchange and from the cache.
func TestConnectorJ(t *testing.T) {
	java := needTool(t, "java")
	keytool := needTool(t, "keytool")
	jar := os.Getenv("LOCKSTEP_CONNECTOR_J")
	if jar == "" {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("LOCKSTEP_CONNECTOR_J (the Connector/J jar) is required (LOCKSTEP_REQUIRE_TOOLS=1)")
		}
		t.Skip("LOCKSTEP_CONNECTOR_J not set")
	}
	dir := t.TempDir()
	s := startServer(t, dir)
	mustExec(t, s.db(""), "CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'sha-pw'")
	trust := filepath.Join(dir, "trust.p12")
	if out, err := tool(t, time.Minute, keytool, "-importcert", "-noprompt", "-alias", "ca",
		"-file", filepath.Join(dir, "data", "ca.pem"), "-keystore", trust, "-storetype", "PKCS12",
		"-storepass", "changeit").CombinedOutput(); err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	out, err := tool(t, 2*time.Minute, java, "-cp", jar, "testdata/ConnectorJ.java", fmt.Sprint(s.port), trust).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "sha@% tls\nsha@% plain\nsha@% plain" {
		t.Fatalf("Connector/J: %v\n%s", err, out)
	}
}

// TestReloadTLS: ALTER INSTANCE RELOAD TLS makes new handshakes use the
// certificate files as they are now (a rotation), needs CONNECTION_ADMIN,
// and keeps the certificate in force when the new files do not load.
func TestReloadTLS(t *testing.T) {
	set1, set2, live := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{set1, set2} {
		if _, _, err := tlscert.Ensure(d); err != nil {
			t.Fatal(err)
		}
	}
	install := func(from string) {
		t.Helper()
		for _, n := range []string{tlscert.CAFile, tlscert.ServerCertFile, tlscert.ServerKeyFile} {
			b, err := os.ReadFile(filepath.Join(from, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(live, n), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(set1)
	s := startServer(t, t.TempDir(), "--ssl-cert="+filepath.Join(live, tlscert.ServerCertFile),
		"--ssl-key="+filepath.Join(live, tlscert.ServerKeyFile), "--ssl-ca="+filepath.Join(live, tlscert.CAFile))
	root := s.db("")
	mustExec(t, root, "CREATE USER low@'%' IDENTIFIED BY 'pw'")
	trust1 := s.tlsConfig(t, filepath.Join(set1, tlscert.CAFile), false)
	trust2 := s.tlsConfig(t, filepath.Join(set2, tlscert.CAFile), false)
	if err := s.login(t, "low", "pw", trust1); err != nil {
		t.Fatalf("the first certificate: %v", err)
	}
	if err := s.login(t, "low", "pw", trust2); err == nil {
		t.Fatal("a client trusting only the second CA logged in before the rotation")
	}

	install(set2)
	if _, err := s.as(t, "low", "pw").Exec("ALTER INSTANCE RELOAD TLS"); errNumber(err) != 1227 {
		t.Fatalf("ALTER INSTANCE RELOAD TLS without CONNECTION_ADMIN: %v, want 1227", err)
	}
	mustExec(t, root, "ALTER INSTANCE RELOAD TLS")
	if err := s.login(t, "low", "pw", trust2); err != nil {
		t.Fatalf("the second certificate after the reload: %v", err)
	}
	if err := s.login(t, "low", "pw", trust1); err == nil {
		t.Fatal("the first certificate is still served after the reload")
	}

	// A key that does not load: refused, the second certificate stays.
	if err := os.WriteFile(filepath.Join(live, tlscert.ServerKeyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec("ALTER INSTANCE RELOAD TLS"); errNumber(err) != 3888 {
		t.Fatalf("a reload of a damaged key: %v, want 3888", err)
	}
	if err := s.login(t, "low", "pw", trust2); err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
	if _, err := root.Exec("ALTER INSTANCE RELOAD TLS NO ROLLBACK ON ERROR"); errNumber(err) != 1235 {
		t.Fatalf("NO ROLLBACK ON ERROR: %v, want 1235", err)
	}
}
