package integration

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// procedureSetup makes the procedures the tests below call. go-sql-driver
// sends each CREATE PROCEDURE whole (no DELIMITER needed).
var procedureSetup = []string{
	"CREATE DATABASE sp",
	"CREATE TABLE sp.acct (id INT PRIMARY KEY, name VARCHAR(20), bal DECIMAL(10,2))",
	"INSERT INTO sp.acct VALUES (1, 'ann', 100.50), (2, 'bob', 20.00), (3, 'cy', 0)",
	// A cursor read to its end, with a NOT FOUND handler and LEAVE.
	`CREATE PROCEDURE sp.sumcur(OUT total DECIMAL(10,2), OUT n INT)
	BEGIN
	  DECLARE done INT DEFAULT 0;
	  DECLARE b DECIMAL(10,2);
	  DECLARE c CURSOR FOR SELECT bal FROM acct ORDER BY id;
	  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
	  SET total = 0, n = 0;
	  OPEN c;
	  rd: LOOP
	    FETCH c INTO b;
	    IF done THEN LEAVE rd; END IF;
	    SET total = total + b;
	    SET n = n + 1;
	  END LOOP;
	  CLOSE c;
	END`,
	// A transaction in the body, SIGNAL, and an EXIT handler that rolls
	// back and RESIGNALs.
	`CREATE PROCEDURE sp.transfer(IN a INT, IN b INT, IN amt DECIMAL(10,2))
	BEGIN
	  DECLARE EXIT HANDLER FOR SQLEXCEPTION
	  BEGIN
	    ROLLBACK;
	    RESIGNAL;
	  END;
	  START TRANSACTION;
	  UPDATE acct SET bal = bal - amt WHERE id = a;
	  IF (SELECT bal FROM acct WHERE id = a) < 0 THEN
	    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'insufficient funds', MYSQL_ERRNO = 1644;
	  END IF;
	  UPDATE acct SET bal = bal + amt WHERE id = b;
	  COMMIT;
	END`,
	// A handler for an error number; two result sets.
	`CREATE PROCEDURE sp.dupkey()
	BEGIN
	  DECLARE CONTINUE HANDLER FOR 1062 SELECT 'dup handled' AS msg;
	  INSERT INTO acct VALUES (1, 'again', 0);
	  SELECT 'after' AS msg;
	END`,
	`CREATE PROCEDURE sp.grade(IN s INT, OUT g CHAR(1))
	BEGIN
	  CASE
	    WHEN s >= 90 THEN SET g = 'A';
	    WHEN s >= 80 THEN SET g = 'B';
	    ELSE SET g = 'C';
	  END CASE;
	END`,
	`CREATE PROCEDURE sp.pick(IN s INT)
	BEGIN
	  CASE s WHEN 1 THEN SELECT 'one' AS w; WHEN 2 THEN SELECT 'two' AS w; END CASE;
	END`,
	`CREATE PROCEDURE sp.rep(INOUT x INT)
	BEGIN
	  REPEAT SET x = x * 2; UNTIL x > 100 END REPEAT;
	END`,
	// Nested CALLs with local variables for OUT and INOUT parameters.
	`CREATE PROCEDURE sp.outer_p()
	BEGIN
	  DECLARE g CHAR(1);
	  DECLARE v INT DEFAULT 3;
	  CALL grade(85, g);
	  CALL rep(v);
	  SELECT g, v;
	END`,
	// SELECT INTO of no row: a warning, the variable unchanged.
	`CREATE PROCEDURE sp.nodata()
	BEGIN
	  DECLARE x INT DEFAULT 7;
	  SELECT id INTO x FROM acct WHERE id = 99;
	  SELECT x;
	END`,
	`CREATE PROCEDURE sp.iter()
	BEGIN
	  DECLARE i INT DEFAULT 0;
	  DECLARE s VARCHAR(100) DEFAULT '';
	  l: WHILE i < 10 DO
	    SET i = i + 1;
	    IF i % 2 = 0 THEN ITERATE l; END IF;
	    SET s = CONCAT(s, i, ',');
	  END WHILE l;
	  SELECT s;
	END`,
	// Quotes and backslashes in a variable's value; a variable in WHERE.
	`CREATE PROCEDURE sp.strs(IN p VARCHAR(50))
	BEGIN
	  DECLARE q VARCHAR(50) DEFAULT CONCAT(p, '''s \\ back');
	  SELECT q, LENGTH(q), name FROM acct WHERE name = p;
	END`,
	// A handler of an enclosing block, a LEAVE of a labelled block, a
	// condition name.
	`CREATE PROCEDURE sp.blocks(IN k INT)
	BEGIN
	  DECLARE no_table CONDITION FOR SQLSTATE '42S02';
	  DECLARE msg VARCHAR(40) DEFAULT 'start';
	  DECLARE CONTINUE HANDLER FOR no_table SET msg = CONCAT(msg, ',caught');
	  b1: BEGIN
	    IF k = 1 THEN LEAVE b1; END IF;
	    SELECT * FROM nowhere;
	    SET msg = CONCAT(msg, ',after');
	  END b1;
	  SELECT msg;
	END`,
	// FETCH past the end without a handler: error 1329.
	`CREATE PROCEDURE sp.nohandler()
	BEGIN
	  DECLARE b DECIMAL(10,2);
	  DECLARE c CURSOR FOR SELECT bal FROM acct WHERE id = 1;
	  OPEN c;
	  FETCH c INTO b;
	  FETCH c INTO b;
	END`,
	// Only writes: the OK's rows affected are the last statement's.
	`CREATE PROCEDURE sp.bump()
	BEGIN
	  UPDATE acct SET bal = bal + 1;
	  UPDATE acct SET bal = bal + 1 WHERE id < 3;
	END`,
	`CREATE PROCEDURE sp.short(IN p VARCHAR(3)) SELECT p`,
	// A result set, then an error: the client gets both.
	`CREATE PROCEDURE sp.errafter() BEGIN SELECT 1 AS a; SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'after a result', MYSQL_ERRNO = 45001; END`,
	// DO statements, one of them a WHILE's body.
	`CREATE PROCEDURE sp.dos() BEGIN DECLARE i INT DEFAULT 0; DO 1, SLEEP(0); WHILE i < 2 DO DO i; SET i = i + 1; END WHILE; SELECT i; END`,
	`CREATE PROCEDURE sp.warn() BEGIN SIGNAL SQLSTATE '01000' SET MESSAGE_TEXT = 'just a warning'; SELECT 'went on' AS w; END`,
	// A variable in ORDER BY is a value, not a column's position; in
	// LIMIT, the number of rows; a negative one after a minus sign.
	`CREATE PROCEDURE sp.ordlim(IN k INT) BEGIN SELECT id FROM acct ORDER BY k, id DESC LIMIT k; SELECT COUNT(*) AS c FROM acct GROUP BY k; END`,
	`CREATE PROCEDURE sp.neg(IN k INT) SELECT -k AS m, 1-k AS n, k AS o`,
	`CREATE PROCEDURE sp.users() SELECT USER() AS u, SESSION_USER() AS s, SYSTEM_USER() AS y, CURRENT_USER() AS c`,
	// ITERATE starts a REPEAT's body again without its UNTIL.
	`CREATE PROCEDURE sp.rit() BEGIN DECLARE c INT DEFAULT 0; DECLARE s VARCHAR(100) DEFAULT ''; l: REPEAT SET c = c + 1; SET s = CONCAT(s, c, ','); IF c > 6 THEN LEAVE l; END IF; IF c < 5 THEN ITERATE l; END IF; UNTIL c >= 2 END REPEAT l; SELECT s; END`,
	// Temporal variables in arithmetic: as their types, not as strings.
	`CREATE PROCEDURE sp.temporal(IN d DATE, IN t TIME, IN dt DATETIME) SELECT d + 0 AS a, t + 0 AS b, dt + 0 AS c, DATEDIFF(d, '2024-01-01') AS e, t < '10:00:00' AS f`,
	`CREATE PROCEDURE sp.fact(IN n INT, OUT r BIGINT) BEGIN IF n <= 1 THEN SET r = 1; ELSE CALL fact(n - 1, r); SET r = r * n; END IF; END`,
	`CREATE PROCEDURE sp.typed(IN d DATE, IN f DOUBLE, IN bin VARBINARY(4), IN n DECIMAL(5,1))
	  SELECT d, d + INTERVAL 1 DAY AS next_day, f * 2 AS twice, HEX(bin) AS h, n, n IS NULL AS missing`,
}

