package server

import (
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/sirupsen/logrus"

	_ "github.com/go-sql-driver/mysql"
)

// BenchmarkStatements runs the statements of sysbench's oltp_read_only
// (text protocol, autocommit, 100-row ranges) through a whole server in
// this process, over loopback: what one statement costs in time and
// allocations, client included. Profile it with -cpuprofile or
// -memprofile.
func BenchmarkStatements(b *testing.B) {
	logrus.SetOutput(io.Discard) // go-mysql-server's connection messages
	defer logrus.SetOutput(os.Stderr)
	cfg := Defaults()
	cfg.DataDir = b.TempDir()
	cfg.Port = 0
	cfg.HTTPPort = 0
	s, err := Start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	admin, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", s.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE sbtest"); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/sbtest?interpolateParams=true", s.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE sbtest.sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))",
		"INSERT INTO sbtest.sbtest1 (k, c, pad) WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT i, CONCAT(LPAD(i * 7919 % 1000, 11, '0'), '-', REPEAT('c', 107)), REPEAT('p', 59) FROM n",
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	for _, st := range []struct{ name, query string }{
		{"point", "SELECT c FROM sbtest1 WHERE id=?"},
		{"range", "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?"},
		{"sum", "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?"},
		{"order", "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"},
		{"distinct", "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"},
	} {
		b.Run(st.name, func(b *testing.B) {
			var c sql.RawBytes
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				args := []any{1 + i%900}
				if st.name != "point" {
					args = append(args, 1+i%900+99)
				}
				rows, err := db.Query(st.query, args...)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					if err := rows.Scan(&c); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if err := rows.Close(); err != nil || n == 0 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
