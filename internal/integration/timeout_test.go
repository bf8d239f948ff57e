package integration

import (
	"bufio"
	"context"
	"database/sql"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// rawLogin logs in as root without a password over the raw protocol and
// returns the connection, ready for a command.
func rawLogin(t *testing.T, port int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, r, err := dialRawLogin(port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, r
}

// dialRawLogin is rawLogin for goroutines other than the test's.
func dialRawLogin(port int) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	readPacket := func() ([]byte, error) {
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return nil, err
		}
		p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
		_, err := io.ReadFull(r, p)
		return p, err
	}
	if _, err := readPacket(); err != nil { // the greeting
		c.Close()
		return nil, nil, err
	}
	const caps = 0x0200 | 0x8000 | 0x80000 // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
	resp := bin.LittleEndian.AppendUint32(nil, caps)
	resp = bin.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(resp, 33)
	resp = append(resp, make([]byte, 23)...)
	resp = append(resp, "root\x00"...)
	resp = append(resp, 0) // no auth data
	resp = append(resp, "mysql_native_password\x00"...)
	n := len(resp)
	if _, err := c.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1}, resp...)); err != nil {
		c.Close()
		return nil, nil, err
	}
	p, err := readPacket()
	if err == nil && p[0] != 0x00 {
		err = fmt.Errorf("raw login: %q", p)
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, r, nil
}

// closedWithin waits (at most limit) for the server to end c, and returns
// what it sent before doing so.
func closedWithin(t *testing.T, r *bufio.Reader, c net.Conn, limit time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	got, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", limit)
	}
	return got
}

// TestConnectionTimeouts: connect_timeout ends a connection that does not
// log in, wait_timeout one that stays idle (with MySQL's 4031 first),
// net_read_timeout one whose command stops half-way; the values of the
// session are used, and other clients go on being served.
func TestConnectionTimeouts(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "SET GLOBAL connect_timeout = 2")
	mustExec(t, db, "SET GLOBAL net_read_timeout = 1")

	// connect_timeout: the greeting, then nothing from the client.
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closedWithin(t, bufio.NewReader(c), c, 15*time.Second)

	// net_read_timeout: a command announced as 100 bytes, 10 sent.
	rc, rr := rawLogin(t, s.port)
	if _, err := rc.Write(append([]byte{100, 0, 0, 0, 0x03}, "SELECT 1 "...)); err != nil {
		t.Fatal(err)
	}
	closedWithin(t, rr, rc, 15*time.Second)

	// wait_timeout, set for the session only.
	ic, ir := rawLogin(t, s.port)
	q := "SET SESSION wait_timeout = 1"
	if _, err := ic.Write(append([]byte{byte(len(q) + 1), 0, 0, 0, 0x03}, q...)); err != nil {
		t.Fatal(err)
	}
	got := closedWithin(t, ir, ic, 15*time.Second)
	// The OK of the SET, then ER_CLIENT_INTERACTION_TIMEOUT.
	if len(got) < 11 || got[4] != 0x00 || !containsErr(got, 4031) {
		t.Fatalf("after wait_timeout the client read %q, want the OK and error 4031", got)
	}

	// A connection without a session setting keeps the global 28800.
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(1500 * time.Millisecond)
	var one int
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("an idle connection under the default wait_timeout: %v", err)
	}
}

// containsErr reports whether b holds an ERR packet with the number code.
func containsErr(b []byte, code uint16) bool {
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		if len(b) < 4+n {
			return false
		}
		p := b[4 : 4+n]
		if len(p) >= 3 && p[0] == 0xff && bin.LittleEndian.Uint16(p[1:]) == code {
			return true
		}
		b = b[4+n:]
	}
	return false
}

