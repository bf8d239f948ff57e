package integration

import (
	"context"
	"testing"
)

// TestStringLiterals reads backslashes in strings as MySQL does, through
// every door a client's text comes in by (COM_QUERY, COM_STMT_PREPARE,
// SQL PREPARE's statement): \_ and \% keep their backslash, and under
// NO_BACKSLASH_ESCAPES every backslash is a character and LIKE has no
// escape character, also in a CHECK constraint read later under another
// mode; a trigger that could not keep that is refused, and what is
// stored is read back the same whatever the mode.
func TestStringLiterals(t *testing.T) {
	s := startServer(t, t.TempDir())
	ctx := context.Background()
	conn := s.conn(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// row reads one row as text; with args the statement is prepared
	// (COM_STMT_PREPARE).
	row := func(q string, args ...any) string {
		t.Helper()
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		got, err := rowsText(rows)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return got
	}
	check := func(q, want string, args ...any) {
		t.Helper()
		if got := row(q, args...); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}

	exec("CREATE DATABASE d")
	exec("USE d")
	exec("CREATE TABLE s (id INT PRIMARY KEY, v VARCHAR(20))")
	exec(`INSERT INTO s VALUES (1, 'a_'), (2, 'ab'), (3, 'a\b'), (4, 'a\\b')`)

	// \_ keeps its backslash: it escapes the wildcard.
	check(`SELECT 'a\_', LENGTH('a\%'), 'ab' LIKE 'a\_', 'a_' LIKE 'a\_'`, "a\\_|3|0|1|\n")
	check(`SELECT id FROM s WHERE v LIKE 'a\_' ORDER BY id`, "1|\n")
	check(`SELECT id FROM s WHERE v LIKE ? ORDER BY id`, "1|\n", `a\_`)
	check(`SELECT LENGTH('a\_'), ? LIKE 'a\_'`, "3|0|\n", "ab")
	exec(`PREPARE p FROM 'SELECT LENGTH(''a\_''), ''ab'' LIKE ''a\\_'''`)
	check("EXECUTE p", "3|0|\n")
	check(`SELECT HEX(v) FROM s WHERE id = 3`, "6108|\n") // \b is a backspace
	check(`SELECT HEX(v) FROM s WHERE id = 4`, "615C62|\n")
	// An ESCAPE clause of more than one character is 1210; an empty one
	// is the backslash.
	if _, err := conn.ExecContext(ctx, "SELECT 'x' LIKE 'x' ESCAPE 'ab'"); errNumber(err) != 1210 {
		t.Errorf("ESCAPE 'ab': %v, want 1210", err)
	}
	check(`SELECT 'a_' LIKE 'a\_' ESCAPE '', 'a_' LIKE 'a|_' ESCAPE ''`, "1|0|\n")

	exec("SET sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'")
	check(`SELECT 'a\b', LENGTH('a\b'), 'it''s', 'x\'`, "a\\b|3|it's|x\\|\n")
	check(`SELECT ?, LENGTH('c\d')`, "p\\q|3|\n", `p\q`)
	exec(`PREPARE p FROM 'SELECT ''m\n'', LENGTH(''m\n'')'`)
	check("EXECUTE p", "m\\n|3|\n")
	// A multi-statement text is translated one statement at a time, as
	// each meets its mode (the driver sends none; the mariadb CLI test
	// and PyMySQL's suite do).
	exec(`INSERT INTO s VALUES (5, 'x\y')`)
	check(`SELECT HEX(v) FROM s WHERE id = 5`, "785C79|\n")
	// LIKE has no escape character under the mode.
	check(`SELECT id FROM s WHERE v LIKE 'a\_' ORDER BY id`, "4|\n")
	check(`SELECT id FROM s WHERE v LIKE 'a|_' ESCAPE '|' ORDER BY id`, "1|\n")
	if _, err := conn.ExecContext(ctx, "SELECT 'x' LIKE 'x' ESCAPE ''"); errNumber(err) != 1210 {
		t.Errorf("ESCAPE '' under NO_BACKSLASH_ESCAPES: %v, want 1210", err)
	}
	// A CHECK constraint keeps the mode's LIKE: x\% is x, a backslash,
	// anything.
	exec(`CREATE TABLE c (v VARCHAR(20), CHECK (v NOT LIKE 'x\%'))`)
	if _, err := conn.ExecContext(ctx, `INSERT INTO c VALUES ('x\abc')`); errNumber(err) != 3819 {
		t.Errorf("a row the CHECK refuses: %v, want 3819", err)
	}
	// A trigger or view stores its text as written: with a LIKE and no
	// ESCAPE it could not keep the mode's meaning.
	for _, q := range []string{
		`CREATE TRIGGER tr BEFORE INSERT ON s FOR EACH ROW SET NEW.v = IF(NEW.v LIKE 'z\%', 'z', NEW.v)`,
		`CREATE VIEW w AS SELECT id FROM s WHERE v LIKE 'a\_'`,
	} {
		if _, err := conn.ExecContext(ctx, q); errNumber(err) != 1235 {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	exec(`CREATE TRIGGER tr BEFORE INSERT ON s FOR EACH ROW SET NEW.v = IF(NEW.v = 'r\s', CONCAT(NEW.v, '\'), NEW.v)`)
	exec(`CREATE VIEW w AS SELECT id, v, 'w\x' AS k FROM s WHERE v LIKE 'a|_' ESCAPE '|'`)

	exec("SET sql_mode = 'STRICT_TRANS_TABLES'")
	if _, err := conn.ExecContext(ctx, `INSERT INTO c VALUES ('x\\abc')`); errNumber(err) != 3819 {
		t.Errorf("a row the CHECK refuses, under another mode: %v, want 3819", err)
	}
	exec(`INSERT INTO c VALUES ('x%')`)
	exec(`INSERT INTO s VALUES (6, 'r\\s')`)
	check(`SELECT HEX(v) FROM s WHERE id = 6`, "725C735C|\n")
	check(`SELECT id, k FROM w`, "1|w\\x|\n")
	// What was stored is read back as it was meant: the trigger's mode
	// no longer says NO_BACKSLASH_ESCAPES, its text is in the parser's
	// form.
	var name, mode, stmt, cs, cc, coll, created string
	if err := conn.QueryRowContext(ctx, "SHOW CREATE TRIGGER tr").Scan(&name, &mode, &stmt, &cs, &cc, &coll, &created); err != nil {
		t.Fatal(err)
	}
	if mode != "STRICT_TRANS_TABLES" {
		t.Errorf("the trigger's sql_mode: %q", mode)
	}
	// The stored text creates the same trigger again.
	exec("DROP TRIGGER tr")
	exec(stmt)
	exec(`INSERT INTO s VALUES (7, 'r\\s')`)
	check(`SELECT HEX(v) FROM s WHERE id = 7`, "725C735C|\n")
}
