package integration

import (
	"bytes"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// TestTriggers: triggers fire on every write path over the wire (point
// statements the fast path would take, prepared statements, multi-row
// statements), run with their definer's privileges as MySQL's do, reach
// a Lockstep replica as their rows (the replica fires nothing: its audit
// table equals the primary's), and are kept across a restart.
func TestTriggers(t *testing.T) {
	p := startServer(t, t.TempDir())
	root := p.db("")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.accounts (id INT PRIMARY KEY, balance INT NOT NULL)",
		"CREATE TABLE app.audit (seq INT AUTO_INCREMENT PRIMARY KEY, account INT, delta INT, who VARCHAR(80))",
		"CREATE TRIGGER app.accounts_bi BEFORE INSERT ON app.accounts FOR EACH ROW SET NEW.balance = GREATEST(NEW.balance, 0)",
		"CREATE TRIGGER app.accounts_au AFTER UPDATE ON app.accounts FOR EACH ROW INSERT INTO audit (account, delta, who) VALUES (NEW.id, NEW.balance - OLD.balance, 'update')",
		"CREATE TRIGGER app.accounts_ad AFTER DELETE ON app.accounts FOR EACH ROW INSERT INTO audit (account, delta, who) VALUES (OLD.id, -OLD.balance, 'delete')",
	} {
		mustExec(t, root, q)
	}
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port), "--source-user=root")

	app := p.db("app")
	// A statement prepared before a trigger is made fires it after.
	kept, err := app.Prepare("INSERT INTO accounts VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if _, err := kept.Exec(50, 1); err != nil {
		t.Fatal(err)
	}
	mustExec(t, root, "CREATE TRIGGER app.accounts_ai AFTER INSERT ON app.accounts FOR EACH ROW INSERT INTO audit (account, delta, who) VALUES (NEW.id, NEW.balance, 'insert')")
	if _, err := kept.Exec(51, 1); err != nil {
		t.Fatal(err)
	}
	var inserted string
	if err := root.QueryRow("SELECT GROUP_CONCAT(account) FROM app.audit WHERE who = 'insert'").Scan(&inserted); err != nil || inserted != "51" {
		t.Fatalf("a statement prepared before its trigger: audit %q %v, want 51", inserted, err)
	}
	mustExec(t, root, "DROP TRIGGER app.accounts_ai")
	mustExec(t, root, "DELETE FROM app.accounts")
	mustExec(t, root, "DELETE FROM app.audit")
	mustExec(t, root, "ALTER TABLE app.audit AUTO_INCREMENT = 1")

	mustExec(t, app, "INSERT INTO accounts VALUES (1, 100)")
	mustExec(t, app, "INSERT INTO accounts VALUES (2, -5)") // clamped by the BEFORE trigger
	mustExec(t, app, "INSERT INTO accounts VALUES (?, ?)", 3, 30)
	mustExec(t, app, "UPDATE accounts SET balance = balance - 10 WHERE id = 1")
	mustExec(t, app, "UPDATE accounts SET balance = balance + ? WHERE id = ?", 7, 3)
	mustExec(t, app, "UPDATE accounts SET balance = balance + 1") // three rows
	mustExec(t, app, "DELETE FROM accounts WHERE id = 2")
	audit := func(db *sql.DB) string {
		t.Helper()
		var s string
		if err := db.QueryRow("SELECT GROUP_CONCAT(CONCAT(account, ':', delta, ':', who) ORDER BY seq) FROM app.audit").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const want = "1:-10:update,3:7:update,1:1:update,2:1:update,3:1:update,2:-1:delete"
	if got := audit(root); got != want {
		t.Fatalf("audit on the primary: %s, want %s", got, want)
	}
	var b2 sql.NullInt64
	if err := root.QueryRow("SELECT (SELECT balance FROM app.accounts WHERE id = 2)").Scan(&b2); err != nil || b2.Valid {
		t.Fatalf("account 2 after its DELETE: %v %v", b2, err)
	}

	// Privileges. dev may write accounts and has TRIGGER on it, nothing
	// on audit.
	for _, q := range []string{
		"CREATE USER dev@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, INSERT, UPDATE, DELETE, TRIGGER ON app.accounts TO dev@'%'",
		"CREATE USER clerk@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, UPDATE ON app.accounts TO clerk@'%'",
		"CREATE USER owner@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, UPDATE, TRIGGER ON app.accounts TO owner@'%'",
		"GRANT INSERT ON app.audit TO owner@'%'",
	} {
		mustExec(t, root, q)
	}
	dev := p.as(t, "dev", "pw")
	for q, want := range map[string]uint16{
		// The body writes a table dev may not write.
		"CREATE TRIGGER app.dev_t AFTER INSERT ON app.accounts FOR EACH ROW INSERT INTO app.audit (who) VALUES ('dev')": 1142,
		// Another account as definer needs SUPER or SET_USER_ID.
		"CREATE DEFINER=`root`@`localhost` TRIGGER app.dev_t AFTER INSERT ON app.accounts FOR EACH ROW INSERT INTO app.audit (who) VALUES ('dev')": 1227,
	} {
		if _, err := dev.Exec(q); errNumber(err) != want {
			t.Fatalf("dev: %s: %v, want %d", q, err, want)
		}
	}
	clerk := p.as(t, "clerk", "pw")
	if _, err := clerk.Exec("DROP TRIGGER app.accounts_au"); errNumber(err) != 1142 {
		t.Fatalf("clerk (no TRIGGER privilege) dropped a trigger: %v, want 1142", err)
	}
	// dev writes accounts; the triggers write audit as their definer.
	mustExec(t, dev, "UPDATE app.accounts SET balance = 50 WHERE id = 3")
	if got := audit(root); got != want+",3:12:update" {
		t.Fatalf("audit after dev's UPDATE: %s", got)
	}

	// An account that may only create temporary tables cannot make a
	// trigger run (as its definer) through a temporary table of the
	// trigger's table's name: a temporary table has no triggers.
	mustExec(t, root, "CREATE USER temp@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT CREATE TEMPORARY TABLES ON app.* TO temp@'%'")
	temp := p.as(t, "temp", "pw")
	mustExec(t, temp, "CREATE TEMPORARY TABLE app.accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
	mustExec(t, temp, "INSERT INTO app.accounts VALUES (3, 1)")
	mustExec(t, temp, "UPDATE app.accounts SET balance = 2 WHERE id = 3")
	mustExec(t, temp, "DELETE FROM app.accounts")
	if got := audit(root); got != want+",3:12:update" {
		t.Fatalf("audit after writes to a temporary table: %s", got)
	}

	// A trigger whose definer lost a privilege, then the account, stops
	// firing, and the statement that would fire it fails whole.
	owner := p.as(t, "owner", "pw")
	mustExec(t, root, "DROP TRIGGER app.accounts_au")
	mustExec(t, owner, "CREATE TRIGGER app.owner_au AFTER UPDATE ON app.accounts FOR EACH ROW INSERT INTO app.audit (account, who) VALUES (NEW.id, 'owner')")
	mustExec(t, clerk, "UPDATE app.accounts SET balance = 51 WHERE id = 3")
	mustExec(t, root, "REVOKE INSERT ON app.audit FROM owner@'%'")
	if _, err := clerk.Exec("UPDATE app.accounts SET balance = 52 WHERE id = 3"); errNumber(err) != 1142 {
		t.Fatalf("a trigger whose definer lost INSERT fired: %v, want 1142", err)
	}
	mustExec(t, root, "DROP USER owner@'%'")
	if _, err := clerk.Exec("UPDATE app.accounts SET balance = 53 WHERE id = 3"); errNumber(err) != 1449 {
		t.Fatalf("a trigger whose definer is gone fired: %v, want 1449", err)
	}
	var bal int
	if err := root.QueryRow("SELECT balance FROM app.accounts WHERE id = 3").Scan(&bal); err != nil || bal != 51 {
		t.Fatalf("account 3: %d %v, want 51 (the failed UPDATEs changed nothing)", bal, err)
	}
	mustExec(t, dev, "DROP TRIGGER app.owner_au") // dev holds TRIGGER on the table
	mustExec(t, root, "CREATE TRIGGER app.accounts_au AFTER UPDATE ON app.accounts FOR EACH ROW INSERT INTO audit (account, delta, who) VALUES (NEW.id, NEW.balance - OLD.balance, 'update')")

	// The replica has the primary's rows, its triggers fired nothing.
	waitCaughtUp(t, root, r.db(""), 30*time.Second)
	if got, want := audit(r.db("")), audit(root); got != want {
		t.Fatalf("audit on the replica: %s, primary: %s", got, want)
	}
	var n int
	if err := r.db("").QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'app'").Scan(&n); err != nil || n != 3 {
		t.Fatalf("triggers on the replica: %d %v, want 3", n, err)
	}

	// Kept across a restart.
	p.stop()
	p.start()
	root = p.db("")
	mustExec(t, root, "UPDATE app.accounts SET balance = 60 WHERE id = 1")
	var last string
	if err := root.QueryRow("SELECT CONCAT(account, ':', delta) FROM app.audit ORDER BY seq DESC LIMIT 1").Scan(&last); err != nil || last != "1:-31" {
		t.Fatalf("after a restart: last audit %q %v, want 1:-31", last, err)
	}

	// SHOW TRIGGERS FROM another database lists that database's; SHOW
	// CREATE TRIGGER gives the statement and the sql_mode it runs under.
	var name, mode, stmt string
	rows, err := root.Query("SHOW TRIGGERS FROM app")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for rows.Next() {
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		cell := func(i int) string { return string(*vals[i].(*sql.RawBytes)) }
		// Trigger, Event, Table, ..., sql_mode, Definer.
		listed = append(listed, cell(0)+" "+cell(1)+" "+cell(2)+" "+cell(7)+" "+fmt.Sprint(cell(6) != ""))
	}
	rows.Close()
	if fmt.Sprint(listed) != "[accounts_ad DELETE accounts root@localhost true accounts_au UPDATE accounts root@localhost true accounts_bi INSERT accounts root@localhost true]" {
		t.Fatalf("SHOW TRIGGERS FROM app: %v", listed)
	}
	if err := root.QueryRow("SHOW CREATE TRIGGER app.accounts_bi").Scan(&name, &mode, &stmt, new(string), new(string), new(string), new(string)); err != nil {
		t.Fatal(err)
	}
	if stmt != "CREATE DEFINER=`root`@`localhost` TRIGGER `accounts_bi` BEFORE INSERT ON `accounts` FOR EACH ROW SET NEW.balance = GREATEST(NEW.balance, 0)" || mode == "" {
		t.Fatalf("SHOW CREATE TRIGGER: sql_mode %q, statement %s", mode, stmt)
	}

	// A dump restores its triggers into another database.
	out, err := tool(t, time.Minute, needTool(t, "mariadb-dump"), "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "app").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v", err)
	}
	mustExec(t, root, "CREATE DATABASE restored")
	restore := tool(t, time.Minute, needTool(t, "mariadb"), "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "restored")
	restore.Stdin = bytes.NewReader(out)
	if b, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump: %v\n%s", err, b)
	}
	restored := p.db("restored")
	var n2 int
	if err := restored.QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'restored' AND EVENT_OBJECT_TABLE = 'accounts'").Scan(&n2); err != nil || n2 != 3 {
		t.Fatalf("restored triggers: %d %v, want 3", n2, err)
	}
	mustExec(t, restored, "INSERT INTO accounts VALUES (7, -3)")
	if err := restored.QueryRow("SELECT balance FROM accounts WHERE id = 7").Scan(&bal); err != nil || bal != 0 {
		t.Fatalf("a restored BEFORE INSERT trigger: balance %d %v, want 0", bal, err)
	}
	var appAccounts int
	if err := root.QueryRow("SELECT COUNT(*) FROM app.accounts WHERE id = 7").Scan(&appAccounts); err != nil || appAccounts != 0 {
		t.Fatalf("the restore wrote into the dumped database: %d %v", appAccounts, err)
	}
}
