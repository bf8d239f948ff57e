package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

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

// ParserOptions are the parser's options under the sql_mode of ctx's
// session (ANSI_QUOTES, PIPES_AS_CONCAT), read once per value: go-mysql-
// server's SqlMode lowercases each mode's name at every lookup.
func ParserOptions(ctx *sql.Context) ast.ParserOptions {
	if s := sessionOf(ctx); s != nil {
		if p := s.parsedSQLMode(); p != nil {
			return p.opts
		}
	}
	return sql.LoadSqlMode(ctx).ParserOptions()
}

// parsedSQLMode is a sql_mode value, its flags and the parser's options
// under it.
type parsedSQLMode struct {
	text string
	mode *sql.SqlMode
	opts ast.ParserOptions
	// noBackslashEscapes: the mode has NO_BACKSLASH_ESCAPES (clienttext.go).
	noBackslashEscapes bool
}

// sqlMode is the session's sql_mode, parsed once per value.
func (s *Session) sqlMode() *sql.SqlMode {
	if p := s.parsedSQLMode(); p != nil {
		return p.mode
	}
	return sql.NewSqlModeFromString("")
}

// parsedSQLMode is the session's sql_mode, parsed once per value; nil if
// the variable cannot be read.
func (s *Session) parsedSQLMode() *parsedSQLMode {
	v, err := s.BaseSession.GetSessionVariable(nil, "sql_mode")
	text, ok := v.(string)
	if err != nil || !ok {
		return nil
	}
	if p := s.parsedMode.Load(); p != nil && p.text == text {
		return p
	}
	mode := sql.NewSqlModeFromString(text)
	p := &parsedSQLMode{text: text, mode: mode, opts: mode.ParserOptions(), noBackslashEscapes: mode.ModeEnabled(sql.NoBackslashEscapes)}
	s.parsedMode.Store(p)
	return p
}

// NoBackslashEscapes says whether ctx's session has NO_BACKSLASH_ESCAPES
// in its sql_mode.
func NoBackslashEscapes(ctx *sql.Context) bool {
	if s := sessionOf(ctx); s != nil {
		p := s.parsedSQLMode()
		return p != nil && p.noBackslashEscapes
	}
	return sql.LoadSqlMode(ctx).ModeEnabled(sql.NoBackslashEscapes)
}
