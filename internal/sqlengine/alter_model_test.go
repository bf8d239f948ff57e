package sqlengine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestColumnChangesAgainstModel runs random column changes (add anywhere,
// drop, rename, widen), secondary indexes and row writes on one table, and
// compares the table with a simple model after each step, through a full
// scan and through index lookups; then replays the binlog into an empty
// store and compares again. LOCKSTEP_SEED replays a run.
// seedFromEnv returns a random seed for a randomized test, or
// LOCKSTEP_SEED's to replay a run, and logs it.
func seedFromEnv(t *testing.T) uint64 {
	seed := uint64(rand.Int64())
	if s := os.Getenv("LOCKSTEP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LOCKSTEP_SEED=%d", seed)
	return seed
}

func TestColumnChangesAgainstModel(t *testing.T) {
	seed := seedFromEnv(t)
	r := rand.New(rand.NewPCG(seed, 1))

	type column struct {
		name    string
		varchar int // 0: an integer column
		big     bool
		notNull bool
	}
	m := struct {
		cols    []column // after the primary key column id
		rows    map[int][]string
		indexed map[string]bool
	}{rows: map[int][]string{}, indexed: map[string]bool{}}
	m.cols = []column{{name: "a"}, {name: "b", varchar: 8}}

	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(8))")

	colIndex := func(name string) int {
		return slices.IndexFunc(m.cols, func(c column) bool { return c.name == name })
	}
	value := func(col column) (sqlText, shown string) {
		if !col.notNull && r.IntN(5) == 0 {
			return "NULL", "<nil>"
		}
		if col.varchar > 0 {
			s := strings.Repeat(string(rune('a'+r.IntN(3))), 1+r.IntN(col.varchar))
			return "'" + s + "'", s
		}
		n := r.IntN(40) - 10
		return strconv.Itoa(n), strconv.Itoa(n)
	}
	expect := func() string {
		ids := make([]int, 0, len(m.rows))
		for id := range m.rows {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		var out []string
		for _, id := range ids {
			out = append(out, strings.Join(append([]string{strconv.Itoa(id)}, m.rows[id]...), ","))
		}
		return strings.Join(out, ";")
	}
	check := func(c *conn, step string) {
		t.Helper()
		if got, want := c.rows("SELECT * FROM t ORDER BY id"), expect(); got != want {
			t.Fatalf("seed %d, after %s:\n got %s\nwant %s", seed, step, got, want)
		}
		for name := range m.indexed {
			i := colIndex(name)
			for _, row := range m.rows {
				v := row[i]
				if v == "<nil>" {
					continue
				}
				lit := v
				if m.cols[i].varchar > 0 {
					lit = "'" + v + "'"
				}
				var want []int
				for id, rr := range m.rows {
					if rr[i] == v {
						want = append(want, id)
					}
				}
				sort.Ints(want)
				ws := make([]string, len(want))
				for k, id := range want {
					ws[k] = strconv.Itoa(id)
				}
				q := fmt.Sprintf("SELECT id FROM t WHERE `%s` = %s ORDER BY id", name, lit)
				if got := c.rows(q); got != strings.Join(ws, ";") {
					t.Fatalf("seed %d, after %s: %s: got %s want %s", seed, step, q, got, strings.Join(ws, ";"))
				}
				break // one value per index is enough
			}
		}
	}

	nextID, nextCol := 1, 0
	for step := 0; step < 150; step++ {
		var q string
		switch op := r.IntN(10); {
		case op < 3: // insert
			id := nextID
			nextID++
			vals, shown := []string{strconv.Itoa(id)}, []string{}
			for _, col := range m.cols {
				v, s := value(col)
				vals, shown = append(vals, v), append(shown, s)
			}
			q = "INSERT INTO t VALUES (" + strings.Join(vals, ", ") + ")"
			c.exec(q)
			m.rows[id] = shown
		case op < 5 && len(m.rows) > 0 && len(m.cols) > 0: // update
			ids := make([]int, 0, len(m.rows))
			for id := range m.rows {
				ids = append(ids, id)
			}
			sort.Ints(ids)
			id, i := ids[r.IntN(len(ids))], r.IntN(len(m.cols))
			v, s := value(m.cols[i])
			q = fmt.Sprintf("UPDATE t SET `%s` = %s WHERE id = %d", m.cols[i].name, v, id)
			c.exec(q)
			m.rows[id][i] = s
		case op == 5 && len(m.rows) > 3: // delete
			for id := range m.rows {
				q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				c.exec(q)
				delete(m.rows, id)
				break
			}
		case op == 6: // add a column somewhere, with a default
			nextCol++
			col := column{name: fmt.Sprintf("c%d", nextCol), notNull: r.IntN(2) == 0}
			typ := "INT"
			if r.IntN(2) == 0 {
				col.varchar = 4 + r.IntN(8)
				typ = fmt.Sprintf("VARCHAR(%d)", col.varchar)
			}
			def, shown := value(column{varchar: col.varchar, notNull: true})
			if !col.notNull && r.IntN(3) == 0 {
				def, shown = "NULL", "<nil>"
			}
			nn := ""
			if col.notNull {
				nn = " NOT NULL"
			}
			pos, place := len(m.cols), ""
			if len(m.cols) > 0 && r.IntN(2) == 0 {
				pos = r.IntN(len(m.cols) + 1)
				place = " FIRST"
				if pos > 0 {
					place = " AFTER `" + m.cols[pos-1].name + "`"
				} else {
					// FIRST would put it before id; keep id first
					place = " AFTER id"
				}
			}
			q = fmt.Sprintf("ALTER TABLE t ADD COLUMN `%s` %s%s DEFAULT %s%s", col.name, typ, nn, def, place)
			c.exec(q)
			m.cols = slices.Insert(m.cols, pos, col)
			for id := range m.rows {
				m.rows[id] = slices.Insert(m.rows[id], pos, shown)
			}
		case op == 7 && len(m.cols) > 1: // drop a column (its indexes go with it)
			i := r.IntN(len(m.cols))
			q = fmt.Sprintf("ALTER TABLE t DROP COLUMN `%s`", m.cols[i].name)
			c.exec(q)
			delete(m.indexed, m.cols[i].name)
			m.cols = slices.Delete(m.cols, i, i+1)
			for id := range m.rows {
				m.rows[id] = slices.Delete(m.rows[id], i, i+1)
			}
		case op == 8 && len(m.cols) > 0: // rename or widen
			i := r.IntN(len(m.cols))
			col := m.cols[i]
			if r.IntN(2) == 0 {
				nextCol++
				nn := fmt.Sprintf("r%d", nextCol)
				q = fmt.Sprintf("ALTER TABLE t RENAME COLUMN `%s` TO `%s`", col.name, nn)
				if m.indexed[col.name] {
					delete(m.indexed, col.name)
					m.indexed[nn] = true
				}
				col.name = nn
			} else {
				typ := "BIGINT"
				if col.varchar > 0 {
					col.varchar += 5
					typ = fmt.Sprintf("VARCHAR(%d)", col.varchar)
				} else {
					col.big = true
				}
				nn := ""
				if col.notNull {
					nn = " NOT NULL"
				}
				q = fmt.Sprintf("ALTER TABLE t MODIFY COLUMN `%s` %s%s", col.name, typ, nn)
			}
			c.exec(q)
			m.cols[i] = col
		case op == 9 && len(m.cols) > 0: // index a column
			col := m.cols[r.IntN(len(m.cols))]
			if m.indexed[col.name] {
				continue
			}
			q = fmt.Sprintf("CREATE INDEX `ix_%s` ON t (`%s`)", col.name, col.name)
			c.exec(q)
			m.indexed[col.name] = true
		default:
			continue
		}
		check(c, q)
	}
	want := c.rows("SELECT * FROM t ORDER BY id")
	h.close()

	c2 := replayFromBinlog(t, fs, "d")
	if got := c2.rows("SELECT * FROM t ORDER BY id"); got != want {
		t.Fatalf("seed %d, after replay:\n got %s\nwant %s", seed, got, want)
	}
	check(c2, "replay")
}
