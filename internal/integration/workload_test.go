package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/child"
	"github.com/lockstepdb/lockstep/internal/mariadb"
	"github.com/lockstepdb/lockstep/internal/workload"
)

// runWorkload runs `lockstep workload` as a user would and returns its
// report and exit status.
func runWorkload(t *testing.T, name string, args ...string) (*workload.Report, int, string) {
	t.Helper()
	dir := t.TempDir()
	// A failed run shows what its servers logged (the directory goes
	// with the test).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "server.log" {
				b, _ := os.ReadFile(p)
				lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
				if len(lines) > 80 {
					lines = lines[len(lines)-80:]
				}
				t.Logf("the end of %s:\n%s", strings.TrimPrefix(p, dir+"/"), strings.Join(lines, "\n"))
			}
			return nil
		})
	})
	start := "--start-server"
	for _, a := range args {
		if a == "--start-cluster" || a == "--start-replicas" {
			start = ""
		}
	}
	all := append([]string{"workload", name, "--dir", dir, "--seed", "42"}, args...)
	if start != "" {
		all = append(all, start)
	}
	cmd := exec.Command(binary, all...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := child.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { err = cmd.Wait(); out = buf.Bytes(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("lockstep workload %s did not end:\n%s", name, out)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "report.json"))
	if rerr != nil {
		t.Fatalf("lockstep workload %s wrote no report (exit %d):\n%s", name, code, out)
	}
	var rep workload.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// The server the command started is stopped, whatever the verdict.
	for _, ep := range append(rep.Endpoints, rep.Servers...) {
		if c, err := net.DialTimeout("tcp", ep, time.Second); err == nil {
			c.Close()
			t.Errorf("the server the command started still answers on %s (exit %d)", ep, code)
		}
	}
	for _, f := range []string{"report.txt", map[string]string{"acked-writes": "ackedwrites.jsonl", "bank": "bank.jsonl",
		"register": "register.jsonl", "list-append": "history.jsonl"}[name]} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	return &rep, code, string(out)
}

// injected fails t if a fault of rep could not be injected, and counts
// the faults of kind.
func injected(t *testing.T, rep *workload.Report, kind string) int {
	t.Helper()
	n := 0
	for _, f := range rep.Faults {
		if strings.Contains(f, "failed") {
			t.Fatalf("a fault could not be injected: %s", f)
		}
		if kind != "" && strings.HasPrefix(f, kind) {
			n++
		}
	}
	return n
}

