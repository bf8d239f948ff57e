package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// goSQLDriverKnown are the tests of go-sql-driver/mysql's own suite
// (the version in go.mod) that fail against Lockstep and pass against
// MariaDB 10.11, each with its cause. docs/COMPATIBILITY.md lists them
// too; keep both in step.
var goSQLDriverKnown = map[string]string{}

// goSQLDriverSkipped are left out of the run: they test the client alone
// and fail on a machine without a route to the Internet, whatever the
// server.
var goSQLDriverSkipped = []string{"TestConnectorReturnsTimeout"}

// TestGoSQLDriverSuite runs go-sql-driver/mysql's own test suite against
// a Lockstep server, as its maintainers run it against MySQL: every test
// must pass except the known failures above, and a known failure that
// passes must leave the list.
func TestGoSQLDriverSuite(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not installed")
	}
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE gotest")
	// MySQL 8 ships with it off; the suite's LOAD DATA LOCAL tests need it.
	mustExec(t, s.db(""), "SET GLOBAL local_infile = 1")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-json", "-timeout=4m",
		"-skip", "^("+strings.Join(goSQLDriverSkipped, "|")+")$", "github.com/go-sql-driver/mysql")
	cmd.Env = append(os.Environ(),
		"MYSQL_TEST_USER=root", "MYSQL_TEST_PASS=", "MYSQL_TEST_PROT=tcp",
		fmt.Sprintf("MYSQL_TEST_ADDR=127.0.0.1:%d", s.port), "MYSQL_TEST_DBNAME=gotest")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // a failing suite exits 1; the events say why

	results := map[string]string{} // top-level test -> pass, fail, skip
	var output strings.Builder
	packageDone := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch {
		case e.Action == "output":
			output.WriteString(e.Output)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			packageDone = true
		case e.Test != "" && !strings.Contains(e.Test, "/") && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			results[e.Test] = e.Action
		}
	}
	if !packageDone || len(results) < 100 {
		t.Fatalf("the suite did not run to its end (%d tests reported):\n%s\n%s", len(results), stderr.String(), tailOf(output.String(), 4000))
	}
	var passed, failed, skipped int
	var unexpected, fixed []string
	for name, r := range results {
		_, known := goSQLDriverKnown[name]
		switch r {
		case "pass":
			passed++
			if known {
				fixed = append(fixed, name)
			}
		case "fail":
			failed++
			if !known {
				unexpected = append(unexpected, name)
			}
		case "skip":
			skipped++
		}
	}
	sort.Strings(unexpected)
	sort.Strings(fixed)
	t.Logf("go-sql-driver/mysql suite: %d passed, %d failed (all known), %d skipped by the suite, %d left out", passed, failed, skipped, len(goSQLDriverSkipped))
	if len(unexpected) > 0 {
		t.Errorf("tests that fail and are not known failures: %v\n%s", unexpected, failures(output.String(), unexpected))
	}
	if len(fixed) > 0 {
		t.Errorf("known failures that pass now (remove them from goSQLDriverKnown and docs/COMPATIBILITY.md): %v", fixed)
	}
}

// failures picks the output lines of the named tests.
func failures(out string, names []string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		for _, n := range names {
			if strings.Contains(line, n) || strings.Contains(line, "_test.go:") {
				b.WriteString(line + "\n")
				break
			}
		}
		if b.Len() > 8000 {
			break
		}
	}
	return b.String()
}

