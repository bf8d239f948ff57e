package server

import "testing"

func TestRunsDetached(t *testing.T) {
	for _, tc := range []struct {
		query string
		db    string
		dirty bool
		want  bool
	}{
		{"SHOW STATUS LIKE 'wsrep%'", "", false, true},
		{"SHOW CREATE TABLE d.t", "", false, true},
		{"SET SESSION wsrep_sync_wait = 1", "", false, true},
		{"USE d", "", false, true},
		{"BEGIN", "", false, true},
		{"ROLLBACK", "", false, true},
		{"KILL 7", "", false, true},
		{"SELECT 1", "", false, true},
		{"SELECT @@version, NOW() FROM dual", "", false, true},
		{"SELECT * FROM information_schema.tables", "", false, true},
		{"SELECT * FROM PERFORMANCE_SCHEMA.threads t JOIN information_schema.processlist p ON t.id = p.id", "", false, true},
		{"SELECT * FROM tables", "information_schema", false, true},
		{"SELECT * FROM d.t", "", false, false},
		{"SELECT * FROM t", "d", false, false},
		{"SELECT (SELECT COUNT(*) FROM d.t) FROM information_schema.tables", "", false, false},
		{"SELECT 1 UNION SELECT i FROM d.t", "", false, false},
		{"SELECT * FROM d.t", "", true, true},
		{"INSERT INTO d.t VALUES (1)", "", true, false},
		{"UPDATE d.t SET i = 2", "", false, false},
		{"CREATE TABLE d.u (i INT)", "", false, false},
		{"DROP DATABASE d", "", false, false},
		{"SELECT * FROM d.t FOR UPDATE", "", false, false},
		{"not sql at all", "", false, false},
	} {
		if got := runsDetached(tc.query, tc.db, tc.dirty); got != tc.want {
			t.Errorf("runsDetached(%q, db %q, dirty %v) = %v, want %v", tc.query, tc.db, tc.dirty, got, tc.want)
		}
	}
}