// TestWorkloadsUnderKills is the short version of the single-server
// campaign: every workload runs against a durable Lockstep server that is
// killed with SIGKILL (and restarted, cleanly or not) every second or so;
// no acknowledged write may be lost, the bank's total must hold in every
// read, no locking increment may be lost, and list-append must show no
// anomaly REPEATABLE READ forbids in MySQL-family servers.
func TestWorkloadsUnderKills(t *testing.T) {
	for _, name := range workload.Names() {
		t.Run(name, func(t *testing.T) {
			rep, code, out := runWorkload(t, name, "--duration", "6s", "--clients", "6",
				"--faults", "kill,restart", "--fault-interval", "1500ms")
			t.Logf("%s", strings.TrimSpace(rep.String()))
			if code != 0 || !rep.Valid {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if len(rep.Faults) < 2 || rep.OK == 0 {
				t.Fatalf("%d faults, %d transactions acknowledged: the campaign did not exercise anything", len(rep.Faults), rep.OK)
			}
			injected(t, rep, "")
		})
	}
}

// TestClusterWorkloadsUnderFaults runs every workload against a
// three-member cluster while members are killed, paused, restarted and
// cut off from the others (network namespaces, as root):
// no acknowledged write lost, the bank's total held, and, judged at
// snapshot isolation (what a member promises across the cluster), no
// lost update even with plain reads and no anomaly list-append can see
// beyond write skew.
func TestClusterWorkloadsUnderFaults(t *testing.T) {
	for i, name := range workload.Names() {
		t.Run(name, func(t *testing.T) {
			// A seed per workload, so that the schedules differ.
			rep, code, out := runWorkload(t, name, "--start-cluster", "3", "--duration", "8s", "--clients", "6", "--seed", fmt.Sprint(7+i),
				"--faults", "kill,pause,restart,partition,wipe", "--fault-interval", "2s", "--expect", "snapshot-isolation")
			t.Logf("%s", strings.TrimSpace(rep.String()))
			if code != 0 || !rep.Valid {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			// Partitions need root and iproute2 (network namespaces);
			// without them they must be reported as skipped, not pass
			// unnoticed.
			_, noIP := exec.LookPath("ip")
			if can := os.Geteuid() == 0 && noIP == nil; can != (len(rep.SkippedFaults) == 0) {
				t.Fatalf("namespaces available %v, skipped faults %q", can, rep.SkippedFaults)
			}
			if len(rep.Faults) < 2 || rep.OK == 0 {
				t.Fatalf("%d faults, %d transactions acknowledged: the campaign did not exercise anything", len(rep.Faults), rep.OK)
			}
		})
	}
}

// TestWorkloadsUnderFullDisks runs acked-writes and bank against a
// durable server whose data directory is on a small tmpfs that a fault
// fills to the last byte for a second, between kills: commits fail while
// it is full, resume by themselves, and nothing acknowledged is lost.
// Without root the fault must be reported as skipped.
func TestWorkloadsUnderFullDisks(t *testing.T) {
	for _, name := range []string{"acked-writes", "bank"} {
		t.Run(name, func(t *testing.T) {
			rep, code, out := runWorkload(t, name, "--duration", "8s", "--clients", "6",
				"--faults", "diskfull,kill", "--fault-interval", "2s", "--disk-size", fmt.Sprint(128<<20))
			t.Logf("%s", strings.TrimSpace(rep.String()))
			if code != 0 || !rep.Valid {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			full := injected(t, rep, "diskfull")
			if os.Geteuid() != 0 {
				if len(rep.SkippedFaults) != 1 {
					t.Fatalf("without root the full disk must be skipped and say so: %q", rep.SkippedFaults)
				}
				return
			}
			if full == 0 || rep.OK == 0 {
				t.Fatalf("%d full disks, %d transactions acknowledged: the campaign did not exercise anything", full, rep.OK)
			}
		})
	}
}

// TestWorkloadsUnderReadOnlyDisks runs acked-writes and bank against a
// durable server whose data directory is on ext4 over a loop device,
// which the kernel makes read-only under the load (as after an I/O
// error) between kills; the server is then killed, the filesystem
// checked and the server restarted. Nothing acknowledged may be lost and
// nothing refused may appear: a group whose fsync failed as the disk
// went read-only is answered 1180 (its outcome unknown), not refused.
// Without root or a loop device the fault must be reported as skipped.
func TestWorkloadsUnderReadOnlyDisks(t *testing.T) {
	for _, name := range []string{"acked-writes", "bank"} {
		t.Run(name, func(t *testing.T) {
			rep, code, out := runWorkload(t, name, "--duration", "10s", "--clients", "6",
				"--faults", "readonly,kill", "--fault-interval", "2500ms", "--disk-size", fmt.Sprint(256<<20))
			t.Logf("%s", strings.TrimSpace(rep.String()))
			if code != 0 || !rep.Valid {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			ro := injected(t, rep, "readonly")
			if len(rep.SkippedFaults) > 0 {
				if os.Geteuid() == 0 && os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
					t.Fatalf("as root the read-only disk must be injected: %q", rep.SkippedFaults)
				}
				return
			}
			if ro == 0 || rep.OK == 0 {
				t.Fatalf("%d read-only disks, %d transactions acknowledged: the campaign did not exercise anything", ro, rep.OK)
			}
		})
	}
}

// TestReplicatedWorkloadsUnderFailovers runs every workload against a
// primary and two semi-synchronous replicas (AFTER_SYNC) while the
// primary is killed and a replica promoted (as `lockstep failover`
// does), the primary drops its replicas' connections, and servers are
// killed: clients follow the primary, no acknowledged write is lost, the
// bank's total holds, and every server ends with the same rows.
func TestReplicatedWorkloadsUnderFailovers(t *testing.T) {
	for i, name := range workload.Names() {
		t.Run(name, func(t *testing.T) {
			rep, code, out := runWorkload(t, name, "--start-replicas", "3", "--semi-sync", "--duration", "8s", "--clients", "6",
				"--seed", fmt.Sprint(11+i), "--faults", "failover,disconnect,kill", "--fault-interval", "2s")
			t.Logf("%s", strings.TrimSpace(rep.String()))
			if code != 0 || !rep.Valid {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			failovers := injected(t, rep, "failover")
			if failovers == 0 || rep.OK == 0 || len(rep.Servers) != 3 {
				t.Fatalf("%d failovers, %d transactions acknowledged, servers %v: the campaign did not exercise anything", failovers, rep.OK, rep.Servers)
			}
		})
	}
}

// TestWorkloadCheckersFindAnomalies: judged against levels stronger than
// what InnoDB-style REPEATABLE READ gives, the same workloads must show
// the anomalies that level forbids: lost updates with plain reads (a
// violation at snapshot isolation), and dependency cycles in list-append
// (violations at serializable). A checker that finds nothing here is
// broken.
func TestWorkloadCheckersFindAnomalies(t *testing.T) {
	rep, code, out := runWorkload(t, "register", "--duration", "4s", "--clients", "8", "--expect", "snapshot-isolation")
	if code != 1 || rep.Valid {
		t.Fatalf("register judged at snapshot isolation: exit %d, valid %v:\n%s", code, rep.Valid, out)
	}
	failed := map[string]bool{}
	for _, c := range rep.Checks {
		failed[strings.Fields(c.Name)[0]+" "+strings.Fields(c.Name)[1]] = !c.OK
	}
	if !failed["lost updates"] || failed["no lost"] {
		t.Fatalf("register: the plain-read lost updates must fail the check, the locking ones must not:\n%s", rep.String())
	}

	rep, code, out = runWorkload(t, "list-append", "--duration", "5s", "--clients", "8", "--expect", "serializable")
	if code != 1 || rep.Valid {
		t.Fatalf("list-append judged at serializable: exit %d:\n%s", code, out)
	}
	detail := rep.Checks[0].Detail
	if !strings.Contains(detail, "G-single") && !strings.Contains(detail, "G2-item") && !strings.Contains(detail, "lost-update") {
		t.Fatalf("list-append at serializable found no cycle:\n%s", detail)
	}
	fmt.Println(strings.SplitN(detail, "\n", 2)[0])
}

// TestWorkloadsAgainstMariaDBUnderFaults runs the workloads the way the
// campaigns compare servers: the command starts MariaDB itself
// (--mariadbd: durable settings, its data directory made by
// mariadb-install-db) and kills and restarts it. A durable MariaDB loses
// no acknowledged insert, and its bank ends with the total it began with
// and no negative balance; the run must have injected its faults and
// stopped the server.
//
// What MariaDB's reads see during the run is its own affair, reported
// and not judged here: once in some thirty runs, a read two seconds
// after a kill -9 and restart saw a transfer's credit without its debit
// (a total of 805; the campaigns in docs/RELIABILITY.md have MariaDB
// 10.11's crash recovery failing outright too). The same check on
// Lockstep's reads fails its tests.
func TestWorkloadsAgainstMariaDBUnderFaults(t *testing.T) {
	mariadbd := needTool(t, "mariadbd")
	needTool(t, "mariadb-install-db")
	for _, name := range []string{"acked-writes", "bank"} {
		t.Run(name, func(t *testing.T) {
			rep, code, out := runWorkload(t, name, "--mariadbd", mariadbd, "--duration", "8s", "--clients", "6",
				"--faults", "kill,restart", "--fault-interval", "2s")
			t.Logf("%s", strings.TrimSpace(rep.String()))
			judged := 0
			for _, c := range rep.Checks {
				if name == "bank" && c.Name == "total unchanged" {
					if !c.OK {
						t.Logf("MariaDB's reads during the run: %s", c.Detail)
					}
					continue
				}
				judged++
				if !c.OK {
					t.Fatalf("%s: %s\nexit %d:\n%s", c.Name, c.Detail, code, out)
				}
			}
			if code > 1 || judged == 0 {
				t.Fatalf("exit %d, %d checks judged:\n%s", code, judged, out)
			}
			injected(t, rep, "")
			if len(rep.Faults) < 2 || rep.OK == 0 {
				t.Fatalf("%d faults, %d transactions acknowledged: the run did not exercise anything", len(rep.Faults), rep.OK)
			}
		})
	}
}

// TestWorkloadsAgainstGaleraUnderFaults: the same against a three-node
// MariaDB Galera cluster the command starts (--start-cluster with
// --mariadbd), a node killed and restarted (rejoining by state transfer)
// during the run. What Galera guarantees is its own affair (the
// campaigns report it); here the run must start the cluster, inject the
// faults, check the histories and stop every node.
func TestWorkloadsAgainstGaleraUnderFaults(t *testing.T) {
	mariadbd := needTool(t, "mariadbd")
	for _, tool := range []string{"mariadb-install-db", "mariabackup", "socat"} {
		needTool(t, tool)
	}
	provider := mariadb.GaleraProvider
	if _, err := os.Stat(provider); err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatalf("Galera's provider is required (LOCKSTEP_REQUIRE_TOOLS=1): %v", err)
		}
		t.Skipf("Galera's provider: %v", err)
	}
	rep, code, out := runWorkload(t, "acked-writes", "--start-cluster", "3", "--mariadbd", mariadbd,
		"--galera-provider", provider, "--duration", "10s", "--clients", "6", "--faults", "kill", "--fault-interval", "3s")
	t.Logf("%s", strings.TrimSpace(rep.String()))
	if code > 1 || len(rep.Checks) == 0 || len(rep.Endpoints) != 3 {
		t.Fatalf("exit %d, %d checks, endpoints %v:\n%s", code, len(rep.Checks), rep.Endpoints, out)
	}
	if injected(t, rep, "kill") == 0 || rep.OK == 0 {
		t.Fatalf("%d kills, %d transactions acknowledged: the run did not exercise anything", len(rep.Faults), rep.OK)
	}
}

// TestWorkloadReportsAServerThatStaysDown: a server that does not answer
// after the run (here killed half-way and never started again) fails the
// run with a check saying so, in a report written with what the run
// recorded, rather than ending the command with an error and no report.
func TestWorkloadReportsAServerThatStaysDown(t *testing.T) {
	s := startServer(t, t.TempDir())
	dir := t.TempDir()
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		time.Sleep(1500 * time.Millisecond)
		s.kill()
	}()
	rep, err := workload.Run(context.Background(), "acked-writes", workload.Config{
		Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", s.port)}, User: "root", Clients: 4,
		Duration: 3 * time.Second, Settle: 2 * time.Second, Dir: dir, Seed: 1})
	<-killed
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	if rep.Valid || len(rep.Checks) != 1 || rep.Checks[0].OK || !strings.Contains(rep.Checks[0].Detail, "does not answer") || rep.OK == 0 {
		t.Fatalf("a server that stayed down: %s", rep.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
}