// procedureCalls are run in order on one connection to each server;
// each one's result sets, rows affected and error number are compared.
var procedureCalls = []string{
	"CALL sumcur(@t, @n)", "SELECT @t, @n",
	"CALL transfer(1, 2, 10)", "SELECT * FROM acct ORDER BY id",
	"CALL transfer(3, 2, 10)", "SELECT * FROM acct ORDER BY id",
	"CALL dupkey()",
	"CALL outer_p()",
	"CALL nodata()",
	"CALL iter()",
	"CALL strs('bob')",
	"SET @g = 'z'", "CALL grade(95, @g)", "SELECT @g",
	"CALL pick(2)", "CALL pick(3)",
	"CALL blocks(0)", "CALL blocks(1)",
	"CALL nohandler()",
	"CALL short('abcd')", "CALL short('abc')",
	"CALL warn()",
	"CALL errafter()",
	"CALL ordlim(2)", "CALL ordlim(1)", "CALL neg(-5)", "CALL rit()", "CALL users()", "CALL temporal('2024-02-28', '09:30:15', '2024-02-28 09:30:15')",
	"CALL dos()",
	"CALL typed('2024-02-28', 1.25, X'00ff', NULL)",
	"CALL fact(5, @r)", "SET max_sp_recursion_depth = 10", "CALL fact(5, @r)", "SELECT @r", "CALL fact(12, @r)", "SET max_sp_recursion_depth = 0",
	"CALL grade(1)", "CALL nosuch()", "CALL rep(5)",
	"CALL sp.iter", "CALL `sp`.`iter`()",
}

