package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// TestDiskFullResumes runs a server on a small tmpfs, fills the disk, and
// checks that commits fail with 1026 (not acknowledged), resume by
// themselves once space is freed (no restart), and that after kill -9
// every acknowledged row is there. It needs to mount a tmpfs (root); where
// it cannot, it is skipped and says so.
func TestDiskFullResumes(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (%v: %s): skipped", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	s, log := tryStart(t, filepath.Join(mnt, "data"))
	if s == nil {
		t.Fatalf("server did not start:\n%s", log)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, "CREATE DATABASE f")
	mustExec(t, db, "CREATE TABLE f.t (id INT PRIMARY KEY, v TEXT)")
	acked := map[int]bool{}
	id := 0
	insert := func() error {
		id++
		_, err := db.Exec("INSERT INTO f.t VALUES (?, REPEAT('y', 3000))", id)
		if err == nil {
			acked[id] = true
		}
		return err
	}
	for range 50 {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}
	// Fill the disk.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Close()
	var full error
	for range 500 {
		if full = insert(); full != nil {
			break
		}
	}
	var me *mysqldrv.MySQLError
	if !errors.As(full, &me) || me.Number != 1026 {
		t.Fatalf("insert on a full disk: %v", full)
	}
	if err := insert(); err == nil {
		t.Fatal("an insert succeeded on a full disk")
	}
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	// Commits resume by themselves.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := insert()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("commits did not resume after space was freed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 20 {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}
	s.kill()
	s2, log := tryStart(t, filepath.Join(mnt, "data"))
	if s2 == nil {
		t.Fatalf("server did not restart after the full disk:\n%s", log)
	}
	db2, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s2.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got := idSet(t, db2, "SELECT id FROM f.t")
	for i := range acked {
		if !got[i] {
			t.Fatalf("acknowledged row %d lost after the full disk", i)
		}
	}
	for i := range got {
		if !acked[i] {
			t.Fatalf("row %d is there, but its insert failed", i)
		}
	}
	t.Logf("%d rows acknowledged, first failure: %v", len(acked), full)
}

// TestReadOnlyDiskRefusesCommits puts a server's data directory on an
// ext4 filesystem (a loop device) mounted errors=remount-ro and makes the
// kernel remount it read-only under the server, as it does after an I/O
// error (ext4's trigger_fs_error): commits fail with 1026 naming the
// read-only filesystem (never acknowledged), reads go on, the server
// stays up. Such a filesystem stays read-only until it is unmounted and
// checked: the server is then killed, the filesystem checked (e2fsck)
// and mounted again, and the restarted server has every acknowledged row
// and none that failed. A filesystem cannot be made read-only by hand
// while files are open for writing (mount -o remount,ro is refused), so
// this is the way a running server meets one. It needs root, a loop
// device and e2fsprogs; without them it is skipped and says so.
func TestReadOnlyDiskRefusesCommits(t *testing.T) {
	for _, tool := range []string{"mkfs.ext4", "e2fsck", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: skipped", tool)
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device (%v: %s): skipped", err, strings.TrimSpace(string(out)))
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-t", "ext4", "-o", "errors=remount-ro", loop, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v: %s", loop, err, out)
		}
	}
	mount()
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(loop), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		t.Skipf("this kernel has no %s: skipped", trigger)
	}

	s, log := tryStart(t, filepath.Join(mnt, "data"))
	if s == nil {
		t.Fatalf("server did not start:\n%s", log)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, "CREATE DATABASE r")
	mustExec(t, db, "CREATE TABLE r.t (id INT PRIMARY KEY, v TEXT)")
	acked, failed := map[int]bool{}, map[int]bool{}
	id := 0
	insert := func() error {
		id++
		_, err := db.Exec("INSERT INTO r.t VALUES (?, REPEAT('z', 500))", id)
		if err == nil {
			acked[id] = true
		} else {
			failed[id] = true
		}
		return err
	}
	for range 100 {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(trigger, []byte("lockstep test\n"), 0o200); err != nil {
		t.Fatalf("trigger_fs_error: %v", err)
	}
	var refused error
	for range 50 {
		if refused = insert(); refused != nil {
			break
		}
	}
	var me *mysqldrv.MySQLError
	if !errors.As(refused, &me) || me.Number != 1026 || !strings.Contains(me.Message, "Read-only file system") {
		t.Fatalf("insert on a read-only disk: %v", refused)
	}
	for range 5 {
		if err := insert(); err == nil {
			t.Fatal("an insert succeeded on a read-only disk")
		}
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM r.t").Scan(&n); err != nil || n != len(acked) {
		t.Fatalf("a read on the read-only disk: %d rows, %v (acknowledged %d)", n, err, len(acked))
	}

	s.kill()
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	// e2fsck exits 1 when it corrected something: the filesystem had an
	// error recorded.
	if out, err := exec.Command("e2fsck", "-fy", loop).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck: %v: %s", err, out)
		}
	}
	mount()
	s2, log := tryStart(t, filepath.Join(mnt, "data"))
	if s2 == nil {
		t.Fatalf("server did not restart after the read-only disk:\n%s", log)
	}
	db2, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s2.port))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got := idSet(t, db2, "SELECT id FROM r.t")
	for i := range acked {
		if !got[i] {
			t.Fatalf("acknowledged row %d lost after the read-only disk", i)
		}
	}
	for i := range got {
		if failed[i] {
			t.Fatalf("row %d is there, but its insert failed", i)
		}
	}
	if err := insert(); err == nil {
		t.Fatal("the old server still answers")
	}
	if _, err := db2.Exec("INSERT INTO r.t VALUES (?, 'after')", id+1); err != nil {
		t.Fatalf("an insert after the disk came back: %v", err)
	}
	t.Logf("%d rows acknowledged, then: %v", len(acked), refused)
}
