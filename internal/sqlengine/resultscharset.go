package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
)

// Results in the session's character_set_results, as MySQL sends them.
//
// go-mysql-server encodes a result's text in character_set_results
// itself, and fails the statement (1105) on a character that set cannot
// hold, where MySQL sends '?' in its place. So go-mysql-server, and the
// fast path, which asks the same method, encode text in utf8mb4
// (Session.GetCharacterSetResults), and the server transcodes what it
// sends into the session's own set (ResultsCharset, server/results.go),
// '?' standing for what that set cannot hold. NULL and binary, which
// mean each column's own set, go-mysql-server applies as MySQL does.
//
// Statements are still read as UTF-8, whatever character_set_client
// says (see the README).

// GetCharacterSetResults is the set go-mysql-server encodes results in.
func (s *Session) GetCharacterSetResults() sql.CharacterSetID {
	cs := s.BaseSession.GetCharacterSetResults()
	if cs == sql.CharacterSet_Unspecified || cs == sql.CharacterSet_binary {
		return cs
	}
	return sql.CharacterSet_utf8mb4
}

// ResultsCharset is connection connID's character_set_results when the
// server must transcode results into it (false for the Unicode sets,
// NULL and binary, and a connection without a session).
func (e *Engine) ResultsCharset(connID uint32) (sql.CharacterSetID, bool) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return 0, false
	}
	switch cs := v.(*Session).BaseSession.GetCharacterSetResults(); cs {
	case sql.CharacterSet_Unspecified, sql.CharacterSet_binary, sql.CharacterSet_utf8mb4, sql.CharacterSet_utf8mb3:
		return 0, false
	default:
		return cs, cs.Encoder() != nil
	}
}
