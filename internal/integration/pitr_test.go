package integration

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pitrTables are the queries that show the point-in-time test's tables,
// the same way on Lockstep and MariaDB.
var pitrTables = []string{
	"SELECT id, owner, bal, at, note, flags, kind, HEX(raw), u FROM shop.acct ORDER BY id",
	"SELECT seq, acct, amt FROM shop.ledger ORDER BY seq",
	"SELECT a, b FROM shop.tags ORDER BY a, b",
}

// TestPointInTimeRecovery is the operator's recipe, run with the real
// tools while writers change every table: a base backup with
// `mariadb-dump --single-transaction --master-data=2`, restored into a
// fresh server, then the binlogs from the dump's coordinates replayed
// with `mariadb-binlog | mariadb` up to the point before an accident (a
// dropped table, a deleted ledger). The restored server must equal the
// source at that point, row for row. The same history replayed from
// the MariaDB port into a MariaDB server, up to the same transaction by
// its GTID, must end with the same rows and that GTID. The BINLOG
// statements the replay runs need BINLOG_ADMIN and the tables'
// privileges.
func TestPointInTimeRecovery(t *testing.T) {
	cli := needTool(t, "mariadb")
	dump := needTool(t, "mariadb-dump")
	mbinlog := needTool(t, "mariadb-binlog")
	mport := fixedPort(t)
	adir := t.TempDir()
	a := startServer(t, adir, "--mariadb-port", strconv.Itoa(mport))
	src := a.db("")
	for _, q := range []string{
		"CREATE DATABASE shop",
		`CREATE TABLE shop.acct (id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL, bal DECIMAL(12,2) NOT NULL DEFAULT 0,
			at DATETIME(6), note TEXT, flags SET('a','b','c'), kind ENUM('x','y') DEFAULT 'x', raw VARBINARY(16),
			u BIGINT UNSIGNED, UNIQUE KEY owner (owner))`,
		`CREATE TABLE shop.ledger (seq INT AUTO_INCREMENT PRIMARY KEY, acct INT NOT NULL, amt DECIMAL(12,2) NOT NULL,
			CONSTRAINT ledger_acct FOREIGN KEY (acct) REFERENCES shop.acct (id) ON DELETE CASCADE)`,
		"CREATE TABLE shop.tags (a INT, b VARCHAR(10))",
	} {
		mustExec(t, src, q)
	}
	const accounts = 40
	for i := range accounts {
		mustExec(t, src, "INSERT INTO shop.acct VALUES (?, ?, 100, '2026-01-01 00:00:00.5', 'it''s', 'a,c', 'y', UNHEX('00ff'), 18446744073709551615)", i, fmt.Sprintf("owner-%d", i))
	}

	// Writers: transfers with ledger rows, keyless tag churn, accounts
	// closed (their ledger rows cascade away) and opened again.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var committed atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				id, amt := r.IntN(accounts), r.IntN(2000)-1000
				tx, err := src.Begin()
				if err != nil {
					continue
				}
				var stmts []string
				switch r.IntN(8) {
				case 0:
					stmts = []string{fmt.Sprintf("DELETE FROM shop.acct WHERE id = %d", id),
						fmt.Sprintf("INSERT INTO shop.acct (id, owner, note, flags, raw, u) VALUES (%d, 'owner-%d', NULL, 'b', UNHEX('%02x'), %d)", id, id, r.IntN(256), r.Uint64())}
				case 1:
					stmts = []string{fmt.Sprintf("INSERT INTO shop.tags VALUES (%d, 't%d')", r.IntN(10), r.IntN(3)),
						fmt.Sprintf("DELETE FROM shop.tags WHERE a = %d LIMIT 1", r.IntN(10))}
				default:
					stmts = []string{fmt.Sprintf("UPDATE shop.acct SET bal = bal + %d.25, at = NOW(6), kind = IF(kind = 'x', 'y', 'x') WHERE id = %d", amt, id),
						fmt.Sprintf("INSERT INTO shop.ledger (acct, amt) SELECT id, %d.25 FROM shop.acct WHERE id = %d", amt, id)}
				}
				ok := true
				for _, q := range stmts {
					if _, err := tx.Exec(q); err != nil {
						ok = false
						break
					}
				}
				if ok && tx.Commit() == nil {
					committed.Add(1)
				} else {
					tx.Rollback()
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(time.Second)

	// The base backup, taken under load.
	base, err := tool(t, 2*time.Minute, dump, "-h127.0.0.1", fmt.Sprintf("-P%d", a.port), "-uroot", "--skip-ssl",
		"--single-transaction", "--master-data=2", "--databases", "shop").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, base)
	}
	m := regexp.MustCompile(`CHANGE MASTER TO MASTER_LOG_FILE='([^']+)', MASTER_LOG_POS=(\d+)`).FindSubmatch(base)
	if m == nil {
		t.Fatalf("the dump names no binlog coordinates:\n%.2000s", base)
	}
	startFile, startPos := string(m[1]), string(m[2])
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	if n := committed.Load(); n < 50 {
		t.Fatalf("only %d transactions committed under the writers", n)
	}

	// The point to recover to: the last transaction before the accident.
	mustExec(t, src, "INSERT INTO shop.tags VALUES (999, 'marker')")
	var file string
	var stopPos int64
	if err := src.QueryRow("SHOW MASTER STATUS").Scan(&file, &stopPos, new(string), new(string), new(string)); err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(pitrTables))
	for i, q := range pitrTables {
		want[i] = tableText(t, src, q)
	}
	lastGTID := lastGNO(t, gtidExecuted(t, src))
	mustExec(t, src, "DELETE FROM shop.ledger")
	mustExec(t, src, "DROP TABLE shop.tags")

	// The binlog files from the dump's on, as the server lists them.
	var files []string
	rows, err := src.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size, new(string)); err != nil {
			t.Fatal(err)
		}
		if name >= startFile && name <= file {
			files = append(files, filepath.Join(adir, "data", name))
		}
	}
	rows.Close()
	if a, b := tableText(t, src, "SHOW MASTER LOGS"), tableText(t, src, "SHOW BINARY LOGS"); a != b {
		t.Errorf("SHOW MASTER LOGS:\n%s\nSHOW BINARY LOGS:\n%s", a, b)
	}

	pipe := func(t *testing.T, replay *exec.Cmd, load *exec.Cmd) {
		t.Helper()
		var stderr bytes.Buffer
		replay.Stderr = &stderr
		out, err := replay.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", replay.Args, err, stderr.Bytes())
		}
		load.Stdin = bytes.NewReader(out)
		if msg, err := load.CombinedOutput(); err != nil {
			t.Fatalf("replaying %v: %v\n%s", replay.Args, err, msg)
		}
	}
	compare := func(t *testing.T, db *sql.DB, who string) {
		t.Helper()
		for i, q := range pitrTables {
			if got := tableText(t, db, q); got != want[i] {
				t.Errorf("%s: %s differs from the source at the recovery point:\nsource:\n%.3000s\n%s:\n%.3000s", who, q, want[i], who, got)
			}
		}
	}

	t.Run("dump and binlogs into Lockstep", func(t *testing.T) {
		b := startServer(t, t.TempDir())
		restore := tool(t, 2*time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", b.port), "-uroot", "--skip-ssl")
		restore.Stdin = bytes.NewReader(base)
		if msg, err := restore.CombinedOutput(); err != nil {
			t.Fatalf("restoring the dump: %v\n%s", err, msg)
		}
		args := append([]string{"--start-position=" + startPos, "--stop-position=" + strconv.FormatInt(stopPos, 10)}, files...)
		pipe(t, tool(t, 2*time.Minute, mbinlog, args...),
			tool(t, 5*time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", b.port), "-uroot", "--skip-ssl"))
		compare(t, b.db(""), "restored Lockstep")

		// The BINLOG statements need BINLOG_ADMIN, and their rows the
		// tables' privileges.
		out, err := tool(t, time.Minute, mbinlog, append([]string{"--start-position=" + startPos}, files...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		stmts := regexp.MustCompile(`(?s)BINLOG '\n.*?\n'`).FindAllString(string(out), 2)
		if len(stmts) != 2 {
			t.Fatalf("%d BINLOG statements in the replay", len(stmts))
		}
		root := b.db("")
		mustExec(t, root, "CREATE USER reader IDENTIFIED BY 'pw'")
		mustExec(t, root, "GRANT SELECT ON *.* TO reader")
		mustExec(t, root, "CREATE USER applier IDENTIFIED BY 'pw'")
		mustExec(t, root, "GRANT BINLOG_ADMIN ON *.* TO applier")
		mustExec(t, root, "GRANT SELECT ON shop.* TO applier")
		for _, c := range []struct{ user, want string }{{"reader", "1227"}, {"applier", "1142"}} {
			db, err := sql.Open("mysql", fmt.Sprintf("%s:pw@tcp(127.0.0.1:%d)/", c.user, b.port))
			if err != nil {
				t.Fatal(err)
			}
			conn := conn(t, db)
			_, err1 := conn.ExecContext(t.Context(), stmts[0])
			_, err2 := conn.ExecContext(t.Context(), stmts[1])
			if c.user == "reader" {
				// Listing the binlogs needs REPLICATION CLIENT.
				if _, err := conn.ExecContext(t.Context(), "SHOW MASTER LOGS"); err == nil || !strings.Contains(err.Error(), "1227") {
					t.Errorf("SHOW MASTER LOGS without REPLICATION CLIENT: %v, want 1227", err)
				}
			}
			db.Close()
			if err := firstErr(err1, err2); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s's BINLOG statements: %v, %v; want error %s", c.user, err1, err2, c.want)
			}
		}
	})

	// MySQL's mysqlbinlog prints SET @@SESSION.GTID_NEXT before each
	// transaction (Debian has only MariaDB's, which leaves a MySQL
	// binlog's GTIDs out: they are put where MySQL's tool puts them).
	t.Run("binlogs with their GTIDs into Lockstep, twice", func(t *testing.T) {
		var uuid string
		if err := src.QueryRow("SELECT @@server_uuid").Scan(&uuid); err != nil {
			t.Fatal(err)
		}
		var all []string
		rows, err := src.Query("SHOW BINARY LOGS")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			rows.Scan(&name, new(int64), new(string))
			all = append(all, filepath.Join(adir, "data", name))
		}
		rows.Close()
		out, err := tool(t, 2*time.Minute, mbinlog, all...).Output()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		gno := 0
		for _, line := range strings.SplitAfter(string(out), "\n") {
			if strings.HasPrefix(line, "# Ignorable event type 33 (MySQL Gtid)") {
				gno++
				fmt.Fprintf(&b, "SET @@SESSION.GTID_NEXT= '%s:%d'/*!*/;\n", uuid, gno)
			}
			if strings.HasPrefix(line, "DELIMITER ;") {
				b.WriteString("SET @@SESSION.GTID_NEXT= 'AUTOMATIC' /* added by mysqlbinlog */ /*!*/;\n")
			}
			b.WriteString(line)
		}
		c := startServer(t, t.TempDir())
		for range 2 { // the second time, every GTID is executed: nothing happens
			load := tool(t, 5*time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", c.port), "-uroot", "--skip-ssl")
			load.Stdin = strings.NewReader(b.String())
			if msg, err := load.CombinedOutput(); err != nil {
				t.Fatalf("replaying with GTID_NEXT: %v\n%s", err, msg)
			}
		}
		cdb := c.db("")
		if got, want := gtidExecuted(t, cdb), gtidExecuted(t, src); got != want {
			t.Errorf("gtid_executed after the replay: %s, the source's %s", got, want)
		}
		// The source after the accident: no tags table, an empty ledger.
		for _, q := range []string{pitrTables[0], pitrTables[1]} {
			if got, want := tableText(t, cdb, q), tableText(t, src, q); got != want {
				t.Errorf("%s differs from the source after the replay", q)
			}
		}
		if _, err := cdb.Exec("SELECT 1 FROM shop.tags"); err == nil {
			t.Error("shop.tags, dropped on the source, is on the replayed server")
		}
	})

	t.Run("BINLOG statements' errors", func(t *testing.T) {
		bdir := t.TempDir()
		b := startServer(t, bdir)
		root := b.db("")
		mustExec(t, root, "CREATE DATABASE z")
		mustExec(t, root, "CREATE TABLE z.t (id INT PRIMARY KEY, v INT)")
		var file string
		var pos int64
		if err := root.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, new(string), new(string), new(string)); err != nil {
			t.Fatal(err)
		}
		mustExec(t, root, "INSERT INTO z.t VALUES (1, 1), (2, 2)")
		mustExec(t, root, "UPDATE z.t SET v = 3 WHERE id = 1")
		mustExec(t, root, "DELETE FROM z.t WHERE id = 2")
		out, err := tool(t, time.Minute, mbinlog, "--start-position="+strconv.FormatInt(pos, 10), filepath.Join(bdir, "data", file)).Output()
		if err != nil {
			t.Fatal(err)
		}
		// The format description, then the insert, the update and the
		// delete, each with its table map.
		stmts := regexp.MustCompile(`(?s)BINLOG '\n.*?\n'`).FindAllString(string(out), -1)
		if len(stmts) != 4 {
			t.Fatalf("%d BINLOG statements, want 4:\n%s", len(stmts), out)
		}
		fde, insert, update, del := stmts[0], stmts[1], stmts[2], stmts[3]
		c := conn(t, root)
		run := func(q string) error {
			_, err := c.ExecContext(t.Context(), q)
			return err
		}
		if err := run(insert); err == nil || !strings.Contains(err.Error(), "1609") {
			t.Errorf("rows before a format description: %v, want 1609", err)
		}
		mustExec(t, root, "DELETE FROM z.t")
		mustExec(t, root, "INSERT INTO z.t VALUES (2, 9)")
		if err := run(fde); err != nil {
			t.Fatal(err)
		}
		// (1, 1) goes in, (2, 2) is a duplicate: the statement's rows
		// are undone together.
		if err := run(insert); err == nil || !strings.Contains(err.Error(), "1062") {
			t.Errorf("an insert of an existing row: %v, want 1062", err)
		}
		if err := run(update); err == nil || !strings.Contains(err.Error(), "1032") {
			t.Errorf("an update of a missing row: %v, want 1032", err)
		}
		if got := tableText(t, root, "SELECT * FROM z.t ORDER BY id"); got != "2|9|\n" {
			t.Errorf("after the failed statements the table holds %q, want only 2|9", got)
		}
		// Inside a transaction, as the tools print them: the rows commit
		// with it, or go with its rollback.
		for _, q := range []string{"BEGIN", del, "ROLLBACK"} {
			if err := run(q); err != nil {
				t.Fatalf("%.40s: %v", q, err)
			}
		}
		for _, q := range []string{"BEGIN", del, "INSERT INTO z.t VALUES (5, 5)", "COMMIT"} {
			if err := run(q); err != nil {
				t.Fatalf("%.40s: %v", q, err)
			}
		}
		if got := tableText(t, root, "SELECT * FROM z.t ORDER BY id"); got != "5|5|\n" {
			t.Errorf("after the committed delete the table holds %q, want only 5|5", got)
		}
		// Under autocommit, the statement is its own transaction.
		if err := run(insert); err != nil {
			t.Fatal(err)
		}
		if got := tableText(t, root, "SELECT * FROM z.t ORDER BY id"); got != "1|1|\n2|2|\n5|5|\n" {
			t.Errorf("after an insert under autocommit another session sees %q", got)
		}
	})

	t.Run("binlogs from the MariaDB port into MariaDB", func(t *testing.T) {
		md := startMariaDB(t, 2, "--log-bin=mariadb-bin")
		gtid := "0-1-" + strconv.FormatUint(lastGTID, 10)
		pipe(t, tool(t, 2*time.Minute, mbinlog, "--read-from-remote-server", "-h127.0.0.1", fmt.Sprintf("-P%d", mport), "-uroot",
			"--stop-position="+gtid, "binlog.000001"),
			tool(t, 5*time.Minute, cli, "--socket="+md.sock(), "-uroot"))
		mdb := md.db()
		compare(t, mdb, "MariaDB")
		var pos string
		if err := mdb.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil || pos != gtid {
			t.Errorf("MariaDB's gtid_binlog_pos after the replay: %q (%v), want %q", pos, err, gtid)
		}
	})
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
