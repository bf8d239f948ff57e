package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// everyColumnType is a table with a column of each type MySQL and MariaDB
// share, with and without defaults.
const everyColumnType = `CREATE TABLE %s (
	id INT NOT NULL PRIMARY KEY,
	ti TINYINT DEFAULT -5, tu TINYINT UNSIGNED NOT NULL DEFAULT 200,
	si SMALLINT, su SMALLINT UNSIGNED DEFAULT 65535,
	mi MEDIUMINT DEFAULT -8388608, mu MEDIUMINT UNSIGNED,
	i INT DEFAULT 42, iu INT UNSIGNED DEFAULT 4294967295,
	bi BIGINT NOT NULL DEFAULT -9223372036854775808, bu BIGINT UNSIGNED DEFAULT 18446744073709551615,
	d1 DECIMAL(10,2) DEFAULT '3.50', d2 DECIMAL(30,10), d3 DECIMAL(5,0) DEFAULT -12345,
	f FLOAT DEFAULT 1.5, db DOUBLE DEFAULT -2.25, fm FLOAT(7,4) DEFAULT 1.5, dm DOUBLE(10,2),
	b1 BIT(1) DEFAULT b'1', b64 BIT(64), bo BOOL DEFAULT TRUE,
	c CHAR(10) DEFAULT 'abc', vc VARCHAR(100) NOT NULL DEFAULT '', vq VARCHAR(20) DEFAULT 'it''s',
	bn BINARY(4), vb VARBINARY(10) DEFAULT 'xy',
	tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
	tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
	en ENUM('small','medium','large') NOT NULL DEFAULT 'medium', st SET('r','g','b') DEFAULT 'r,b',
	dt DATE DEFAULT '2020-02-29', tm TIME DEFAULT '12:34:56', tm6 TIME(6),
	dtt DATETIME DEFAULT '2000-01-01 00:00:00', dt6 DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6),
	ts TIMESTAMP NULL DEFAULT NULL, ts6 TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
	yr YEAR DEFAULT 2024,
	js JSON,
	UNIQUE KEY vc_c (vc, c), KEY dt_k (dt), KEY en_k (en)
)`

// everyColumnTypeRows are the statements that fill and change it.
var everyColumnTypeRows = []string{
	"INSERT INTO %s (id, vc, ts6) VALUES (1, 'defaults', '2021-01-01 00:00:00')",
	`INSERT INTO %s (id, ti, tu, si, su, mi, mu, i, iu, bi, bu, d1, d2, d3, f, db, b1, b64, bo, c, vc, vq, bn, vb,
		tt, tx, mt, lt, tb, bl, mb, lb, en, st, dt, tm, tm6, dtt, dt6, ts, ts6, yr, js) VALUES
		(2, -128, 255, -32768, 65535, 8388607, 16777215, -2147483648, 4294967295, 9223372036854775807, 0,
		-99999999.99, 12345678901234567890.0123456789, 99999, -3.5, 1e300, b'0', b'1000000000000000000000000000000000000000000000000000000000000001', FALSE,
		'', 'max', 'q"uote', 0x00ff00ff, 0x00, 'tiny', 'text\nwith newline', REPEAT('m', 300), REPEAT('l', 70000),
		0x01, 0x0203, REPEAT(0x04, 300), REPEAT(0x05, 70000), 'large', '', '1000-01-01', '-838:59:59', '838:59:58.999999',
		'9999-12-31 23:59:59', '1000-01-01 00:00:00.000001', '1970-01-02 00:00:00', '2038-01-19 03:14:07.999999', 1901,
		'{"a": [1, "two", null], "b": {"c": true}}'),
		(3, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		NULL, 'nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'small', NULL, NULL, NULL, NULL,
		NULL, NULL, NULL, '2022-02-02 02:02:02', NULL, NULL)`,
	"UPDATE %s SET i = i + 1, st = 'g', en = 'small', tm = '-00:00:01', js = JSON_ARRAY(1, 2), ts6 = '2023-03-03 03:03:03.5' WHERE id = 1",
	"UPDATE %s SET vc = 'moved', bl = NULL, d2 = 0.0000000001, ts6 = '2023-01-01 00:00:00', fm = 13.37, dm = -1234.567 WHERE id = 2",
	"DELETE FROM %s WHERE id = 3",
	"INSERT INTO %s (id, vc, ts6) VALUES (4, 'last', '2024-04-04 04:04:04')",
}

