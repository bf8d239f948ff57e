package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestFastPathMatchesGMS is the fast path's differential test: the same
// random statements of the shapes it executes (and near misses it must
// hand to GMS) run on two identical databases, one session with the fast
// path and one with lockstep_fast_path=OFF, both as text and as prepared
// statements. Every result (columns, rows, affected rows, insert id, error
// number and message) and the final tables must be identical.
func TestFastPathMatchesGMS(t *testing.T) {
	s := startServer(t, t.TempDir())
	admin := s.db("")
	ctx := context.Background()
	const schema = `CREATE TABLE t (
		id INT PRIMARY KEY,
		k INT NOT NULL,
		c VARCHAR(12) NOT NULL,
		pad CHAR(6),
		u VARCHAR(8) UNIQUE,
		big BIGINT,
		un INT UNSIGNED,
		d DECIMAL(5,2),
		KEY k (k))`
	sessions := map[string]*sql.Conn{}
	for _, name := range []string{"fa", "fb"} {
		mustExec(t, admin, "CREATE DATABASE "+name)
		mustExec(t, admin, "USE "+name)
		c, err := s.db(name).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.ExecContext(ctx, schema); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, v INT DEFAULT 7, w VARCHAR(4) DEFAULT 'd')"); err != nil {
			t.Fatal(err)
		}
		sessions[name] = c
	}
	for name, on := range map[string]string{"fa": "ON", "fb": "OFF"} {
		if _, err := sessions[name].ExecContext(ctx, "SET SESSION lockstep_fast_path = "+on); err != nil {
			t.Fatal(err)
		}
	}
	fastBefore := statusValue(t, admin, "Lockstep_fastpath_statements")

	seed := int64(rand.Uint32())
	if v := os.Getenv("LOCKSTEP_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d (LOCKSTEP_SEED reproduces)", seed)
	g := &stmtGen{rng: rng}
	trace := os.Getenv("LOCKSTEP_TRACE") != "" // log every statement
	const n = 3000
	for i := 0; i < n; i++ {
		q, args := g.next()
		prepared := rng.Intn(2) == 0 && args != nil
		text := g.inline(q, args)
		var outs [2]string
		for j, name := range []string{"fa", "fb"} {
			if prepared {
				outs[j] = run(ctx, sessions[name], q, args)
			} else {
				outs[j] = run(ctx, sessions[name], text, nil)
			}
		}
		if trace {
			t.Logf("%d prepared=%v %s %v -> %s", i, prepared, text, args, outs[0])
		}
		if outs[0] != outs[1] {
			t.Fatalf("statement %d (prepared=%v) differs:\n  %s\n  args %v\nfast path: %s\nGMS:       %s", i, prepared, text, args, outs[0], outs[1])
		}
	}
	for _, name := range []string{"fa", "fb"} {
		if _, err := sessions[name].ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
	final := [2]string{}
	for j, name := range []string{"fa", "fb"} {
		final[j] = run(ctx, sessions[name], "SELECT * FROM t ORDER BY id", nil) +
			run(ctx, sessions[name], "SELECT * FROM a ORDER BY id", nil)
	}
	if final[0] != final[1] {
		t.Fatalf("final tables differ:\nfast path: %s\nGMS:       %s", final[0], final[1])
	}
	if rows := strings.Count(final[0], "|"); rows < 10 {
		t.Fatalf("the workload left only %d rows; it exercises too little: %s", rows, final[0])
	}
	// Every shape the fast path claims runs on it, as text and prepared.
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO t (id, k, c) VALUES (?, ?, ?)", []any{100, 1, "x"}},
		{"REPLACE INTO t (id, k, c) VALUES (?, ?, ?)", []any{100, 2, "y"}},
		{"SELECT c FROM t WHERE id = ?", []any{1}},
		{"SELECT * FROM t WHERE id IN (?, ?)", []any{1, 2}},
		{"SELECT id FROM t WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?", []any{1, 5, 2}},
		{"SELECT SUM(k), COUNT(*) FROM t WHERE id BETWEEN ? AND ?", []any{1, 5}},
		{"SELECT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c", []any{1, 5}},
		{"SELECT DISTINCT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c", []any{1, 5}},
		{"SELECT id FROM t WHERE u = ? FOR UPDATE", []any{"a"}},
		{"SELECT id, c FROM t WHERE k BETWEEN ? AND ? ORDER BY k LIMIT ?", []any{1, 50, 3}},
		{"SELECT COUNT(*) FROM t WHERE k = ?", []any{7}},
		{"UPDATE t SET k = k + ? WHERE id = ?", []any{1, 100}},
		{"UPDATE t SET c = ? WHERE id = ?", []any{"b", 100}},
		{"DELETE FROM t WHERE id = ?", []any{100}},
		{"BEGIN", nil},
		{"ROLLBACK", nil},
		{"SET autocommit = 0", nil},
		{"SET SESSION autocommit = ON", nil},
	} {
		for _, prepared := range []bool{false, true} {
			before := statusValue(t, admin, "Lockstep_fastpath_statements")
			if prepared && q.args != nil {
				run(ctx, sessions["fa"], q.sql, q.args)
			} else {
				run(ctx, sessions["fa"], g.inline(q.sql, q.args), nil)
			}
			if after := statusValue(t, admin, "Lockstep_fastpath_statements"); after != before+1 {
				t.Errorf("%s (prepared=%v) did not run on the fast path", q.sql, prepared)
			}
		}
	}
	ran := statusValue(t, admin, "Lockstep_fastpath_statements") - fastBefore
	if ran < n/3 {
		t.Fatalf("the fast path ran only %d of %d statements", ran, n)
	}
	t.Logf("fast path ran %d statements, fell back on %d", ran, statusValue(t, admin, "Lockstep_fastpath_fallbacks"))
}

