package admin

import (
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// TestFirstKept: a purge of the files older than a time keeps the last
// file started before it (it holds later events too) and the current
// file. Files are dated by the wall clock, which can jump: a file is
// purged only when every file up to its successor is dated before the
// time, so a file dated early by a jump back purges nothing before it.
func TestFirstKept(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	files := func(days ...int) []binlog.FileInfo {
		var fs []binlog.FileInfo
		for i, d := range days {
			fs = append(fs, binlog.FileInfo{Num: i + 1, Created: day(d)})
		}
		return fs
	}
	for _, c := range []struct {
		name  string
		files []binlog.FileInfo
		at    int // purge the files older than this day
		want  int
	}{
		{"nothing old", files(10, 11, 12), 9, 1},
		{"the last one started before is kept", files(1, 5, 10, 20), 12, 3},
		{"every file old: the current one is kept", files(1, 2, 3), 30, 3},
		{"only the current file", files(1), 30, 1},
		// File 3 was started after the clock jumped back to day 2: file
		// 2 (from day 10) stays while day 10 is not old.
		{"a jump back dates a file early", files(1, 10, 2, 20), 5, 1},
		{"a jump back, then time passes", files(1, 10, 2, 20), 15, 3},
		// File 2 was started while the clock was a year ahead: the files
		// after it are kept until then (longer, never shorter).
		{"a jump forward keeps files longer", files(1, 400, 3, 4), 20, 1},
	} {
		if got := FirstKept(c.files, day(c.at)); got != c.want {
			t.Errorf("%s: first kept %d, want %d", c.name, got, c.want)
		}
	}
}
