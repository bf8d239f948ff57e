package integration

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestSysbench runs every workload the server issue lists, prepare, run and
// cleanup, with prepared statements off and on. Only deadlocks and lock
// wait timeouts may be ignored, as sysbench itself allows.
func TestSysbench(t *testing.T) {
	sb := needTool(t, "sysbench")
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE sbtest")
	workloads := []string{"oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index",
		"oltp_insert", "oltp_delete", "oltp_point_select", "select_random_points", "select_random_ranges"}
	ignored := regexp.MustCompile(`ignored errors:\s+(\d+)`)
	for _, ps := range []string{"disable", "auto"} {
		for _, w := range workloads {
			tables := "2"
			if strings.HasPrefix(w, "select_random") {
				tables = "1" // these scripts support one table only
			}
			common := []string{"--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", s.port),
				"--mysql-user=root", "--mysql-db=sbtest", "--tables=" + tables, "--table-size=500", "--db-ps-mode=" + ps}
			run := func(args ...string) string {
				cmd := tool(t, 5*time.Minute, sb, append(append(append([]string{}, common...), args[:len(args)-1]...), w, args[len(args)-1])...)
				out, err := cmd.CombinedOutput()
				if err != nil || bytes.Contains(out, []byte("FATAL")) {
					t.Fatalf("sysbench %s %s (ps %s): %v\n%s", w, args[len(args)-1], ps, err, out)
				}
				return string(out)
			}
			run("prepare")
			out := run("--threads=4", "--time=2", "--mysql-ignore-errors=1213,1205", "run")
			m := ignored.FindStringSubmatch(out)
			tx := regexp.MustCompile(`transactions:\s+(\d+)`).FindStringSubmatch(out)
			t.Logf("%s ps=%s: %s transactions, %s ignored", w, ps, tx[1], m[1])
			if tx[1] == "0" {
				t.Fatalf("%s ps=%s committed nothing:\n%s", w, ps, out)
			}
			run("cleanup")
		}
	}
}

// TestKillUnderLoad kills the server with SIGKILL while clients commit and
// checks after restart that every acknowledged commit is there and nothing
// unacknowledged beyond the in-flight ones appeared. Relaxed durability is
// included: a process crash (not an OS crash) loses nothing there either,
// since the binlog bytes are in the OS page cache.
func TestKillUnderLoad(t *testing.T) {
	settings := [][]string{
		{"--sync-binlog=1"},
		{"--sync-binlog=0", "--innodb-flush-log-at-trx-commit=2", "--binlog-parallel-flush=ON"},
		{"--sync-binlog=1", "--binlog-group-commit-sync-delay=500", "--max-binlog-size=65536"},
	}
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	for i, args := range settings {
		t.Run(fmt.Sprintf("settings%d", i), func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, dir, args...)
			db := s.db("")
			mustExec(t, db, "CREATE DATABASE k")
			k := s.db("k")
			mustExec(t, k, "CREATE TABLE rows_ (id BIGINT PRIMARY KEY, w INT NOT NULL, KEY w_1 (w))")
			mustExec(t, k, "CREATE TABLE counter (id INT PRIMARY KEY, v BIGINT NOT NULL)")
			mustExec(t, k, "INSERT INTO counter VALUES (1, 0)")
			var ackedRows []int64
			var ackedIncr int64
			for round := range rounds {
				var mu sync.Mutex
				var inflight atomic.Int64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for w := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := int64(0); ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							id := int64(round)*1e9 + int64(w)*1e6 + n
							inflight.Add(1)
							var err error
							if n%2 == 0 {
								_, err = k.Exec("INSERT INTO rows_ VALUES (?, ?)", id, w)
							} else {
								_, err = k.Exec("UPDATE counter SET v = v + 1 WHERE id = 1")
							}
							if err != nil {
								return // the server died under us
							}
							inflight.Add(-1)
							mu.Lock()
							if n%2 == 0 {
								ackedRows = append(ackedRows, id)
							} else {
								ackedIncr++
							}
							mu.Unlock()
						}
					}()
				}
				time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond)
				s.kill()
				close(stop)
				wg.Wait()
				inFlight := inflight.Load()
				s.start()
				k = s.db("k")
				got := map[int64]bool{}
				rs, err := k.Query("SELECT id FROM rows_")
				if err != nil {
					t.Fatal(err)
				}
				for rs.Next() {
					var id int64
					rs.Scan(&id)
					got[id] = true
				}
				rs.Close()
				for _, id := range ackedRows {
					if !got[id] {
						t.Fatalf("round %d: acknowledged row %d lost (%d acknowledged, %d present)", round, id, len(ackedRows), len(got))
					}
				}
				if extra := int64(len(got) - len(ackedRows)); extra < 0 || extra > inFlight {
					t.Fatalf("round %d: %d rows beyond the %d acknowledged, with %d in flight", round, extra, len(ackedRows), inFlight)
				}
				var v int64
				k.QueryRow("SELECT v FROM counter WHERE id = 1").Scan(&v)
				if v < ackedIncr || v > ackedIncr+inFlight {
					t.Fatalf("round %d: counter %d, acknowledged %d increments, %d in flight", round, v, ackedIncr, inFlight)
				}
				// Unacknowledged but committed work now counts as acknowledged.
				ackedRows = ackedRows[:0]
				for id := range got {
					ackedRows = append(ackedRows, id)
				}
				ackedIncr = v
				t.Logf("round %d: %d rows, counter %d, %d in flight at the kill", round, len(got), v, inFlight)
			}
			s.stop()
			checkBinlogFiles(t, filepath.Join(dir, "data"))
		})
	}
}

// checkBinlogFiles decodes every binlog file with go-mysql (checksums
// verified), checks that GTIDs are contiguous and that last_committed shows
// parallel transactions.
func checkBinlogFiles(t *testing.T, dir string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "binlog.[0-9]*"))
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("no binlog files")
	}
	var gnos []int64
	parallel, trx := 0, 0
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		p := replication.NewBinlogParser()
		p.SetVerifyChecksum(true)
		err = p.ParseReader(bytes.NewReader(data[4:]), func(e *replication.BinlogEvent) error {
			if g, ok := e.Event.(*replication.GTIDEvent); ok {
				gnos = append(gnos, g.GNO)
				trx++
				if g.LastCommitted < g.SequenceNumber-1 {
					parallel++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s does not decode: %v", filepath.Base(n), err)
		}
	}
	for i := 1; i < len(gnos); i++ {
		if gnos[i] != gnos[i-1]+1 {
			t.Fatalf("GTID gap or reorder: %d after %d", gnos[i], gnos[i-1])
		}
	}
	if parallel*10 < trx {
		t.Fatalf("only %d of %d transactions could apply in parallel (last_committed < sequence_number-1)", parallel, trx)
	}
	t.Logf("%d files, %d transactions, %d with a parallel commit parent", len(names), trx, parallel)
}