// TestFastPathSetAutocommit: SET autocommit=1 commits the transaction
// autocommit=0 left open (MySQL's rule), on either path; inside BEGIN it
// does not end the transaction.
func TestFastPathSetAutocommit(t *testing.T) {
	s := startServer(t, t.TempDir())
	admin := s.db("")
	mustExec(t, admin, "CREATE DATABASE ac")
	mustExec(t, admin, "CREATE TABLE ac.t (id INT PRIMARY KEY)")
	ctx := context.Background()
	for _, fast := range []string{"ON", "OFF"} {
		c, err := s.db("ac").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) {
			t.Helper()
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("fast path %s: %s: %v", fast, q, err)
			}
		}
		count := func() int {
			t.Helper()
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM ac.t").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		mustExec(t, admin, "DELETE FROM ac.t")
		exec("SET lockstep_fast_path = " + fast)
		exec("SET autocommit = 0")
		exec("INSERT INTO t VALUES (1)")
		if n := count(); n != 0 {
			t.Fatalf("fast path %s: an uncommitted row is visible (%d)", fast, n)
		}
		exec("SET autocommit = 1")
		if n := count(); n != 1 {
			t.Fatalf("fast path %s: SET autocommit=1 did not commit (%d rows visible)", fast, n)
		}
		exec("BEGIN")
		exec("INSERT INTO t VALUES (2)")
		exec("SET autocommit = 1")
		exec("ROLLBACK")
		if n := count(); n != 1 {
			t.Fatalf("fast path %s: SET autocommit=1 inside BEGIN ended the transaction (%d rows)", fast, n)
		}
		c.Close()
	}
}

