package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// A data directory left by kill -9 of a real server, with what its
// clients were told.
type killedDir struct {
	data     string          // the data directory (a template: copy it)
	acked    map[int]bool    // ids whose INSERT was acknowledged
	tried    map[int]bool    // every id an INSERT was sent for
	executed binlog.GTIDSet  // @@gtid_executed just before the kill
	staleBin map[string]bool // files under data/stale/ (copies from mid-run)
}

// killDir runs a server with small binlog files, creates an account and a
// replica configuration, inserts rows from 4 connections (killing the
// server while they run if midLoad), optionally purges binlogs half-way,
// and leaves the data directory as kill -9 left it: the store has flushed
// little or nothing (its WAL is off), so recovery replays from the binlog.
func killDir(t *testing.T, purge, midLoad bool, seed uint64) killedDir {
	t.Helper()
	dir := t.TempDir()
	s := startServer(t, dir, "--max-binlog-size", "8192", "--skip-replica-start")
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE r")
	mustExec(t, db, "CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(40))")
	mustExec(t, db, "CREATE USER app@'%' IDENTIFIED BY 'secret'")
	mustExec(t, db, "CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=1, SOURCE_USER='repl'")
	k := killedDir{data: filepath.Join(dir, "data"), acked: map[int]bool{}, tried: map[int]bool{}, staleBin: map[string]bool{}}
	var mu sync.Mutex
	insert := func(from, to int) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := from + w; id < to; id += 4 {
					mu.Lock()
					k.tried[id] = true
					mu.Unlock()
					if _, err := db.Exec("INSERT INTO r.t VALUES (?, REPEAT('x', 30))", id); err != nil {
						return // the server was killed
					}
					mu.Lock()
					k.acked[id] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	insert(0, 200)
	// Copies of the binlog files as they are now, for "stale copy" damage.
	stale := filepath.Join(dir, "stale")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range listNames(t, k.data) {
		if strings.HasPrefix(n, "binlog.") {
			copyFile(t, filepath.Join(k.data, n), filepath.Join(stale, n))
			k.staleBin[n] = true
		}
	}
	if purge {
		mustExec(t, db, "FLUSH BINARY LOGS")
		var file string
		var pos int64
		var rest [3]any
		if err := db.QueryRow("SHOW BINARY LOG STATUS").Scan(&file, &pos, &rest[0], &rest[1], &rest[2]); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, "PURGE BINARY LOGS TO '"+file+"'")
	}
	if midLoad {
		r := rand.New(rand.NewPCG(seed, 3))
		killed := make(chan struct{})
		go func() {
			time.Sleep(time.Duration(50+r.IntN(400)) * time.Millisecond)
			s.kill()
			close(killed)
		}()
		insert(200, 100000)
		<-killed
		return k
	}
	insert(200, 400)
	var g string
	if err := db.QueryRow("SELECT @@global.gtid_executed").Scan(&g); err != nil {
		t.Fatal(err)
	}
	var err error
	if k.executed, err = binlog.ParseGTIDSet(strings.ReplaceAll(g, "\n", "")); err != nil {
		t.Fatal(err)
	}
	s.kill()
	return k
}

func listNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyData copies a data directory (the template) to a fresh one.
func copyData(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

func binlogFiles(t *testing.T, data string) []string {
	var out []string
	for _, n := range listNames(t, data) {
		if _, err := strconv.Atoi(strings.TrimPrefix(n, "binlog.")); err == nil && strings.HasPrefix(n, "binlog.") {
			out = append(out, n)
		}
	}
	return out
}

func flip(t *testing.T, path string, at func(n int) int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at(len(b))] ^= 0x08
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tryStart starts the binary on data and returns the running server, or
// the log of a server that exited. A port found free may be taken before
// the server binds it: then it tries again on new ports.
func tryStart(t *testing.T, data string, args ...string) (*server, string) {
	t.Helper()
	s := &server{t: t, dir: filepath.Dir(data), data: data, args: append([]string{"--skip-replica-start", "--max-binlog-size", "8192"}, args...)}
	s.logPath = filepath.Join(filepath.Dir(data), "try.log")
	for attempt := 0; ; attempt++ {
		s.port, s.httpPort = freePort(t), freePort(t)
		os.Remove(s.logPath)
		if s.launch(30*time.Second, true) {
			t.Cleanup(s.stop)
			return s, ""
		}
		if s.proc.Running() {
			s.kill()
			b, _ := os.ReadFile(s.logPath)
			t.Fatalf("server neither started nor exited:\n%s", b)
		}
		b, _ := os.ReadFile(s.logPath)
		s.proc, s.cmd = nil, nil
		if attempt < 2 && strings.Contains(string(b), "address already in use") {
			continue
		}
		return nil, string(b)
	}
}

// idSet returns the integers a query's first column holds.
func idSet(t *testing.T, db *sql.DB, q string) map[int]bool {
	t.Helper()
	got, err := queryIDs(db, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return got
}

// queryIDs is idSet returning the query's error.
func queryIDs(db *sql.DB, q string) (map[int]bool, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[int]bool{}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		got[id] = true
	}
	return got, rows.Err()
}

// checkExact: every acknowledged row is there, nothing that was never
// sent is, the GTIDs executed before the kill still are, and a new
// commit takes a GTID that was never issued.
func checkExact(t *testing.T, s *server, k killedDir) {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The account made before the kill came back with its password (it
	// is committed through the binlog like the rows).
	app, err := sql.Open("mysql", fmt.Sprintf("app:secret@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Ping(); err != nil {
		t.Fatalf("the account created before the kill cannot log in: %v", err)
	}
	got := idSet(t, db, "SELECT id FROM r.t")
	for id := range k.acked {
		if !got[id] {
			t.Fatalf("acknowledged row %d is gone (%d rows, %d acknowledged)", id, len(got), len(k.acked))
		}
	}
	for id := range got {
		if !k.tried[id] {
			t.Fatalf("row %d was never inserted", id)
		}
	}
	var g string
	if err := db.QueryRow("SELECT @@global.gtid_executed").Scan(&g); err != nil {
		t.Fatal(err)
	}
	after, err := binlog.ParseGTIDSet(strings.ReplaceAll(g, "\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	if !k.executed.Subtract(after).IsEmpty() {
		t.Fatalf("GTIDs executed before the kill are gone: had %s, have %s", k.executed, after)
	}
	if _, err := db.Exec("INSERT INTO r.t VALUES (-1, 'after')"); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT @@global.gtid_executed").Scan(&g); err != nil {
		t.Fatal(err)
	}
	now, _ := binlog.ParseGTIDSet(strings.ReplaceAll(g, "\n", ""))
	fresh := now.Subtract(after)
	if fresh.IsEmpty() || !fresh.Subtract(k.executed).Equal(fresh) {
		t.Fatalf("the new commit's GTID %s was issued before (%s)", fresh, k.executed)
	}
	for _, u := range fresh.UUIDs() {
		if after.MaxGNO(u) >= fresh.MaxGNO(u) {
			t.Fatalf("the new commit's GTID %s is not after everything recovered (%s)", fresh, after)
		}
	}
}

// TestRecoveryOfRealServer damages the data directory of a server killed
// with kill -9 (the store behind the binlog), in each file recovery reads,
// and restarts the real binary: it must recover exactly, or refuse with a
// message naming the damaged file.
func TestRecoveryOfRealServer(t *testing.T) {
	for _, purge := range []bool{false, true} {
		k := killDir(t, purge, false, 0)
		files := binlogFiles(t, k.data)
		if len(files) < 3 {
			t.Fatalf("only %d binlog files", len(files))
		}
		last, middle := files[len(files)-1], files[len(files)/2]
		cells := []struct {
			name    string
			damage  func(data string)
			args    []string
			refusal string // "" = must recover exactly
		}{
			{"no damage", func(string) {}, nil, ""},
			{"last binlog file, one bit flipped two thirds in", func(d string) { flip(t, filepath.Join(d, last), func(n int) int { return 2 * n / 3 }) }, nil, last},
			{"last binlog file truncated in the middle", func(d string) {
				os.Truncate(filepath.Join(d, last), fileSize(t, filepath.Join(d, last))/2)
			}, nil, last},
			{"middle binlog file missing", func(d string) { os.Remove(filepath.Join(d, middle)) }, nil, middle},
			{"binlog.index missing", func(d string) { os.Remove(filepath.Join(d, "binlog.index")) }, nil, ""},
			{"binlog.index damaged", func(d string) { flip(t, filepath.Join(d, "binlog.index"), func(n int) int { return n / 2 }) }, nil, ""},
			{"binlog.synced missing", func(d string) { os.Remove(filepath.Join(d, "binlog.synced")) }, nil, ""},
			{"store manifest marker missing", func(d string) {
				for _, n := range listNames(t, filepath.Join(d, "store")) {
					if strings.HasPrefix(n, "marker.manifest.") {
						os.Remove(filepath.Join(d, "store", n))
					}
				}
			}, nil, "store"},
			{"replica-source.json truncated", func(d string) {
				os.Truncate(filepath.Join(d, "replica-source.json"), fileSize(t, filepath.Join(d, "replica-source.json"))/2)
			}, nil, "replica-source.json"},
			{"replica-source.json, one bit flipped", func(d string) {
				flip(t, filepath.Join(d, "replica-source.json"), func(n int) int { return n / 3 })
			}, nil, "replica-source.json"},
		}
		if purge {
			cells = append(cells, struct {
				name    string
				damage  func(data string)
				args    []string
				refusal string
			}{"store directory missing after a purge", func(d string) { os.RemoveAll(filepath.Join(d, "store")) }, nil, "purged"})
		} else {
			cells = append(cells, struct {
				name    string
				damage  func(data string)
				args    []string
				refusal string
			}{"store directory missing", func(d string) { os.RemoveAll(filepath.Join(d, "store")) }, nil, ""})
		}
		for _, c := range cells {
			t.Run(fmt.Sprintf("purge=%v/%s", purge, c.name), func(t *testing.T) {
				data := copyData(t, k.data)
				c.damage(data)
				s, log := tryStart(t, data, c.args...)
				if c.refusal != "" {
					if s != nil {
						t.Fatalf("started despite the damage (want a refusal naming %s)", c.refusal)
					}
					if !strings.Contains(log, "refusing to start") || !strings.Contains(log, c.refusal) {
						t.Fatalf("exited without a refusal naming %s:\n%s", c.refusal, log)
					}
					return
				}
				if s == nil {
					t.Fatalf("refused to start:\n%s", log)
				}
				checkExact(t, s, k)
			})
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestRecoveryRandomKills kills a loaded server at a random moment, applies
// a random damage from those recovery must survive (a lost or damaged
// index, a lost synced mark, a lost store), restarts it and checks that
// every acknowledged row is there. LOCKSTEP_RECOVERY_ROUNDS sets the
// number of rounds (default 3; bench/recovery-campaign.sh runs many) and
// LOCKSTEP_SEED the seed.
func TestRecoveryRandomKills(t *testing.T) {
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_RECOVERY_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LOCKSTEP_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	damages := []struct {
		name  string
		apply func(data string)
	}{
		{"none", func(string) {}},
		{"binlog.index missing", func(d string) { os.Remove(filepath.Join(d, "binlog.index")) }},
		{"binlog.synced missing", func(d string) { os.Remove(filepath.Join(d, "binlog.synced")) }},
		{"store missing", func(d string) { os.RemoveAll(filepath.Join(d, "store")) }},
	}
	acked := 0
	for round := range rounds {
		k := killDir(t, false, true, r.Uint64())
		dmg := damages[r.IntN(len(damages))]
		dmg.apply(k.data)
		s, log := tryStart(t, k.data)
		if s == nil {
			t.Fatalf("round %d (%s): refused to start:\n%s", round, dmg.name, log)
		}
		k.executed = binlog.GTIDSet{}
		checkExact(t, s, k)
		s.stop()
		acked += len(k.acked)
	}
	t.Logf("%d rounds, %d acknowledged inserts, none lost", rounds, acked)
}