// callResults is what a statement (prepared, with args) gave a
// go-sql-driver client: each result set (columns, rows) and the error
// number.
func callResults(db *sql.DB, q string, args ...any) string {
	rows, err := db.Query(q, args...)
	return resultSets(rows, err)
}

// preparedResults is callResults for a statement prepared first, with
// or without arguments.
func preparedResults(db *sql.DB, q string, args ...any) string {
	stmt, err := db.Prepare(q)
	if err != nil {
		return fmt.Sprintf("prepare: error %d", errNumber(err))
	}
	defer stmt.Close()
	rows, err := stmt.Query(args...)
	return resultSets(rows, err)
}

// isCallText reports whether q is one CALL statement.
func isCallText(q string) bool {
	return strings.HasPrefix(q, "CALL ") && !strings.Contains(q, ";")
}

// resultSets describes what rows (or err) gave: each result set
// (columns, rows) and the error number.
func resultSets(rows *sql.Rows, err error) string {
	if err != nil {
		return fmt.Sprintf("error %d", errNumber(err))
	}
	defer rows.Close()
	var b strings.Builder
	for {
		cols, _ := rows.Columns()
		fmt.Fprintf(&b, "[%s]", strings.Join(cols, ","))
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return b.String() + " scan: " + err.Error()
			}
			for i, v := range vals {
				if i > 0 {
					b.WriteString("|")
				}
				if v == nil {
					b.WriteString("NULL")
				} else {
					b.Write(v)
				}
			}
			b.WriteString(";")
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, " error %d", errNumber(err))
	}
	return b.String()
}

