package integration

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// peakRSS reads a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestBadInputUnderLoad: 2,000 clients log in at once and run a query
// each, while other connections send random bytes before the handshake
// and after logging in, and a well-behaved client keeps working. The
// server stays up, serves everyone it accepted, and its peak memory is
// reported (and bounded).
func TestBadInputUnderLoad(t *testing.T) {
	const clients = 2000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < 3*clients {
		lim.Cur = min(lim.Max, 4*clients)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 3*clients {
			t.Fatalf("need %d file descriptors (server and clients), the limit is %d: %v", 3*clients, lim.Cur, err)
		}
	}
	s := startServer(t, t.TempDir(), "--max-connections", fmt.Sprint(clients+100))
	addr := fmt.Sprintf("127.0.0.1:%d", s.port)
	mustExec(t, s.db(""), "CREATE DATABASE crowd")
	mustExec(t, s.db(""), "CREATE TABLE crowd.t (id INT PRIMARY KEY, v INT)")

	stop := make(chan struct{})
	var noise sync.WaitGroup
	// Random bytes before the handshake and after a login, in a loop.
	for g := range 4 {
		noise.Add(1)
		go func() {
			defer noise.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var c net.Conn
				var r *bufio.Reader
				var err error
				if g%2 == 0 {
					if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
						r = bufio.NewReader(c)
					}
				} else {
					c, r, err = dialRawLogin(s.port)
				}
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				junk := make([]byte, 1+rng.IntN(4096))
				for i := range junk {
					junk[i] = byte(rng.Uint32())
				}
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				_, _ = c.Write(junk)
				_, _ = r.Discard(1 << 20)
				c.Close()
			}
		}()
	}
	// A well-behaved client throughout.
	steady := s.db("crowd")
	steadyErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				steadyErr <- nil
				return
			default:
			}
			if _, err := steady.Exec("REPLACE INTO t VALUES (?, ?)", -1, i); err != nil {
				steadyErr <- err
				return
			}
		}
	}()

	// 2,000 logins at once, each holding its connection until all are in.
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	ready := make(chan struct{})
	var held sync.WaitGroup
	held.Add(clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/crowd?timeout=60s", addr))
			if err != nil {
				errs <- err
				held.Done()
				return
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err == nil {
				_, err = conn.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", i, i)
			}
			held.Done()
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			<-ready
			conn.Close()
		}()
	}
	held.Wait()
	var inProcesslist int
	if err := s.db("").QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST").Scan(&inProcesslist); err != nil {
		t.Fatal(err)
	}
	close(ready)
	wg.Wait()
	close(stop)
	noise.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed < 5 {
			t.Error(err)
		}
		failed++
	}
	if failed > 0 {
		t.Fatalf("%d of %d clients failed", failed, clients)
	}
	if err := <-steadyErr; err != nil {
		t.Fatalf("the well-behaved client failed: %v", err)
	}
	var n int
	if err := s.db("").QueryRow("SELECT COUNT(*) FROM crowd.t WHERE id >= 0").Scan(&n); err != nil || n != clients {
		t.Fatalf("%d rows from %d clients (%v)", n, clients, err)
	}
	rss := peakRSS(t, s.cmd.Process.Pid)
	t.Logf("%d connections at once (%d in the process list), peak RSS %d MiB", clients, inProcesslist, rss>>20)
	if rss > 2<<30 {
		t.Fatalf("peak RSS %d MiB", rss>>20)
	}
}

// TestParserPanicIsAnError: a statement the SQL parser panics on (SELECT
// ” under ANSI_QUOTES, found by fuzzing) gets MySQL's syntax error, and
// the connection stays usable; it used to be dropped. Prepared, too.
func TestParserPanicIsAnError(t *testing.T) {
	s := startServer(t, t.TempDir())
	conn, err := s.db("").Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI_QUOTES'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT''"); errNumber(err) != 1064 {
		t.Fatalf("SELECT'' under ANSI_QUOTES: %v, want 1064", err)
	}
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the same connection afterwards: %v", err)
	}
	// The same statement prepared (COM_STMT_PREPARE, which vitess parses
	// itself).
	if _, err := conn.PrepareContext(ctx, "SELECT''"); errNumber(err) != 1064 {
		t.Fatalf("prepared SELECT'' under ANSI_QUOTES: %v, want 1064", err)
	}
	st, err := conn.PrepareContext(ctx, "SELECT ? + 1")
	if err != nil {
		t.Fatalf("a prepared statement on the same connection afterwards: %v", err)
	}
	defer st.Close()
	if err := st.QueryRowContext(ctx, 1).Scan(&one); err != nil || one != 2 {
		t.Fatalf("executing it: %d %v", one, err)
	}
}

// TestPreparedPlaceholderLimit: a prepared statement may have MySQL's
// 65,535 placeholders; past that it gets 1390 and the connection stays
// usable. From 65,529 on, the protocol library cannot read an execution
// itself (it panicked): its parameters, of every type, must reach the
// statement as they were sent, NULLs and empty strings included, twice
// on the same statement.
func TestPreparedPlaceholderLimit(t *testing.T) {
	s := startServer(t, t.TempDir())
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	marks := func(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
	for _, n := range []int{65536, 70000} {
		if _, err := db.Prepare("SELECT " + marks(n)); errNumber(err) != 1390 {
			t.Fatalf("%d placeholders: %v, want 1390", n, err)
		}
	}
	// Each parameter's value, and the text it must come back as.
	value := func(i, round int) (any, string) {
		switch (i + round) % 8 {
		case 0:
			return int64(-i), strconv.Itoa(-i)
		case 1:
			return uint64(i) << 40, strconv.FormatUint(uint64(i)<<40, 10)
		case 2:
			return float64(i) + 0.5, strconv.Itoa(i) + ".5"
		case 3:
			return fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i)
		case 4:
			return []byte{byte(i), 0, 'b'}, string([]byte{byte(i), 0, 'b'})
		case 5:
			return nil, "NULL"
		case 6:
			return "", ""
		default:
			return i%2 == 0, map[bool]string{true: "1", false: "0"}[i%2 == 0]
		}
	}
	// go-mysql-server takes seconds to plan 65,535 columns: the first
	// count past the library's limit runs once, the last twice.
	for n, rounds := range map[int]int{65529: 1, 65535: 2} {
		st, err := db.Prepare("SELECT " + marks(n))
		if err != nil {
			t.Fatalf("%d placeholders: %v", n, err)
		}
		for round := range rounds {
			args := make([]any, n)
			want := make([]string, n)
			for i := range args {
				args[i], want[i] = value(i, round)
			}
			rows, err := st.Query(args...)
			if err != nil {
				t.Fatalf("%d placeholders, execution %d: %v", n, round+1, err)
			}
			got := make([]sql.RawBytes, n)
			ptrs := make([]any, n)
			for i := range got {
				ptrs[i] = &got[i]
			}
			if !rows.Next() {
				t.Fatalf("%d placeholders: no row (%v)", n, rows.Err())
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				g := string(got[i])
				if got[i] == nil {
					g = "NULL"
				}
				if g != want[i] {
					t.Fatalf("%d placeholders, execution %d, parameter %d: %q, want %q", n, round+1, i+1, g, want[i])
				}
			}
			rows.Close()
		}
		st.Close()
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after: %d %v", one, err)
	}
}
