package sqlengine

import "testing"

// TestConsistentSnapshotAtStart: WITH CONSISTENT SNAPSHOT takes the read
// view at START TRANSACTION, also from an executable comment; a plain
// START TRANSACTION at the first read.
func TestConsistentSnapshotAtStart(t *testing.T) {
	h := newHarness(t)
	a, b := h.conn(), h.conn()
	a.exec("CREATE DATABASE d")
	a.exec("CREATE TABLE d.t (id INT PRIMARY KEY)")
	for _, c := range []struct {
		start string
		want  string
	}{
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT", "0"},
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", "0"},
		{"START TRANSACTION READ WRITE, WITH CONSISTENT SNAPSHOT", "0"},
		// as mysqldump and mariadb-dump --single-transaction send it
		{"START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */", "0"},
		{"START TRANSACTION /*!WITH CONSISTENT SNAPSHOT*/", "0"},
		{"START TRANSACTION", "1"},
		{"START TRANSACTION /* WITH CONSISTENT SNAPSHOT */", "1"},
		{"START TRANSACTION /*!90000 WITH CONSISTENT SNAPSHOT */", "1"},
	} {
		b.exec("DELETE FROM d.t")
		a.exec(c.start)
		b.exec("INSERT INTO d.t VALUES (1)")
		if got := a.rows("SELECT COUNT(*) FROM d.t"); got != c.want {
			t.Errorf("%s: the first read after a commit sees %s rows, want %s", c.start, got, c.want)
		}
		a.exec("COMMIT")
	}
}