// TestMaxPreparedStatements: past max_prepared_stmt_count a prepare gets
// MySQL's 1461; closing statements makes room; Prepared_stmt_count shows
// the count.
func TestMaxPreparedStatements(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "SET GLOBAL max_prepared_stmt_count = 3")
	db := s.as(t, "root", "")
	var stmts []*sql.Stmt
	for i := range 3 {
		st, err := db.Prepare(fmt.Sprintf("SELECT %d + ?", i))
		if err != nil {
			t.Fatalf("prepare %d of 3: %v", i+1, err)
		}
		stmts = append(stmts, st)
	}
	if _, err := db.Prepare("SELECT 4 + ?"); errNumber(err) != 1461 {
		t.Fatalf("a fourth prepared statement: %v, want 1461", err)
	}
	if n := statusOf(t, root, "Prepared_stmt_count"); n != "3" {
		t.Errorf("Prepared_stmt_count = %s, want 3", n)
	}
	stmts[0].Close()
	st, err := db.Prepare("SELECT 5 + ?")
	if err != nil {
		t.Fatalf("a prepare after closing one: %v", err)
	}
	var got int
	if err := st.QueryRow(1).Scan(&got); err != nil || got != 6 {
		t.Fatalf("the new statement: %d %v", got, err)
	}
	// Closing statements gives their count back at once (COM_STMT_CLOSE),
	// and so does the end of the connection.
	for _, st := range append(stmts[1:], st) {
		st.Close()
	}
	waitStatus := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for statusOf(t, root, "Prepared_stmt_count") != want {
			if time.Now().After(deadline) {
				t.Fatalf("Prepared_stmt_count = %s, want %s", statusOf(t, root, "Prepared_stmt_count"), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitStatus("0")
	for i := range 2 {
		if _, err := db.Prepare(fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus("2")
	db.Close()
	waitStatus("0")

	// SQL PREPARE counts against the same limit: a new name past it gets
	// 1461, preparing a name again replaces it, DEALLOCATE gives room back,
	// and so does the end of the session.
	pool := s.db("")
	c := conn(t, pool)
	ctx := context.Background()
	for i := range 3 {
		mustConnExec(t, c, fmt.Sprintf("PREPARE s%d FROM 'SELECT %d'", i, i))
	}
	if _, err := c.ExecContext(ctx, "PREPARE s3 FROM 'SELECT 3'"); errNumber(err) != 1461 {
		t.Fatalf("a fourth SQL PREPARE: %v, want 1461", err)
	}
	mustConnExec(t, c, "PREPARE s1 FROM 'SELECT 11'")
	waitStatus("3")
	mustConnExec(t, c, "DEALLOCATE PREPARE s0")
	mustConnExec(t, c, "PREPARE s3 FROM 'SELECT 3'")
	waitStatus("3")
	c.Close()
	pool.Close()
	waitStatus("0")
}

// TestPreparedStatementBytes: the texts of all prepared statements
// together are bounded by lockstep_max_prepared_stmt_bytes (1461 past
// it), through the protocol and SQL PREPARE (from a string or a user
// variable): a count alone let 60 statements with large select lists
// take gigabytes.
func TestPreparedStatementBytes(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "SET GLOBAL lockstep_max_prepared_stmt_bytes = 100000")
	big := func(n int) string {
		cols := make([]string, n)
		for i := range cols {
			cols[i] = fmt.Sprintf("%d", i%10)
		}
		return "SELECT " + strings.Join(cols, ",") + " FROM DUAL WHERE 1 = ?"
	}
	db := s.as(t, "root", "")
	first, err := db.Prepare(big(30000)) // 60 KB
	if err != nil {
		t.Fatalf("a 60 KB statement within 100 KB: %v", err)
	}
	if _, err := db.Prepare(big(30000)); errNumber(err) != 1461 {
		t.Fatalf("a second 60 KB statement: %v, want 1461", err)
	}
	c := conn(t, s.db(""))
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "PREPARE s FROM '"+big(30000)+"'"); errNumber(err) != 1461 {
		t.Fatalf("a 60 KB SQL PREPARE: %v, want 1461", err)
	}
	mustConnExec(t, c, "SET @q = '"+big(30000)+"'")
	if _, err := c.ExecContext(ctx, "PREPARE s FROM @q"); errNumber(err) != 1461 {
		t.Fatalf("a 60 KB SQL PREPARE from a variable: %v, want 1461", err)
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.ExecContext(ctx, "PREPARE s FROM @q")
		if err == nil {
			break
		}
		if errNumber(err) != 1461 || time.Now().After(deadline) {
			t.Fatalf("a SQL PREPARE after the protocol's statement was closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := db.Prepare(big(30000)); errNumber(err) != 1461 {
		t.Fatalf("a statement beside the SQL one: %v, want 1461", err)
	}
	mustConnExec(t, c, "DEALLOCATE PREPARE s")
	st, err := db.Prepare(big(30000))
	if err != nil {
		t.Fatalf("after DEALLOCATE: %v", err)
	}
	st.Close()
}
