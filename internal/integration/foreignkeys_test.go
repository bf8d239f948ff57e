package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestForeignKeys: constraints are enforced over the wire with MySQL's
// errors, their referential actions reach a Lockstep replica as rows, they
// are kept across a restart, and a mariadb-dump of tables with
// constraints (which turns foreign_key_checks off to load them in any
// order) restores.
func TestForeignKeys(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE shop")
	shop := p.db("shop")
	mustExec(t, shop, "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20))")
	mustExec(t, shop, "CREATE TABLE orders (id INT PRIMARY KEY, customer INT NOT NULL, CONSTRAINT orders_customer FOREIGN KEY (customer) REFERENCES customers (id) ON DELETE CASCADE)")
	mustExec(t, shop, "CREATE TABLE items (id INT PRIMARY KEY, orderid INT, qty INT CHECK (qty > 0), FOREIGN KEY (orderid) REFERENCES orders (id) ON DELETE CASCADE ON UPDATE CASCADE)")
	mustExec(t, shop, "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob')")
	mustExec(t, shop, "INSERT INTO orders VALUES (10, 1), (11, 1), (12, 2)")
	mustExec(t, shop, "INSERT INTO items VALUES (100, 10, 1), (101, 11, 2), (102, 12, 3)")
	for q, want := range map[string]uint16{
		"INSERT INTO orders VALUES (13, 99)":           1452,
		"UPDATE orders SET customer = 3 WHERE id = 12": 1452,
		"DROP TABLE customers":                         3730,
		"INSERT INTO items VALUES (103, 10, 0)":        3819,
	} {
		if _, err := shop.Exec(q); errNumber(err) != want {
			t.Fatalf("%s: %v, want %d", q, err, want)
		}
	}
	// A prepared statement takes the same checks.
	if _, err := shop.Exec("INSERT INTO orders VALUES (?, ?)", 14, 98); errNumber(err) != 1452 {
		t.Fatalf("a prepared INSERT of an orphan: %v, want 1452", err)
	}
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port), "--source-user=root")
	mustExec(t, shop, "DELETE FROM customers WHERE id = 1") // cascades to two orders and their lines
	mustExec(t, shop, "UPDATE orders SET id = 20 WHERE id = 12")
	check := func(db *sql.DB, who string) {
		t.Helper()
		var orders, lines, moved int
		if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM shop.orders), (SELECT COUNT(*) FROM shop.items), (SELECT COUNT(*) FROM shop.items WHERE orderid = 20)").Scan(&orders, &lines, &moved); err != nil || orders != 1 || lines != 1 || moved != 1 {
			t.Fatalf("%s: %d orders, %d lines, %d moved (%v); want 1, 1, 1", who, orders, lines, moved, err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'shop'").Scan(&n); err != nil || n != 2 {
			t.Fatalf("%s: %d constraints, %v; want 2", who, n, err)
		}
		if _, err := db.Exec("INSERT INTO shop.items VALUES (104, 20, -1)"); errNumber(err) != 3819 {
			t.Fatalf("%s: a line breaking its CHECK: %v, want 3819", who, err)
		}
	}
	check(shop, "primary")
	waitCaughtUp(t, pdb, r.db(""), 30*time.Second)
	check(r.db(""), "replica")
	p.stop()
	p.start()
	shop = p.db("shop")
	check(shop, "primary after a restart")
	if _, err := shop.Exec("INSERT INTO items VALUES (103, 77, 1)"); errNumber(err) != 1452 {
		t.Fatalf("after a restart: an orphan line: %v, want 1452", err)
	}

	dump := needTool(t, "mariadb-dump")
	cli := needTool(t, "mariadb")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dumpCmd := exec.CommandContext(ctx, dump, "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "--verbose", "shop")
	var stderr strings.Builder
	dumpCmd.Stderr = &stderr
	out, err := dumpCmd.Output()
	if err != nil {
		t.Logf("mariadb-dump said: %s", stderr.String())
		rows, _ := p.db("").Query("SHOW FULL PROCESSLIST")
		var list []string
		for rows != nil && rows.Next() {
			var id, tm int64
			var user, host, cmd string
			var db, state, info sql.NullString
			rows.Scan(&id, &user, &host, &db, &cmd, &tm, &state, &info)
			list = append(list, fmt.Sprintf("%d %s %s %s %q", id, cmd, db.String, state.String, info.String))
		}
		t.Fatalf("mariadb-dump: %v; processes:\n%s", err, strings.Join(list, "\n"))
	}
	mustExec(t, p.db(""), "CREATE DATABASE restored")
	restore := exec.CommandContext(ctx, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "restored")
	restore.Stdin = strings.NewReader(string(out))
	if b, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump: %v\n%s", err, b)
	}
	restored := p.db("restored")
	var n int
	if err := restored.QueryRow("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'restored'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("restored: %d constraints, %v; want 2", n, err)
	}
	if _, err := restored.Exec("UPDATE items SET qty = 0"); errNumber(err) != 3819 {
		t.Fatalf("restored: the CHECK is gone: %v, want 3819", err)
	}
	mustExec(t, restored, "DELETE FROM customers")
	if err := restored.QueryRow("SELECT COUNT(*) FROM items").Scan(&n); err != nil || n != 0 {
		t.Fatalf("restored: %d lines after deleting every customer, %v; want 0 (cascades)", n, err)
	}
}

// TestForeignKeyWriteSet: a child row's transaction depends on the
// transaction that wrote its parent in the binlog's WRITESET tracking
// (last_committed), though they change no row in common: a replica
// applying in parallel would otherwise insert the child first. Two
// unrelated transactions stay independent.
func TestForeignKeyWriteSet(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE ws")
	db := s.db("ws")
	mustExec(t, db, "CREATE TABLE p (id INT PRIMARY KEY)")
	mustExec(t, db, "CREATE TABLE c (id INT PRIMARY KEY, pid INT, CONSTRAINT c_p FOREIGN KEY (pid) REFERENCES p (id))")
	mustExec(t, db, "CREATE TABLE u (id INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO u VALUES (1)")    // seq n
	mustExec(t, db, "INSERT INTO p VALUES (1)")    // seq n+1
	mustExec(t, db, "INSERT INTO u VALUES (2)")    // seq n+2, independent
	mustExec(t, db, "INSERT INTO c VALUES (1, 1)") // seq n+3, needs n+1
	cfg := replication.BinlogSyncerConfig{ServerID: 98, Flavor: gomysql.MySQLFlavor, Host: "127.0.0.1", Port: uint16(s.port), User: "root"}
	b := replication.NewBinlogSyncer(cfg)
	defer b.Close()
	st, err := b.StartSync(gomysql.Position{Name: "binlog.000001", Pos: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var gtids []*replication.GTIDEvent
	for {
		e, err := st.GetEvent(ctx)
		if err != nil {
			break
		}
		if g, ok := e.Event.(*replication.GTIDEvent); ok {
			gtids = append(gtids, g)
		}
	}
	if len(gtids) < 4 {
		t.Fatalf("%d transactions in the binlog", len(gtids))
	}
	last := gtids[len(gtids)-4:]
	parent, unrelated, child := last[1], last[2], last[3]
	if child.LastCommitted < parent.SequenceNumber {
		t.Fatalf("the child's transaction: last_committed %d, before its parent's (sequence %d)", child.LastCommitted, parent.SequenceNumber)
	}
	if unrelated.LastCommitted >= parent.SequenceNumber {
		t.Fatalf("an unrelated transaction: last_committed %d, depends on the parent's (sequence %d)", unrelated.LastCommitted, parent.SequenceNumber)
	}
}