// TestStoredProceduresAgainstMariaDB makes the same procedures on
// Lockstep and MariaDB 10.11 and calls them the same way, through
// go-sql-driver without multiStatements (vitess would have answered such
// a client with one result only) and with it: the result sets (column
// names included), rows affected, errors, OUT parameters and tables are
// the same. Where MariaDB differs from MySQL (it keeps a body's warnings
// after the CALL, and counts the rows all its statements changed) no
// case is compared. Prepared, every CALL gives the same result sets
// and errors as from MariaDB.
func TestStoredProceduresAgainstMariaDB(t *testing.T) {
	m := startMariaDB(t, 1)
	l := startServer(t, t.TempDir())
	for _, q := range procedureSetup {
		mustExec(t, m.db(), q)
		mustExec(t, l.db(""), q)
	}
	for _, opts := range []string{"", "?multiStatements=true"} {
		mdb := oneSession(t, "root@unix("+m.sock()+")/sp"+opts) // one session: its user variables
		ldb := oneSession(t, fmt.Sprintf("root@tcp(127.0.0.1:%d)/sp%s", l.port, opts))
		calls := procedureCalls
		if opts != "" {
			calls = append(calls, "CALL dupkey(); SELECT 'next' AS n; CALL pick(1)", "CALL sumcur(@t, @n); CALL iter()")
		} else {
			calls = append(calls, "CALL iter(); SELECT 1")
		}
		for _, q := range calls {
			want, got := callResults(mdb, q), callResults(ldb, q)
			if want != got {
				t.Errorf("%s (%s):\nMariaDB  %s\nLockstep %s", q, opts, want, got)
			}
		}
		if ws, ls := callResults(mdb, "SELECT * FROM acct ORDER BY id"), callResults(ldb, "SELECT * FROM acct ORDER BY id"); ws != ls {
			t.Fatalf("tables differ: MariaDB %s, Lockstep %s", ws, ls)
		}
	}
	// Prepared CALLs: every result set, then the OK or the error, over
	// the binary protocol; each statement executed twice, and a query
	// after it to show the connection still in step.
	mustExec(t, l.db(""), "CREATE PROCEDURE sp.twosets(IN k INT) BEGIN SELECT k; SELECT k + 1 AS k1; END")
	mustExec(t, m.db(), "CREATE PROCEDURE sp.twosets(IN k INT) BEGIN SELECT k; SELECT k + 1 AS k1; END")
	mdb := oneSession(t, "root@unix("+m.sock()+")/sp")
	ldb := oneSession(t, fmt.Sprintf("root@tcp(127.0.0.1:%d)/sp", l.port))
	prepared := []struct {
		q    string
		args []any
	}{
		{"CALL sp.strs(?)", []any{"bob"}},
		{"CALL sp.outer_p()", nil},
		{"CALL sp.typed(?, ?, ?, ?)", []any{"2024-02-29", 2.5, []byte{1, 2}, nil}},
		{"CALL sp.pick(?)", []any{7}},
		{"CALL sp.twosets(?)", []any{1}},
	}
	for _, q := range procedureCalls {
		if isCallText(q) {
			prepared = append(prepared, struct {
				q    string
				args []any
			}{q, nil})
		}
	}
	for _, c := range prepared {
		for range 2 {
			// MySQL 8 looks the procedure up when the CALL is prepared
			// (1305 then), MariaDB when it runs: the same error.
			want, got := preparedResults(mdb, c.q, c.args...), strings.TrimPrefix(preparedResults(ldb, c.q, c.args...), "prepare: ")
			if want != got {
				t.Errorf("prepared %s %v:\nMariaDB  %s\nLockstep %s", c.q, c.args, want, got)
			}
		}
		if want, got := callResults(mdb, "SELECT 'in step' AS s"), callResults(ldb, "SELECT 'in step' AS s"); want != got {
			t.Fatalf("after prepared %s: MariaDB %s, Lockstep %s", c.q, want, got)
		}
	}
	// A CALL's OK carries the rows its last statement changed, as MySQL
	// counts them (MariaDB adds up the body's statements).
	res, err := l.db("sp").Exec("CALL bump()")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("CALL bump(): %d rows affected, want 2 (the last UPDATE's)", n)
	}
	// So too from a session under another sql_mode than the
	// procedure's, which is put back after the body.
	other := oneSession(t, fmt.Sprintf("root@tcp(127.0.0.1:%d)/sp", l.port))
	mustExec(t, other, "SET SESSION sql_mode = 'ANSI_QUOTES'")
	if res, err = other.Exec("CALL bump()"); err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("CALL bump() under another sql_mode: %d rows affected, want 2", n)
	}
}

