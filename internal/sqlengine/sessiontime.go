package sqlengine

// The session's clock: SET timestamp = N fixes what NOW(),
// CURRENT_TIMESTAMP, UNIX_TIMESTAMP() and column defaults of the current
// time see, as MySQL does (mysqlbinlog's output and replication tools set
// it before each statement), until SET timestamp = 0 or DEFAULT gives the
// real clock back; SYSDATE() always reads the real clock. go-mysql-server
// stores the variable and ignores it: every query read the wall clock, and
// @@timestamp showed 1000 (its placeholder default) instead of the time.
//
// The fixed time is kept on the Session (fixedTime) and set as each query
// context's query time when the context is made (Engine.NewContext).

import (
	"math"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// timestampDefault is go-mysql-server's default for @@timestamp, which
// SET timestamp = DEFAULT writes: it means the real clock.
const timestampDefault = 1000.0

// setTimestamp notes SET timestamp = v on the session.
func (s *Session) setTimestamp(v any) {
	f, ok := v.(float64)
	if !ok || f <= 0 || f == timestampDefault {
		s.fixedTime.Store(nil)
		return
	}
	sec, frac := math.Modf(f)
	t := time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3)
	s.fixedTime.Store(&t)
}

// timestampValue is @@timestamp: the fixed time, or the real clock, in
// seconds with microseconds.
func (s *Session) timestampValue() float64 {
	t := time.Now()
	if p := s.fixedTime.Load(); p != nil {
		t = *p
	}
	return float64(t.UnixMicro()) / 1e6
}

// isTimestamp reports whether name is the timestamp variable.
func isTimestamp(name string) bool { return strings.EqualFold(name, "timestamp") }

// applySessionTime sets c's query time from its session's fixed time.
func applySessionTime(c *sql.Context) {
	if s, ok := c.Session.(*Session); ok {
		if p := s.fixedTime.Load(); p != nil {
			c.SetQueryTime(*p)
		}
	}
}
