package integration

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// procGen writes random stored procedures: nested blocks, integer
// variables, IF, CASE, WHILE, REPEAT and LOOP with LEAVE and ITERATE,
// CONTINUE and EXIT handlers, SIGNAL, a duplicate key, cursors, and
// writes to a table, with every loop bounded by a counter it increments
// first. Each appends what it does to a trace, which it returns.
type procGen struct {
	r      *rand.Rand
	vars   []string // integer variables in scope
	loops  []string // labels of the loops around the statement being written
	blocks []string // labels of the blocks around it
	n      int      // names given so far
	size   int      // statements written so far
}

func (g *procGen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *procGen) value() string {
	if len(g.vars) == 0 || g.r.IntN(3) == 0 {
		return strconv.Itoa(g.r.IntN(7))
	}
	return g.vars[g.r.IntN(len(g.vars))]
}

func (g *procGen) expr() string {
	switch g.r.IntN(4) {
	case 0:
		return g.value()
	case 1:
		return fmt.Sprintf("(%s + %s) %% 97", g.value(), g.value())
	case 2:
		return fmt.Sprintf("(%s * %s) %% 89", g.value(), g.value())
	default:
		return fmt.Sprintf("%s - %s", g.value(), g.value())
	}
}

func (g *procGen) cond() string {
	ops := []string{"<", ">", "=", "<>", ">=", "<="}
	c := fmt.Sprintf("%s %s %s", g.value(), ops[g.r.IntN(len(ops))], g.value())
	if g.r.IntN(4) == 0 {
		c = fmt.Sprintf("(%s) AND %s %s %s", c, g.value(), ops[g.r.IntN(len(ops))], g.value())
	}
	return c
}

func (g *procGen) trace(tag string) string {
	return fmt.Sprintf("SET trace = CONCAT(trace, '%s', %s, ',');", tag, g.value())
}

// stmts writes up to n statements at depth d.
func (g *procGen) stmts(d, n int) string {
	var b strings.Builder
	for range 1 + g.r.IntN(n) {
		b.WriteString(g.stmt(d))
		b.WriteString("\n")
	}
	return b.String()
}

func (g *procGen) stmt(d int) string {
	g.size++
	if d <= 0 || g.size > 40 {
		d = 0
	}
	k := g.r.IntN(16)
	if d == 0 {
		k = g.r.IntN(6)
	}
	switch k {
	case 0, 1:
		if len(g.vars) > 0 {
			return fmt.Sprintf("SET %s = %s;", g.vars[g.r.IntN(len(g.vars))], g.expr())
		}
		return g.trace("s")
	case 2:
		return g.trace("t")
	case 3:
		return fmt.Sprintf("INSERT INTO plog (v) VALUES (%s);", g.expr())
	case 4:
		if len(g.vars) > 0 {
			return fmt.Sprintf("SELECT COUNT(*) INTO %s FROM plog;", g.vars[g.r.IntN(len(g.vars))])
		}
		return g.trace("c")
	case 5:
		switch {
		case len(g.loops) > 0 && g.r.IntN(2) == 0:
			return fmt.Sprintf("IF %s THEN ITERATE %s; END IF;", g.cond(), g.loops[g.r.IntN(len(g.loops))])
		case len(g.loops)+len(g.blocks) > 0:
			all := append(append([]string(nil), g.loops...), g.blocks...)
			return fmt.Sprintf("IF %s THEN LEAVE %s; END IF;", g.cond(), all[g.r.IntN(len(all))])
		}
		return g.trace("n")
	case 6, 7:
		s := fmt.Sprintf("IF %s THEN\n%s", g.cond(), g.stmts(d-1, 2))
		if g.r.IntN(2) == 0 {
			s += fmt.Sprintf("ELSEIF %s THEN\n%s", g.cond(), g.stmts(d-1, 2))
		}
		if g.r.IntN(2) == 0 {
			s += "ELSE\n" + g.stmts(d-1, 2)
		}
		return s + "END IF;"
	case 8:
		s := fmt.Sprintf("CASE %s\n", g.expr())
		for i := range 1 + g.r.IntN(2) {
			s += fmt.Sprintf("WHEN %d THEN\n%s", i, g.stmts(d-1, 2))
		}
		if g.r.IntN(3) > 0 {
			s += "ELSE\n" + g.stmts(d-1, 1)
		}
		return s + "END CASE;"
	case 9, 10:
		return g.loop(d)
	case 11, 12:
		return g.block(d - 1)
	case 13:
		return fmt.Sprintf("IF %s THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'sig', MYSQL_ERRNO = 1644; END IF;", g.cond())
	case 14:
		return fmt.Sprintf("IF %s THEN INSERT INTO pkeys VALUES (1); END IF;", g.cond()) // 1062 from the second
	default:
		return g.cursor()
	}
}

