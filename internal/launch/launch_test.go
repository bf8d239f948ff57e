package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessDiesWithStarter: a process Start started does not outlive a
// starter (a test, a bench) killed before it could stop it. The test runs
// itself again as the starter, which starts a process and exits without
// stopping it.
func TestProcessDiesWithStarter(t *testing.T) {
	if dir := os.Getenv("LOCKSTEP_TEST_ORPHAN_DIR"); dir != "" {
		p, err := Start(exec.Command("sleep", "300"), filepath.Join(dir, "sleep.log"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(p.Cmd.Process.Pid)), 0o644)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessDiesWithStarter$")
	cmd.Env = append(os.Environ(), "LOCKSTEP_TEST_ORPHAN_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the helper: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	// Dead, or a zombie waiting for init to reap it.
	alive := func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		return len(fields) > 0 && fields[0] != "Z"
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d outlived the process that started it", pid)
	}
}

// TestWaits: a waited-for server that exits is reported as exited, with
// its log; one that never answers, as late.
func TestWaits(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(exec.Command("sh", "-c", "echo starting; exit 3"), filepath.Join(dir, "exit.log"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitListening(1, 10*time.Second)
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("a process that exited: %v", err)
	}
	p, err = Start(exec.Command("sleep", "30"), filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if err := p.WaitLogged("ready", 1, 300*time.Millisecond); err == nil || errors.Is(err, ErrExited) {
		t.Fatalf("a process that never says it is ready: %v", err)
	}
	start := time.Now()
	p.Stop(10 * time.Second)
	if p.Running() || time.Since(start) > 5*time.Second {
		t.Fatalf("Stop: running %v after %v", p.Running(), time.Since(start))
	}
}