func statusValue(t *testing.T, db *sql.DB, name string) int {
	t.Helper()
	var k string
	var v int
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// run executes q and renders everything a client can observe of it.
func run(ctx context.Context, c *sql.Conn, q string, args []any) string {
	trimmed := strings.ToUpper(strings.TrimSpace(q))
	if strings.HasPrefix(trimmed, "SELECT") {
		rows, err := c.QueryContext(ctx, q, args...)
		if err != nil {
			return renderErr(err)
		}
		defer rows.Close()
		var b strings.Builder
		types, _ := rows.ColumnTypes()
		for _, ct := range types {
			nullable, _ := ct.Nullable()
			fmt.Fprintf(&b, "%s:%s:%v ", ct.Name(), ct.DatabaseTypeName(), nullable)
		}
		vals := make([]sql.RawBytes, len(types))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return renderErr(err)
			}
			b.WriteString("|")
			for _, v := range vals {
				if v == nil {
					b.WriteString("NULL,")
				} else {
					b.WriteString(strconv.Quote(string(v)) + ",")
				}
			}
		}
		if err := rows.Err(); err != nil {
			return b.String() + " " + renderErr(err)
		}
		return b.String()
	}
	res, err := c.ExecContext(ctx, q, args...)
	if err != nil {
		return renderErr(err)
	}
	n, _ := res.RowsAffected()
	id, _ := res.LastInsertId()
	return fmt.Sprintf("affected=%d insert_id=%d", n, id)
}

func renderErr(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		msg := strings.ReplaceAll(strings.ReplaceAll(me.Message, "fa.", "DB."), "fb.", "DB.")
		return fmt.Sprintf("error %d (%s): %s", me.Number, string(me.SQLState[:]), msg)
	}
	return "error: " + err.Error()
}

// stmtGen makes statements of the fast path's shapes over table t, with
// operands that it accepts and operands that must make it fall back.
type stmtGen struct {
	rng *rand.Rand
}

func (g *stmtGen) pick(xs ...string) string { return xs[g.rng.Intn(len(xs))] }
func (g *stmtGen) pick2(xs ...any) any      { return xs[g.rng.Intn(len(xs))] }

// id is a key value: mostly in a small range so rows collide, sometimes
// an edge (out of INT's range, a string, NULL, negative).
func (g *stmtGen) id() any {
	switch g.rng.Intn(20) {
	case 0:
		return nil
	case 1:
		return "7"
	case 2:
		return int64(2147483648)
	case 3:
		return int64(-3)
	case 4:
		return "x"
	}
	return int64(g.rng.Intn(40))
}

func (g *stmtGen) intVal() any {
	switch g.rng.Intn(14) {
	case 0:
		return nil
	case 1:
		return int64(2147483647)
	case 2:
		return int64(-2147483648)
	case 3:
		return int64(2147483648)
	case 4:
		return "12"
	}
	return int64(g.rng.Intn(200) - 50)
}

func (g *stmtGen) strVal() any {
	switch g.rng.Intn(13) {
	case 0:
		return nil
	case 1:
		return "way too long for it"
	case 2:
		return "trail  "
	case 3:
		return "ünï"
	case 4:
		return ""
	case 5:
		return int64(5)
	case 6:
		return "A"
	case 7:
		return g.pick("it's", `back\slash`, "q?:#")
	}
	return g.pick("a", "b", "c", "dd", "ee", "ff", "B", "Dd")
}

