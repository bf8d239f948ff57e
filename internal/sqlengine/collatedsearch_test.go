package sqlengine

import "testing"

// TestCollatedSearch: LOCATE, INSTR, POSITION, LEAST, GREATEST and UNION
// compare strings by collation and count characters, as MySQL does.
func TestCollatedSearch(t *testing.T) {
	c := newHarness(t).conn()
	// A MySQL 8 client's: literals compare case- and accent-insensitively.
	c.exec("SET collation_connection = 'utf8mb4_0900_ai_ci'")
	for q, want := range map[string]string{
		"SELECT INSTR('ABC', 'b'), LOCATE('b', 'ABC'), POSITION('b' IN 'ABC')":                                       "2,2,2",
		"SELECT LOCATE('b', 'éb'), LOCATE('e', 'é'), INSTR('añb', 'b')":                                              "2,1,3",
		"SELECT LOCATE('b', 'abcb', 3), LOCATE('b', 'abc', 0), LOCATE('b', 'abc', -1)":                               "4,0,0",
		"SELECT LOCATE('', 'abc', 3), LOCATE('', 'abc', 4), LOCATE('', '')":                                          "3,0,1",
		"SELECT INSTR(BINARY 'ABC', 'b'), INSTR(BINARY 'éb', 'b')":                                                   "0,3",
		"SELECT INSTR('abc' COLLATE utf8mb4_bin, 'B'), INSTR('abc' COLLATE utf8mb4_bin, 'b')":                        "0,2",
		"SELECT INSTR('ABC', NULL) IS NULL, LOCATE('a', 'abc', NULL) IS NULL":                                        "true,true",
		"SELECT LEAST('a', 'B'), GREATEST('a', 'B'), LEAST('b', 'A', 'c')":                                           "a,B,A",
		"SELECT LEAST('B' COLLATE utf8mb4_bin, 'a'), LEAST('x', NULL) IS NULL":                                       "B,true",
		"SELECT LEAST(3, 1, 2), GREATEST(1.5, 2)":                                                                    "1,2",
		"SELECT COUNT(*) FROM (SELECT 'a' AS x UNION SELECT 'A' UNION SELECT 'á') u":                                 "1",
		"SELECT COUNT(*) FROM (SELECT 'a' AS x UNION ALL SELECT 'A') u":                                              "2",
		"SELECT x FROM (SELECT 'b' AS x UNION SELECT 'a' UNION SELECT 'B' UNION SELECT 'c' ORDER BY x LIMIT 1, 2) u": "b;c",
	} {
		if got := c.rows(q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
}
