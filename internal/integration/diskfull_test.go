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