// TestResultForms: what go-mysql-server sends differently from MySQL is
// put right on the way out, in text and binary results alike: a zero
// date keeps its form in a prepared statement's result, a TIME column
// has no fraction, a table alias keeps its capitals, and DO answers OK.
func TestResultForms(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE f")
	db := s.db("f")
	mustExec(t, db, "SET GLOBAL sql_mode = ''")
	db = s.db("f")
	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, d DATE, dt DATETIME, tm TIME)")
	mustExec(t, db, "INSERT INTO t VALUES (1, '0000-00-00', '0000-00-00 00:00:00', '12:34:56'), (2, '2024-02-29', '2024-02-29 01:02:03', '-00:00:01')")
	for _, prepared := range []bool{false, true} {
		var args []any
		q := "SELECT d, dt, tm FROM t ORDER BY id"
		if prepared {
			q, args = "SELECT d, dt, tm FROM t WHERE id > ? ORDER BY id", []any{0}
		}
		rows, err := db.Query(q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var d, dt, tm string
			if err := rows.Scan(&d, &dt, &tm); err != nil {
				t.Fatal(err)
			}
			got = append(got, d+"|"+dt+"|"+tm)
		}
		rows.Close()
		want := "0000-00-00|0000-00-00 00:00:00|12:34:56 2024-02-29|2024-02-29 01:02:03|-00:00:01"
		if strings.Join(got, " ") != want {
			t.Errorf("prepared=%v: %q, want %q", prepared, strings.Join(got, " "), want)
		}
	}
	// database/sql does not show a column's table; the protocol does.
	conn, err := client.Connect(fmt.Sprintf("127.0.0.1:%d", s.port), "root", "", "f")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, prepared := range []bool{false, true} {
		var r *mysql.Result
		q := "SELECT Tee.id, X.one FROM t AS Tee JOIN (SELECT 1 AS one) AS X WHERE Tee.id = 1"
		if prepared {
			r, err = conn.Execute(q+" AND ? = 1", 1)
		} else {
			r, err = conn.Execute(q)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Fields) != 2 || string(r.Fields[0].Table) != "Tee" || string(r.Fields[1].Table) != "X" {
			t.Errorf("prepared=%v: result tables %q and %q, want Tee and X", prepared, r.Fields[0].Table, r.Fields[1].Table)
		}
	}
	// A statement after one that named a table T names its own t as it
	// wrote it (the second runs on the fast path).
	for _, c := range []struct{ q, table string }{
		{"SELECT T.id FROM t AS Tee JOIN t AS T WHERE Tee.id = 1 AND T.id = 1", "T"},
		{"SELECT id FROM t WHERE id = 1", "t"},
	} {
		r, err := conn.Execute(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Fields) != 1 || string(r.Fields[0].Table) != c.table {
			t.Errorf("%s: result table %q, want %q", c.q, r.Fields[0].Table, c.table)
		}
	}
	// DO evaluates and answers OK, alone or among other statements.
	if _, err := db.Exec("DO 1, SLEEP(0)"); err != nil {
		t.Errorf("DO: %v", err)
	}
	multi, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/f?multiStatements=true", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	if _, err := multi.Exec("DO 1; DO 2"); err != nil {
		t.Errorf("DO; DO: %v", err)
	}
	if _, err := db.Exec("DO nosuchfunction()"); err == nil {
		t.Error("DO of an unknown function succeeded")
	}
	if _, err := db.Exec("PREPARE p FROM 'DO 1'"); errNumber(err) != 1295 {
		t.Errorf("a prepared DO: %v, want 1295", err)
	}
}

// pyMySQLKnown are the tests of PyMySQL's own suite (0.10.1, the last
// release whose source distribution carries it) that fail against
// Lockstep, with their causes; docs/COMPATIBILITY.md lists them too.
var pyMySQLKnown = map[string]string{
	// Fail against MariaDB too: the source distribution lacks the data
	// file they load.
	"test_load_local.TestLoadLocal.test_load_file":            "the suite's data file is not in its source distribution",
	"test_load_local.TestLoadLocal.test_unbuffered_load_file": "the suite's data file is not in its source distribution",
}

