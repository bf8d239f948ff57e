package integration

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/child"
)

// benchRun runs `lockstep bench` and returns the rows of its results.csv
// after checking that results.md and the named charts were written.
func benchRun(t *testing.T, charts []string, args ...string) [][]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	// A hung bench must fail this test with its goroutines in the log
	// (SIGQUIT), not run into the package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(append([]string{"bench"}, args...), "--out", out)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 30 * time.Second
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := child.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		// Its servers run under out; a bench killed by the timeout
		// could not stop them.
		exec.Command("pkill", "-KILL", "-f", out).Run()
		t.Fatalf("lockstep bench %v: %v\n%s", args, err, log.String())
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "results.md")); err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		b, err := os.ReadFile(filepath.Join(out, c+".png"))
		if err != nil {
			t.Fatalf("chart %s: %v", c, err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("chart %s is not a PNG: %v", c, err)
		}
	}
	// No server may outlive the command, nor leave its data behind (its
	// logs stay).
	if pids, _ := exec.Command("pgrep", "-f", out).Output(); len(bytes.TrimSpace(pids)) > 0 {
		t.Fatalf("servers still running after lockstep bench: %s", pids)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "servers", "*", "data")); len(left) > 0 {
		t.Fatalf("lockstep bench left its servers' data: %v", left)
	}
	if logs, _ := filepath.Glob(filepath.Join(out, "servers", "*", "*.log")); len(logs) == 0 {
		t.Fatal("lockstep bench kept no server log")
	}
	return recs[1:]
}

// freeRun finds n consecutive loopback ports free now, below the range
// the system gives out for outgoing connections.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 100; try++ {
		base := 20000 + rand.IntN(10000)
		ok := true
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

func col(row []string, name string) float64 {
	for i, c := range []string{"server", "config", "x", "threads", "tps", "qps", "p95_ms", "errors", "cpu_us_per_trx",
		"avg_group", "fsyncs_per_trx", "replica_rate", "behind_at_end", "catch_up_s", "fc_paused"} {
		if c == name {
			v, _ := strconv.ParseFloat(row[i], 64)
			return v
		}
	}
	panic(name)
}

// TestBenchDurability runs the durability experiment end to end at toy
// sizes with the built-in load generator, Lockstep alone.
func TestBenchDurability(t *testing.T) {
	base := freeRun(t, 10)
	rows := benchRun(t, []string{"durability"}, "durability", "--duration=1s", "--threads=1,2", "--tables=2",
		"--table-size=200", "--driver=builtin", "--peer=none", "--base-port="+strconv.Itoa(base))
	if len(rows) != 4*2 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	for _, r := range rows {
		if r[0] != "lockstep" || col(r, "tps") <= 0 || col(r, "cpu_us_per_trx") <= 0 {
			t.Fatalf("row %v", r)
		}
		// Every commit under sync_binlog=1 is in an fsynced group.
		if r[1] == "sync_binlog=1 flush=1" && (col(r, "fsyncs_per_trx") <= 0 || col(r, "fsyncs_per_trx") > 1) {
			t.Fatalf("fsyncs per transaction under full durability: %v", r)
		}
	}
}

// TestBenchReplicaLag runs replica-lag with sysbench and, beside Lockstep,
// MariaDB primaries and replicas (when installed; CI installs both).
func TestBenchReplicaLag(t *testing.T) {
	needTool(t, "sysbench")
	args := []string{"replica-lag", "--duration=2s", "--threads=2", "--tables=2", "--table-size=500", "--driver=sysbench", "--workers=0,4"}
	servers := map[string]bool{"lockstep": true}
	if _, err := exec.LookPath("mariadbd"); err == nil || os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
		needTool(t, "mariadbd")
		args = append(args, "--peer=mariadb")
		servers["mariadb"] = true
	}
	rows := benchRun(t, []string{"replica-lag-rate", "replica-lag-backlog"}, args...)
	if len(rows) != 2*len(servers) {
		t.Fatalf("%d rows, want %d: %v", len(rows), 2*len(servers), rows)
	}
	for _, r := range rows {
		if !servers[r[0]] || col(r, "tps") <= 0 || col(r, "replica_rate") <= 0 {
			t.Fatalf("row %v", r)
		}
	}
}

// TestBenchCluster runs the cluster experiment at toy sizes with three
// Lockstep members (Galera is not installed in CI: the bench script and
// this experiment bring it in where it is): a row per placement and
// applier count, with every member's CPU and the time flow control held
// commits back.
func TestBenchCluster(t *testing.T) {
	needTool(t, "sysbench")
	rows := benchRun(t, []string{"cluster-tps", "cluster-p95", "cluster-flow-control"}, "cluster", "--duration=2s", "--threads=2",
		"--tables=2", "--table-size=200", "--driver=sysbench", "--peer=none", "--appliers=1,4")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (two placements, two applier counts): %v", len(rows), rows)
	}
	configs := map[string]bool{}
	for _, r := range rows {
		configs[r[1]] = true
		if r[0] != "lockstep" || col(r, "tps") <= 0 || col(r, "cpu_us_per_trx") <= 0 || r[len(r)-1] == "" || col(r, "fc_paused") < 0 {
			t.Fatalf("row %v", r)
		}
	}
	if !configs["durable, clients on one node"] || !configs["durable, clients on three nodes"] {
		t.Fatalf("placements: %v", configs)
	}
}