func (g *stmtGen) next() (string, []any) {
	var args []any
	arg := func(v any) string { args = append(args, v); return "?" }
	switch g.rng.Intn(31) {
	case 27:
		return g.pick("INSERT", "REPLACE") + " INTO a (id, v) VALUES (" + arg(g.pick2(g.intVal(), int64(0), int64(g.rng.Intn(30)+1))) + ", " + arg(g.intVal()) + ")", args
	case 28:
		return "INSERT INTO a " + g.pick("(v) VALUES (?)", "(w, id) VALUES ('x', ?)", "VALUES (?, 1, 'y')"), []any{g.pick2(g.intVal(), int64(g.rng.Intn(40)))}
	case 29:
		return g.pick("SELECT LAST_INSERT_ID()", "SELECT ROW_COUNT()", "SELECT FOUND_ROWS()"), nil
	case 30:
		return "SELECT * FROM a WHERE id = " + arg(g.id()), args
	case 0:
		// AND CHAIN is answered before either path (txnend.go); RELEASE
		// would end the connection.
		return g.pick("BEGIN", "START TRANSACTION", "COMMIT", "ROLLBACK", "BEGIN", "COMMIT",
			"COMMIT AND CHAIN", "ROLLBACK WORK AND CHAIN", "COMMIT WORK AND NO CHAIN", "rollback no release"), nil
	case 1:
		return g.pick("SET autocommit=0", "SET autocommit=1", "COMMIT", "SET SESSION autocommit = ON", "set @@autocommit=off",
			"SET autocommit=2", "SET autocommit='maybe'", "SET @@session.autocommit = 1", "SET autocommit = true"), nil
	case 2, 3, 4:
		cols := g.pick("*", "id, k, c", "c", "pad, u, big, un, d", "K AS kk, id", "t.c", "K, ID")
		lock := g.pick("", "", "", " FOR UPDATE", " LOCK IN SHARE MODE")
		return "SELECT " + cols + " FROM t WHERE id = " + arg(g.id()) + lock, args
	case 5:
		ids := []string{arg(g.id()), arg(g.id())}
		if g.rng.Intn(2) == 0 {
			ids = append(ids, arg(g.id()))
		}
		return "SELECT id, c FROM t WHERE id IN (" + strings.Join(ids, ", ") + ")", args
	case 6, 7:
		q := "SELECT id, c FROM t WHERE id BETWEEN " + arg(g.id()) + " AND " + arg(g.id())
		if g.rng.Intn(2) == 0 {
			q += g.pick(" ORDER BY id", " ORDER BY id DESC", " ORDER BY c")
		}
		if g.rng.Intn(2) == 0 {
			q += " LIMIT " + arg(int64(g.rng.Intn(4)))
		}
		return q, args
	case 8:
		return "SELECT id FROM t WHERE id " + g.pick(">=", ">", "<", "<=") + " " + arg(g.id()) +
			" AND id " + g.pick("<", "<=") + " " + arg(g.id()), args
	case 20:
		q := "SELECT " + g.pick("SUM(k)", "COUNT(*)", "count(u), Sum(big)", "SUM(un) AS s, COUNT(pad)", "SUM(c)", "SUM(d)") +
			" FROM t WHERE id BETWEEN " + arg(g.id()) + " AND " + arg(g.id())
		return q, args
	case 21:
		q := "SELECT " + g.pick("id, c", "c", "DISTINCT c", "DISTINCT pad", "DISTINCT c, id") + " FROM t WHERE id BETWEEN " +
			arg(g.id()) + " AND " + arg(g.id()) + g.pick(" ORDER BY c", " ORDER BY c DESC", " ORDER BY pad", " ORDER BY id DESC", " ORDER BY c, id")
		if g.rng.Intn(3) == 0 {
			q += " LIMIT " + arg(int64(g.rng.Intn(4)))
		}
		return q, args
	case 9:
		return "SELECT * FROM t WHERE u = " + arg(g.strVal()), args
	case 10:
		// Through the secondary index k.
		q := "SELECT " + g.pick("id", "id, k, c", "*", "COUNT(*)", "SUM(k), COUNT(c)", "DISTINCT c") + " FROM t WHERE "
		switch g.rng.Intn(5) {
		case 0:
			q += "k = " + arg(g.intVal())
		case 1:
			q += "k BETWEEN " + arg(g.intVal()) + " AND " + arg(g.intVal())
		case 2:
			q += "k >= " + arg(g.intVal()) + " AND k < " + arg(g.intVal())
		case 3:
			q += "k > " + arg(g.intVal())
		default:
			q += "k <= " + arg(g.intVal())
		}
		if !strings.Contains(q, "(") || strings.Contains(q, "DISTINCT") {
			q += g.pick("", " ORDER BY k", " ORDER BY k DESC", " ORDER BY id", " ORDER BY c")
			if g.rng.Intn(2) == 0 {
				q += " LIMIT " + arg(int64(g.rng.Intn(5)))
			}
		}
		return q, args
	case 11, 12:
		op := g.pick("+", "-")
		return "UPDATE t SET k = k " + op + " " + arg(g.intVal()) + " WHERE id = " + arg(g.id()), args
	case 13:
		return "UPDATE t SET c = " + arg(g.strVal()) + ", pad = " + arg(g.strVal()) + " WHERE id = " + arg(g.id()), args
	case 14:
		return "UPDATE t SET u = " + arg(g.strVal()) + " WHERE id = " + arg(g.id()), args
	case 15:
		return "UPDATE t SET big = big " + g.pick("+", "-") + " " + arg(g.intVal()) + ", un = " + arg(g.intVal()) + " WHERE id = " + arg(g.id()), args
	case 16:
		return "UPDATE t SET un = un + 1 WHERE id = " + arg(g.id()), args
	case 17:
		return "UPDATE t SET k = " + arg(g.intVal()) + " WHERE u = " + arg(g.strVal()), args
	case 18:
		return "DELETE FROM t WHERE id = " + arg(g.id()), args
	case 19:
		return "DELETE FROM t WHERE u = " + arg(g.strVal()), args
	}
	// INSERT or REPLACE, most often complete and valid.
	verb := g.pick("INSERT", "INSERT", "INSERT", "REPLACE")
	if g.rng.Intn(4) == 0 {
		return verb + " INTO t VALUES (" + arg(g.id()) + ", " + arg(g.intVal()) + ", " + arg(g.strVal()) + ", " +
			arg(g.strVal()) + ", " + arg(g.strVal()) + ", " + arg(g.intVal()) + ", " + arg(g.intVal()) + ", NULL)", args
	}
	id := any(int64(g.rng.Intn(40)))
	if g.rng.Intn(6) == 0 {
		id = g.id()
	}
	c := any(g.pick("a", "b", "c"))
	if g.rng.Intn(5) == 0 {
		c = g.strVal()
	}
	u := any(nil)
	if g.rng.Intn(3) == 0 {
		u = g.strVal()
	}
	if g.rng.Intn(5) == 0 {
		return verb + " INTO t (id, k, c) VALUES (" + arg(id) + ", " + arg(g.intVal()) + ", " + arg(c) + ")", args
	}
	return verb + " INTO t (c, id, k, u, pad, big, un, d) VALUES (" + arg(c) + ", " + arg(id) + ", " + arg(int64(g.rng.Intn(100))) + ", " +
		arg(u) + ", " + arg(g.strVal()) + ", " + arg(g.intVal()) + ", " + arg(int64(g.rng.Intn(9))) + ", NULL)", args
}