// TestPyMySQLSuite runs PyMySQL's own test suite, from its source
// distribution (LOCKSTEP_PYMYSQL_SDIST, fetched by .ci/run), against a
// Lockstep server, with pytest: every test must pass except the known
// failures above, and a known failure that passes must leave the list.
func TestPyMySQLSuite(t *testing.T) {
	sdist := os.Getenv("LOCKSTEP_PYMYSQL_SDIST")
	if sdist == "" {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("LOCKSTEP_PYMYSQL_SDIST is required (LOCKSTEP_REQUIRE_TOOLS=1): PyMySQL-0.10.1.tar.gz")
		}
		t.Skip("LOCKSTEP_PYMYSQL_SDIST not set (PyMySQL-0.10.1.tar.gz from PyPI)")
	}
	py := needTool(t, "python3")
	if err := exec.Command(py, "-c", "import pytest").Run(); err != nil {
		needTool(t, "pytest") // skips, or fails under LOCKSTEP_REQUIRE_TOOLS
	}
	dir := t.TempDir()
	if out, err := exec.Command("tar", "xzf", sdist, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", sdist, err, out)
	}
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE test1")
	mustExec(t, s.db(""), "CREATE DATABASE test2")
	mustExec(t, s.db(""), "SET GLOBAL local_infile = 1")
	dbs := fmt.Sprintf(`[{"host":"127.0.0.1","port":%d,"user":"root","passwd":"","db":"test1","use_unicode":true,"local_infile":true},`+
		`{"host":"127.0.0.1","port":%d,"user":"root","passwd":"","db":"test2"}]`, s.port, s.port)
	if err := os.WriteFile(dir+"/pymysql/tests/databases.json", []byte(dbs), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report := dir + "/report.xml"
	cmd := exec.CommandContext(ctx, py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml="+report, "pymysql/tests")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // failures exit non-zero; the report says which
	cases := pytestReport(t, report, out)
	r := suiteResult{seen: map[string]bool{}}
	for _, c := range cases {
		// classname is pymysql.tests.[thirdparty.test_MySQLdb.]module.Class
		parts := strings.Split(c.Class, ".")
		name := parts[len(parts)-2] + "." + parts[len(parts)-1] + "." + c.Name
		r.seen[name] = true
		_, known := pyMySQLKnown[name]
		switch {
		case c.Failure != nil || c.Error != nil:
			r.failed++
			if !known {
				r.unexpected = append(r.unexpected, name)
			}
		case c.Skipped != nil:
			r.skipped++
		default:
			r.passed++
			if known {
				r.fixed = append(r.fixed, name)
			}
		}
	}
	judgeSuite(t, "PyMySQL", r, 100, pyMySQLKnown, "pyMySQLKnown", out)
}

// pytestCase is one test of a pytest JUnit report.
type pytestCase struct {
	Class   string    `xml:"classname,attr"`
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// pytestReport reads the JUnit report pytest wrote at path; out is its
// output, shown when there is no report.
func pytestReport(t *testing.T, path string, out []byte) []pytestCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no pytest report: %v\n%s", err, tailOf(string(out), 4000))
	}
	var suite struct {
		Cases []pytestCase `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil {
		t.Fatalf("pytest report: %v", err)
	}
	return suite.Cases
}

// suiteResult is what a pytest suite's report says against the suite's
// known failures: unexpected are the tests that failed and are not known,
// fixed the known failures that pass now.
type suiteResult struct {
	passed, failed, skipped int
	seen                    map[string]bool
	unexpected, fixed       []string
}

// judgeSuite fails t if suite (its output: out) passed fewer than
// minPassed tests (it did not run), if one of its known failures (known,
// the variable knownVar) is not in its report, or if r has tests failing
// unexpectedly or known failures that pass now.
func judgeSuite(t *testing.T, suite string, r suiteResult, minPassed int, known map[string]string, knownVar string, out []byte) {
	t.Helper()
	if r.passed < minPassed {
		t.Fatalf("the suite did not run: %d passed\n%s", r.passed, tailOf(string(out), 4000))
	}
	for name := range known {
		if !r.seen[name] {
			t.Errorf("known failure %s is not in the suite's report", name)
		}
	}
	sort.Strings(r.unexpected)
	sort.Strings(r.fixed)
	t.Logf("%s suite: %d passed, %d failed (all known), %d skipped by the suite", suite, r.passed, r.failed, r.skipped)
	if len(r.unexpected) > 0 {
		t.Errorf("tests that fail and are not known failures: %v\n%s", r.unexpected, tailOf(string(out), 8000))
	}
	if len(r.fixed) > 0 {
		t.Errorf("known failures that pass now (remove them from %s and docs/COMPATIBILITY.md): %v", knownVar, r.fixed)
	}
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestSetOperationDecimals: a set operation's column whose sides are
// integers and DECIMALs of different scales is a DECIMAL with the largest
// scale, and every row reads with it, as in MySQL and MariaDB 10.11 (each
// expected text here is MariaDB's, read on the same box): the text most
// drivers hand applications.
func TestSetOperationDecimals(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE f")
	db := s.db("f")
	mustExec(t, db, "CREATE TABLE p (id INT PRIMARY KEY, price DECIMAL(5,2))")
	mustExec(t, db, "INSERT INTO p VALUES (1, 3.10), (2, 4.5)")
	for _, c := range []struct{ q, want string }{
		{"SELECT 1 UNION SELECT 2.5", "1.0 2.5"},
		{"SELECT 1.5 UNION ALL SELECT 10", "1.5 10.0"},
		{"SELECT 1.5 UNION SELECT 2.25 UNION SELECT 3", "1.50 2.25 3.00"},
		{"SELECT price FROM p UNION SELECT 2.5", "3.10 4.50 2.50"},
		{"SELECT id FROM p EXCEPT SELECT 2.0", "1.0"},
		{"SELECT id FROM p INTERSECT SELECT 2.0", "2.0"},
		{"SELECT 1 UNION SELECT 2", "1 2"},
		{"SELECT 'a' UNION SELECT 1.50", "a 1.50"},
		{"SELECT price FROM p UNION SELECT 2.5 ORDER BY 1", "2.50 3.10 4.50"},
		{"SELECT price FROM p UNION SELECT 2.5 ORDER BY 1 DESC LIMIT 2", "4.50 3.10"},
		{"SELECT * FROM (SELECT id FROM p UNION SELECT 2.125) t ORDER BY 1", "1.000 2.000 2.125"},
		{"SELECT t.id + 1 FROM (SELECT id FROM p UNION SELECT 2.125) t ORDER BY 1", "2.000 3.000 3.125"},
		{"SELECT 1 UNION (SELECT 2.5 UNION SELECT 3.25)", "1.00 2.50 3.25"},
		{"SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 2.5) u WHERE x > 1", "2.5"},
		{"SELECT 1 IN (SELECT 1 UNION SELECT 2.5)", "1"},
	} {
		rows, err := db.Query(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		rows.Close()
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q, want %q", c.q, strings.Join(got, " "), c.want)
		}
	}
}

// TestSetOperationStringTypes: a set operation's column whose sides are
// strings, string literals or integers of different types is described
// as MySQL and MariaDB 10.11 describe it (each expected type code and
// length here is MariaDB's, read on the same box with PyMySQL): a
// VARCHAR as long as the longest side in characters (4 bytes each), a
// CHAR of CHAR columns, a TEXT with a TEXT side. go-mysql-server said
// LONGTEXT for all of them.
func TestSetOperationStringTypes(t *testing.T) {
	py := needPyMySQL(t)
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE u")
	mustExec(t, s.db("u"), "CREATE TABLE t (name VARCHAR(20), c CHAR(5), tx TEXT, i INT, c2 CHAR(3))")
	mustExec(t, s.db("u"), "INSERT INTO t VALUES ('ann', 'x', 'long', 7, 'y')")
	script := fmt.Sprintf(`
import pymysql
c = pymysql.connect(host="127.0.0.1", port=%d, user="root", database="u")
cur = c.cursor()
for q in ["SELECT name FROM t UNION SELECT 'x'",
          "SELECT c FROM t UNION SELECT 'abcdefgh'",
          "SELECT name FROM t UNION SELECT tx FROM t",
          "SELECT name FROM t UNION SELECT 123",
          "SELECT 'ab' UNION SELECT 'abc'",
          "SELECT name FROM t UNION ALL SELECT name FROM t",
          "SELECT c FROM t UNION SELECT c2 FROM t",
          "SELECT i FROM t UNION SELECT 'abc'",
          "SELECT name FROM t UNION SELECT 'x' UNION SELECT 'abcdefghijklmnopqrstuvwxyz'",
          "SELECT * FROM (SELECT name FROM t UNION SELECT 'x') d",
          "SELECT 'x' UNION SELECT NULL",
          "SELECT name FROM t INTERSECT SELECT 'ann'"]:
    cur.execute(q)
    d = cur.description[0]
    print(d[1], d[3], len(cur.fetchall()))
`, s.port)
	out, err := tool(t, 2*time.Minute, py, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("PyMySQL: %v\n%s", err, out)
	}
	want := `253 80 2
253 32 2
252 262140 2
253 80 2
253 12 2
253 80 2
254 20 2
253 44 2
253 104 3
253 80 2
253 4 2
253 80 1
`
	if string(out) != want {
		t.Fatalf("type, length and rows of each column:\n%s\nwant (MariaDB's):\n%s", out, want)
	}
}