// loop writes a WHILE, REPEAT or LOOP of at most 6 rounds, its counter
// incremented first.
func (g *procGen) loop(d int) string {
	label, counter := g.name("l"), g.name("c")
	max := 1 + g.r.IntN(4)
	g.loops = append(g.loops, label)
	defer func() { g.loops = g.loops[:len(g.loops)-1] }()
	inc := fmt.Sprintf("SET %s = %s + 1;\n", counter, counter)
	var s string
	switch g.r.IntN(3) {
	case 0:
		s = fmt.Sprintf("%s: WHILE %s < %d DO\n%s%sEND WHILE %s;", label, counter, max, inc, g.stmts(d-1, 3), label)
	case 1:
		// ITERATE skips UNTIL (as in MySQL): the body bounds itself.
		guard := fmt.Sprintf("IF %s > %d THEN LEAVE %s; END IF;\n", counter, max+2, label)
		s = fmt.Sprintf("%s: REPEAT\n%s%s%sUNTIL %s >= %d END REPEAT %s;", label, inc, guard, g.stmts(d-1, 3), counter, max, label)
	default:
		s = fmt.Sprintf("%s: LOOP\n%sIF %s > %d THEN LEAVE %s; END IF;\n%sEND LOOP %s;", label, inc, counter, max, label, g.stmts(d-1, 3), label)
	}
	// The counter is declared by a block of its own around the loop.
	return fmt.Sprintf("BEGIN\nDECLARE %s INT DEFAULT 0;\n%s\nEND;", counter, s)
}

// block writes a labelled BEGIN ... END with variables and, often, a
// handler.
func (g *procGen) block(d int) string {
	label := g.name("b")
	var b strings.Builder
	fmt.Fprintf(&b, "%s: BEGIN\n", label)
	nv := len(g.vars)
	for range g.r.IntN(3) {
		v := g.name("v")
		fmt.Fprintf(&b, "DECLARE %s INT DEFAULT %s;\n", v, g.expr())
		g.vars = append(g.vars, v)
	}
	if g.r.IntN(3) > 0 {
		kind := []string{"CONTINUE", "EXIT"}[g.r.IntN(2)]
		cond := []string{"SQLEXCEPTION", "SQLSTATE '45000'", "1062", "SQLSTATE '23000'", "1644"}[g.r.IntN(5)]
		fmt.Fprintf(&b, "DECLARE %s HANDLER FOR %s SET trace = CONCAT(trace, 'h%s', ',');\n", kind, cond, label)
	}
	g.blocks = append(g.blocks, label)
	b.WriteString(g.stmts(d, 4))
	g.blocks = g.blocks[:len(g.blocks)-1]
	g.vars = g.vars[:nv]
	fmt.Fprintf(&b, "END %s;", label)
	return b.String()
}

// cursor writes a cursor read to its end over plog's first rows.
func (g *procGen) cursor() string {
	c, done, v := g.name("cur"), g.name("d"), g.name("x")
	return fmt.Sprintf(`BEGIN
DECLARE %[2]s INT DEFAULT 0;
DECLARE %[3]s INT;
DECLARE %[1]s CURSOR FOR SELECT v FROM plog ORDER BY id LIMIT 3;
DECLARE CONTINUE HANDLER FOR NOT FOUND SET %[2]s = 1;
OPEN %[1]s;
r%[1]s: LOOP
FETCH %[1]s INTO %[3]s;
IF %[2]s THEN LEAVE r%[1]s; END IF;
SET trace = CONCAT(trace, 'f', %[3]s, ',');
END LOOP r%[1]s;
CLOSE %[1]s;
END;`, c, done, v)
}