// TestStoredProcedurePrivilegesAndSession: making, dropping, calling and
// reading a procedure need MySQL's privileges (CREATE ROUTINE 1044,
// ALTER ROUTINE and EXECUTE 1370); a procedure runs with its definer's
// privileges unless SQL SECURITY INVOKER, and in its own database and
// sql_mode, and the caller's account, database and sql_mode are back
// when the CALL ends, also after an error; a CALL's loop is stopped by
// KILL QUERY, and SHOW PROCESSLIST shows the CALL meanwhile.
func TestStoredProcedurePrivilegesAndSession(t *testing.T) {
	l := startServer(t, t.TempDir())
	root := l.db("")
	for _, q := range []string{
		"CREATE DATABASE sp",
		"CREATE DATABASE other",
		"CREATE TABLE sp.secret (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO sp.secret VALUES (1, 'hidden')",
		"CREATE USER caller@'%' IDENTIFIED BY 'pw'",
		"CREATE USER nobody@'%' IDENTIFIED BY 'pw'",
		"GRANT EXECUTE ON sp.* TO caller@'%'",
		"GRANT SELECT ON other.* TO caller@'%'",
		"SET SESSION sql_mode = 'ANSI_QUOTES'",
		`CREATE PROCEDURE sp.peek(OUT who VARCHAR(100), OUT val VARCHAR(10), OUT db VARCHAR(64), OUT mode TEXT)
		 BEGIN SELECT CURRENT_USER(), v, DATABASE(), @@sql_mode INTO who, val, db, mode FROM secret WHERE id = 1; END`,
		"CREATE PROCEDURE sp.peek_inv() SQL SECURITY INVOKER SELECT v FROM sp.secret",
		"CREATE PROCEDURE sp.users(OUT u VARCHAR(100), OUT c VARCHAR(100)) SELECT USER(), CURRENT_USER() INTO u, c",
		"CREATE PROCEDURE sp.fail() BEGIN SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'; SELECT * FROM nope; END",
		"CREATE DEFINER = ghost@'%' PROCEDURE sp.ghostly() SELECT 1",
		"CREATE PROCEDURE sp.spin() BEGIN DECLARE i INT DEFAULT 0; LOOP SET i = i + 1; END LOOP; END",
	} {
		mustExec(t, root, q)
	}
	open := func(user, dbname string) *sql.DB {
		return oneSession(t, fmt.Sprintf("%s:pw@tcp(127.0.0.1:%d)/%s", user, l.port, dbname))
	}
	caller, nobody := open("caller", "other"), open("nobody", "")
	mustExec(t, caller, "SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")

	// The definer's privileges, database and sql_mode inside; the
	// caller's after.
	mustExec(t, caller, "CALL sp.peek(@who, @val, @db, @mode)")
	var who, val, db, mode, me, mydb, mymode string
	if err := caller.QueryRow("SELECT @who, @val, @db, @mode, CURRENT_USER(), DATABASE(), @@sql_mode").Scan(&who, &val, &db, &mode, &me, &mydb, &mymode); err != nil {
		t.Fatal(err)
	}
	if who != "root@localhost" || val != "hidden" || db != "sp" || mode != "ANSI_QUOTES" || me != "caller@%" || mydb != "other" || mymode != "STRICT_TRANS_TABLES" {
		t.Fatalf("inside: %s %s %s %s; after: %s %s %s", who, val, db, mode, me, mydb, mymode)
	}
	// USER() is the caller as it logged in, CURRENT_USER() the definer.
	var u, c string
	mustExec(t, caller, "CALL sp.users(@u, @c)")
	if err := caller.QueryRow("SELECT @u, @c").Scan(&u, &c); err != nil || u != "caller@localhost" || c != "root@localhost" {
		t.Fatalf("USER() and CURRENT_USER() inside a DEFINER procedure: %q %q (%v)", u, c, err)
	}
	// An error inside leaves the caller's session as it was too.
	if _, err := caller.Exec("CALL sp.fail()"); errNumber(err) != 1146 {
		t.Fatalf("CALL sp.fail(): %v, want 1146", err)
	}
	if err := caller.QueryRow("SELECT CURRENT_USER(), DATABASE(), @@sql_mode").Scan(&me, &mydb, &mymode); err != nil || me != "caller@%" || mydb != "other" || mymode != "STRICT_TRANS_TABLES" {
		t.Fatalf("after an error: %s %s %s (%v)", me, mydb, mymode, err)
	}
	for _, c := range []struct {
		db   *sql.DB
		q    string
		want uint16
	}{
		{caller, "CALL sp.peek_inv()", 1142}, // the invoker's privileges
		{caller, "SELECT * FROM sp.secret", 1142},
		{caller, "CREATE PROCEDURE sp.x() SELECT 1", 1044},
		{caller, "DROP PROCEDURE sp.peek", 1370},
		{caller, "ALTER PROCEDURE sp.peek COMMENT 'mine'", 1370},
		{nobody, "CALL sp.peek(@a, @b, @c, @d)", 1370},
		{root, "ALTER PROCEDURE sp.nope COMMENT 'x'", 1305},
		{root, "ALTER PROCEDURE sp.peek DETERMINISTIC", 1064}, // CREATE's alone
		{root, "ALTER FUNCTION sp.peek COMMENT 'x'", 1235},
		{root, "CALL sp.ghostly()", 1449}, // its definer does not exist
		{root, "CALL sp.peek(1, @b, @c, @d)", 1414},
		{root, "PREPARE s FROM 'CALL sp.peek_inv()'", 0},
		{root, "EXECUTE s", 1235},
		{root, "CREATE TRIGGER sp.t BEFORE INSERT ON sp.secret FOR EACH ROW CALL sp.peek_inv()", 1235},
		{root, "CREATE PROCEDURE sp.r() BEGIN DECLARE CONTINUE HANDLER FOR SQLWARNING BEGIN END; END", 1235},
	} {
		_, err := c.db.Exec(c.q)
		if errNumber(err) != c.want || (c.want == 0 && err != nil) {
			t.Errorf("%s: %v, want %d", c.q, err, c.want)
		}
	}
	// ALTER PROCEDURE changes how the procedure runs: SQL SECURITY
	// INVOKER, and it is kept so across a restart.
	mustExec(t, root, "ALTER PROCEDURE sp.peek SQL SECURITY INVOKER COMMENT 'as the caller'")
	if _, err := caller.Exec("CALL sp.peek(@who, @val, @db, @mode)"); errNumber(err) != 1142 {
		t.Fatalf("CALL of a procedure altered to SQL SECURITY INVOKER: %v, want 1142", err)
	}
	l.stop()
	l.start()
	root, caller = l.db(""), open("caller", "other")
	var comment, security string
	if err := root.QueryRow("SELECT ROUTINE_COMMENT, SECURITY_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'sp' AND ROUTINE_NAME = 'peek'").Scan(&comment, &security); err != nil ||
		comment != "as the caller" || security != "INVOKER" {
		t.Fatalf("after a restart: %q %q (%v)", comment, security, err)
	}
	mustExec(t, root, "ALTER PROCEDURE sp.peek SQL SECURITY DEFINER COMMENT ''")
	mustExec(t, caller, "SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")

	// What each may read of a procedure: the caller, with EXECUTE, that
	// it exists but not its body; another account nothing.
	var body sql.NullString
	if err := caller.QueryRow("SHOW CREATE PROCEDURE sp.peek").Scan(new(string), new(string), &body, new(string), new(string), new(string)); err != nil || body.Valid {
		t.Fatalf("SHOW CREATE PROCEDURE without SHOW_ROUTINE: %v %v, want NULL", body, err)
	}
	if err := root.QueryRow("SHOW CREATE PROCEDURE sp.peek").Scan(new(string), &mode, &body, new(string), new(string), new(string)); err != nil || !strings.HasPrefix(body.String, "CREATE DEFINER=`root`@`localhost` PROCEDURE") || mode != "ANSI_QUOTES" {
		t.Fatalf("SHOW CREATE PROCEDURE by its definer: %q %q %v", mode, body.String, err)
	}
	var n, withBody int
	if err := caller.QueryRow("SELECT COUNT(*), COUNT(ROUTINE_DEFINITION) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'sp'").Scan(&n, &withBody); err != nil || n != 6 || withBody != 0 {
		t.Fatalf("ROUTINES for the caller: %d, %d with a body (%v); want 6, 0", n, withBody, err)
	}
	if err := nobody.QueryRow("SELECT COUNT(*) FROM information_schema.ROUTINES").Scan(&n); err != nil || n != 0 {
		t.Fatalf("ROUTINES for an account with no privilege: %d (%v)", n, err)
	}
	// (1044: the account holds nothing in the database.)
	if _, err := nobody.Exec("SHOW CREATE PROCEDURE sp.peek"); errNumber(err) != 1044 {
		t.Fatalf("SHOW CREATE PROCEDURE with no privilege: %v, want 1044", err)
	}

	// A crash loses no procedure (the binlog holds their statements).
	var before string
	root.QueryRow("SHOW CREATE PROCEDURE sp.peek").Scan(new(string), new(string), &before, new(string), new(string), new(string))
	l.kill()
	l.start()
	root = l.db("")
	var after string
	if err := root.QueryRow("SHOW CREATE PROCEDURE sp.peek").Scan(new(string), new(string), &after, new(string), new(string), new(string)); err != nil || after != before {
		t.Fatalf("after a crash: %q (%v), before %q", after, err, before)
	}
	caller = open("caller", "other")
	if _, err := caller.Exec("CALL sp.peek(@who, @val, @db, @mode)"); err != nil {
		t.Fatalf("a CALL after a crash: %v", err)
	}

	// KILL QUERY stops a CALL that would loop for ever; the process list
	// shows it until then.
	spin := l.db("sp")
	done := make(chan error, 1)
	go func() { _, err := spin.Exec("CALL spin()"); done <- err }()
	deadline := time.Now().Add(20 * time.Second)
	var id int
	for id == 0 && time.Now().Before(deadline) {
		root.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'CALL spin()'").Scan(&id)
		time.Sleep(20 * time.Millisecond)
	}
	if id == 0 {
		t.Fatal("the CALL never showed in the process list")
	}
	mustExec(t, root, fmt.Sprintf("KILL QUERY %d", id))
	select {
	case err := <-done:
		if errNumber(err) != 1317 {
			t.Fatalf("the killed CALL: %v, want 1317", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY did not stop the CALL")
	}
}
