package child

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie waiting to be reaped is dead).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// TestChildSurvivesThreadEndsDiesWithProcess: a child outlives the thread
// of its parent that asked for it, when that thread ends (its goroutine
// exiting while locked to it, as after a setns), and dies with the
// parent. The test runs itself as the parent.
func TestChildSurvivesThreadEndsDiesWithProcess(t *testing.T) {
	if os.Getenv("CHILD_TEST_PARENT") == "1" {
		// Each started by a goroutine locked to its thread, which then
		// exits: the thread ends (unless it is the main thread, which Go
		// keeps).
		var pids []string
		for range 5 {
			cmd := exec.Command("sleep", "300")
			started := make(chan error)
			go func() {
				runtime.LockOSThread()
				started <- Start(cmd)
			}()
			if err := <-started; err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			pids = append(pids, strconv.Itoa(cmd.Process.Pid))
		}
		time.Sleep(200 * time.Millisecond)
		for _, p := range pids {
			pid, _ := strconv.Atoi(p)
			fmt.Println(pid, alive(pid))
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildSurvivesThreadEndsDiesWithProcess$")
	cmd.Env = append(os.Environ(), "CHILD_TEST_PARENT=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the parent: %v\n%s", err, out)
	}
	var pids []int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var pid int
		var up bool
		if _, err := fmt.Sscan(line, &pid, &up); err != nil {
			continue // go test's own output
		}
		pids = append(pids, pid)
		if !up {
			t.Errorf("child %d died while its parent ran", pid)
		}
	}
	if len(pids) != 5 {
		t.Fatalf("the parent said %q", out)
	}
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Errorf("child %d outlived its parent", pid)
		}
	}
}