// inline renders a statement with its arguments as literals.
func (g *stmtGen) inline(q string, args []any) string {
	var b strings.Builder
	i := 0
	for _, r := range q {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		switch v := args[i].(type) {
		case nil:
			b.WriteString("NULL")
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case string:
			b.WriteString("'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'")
		}
		i++
	}
	return b.String()
}

// TestFastPathColumnDefinitions compares every field of the column
// definitions (name, original name, table, original table, schema, type,
// character set, length, flags, decimals) the fast path sends with GMS's,
// through PyMySQL, which exposes them all.
func TestFastPathColumnDefinitions(t *testing.T) {
	py := needTool(t, "python3")
	if err := tool(t, time.Minute, py, "-c", "import pymysql").Run(); err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("PyMySQL is required (LOCKSTEP_REQUIRE_TOOLS=1) but not installed")
		}
		t.Skip("PyMySQL not installed")
	}
	s := startServer(t, t.TempDir())
	script := fmt.Sprintf(`
import pymysql
def conn(fast):
    c = pymysql.connect(host="127.0.0.1", port=%d, user="root", autocommit=True)
    c.cursor().execute("SET SESSION lockstep_fast_path = " + ("ON" if fast else "OFF"))
    return c
setup = conn(True).cursor()
setup.execute("CREATE DATABASE cd")
setup.execute("USE cd")
setup.execute("CREATE TABLE t (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, k BIGINT NOT NULL, c CHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, v VARCHAR(30), d DECIMAL(7,3), f DOUBLE, ts DATETIME(3), b VARBINARY(8), UNIQUE KEY (v))")
setup.execute("INSERT INTO t VALUES (1, 2, 'x', 'y', 1.5, 2.5, '2024-01-02 03:04:05.678', 'bin'), (2, 3, 'z', NULL, NULL, NULL, NULL, NULL)")
queries = [
    "SELECT * FROM t WHERE id = 1",
    "SELECT id AS i, K, t.c FROM t WHERE id IN (1, 2)",
    "SELECT x.v, x.ts FROM cd.t x WHERE id BETWEEN 1 AND 2 ORDER BY id",
    "SELECT d, f, b FROM t WHERE v = 'y'",
    "SELECT SUM(k), COUNT(*), count(v) AS n FROM t WHERE id >= 1",
    "SELECT DISTINCT c FROM t WHERE id < 5 ORDER BY c DESC",
]
fast, slow = conn(True).cursor(), conn(False).cursor()
for cur in (fast, slow):
    cur.execute("USE cd")
for q in queries:
    out = []
    for cur in (fast, slow):
        cur.execute(q)
        rows = cur.fetchall()
        out.append(([f.__dict__ for f in cur._result.fields], rows))
    if out[0] != out[1]:
        raise SystemExit("%%s\nfast path: %%s\nGMS:       %%s" %% (q, out[0], out[1]))
setup.execute("SHOW GLOBAL STATUS LIKE 'Lockstep_fastpath_statements'")
print("ok", setup.fetchall()[0][1])
`, s.port)
	out, err := tool(t, 2*time.Minute, py, "-c", script).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("PyMySQL: %v\n%s", err, out)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(out), "ok "))); n < 6 {
		t.Fatalf("the fast path ran %d statements; the comparison did not exercise it", n)
	}
}