// TestMariaDBReplicaOfEveryColumnType: a MariaDB replica of a Lockstep
// primary (its MariaDB port) makes a table of every column type and
// default as MariaDB makes it from the same CREATE TABLE run on it
// directly (SHOW CREATE TABLE identical), and ends with the rows the
// same statements leave in that directly made table. (Lockstep's
// utf8mb4_0900_ai_ci, which MariaDB 10.11 lacks, reaches it as
// utf8mb4_unicode_520_ci.)
func TestMariaDBReplicaOfEveryColumnType(t *testing.T) {
	mport := fixedPort(t)
	s := startServer(t, t.TempDir(), "--mariadb-port", strconv.Itoa(mport))
	src := s.db("")
	m := startMariaDB(t, 2)
	mdb := m.db()
	followLockstep(t, mdb, mport)
	// The control: MariaDB's own table, from the same statements.
	mustExec(t, mdb, "CREATE DATABASE direct CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci")
	mustExec(t, src, "CREATE DATABASE types")
	mustExec(t, src, fmt.Sprintf(everyColumnType, "types.t"))
	mustExec(t, mdb, fmt.Sprintf(everyColumnType, "direct.t"))
	for _, q := range everyColumnTypeRows {
		mustExec(t, src, fmt.Sprintf(q, "types.t"))
		// The same session settings the replica applies under.
		mustExec(t, mdb, "SET time_zone = '+00:00'")
		mustExec(t, mdb, fmt.Sprintf(q, "direct.t"))
	}
	waitMariaDBReplica(t, src, mdb, 60*time.Second)
	show := func(table string) string {
		var create string
		if err := mdb.QueryRow("SHOW CREATE TABLE "+table).Scan(new(string), &create); err != nil {
			t.Fatal(err)
		}
		return create
	}
	if r, d := show("types.t"), show("direct.t"); r != d {
		t.Errorf("the replicated table differs from MariaDB's own:\nreplicated:\n%s\ndirect:\n%s", r, d)
	}
	// Every column as text; the automatic timestamp (dt6) differs by
	// when each statement ran, so it is compared as present or not.
	var cols []string
	rows, err := mdb.Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'direct' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		switch {
		case c == "tx":
			cols = append(cols, "REPLACE(tx, '\\n', '/')") // one line a row
		case c == "dt6":
			cols = append(cols, "dt6 IS NULL")
		case strings.HasPrefix(c, "b") && c != "bi" && c != "bu" || c == "bn" || c == "vb" || c == "tb" || c == "mb" || c == "lb":
			cols = append(cols, "HEX("+c+")")
		default:
			cols = append(cols, c)
		}
	}
	rows.Close()
	q := "SELECT " + strings.Join(cols, ", ") + " FROM %s ORDER BY id"
	r, d := tableText(t, mdb, fmt.Sprintf(q, "types.t")), tableText(t, mdb, fmt.Sprintf(q, "direct.t"))
	if n := strings.Count(d, "\n"); n != 3 {
		t.Fatalf("MariaDB's own table has %d rows, want 3:\n%s", n, d)
	}
	if r != d {
		rl, dl := strings.Split(r, "\n"), strings.Split(d, "\n")
		for i := range min(len(rl), len(dl)) {
			if rl[i] != dl[i] {
				rc, dc := strings.Split(rl[i], "|"), strings.Split(dl[i], "|")
				for j := range min(len(rc), len(dc), len(cols)) {
					if rc[j] != dc[j] {
						t.Errorf("row %d, %s: replicated %.80q, direct %.80q", i+1, cols[j], rc[j], dc[j])
					}
				}
			}
		}
		if len(rl) != len(dl) {
			t.Errorf("replicated %d rows, direct %d", len(rl), len(dl))
		}
	}
}