// procedure writes procedure name with parameter a.
func (g *procGen) procedure(name string) string {
	g.vars, g.loops, g.blocks, g.size = []string{"a"}, nil, nil, 0
	return fmt.Sprintf("CREATE PROCEDURE %s(IN a INT)\nBEGIN\nDECLARE trace VARCHAR(2000) DEFAULT '';\nDECLARE EXIT HANDLER FOR SQLSTATE '42S02' SET trace = 'no table';\n%s\nSELECT trace;\nEND", name, g.block(3))
}

// TestRandomProceduresAgainstMariaDB makes random procedures
// (procGen) on Lockstep and on MariaDB 10.11 and calls each with a few
// arguments: every CALL's result sets and error, and the rows it wrote,
// must be the same. LOCKSTEP_PROCEDURE_SEEDS sets how many procedures
// (default 40).
func TestRandomProceduresAgainstMariaDB(t *testing.T) {
	n := 40
	if v, err := strconv.Atoi(os.Getenv("LOCKSTEP_PROCEDURE_SEEDS")); err == nil && v > 0 {
		n = v
	}
	m := startMariaDB(t, 1)
	l := startServer(t, t.TempDir())
	for _, db := range []*sql.DB{m.db(), l.db("")} {
		mustExec(t, db, "CREATE DATABASE rp")
	}
	mdb := oneSession(t, "root@unix("+m.sock()+")/rp")
	ldb := oneSession(t, fmt.Sprintf("root@tcp(127.0.0.1:%d)/rp", l.port))
	differences, made, calls, failed := 0, 0, 0, 0
	for seed := range n {
		g := &procGen{r: rand.New(rand.NewPCG(uint64(seed), 42))}
		name := fmt.Sprintf("p%d", seed)
		text := g.procedure(name)
		for _, db := range []*sql.DB{mdb, ldb} {
			for _, q := range []string{"DROP TABLE IF EXISTS plog", "DROP TABLE IF EXISTS pkeys",
				"CREATE TABLE plog (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "CREATE TABLE pkeys (k INT PRIMARY KEY)"} {
				mustExec(t, db, q)
			}
		}
		mErr, lErr := errNumber(execErr(mdb, text)), errNumber(execErr(ldb, text))
		if mErr != lErr {
			t.Errorf("seed %d: CREATE PROCEDURE: MariaDB error %d, Lockstep %d\n%s", seed, mErr, lErr, text)
			differences++
			continue
		}
		if mErr != 0 {
			continue
		}
		made++
		for _, arg := range []int{0, 1, 3, 5} {
			q := fmt.Sprintf("CALL %s(%d)", name, arg)
			want, got := callResults(mdb, q), callResults(ldb, q)
			calls++
			if strings.Contains(want, "error") {
				failed++
			}
			wantRows, gotRows := tableText(t, mdb, "SELECT * FROM plog ORDER BY id"), tableText(t, ldb, "SELECT * FROM plog ORDER BY id")
			if want != got || wantRows != gotRows {
				t.Errorf("seed %d, %s:\nMariaDB  %s\n%s\nLockstep %s\n%s\n%s", seed, q, want, wantRows, got, gotRows, text)
				differences++
				break
			}
		}
		if differences > 3 {
			t.Fatal("stopping after 4 differences")
		}
	}
	t.Logf("%d procedures made of %d, %d CALLs compared (%d ended in an error on both)", made, n, calls, failed)
	if made < n/2 {
		t.Fatalf("only %d of %d random procedures could be made", made, n)
	}
}

func execErr(db *sql.DB, q string) error {
	_, err := db.Exec(q)
	return err
}
