package sqlengine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/storage"
)

// TestRebuildDoesNotStopOtherCommits: a column change or index build writes
// its data before its exclusive commit, so while a large table is rebuilt,
// commits to other tables go on; only the publication is exclusive.
func TestRebuildDoesNotStopOtherCommits(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE big (id INT PRIMARY KEY, v INT, s VARCHAR(100))")
	c.exec("CREATE TABLE small (id INT PRIMARY KEY)")
	pad := strings.Repeat("x", 90)
	for i := 0; i < 2000; i += 200 {
		var vals []string
		for j := i; j < i+200; j++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, '%s')", j, j%7, pad))
		}
		c.exec("INSERT INTO big VALUES " + strings.Join(vals, ","))
	}
	for n, ddl := range []string{"ALTER TABLE big ADD COLUMN z INT NOT NULL DEFAULT 3", "CREATE INDEX v_1 ON big (v)"} {
		inRebuild, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		restore := storage.SetRebuildHook(16<<10, func() {
			once.Do(func() {
				close(inRebuild)
				<-release
			})
		})
		done := make(chan error, 1)
		go func() {
			a := h.conn()
			a.exec("USE d")
			_, err := a.query(ddl)
			done <- err
		}()
		select {
		case <-inRebuild:
		case err := <-done:
			restore()
			t.Fatalf("%s finished without writing a chunk: %v", ddl, err)
		case <-time.After(30 * time.Second):
			restore()
			t.Fatalf("%s never reached its rebuild", ddl)
		}
		ins := make(chan error, 1)
		go func() {
			b := h.conn()
			b.exec("USE d")
			_, err := b.query(fmt.Sprintf("INSERT INTO small VALUES (%d)", n))
			ins <- err
		}()
		select {
		case err := <-ins:
			if err != nil {
				t.Fatalf("commit to another table during %s: %v", ddl, err)
			}
		case <-time.After(10 * time.Second):
			close(release)
			restore()
			t.Fatalf("a commit to another table waited for %s's rebuild", ddl)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		restore()
	}
	if got := c.rows("SELECT COUNT(*), SUM(z), COUNT(DISTINCT v) FROM big"); got != "2000,6000,7" {
		t.Fatalf("big after the rebuilds: %s", got)
	}
	if got := c.rows("SELECT COUNT(*) FROM big FORCE INDEX (v_1) WHERE v = 3"); got != "286" {
		t.Fatalf("rows through the new index: %s", got)
	}
	if got := c.rows("SELECT id FROM small ORDER BY id"); got != "0;1" {
		t.Fatalf("small: %s", got)
	}
}