// TestReadOnlyTransactionsBothPaths: a READ ONLY transaction, or a session
// whose transactions are READ ONLY by default, refuses writes with 1792 on
// the fast path (text and prepared) and through go-mysql-server alike.
func TestReadOnlyTransactionsBothPaths(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, root, "INSERT INTO d.t VALUES (1, 1)")
	ctx := context.Background()
	for _, fast := range []string{"ON", "OFF"} {
		c := conn(t, root)
		mustConnExec(t, c, "SET lockstep_fast_path = "+fast)
		refused := func(q string, args ...any) {
			t.Helper()
			if _, err := c.ExecContext(ctx, q, args...); errNumber(err) != 1792 {
				t.Errorf("fast path %s: %s: %v, want 1792", fast, q, err)
			}
		}
		mustConnExec(t, c, "START TRANSACTION READ ONLY")
		refused("UPDATE d.t SET v = v + 1 WHERE id = 1")
		refused("UPDATE d.t SET v = v + 1 WHERE id = ?", 1)
		refused("INSERT INTO d.t VALUES (?, ?)", 2, 2)
		mustConnExec(t, c, "COMMIT")
		mustConnExec(t, c, "SET SESSION TRANSACTION READ ONLY")
		refused("DELETE FROM d.t WHERE id = 1")
		refused("INSERT INTO d.t VALUES (3, 3)")
		mustConnExec(t, c, "BEGIN")
		refused("UPDATE d.t SET v = 5 WHERE id = 1")
		mustConnExec(t, c, "COMMIT")
		mustConnExec(t, c, "SET SESSION TRANSACTION READ WRITE")
		mustConnExec(t, c, "UPDATE d.t SET v = v + 1 WHERE id = 1")
		c.Close()
	}
	var v int
	if err := root.QueryRow("SELECT v FROM d.t WHERE id = 1").Scan(&v); err != nil || v != 3 {
		t.Fatalf("v = %d (%v), want 3: only the READ WRITE updates", v, err)
	}
}

