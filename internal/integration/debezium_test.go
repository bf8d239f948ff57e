package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDebeziumSnapshot: Debezium's MySQL connector (3.6, embedded engine)
// takes its initial snapshot of a table while four writers insert into
// it, then streams the binlog. Every row must reach it exactly once:
// read by the snapshot or streamed as an insert, never both and never
// neither. (When START TRANSACTION WITH CONSISTENT SNAPSHOT took its
// read view at the first read, rows committed between the binlog
// position Debezium read and that read came twice.)
func TestDebeziumSnapshot(t *testing.T) {
	java := needTool(t, "java")
	cpFile := os.Getenv("LOCKSTEP_DEBEZIUM_CLASSPATH")
	if cpFile == "" {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("LOCKSTEP_DEBEZIUM_CLASSPATH (a file holding Debezium's classpath, see .ci/run) is required (LOCKSTEP_REQUIRE_TOOLS=1)")
		}
		t.Skip("LOCKSTEP_DEBEZIUM_CLASSPATH not set")
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, jar := range strings.Split(strings.TrimSpace(string(cp)), ":") {
		if _, err := os.Stat(jar); err != nil {
			t.Fatalf("Debezium's classpath names a missing jar (remove %s to fetch again): %v", cpFile, err)
		}
	}

	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE cdc")
	mustExec(t, db, "CREATE TABLE cdc.t (id INT PRIMARY KEY, v VARCHAR(40))")
	mustExec(t, db, "CREATE TABLE cdc.done (id INT PRIMARY KEY)")
	// Enough rows that the snapshot takes a while.
	const prefill = 20000
	for i := 0; i < prefill; i += 1000 {
		var vals []string
		for j := i; j < i+1000; j++ {
			vals = append(vals, fmt.Sprintf("(%d, 'row %d')", j, j))
		}
		mustExec(t, db, "INSERT INTO cdc.t VALUES "+strings.Join(vals, ","))
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var inserted atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				id := 1_000_000*(w+1) + n
				if _, err := db.Exec("INSERT INTO cdc.t VALUES (?, 'streamed')", id); err == nil {
					inserted.Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-cp", strings.TrimSpace(string(cp)), "testdata/debezium/DebeziumCapture.java",
		strconv.Itoa(s.port), "200")
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	var reads, streamed int
	var insertedAtFirstRead, insertedAtLastRead int64 = -1, -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[1] != "t" {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("Debezium printed %q", sc.Text())
		}
		seen[id]++
		switch f[0] {
		case "r":
			if reads == 0 {
				insertedAtFirstRead = inserted.Load()
			}
			insertedAtLastRead = inserted.Load()
			reads++
		case "c":
			streamed++
			// Streaming has begun: a little more, then the end.
			if streamed == 200 {
				stop.Store(true)
				wg.Wait()
				mustExec(t, db, "INSERT INTO cdc.done VALUES (1)")
			}
		default:
			t.Errorf("an event of op %q for row %d: only inserts happened", f[0], id)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Debezium: %v (%d rows read, %d streamed)\n%s", err, reads, streamed, lastLines(stderr.String(), 40))
	}
	stop.Store(true)
	wg.Wait()

	rows, err := db.Query("SELECT id FROM cdc.t")
	if err != nil {
		t.Fatal(err)
	}
	table := map[int]bool{}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		table[id] = true
	}
	rows.Close()
	var twice, missing, extra int
	for id := range table {
		switch n := seen[id]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
	}
	for id := range seen {
		if !table[id] {
			extra++
		}
	}
	t.Logf("%d rows: %d read by the snapshot, %d streamed; %d inserted while the snapshot's rows arrived", len(table), reads, streamed, insertedAtLastRead-insertedAtFirstRead)
	if twice+missing+extra > 0 {
		t.Fatalf("of %d rows, Debezium got %d twice and missed %d, and got %d that are not in the table", len(table), twice, missing, extra)
	}
	if insertedAtLastRead <= insertedAtFirstRead || streamed < 200 || reads < prefill {
		t.Fatalf("the snapshot did not overlap the inserts: %d inserted while its rows arrived, %d read, %d streamed", insertedAtLastRead-insertedAtFirstRead, reads, streamed)
	}
}

// lastLines is the end of s, at most n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
