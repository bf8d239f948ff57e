package server

// The slow query log, in MySQL's file format (what pt-query-digest and
// mariadb-dumpslow read): with slow_query_log ON, every statement a
// client runs that takes long_query_time seconds or more is appended to
// slow_query_log_file (relative to the data directory; by default
// <host name>-slow.log there) with its time, account, Query_time,
// Lock_time (the time it waited for row locks), Rows_sent and
// Rows_examined (the rows it read from the store), its database and the
// statement. log_output NONE writes nothing; TABLE is refused where it is
// set (sqlengine), as is general_log ON: there is no general log.
//
// The settings are read into atomics when the server starts and after any
// SET statement that names them, so a statement costs one atomic load
// while the log is off.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

type slowLog struct {
	on        atomic.Bool
	threshold atomic.Int64 // nanoseconds

	mu   sync.Mutex
	path string
	f    *os.File
}

// refreshSlowLog reads the slow log's settings.
func (s *Server) refreshSlowLog() {
	get := func(name string) any {
		_, v, _ := sql.SystemVariables.GetGlobal(name)
		return v
	}
	on := sqlengine.IntValue(get("slow_query_log")) != 0 && !sqlengine.LogOutputHas(get("log_output"), "NONE")
	secs, _ := get("long_query_time").(float64)
	s.slow.threshold.Store(int64(secs * float64(time.Second)))
	path := fmt.Sprint(get("slow_query_log_file"))
	if path == "" || path == "host_name-slow.log" { // go-mysql-server's placeholder
		host, _ := os.Hostname()
		path = host + "-slow.log"
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.cfg.DataDir, path)
	}
	s.slow.mu.Lock()
	if s.slow.f != nil && s.slow.path != path {
		s.slow.f.Close()
		s.slow.f = nil
	}
	s.slow.path = path
	s.slow.mu.Unlock()
	s.slow.on.Store(on)
}

// slowSettingChanged reports whether query may have changed the slow
// log's settings.
func slowSettingChanged(query string) bool {
	l := strings.ToLower(query)
	return strings.Contains(l, "slow_query_log") || strings.Contains(l, "long_query_time") || strings.Contains(l, "log_output")
}

// slowWrite writes statement t to the log if it took long_query_time or
// more.
func (s *Server) slowWrite(c *mysql.Conn, t *stmtTimer, query string, took time.Duration, lw, rr int64) {
	if took < time.Duration(s.slow.threshold.Load()) || !s.slow.on.Load() {
		return
	}
	db := t.schema
	host := ""
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		host = a.IP.String()
	}
	now := time.Now()
	var b strings.Builder
	// The short form of the time (MariaDB's, and MySQL's before 5.7),
	// which every reader of the format takes: mariadb-dumpslow takes only
	// it.
	fmt.Fprintf(&b, "# Time: %s\n", now.Format("060102 15:04:05"))
	fmt.Fprintf(&b, "# User@Host: %s[%s] @  [%s]  Id: %5d\n", c.User, c.User, host, c.ConnectionID)
	fmt.Fprintf(&b, "# Query_time: %.6f  Lock_time: %.6f Rows_sent: %d  Rows_examined: %d\n",
		took.Seconds(), time.Duration(lw-t.lockWait).Seconds(), t.rowsSent, rr-t.rowsRead)
	if db != "" {
		fmt.Fprintf(&b, "use %s;\n", db)
	}
	fmt.Fprintf(&b, "SET timestamp=%d;\n", t.start.Unix())
	// Passwords are not written, as in MySQL's logs.
	q := strings.TrimRight(strings.TrimSpace(sqlengine.RedactSecrets(query)), ";")
	fmt.Fprintf(&b, "%s;\n", q)
	s.slow.mu.Lock()
	defer s.slow.mu.Unlock()
	if s.slow.f == nil {
		f, err := os.OpenFile(s.slow.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			s.log.Warn("the slow query log cannot be opened", "file", s.slow.path, "err", err)
			return
		}
		if st, err := f.Stat(); err == nil && st.Size() == 0 {
			fmt.Fprintf(f, "%s, Version: %s (Lockstep). started with:\nTcp port: %d  Unix socket: -\nTime                 Id Command    Argument\n",
				os.Args[0], binlog.ServerVersion, s.cfg.Port)
		}
		s.slow.f = f
	}
	if _, err := s.slow.f.WriteString(b.String()); err != nil {
		s.log.Warn("the slow query log cannot be written", "file", s.slow.path, "err", err)
	}
}

// closeSlowLog closes the log's file.
func (s *Server) closeSlowLog() {
	s.slow.mu.Lock()
	defer s.slow.mu.Unlock()
	if s.slow.f != nil {
		s.slow.f.Close()
		s.slow.f = nil
	}
}