// TestForSharePrepared: FOR SHARE in a statement prepared with the binary
// protocol, which vitess parses itself and whose grammar lacks it, reads
// as LOCK IN SHARE MODE; with NOWAIT or SKIP LOCKED, which that form
// cannot carry, it is refused (1235) rather than run without them.
func TestForSharePrepared(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.j (id INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO d.j VALUES (1)")
	var id int
	if err := db.QueryRow("SELECT id FROM d.j WHERE id = ? FOR SHARE", 1).Scan(&id); err != nil || id != 1 {
		t.Fatalf("prepared FOR SHARE: %d %v", id, err)
	}
	for _, q := range []string{"SELECT id FROM d.j WHERE id = ? FOR SHARE NOWAIT", "SELECT id FROM d.j WHERE id = ? for share skip  locked"} {
		if err := db.QueryRow(q, 1).Scan(&id); errNumber(err) != 1235 {
			t.Fatalf("%s: %v, want 1235", q, err)
		}
	}
}

// TestPreparedDo prepares DO with COM_STMT_PREPARE: no result columns,
// each execution's effects and errors are its expressions', and its
// answer is an OK. A prepare vitess refuses after a DO's check leaves
// nothing behind for the next one.
func TestPreparedDo(t *testing.T) {
	s := startServer(t, t.TempDir())
	ctx := context.Background()
	conn := s.conn(ctx)
	take, err := conn.PrepareContext(ctx, "DO GET_LOCK(?, 0), SLEEP(0)")
	if err != nil {
		t.Fatal(err)
	}
	release, err := conn.PrepareContext(ctx, "DO RELEASE_LOCK(?)")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		name := fmt.Sprintf("lock%d", i)
		res, err := take.ExecContext(ctx, name)
		if err != nil {
			t.Fatalf("execution %d: %v", i, err)
		}
		if n, _ := res.RowsAffected(); n != 0 {
			t.Fatalf("execution %d: %d rows affected", i, n)
		}
		free := -1
		if err := conn.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", name).Scan(&free); err != nil || free != 0 {
			t.Fatalf("execution %d: the lock is free (%d, %v)", i, free, err)
		}
		if _, err := release.ExecContext(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", name).Scan(&free); err != nil || free != 1 {
			t.Fatalf("execution %d: the lock is held (%d, %v)", i, free, err)
		}
	}
	// Read as a query, a DO has no columns.
	rows, err := conn.QueryContext(ctx, "DO ?", 1)
	if err != nil {
		t.Fatal(err)
	}
	if cols, _ := rows.Columns(); len(cols) != 0 || rows.Next() {
		t.Fatalf("a prepared DO's columns: %v", cols)
	}
	rows.Close()
	// The SELECT's errors are DO's.
	if _, err := conn.ExecContext(ctx, "DO (SELECT 1 UNION SELECT ?)", 2); errNumber(err) != 1242 {
		t.Fatalf("a DO whose subquery returns two rows: %v, want 1242", err)
	}
	// A DO that does not parse, then a SELECT of the same expression:
	// the SELECT has its row.
	if _, err := conn.ExecContext(ctx, "DO 1 +", 1); errNumber(err) != 1064 {
		t.Fatalf("a DO that does not parse: %v, want 1064", err)
	}
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT ? + 0", 1).Scan(&one); err != nil || one != 1 {
		t.Fatalf("a prepared SELECT after it: %d, %v", one, err)
	}
	// SQL PREPARE of a DO is refused: its EXECUTE cannot be told apart.
	if _, err := conn.ExecContext(ctx, "PREPARE p FROM 'DO 1'"); errNumber(err) != 1295 {
		t.Fatalf("PREPARE of a DO: %v, want 1295", err)
	}
}
