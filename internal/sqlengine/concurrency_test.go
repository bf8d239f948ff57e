package sqlengine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSysbenchLikeNoSpuriousDeadlocks runs sysbench's write statements
// from four sessions on 1000 rows. Deadlocks are possible but must be rare;
// a flood of them means locks are taken that should not be.
func TestSysbenchLikeNoSpuriousDeadlocks(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE sb")
	c.exec("USE sb")
	c.exec("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(20) NOT NULL DEFAULT '', KEY k_1 (k))")
	var vals []string
	for i := 1; i <= 1000; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'x')", i, i))
	}
	c.exec("INSERT INTO t (id, k, c) VALUES " + strings.Join(vals, ","))
	var deadlocks, commits atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.conn()
			s.exec("USE sb")
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for range 100 {
				stmts := []string{
					"BEGIN",
					fmt.Sprintf("SELECT c FROM t WHERE id=%d", 1+r.IntN(1000)),
					fmt.Sprintf("UPDATE t SET k=k+1 WHERE id=%d", 1+r.IntN(1000)),
					fmt.Sprintf("UPDATE t SET c='y' WHERE id=%d", 1+r.IntN(1000)),
				}
				id := 1 + r.IntN(1000)
				stmts = append(stmts, fmt.Sprintf("DELETE FROM t WHERE id=%d", id),
					fmt.Sprintf("INSERT INTO t (id, k, c) VALUES (%d, %d, 'z')", id, id), "COMMIT")
				ok := true
				for _, q := range stmts {
					if _, err := s.query(q); err != nil {
						if strings.Contains(err.Error(), "Deadlock") {
							deadlocks.Add(1)
							s.query("ROLLBACK")
							ok = false
							break
						}
						t.Errorf("%s: %v", q, err)
						return
					}
				}
				if ok {
					commits.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("commits %d, deadlocks %d", commits.Load(), deadlocks.Load())
	if deadlocks.Load() > 20 {
		t.Fatalf("%d deadlocks in 400 transactions on 1000 rows", deadlocks.Load())
	}
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "1000" {
		t.Fatalf("row count %s", got)
	}
}
