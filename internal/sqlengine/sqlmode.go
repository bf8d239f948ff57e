package sqlengine

import "github.com/dolthub/go-mysql-server/sql"

// SQLMode is the sql_mode of ctx's session. go-mysql-server parses the
// variable's text into a set of flags at every use (several times a
// statement), except for its own default; a Lockstep session parses each
// value once (MySQL 8's default is not go-mysql-server's).
func SQLMode(ctx *sql.Context) *sql.SqlMode {
	if s := sessionOf(ctx); s != nil {
		return s.sqlMode()
	}
	return sql.LoadSqlMode(ctx)
}

// parsedSQLMode is a sql_mode value and its flags.
type parsedSQLMode struct {
	text string
	mode *sql.SqlMode
}

// sqlMode is the session's sql_mode, parsed once per value.
func (s *Session) sqlMode() *sql.SqlMode {
	v, err := s.BaseSession.GetSessionVariable(nil, "sql_mode")
	text, ok := v.(string)
	if err != nil || !ok {
		return sql.NewSqlModeFromString("")
	}
	if p := s.parsedMode.Load(); p != nil && p.text == text {
		return p.mode
	}
	p := &parsedSQLMode{text: text, mode: sql.NewSqlModeFromString(text)}
	s.parsedMode.Store(p)
	return p.mode
}
