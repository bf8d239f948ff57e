package sqlengine

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Account syntax the parser lacks, rewritten before parsing into the
// MySQL 8 forms it has. Other servers write these forms in their binlogs
// and dumps, so a replica of them, or a restore, needs them:
//
//   - IDENTIFIED BY PASSWORD 'hash' (MariaDB, MySQL 5.7): the hash of
//     mysql_native_password, as IDENTIFIED WITH mysql_native_password AS
//     'hash';
//   - IDENTIFIED WITH plugin AS 0x... or X'...' (MySQL 8 writes a
//     caching_sha2_password hash in hex when it holds unprintable bytes):
//     the same bytes as a string;
//   - MariaDB's IDENTIFIED VIA plugin [USING PASSWORD('pw') | USING 'x']:
//     IDENTIFIED WITH plugin [BY 'pw' | AS 'x'];
//   - SET PASSWORD [FOR account] = 'pw' | PASSWORD('pw'): ALTER USER
//     account IDENTIFIED BY 'pw'. From a replication source, the string
//     is a hash (MariaDB and MySQL 5.7 write SET PASSWORD so; MySQL 8
//     writes ALTER USER): ALTER USER account IDENTIFIED WITH
//     mysql_native_password AS 'hash'.
//
// The rewriting works on tokens (quotes and comments respected) and only
// touches statements that start with CREATE, ALTER, GRANT or SET and
// contain IDENTIFIED or PASSWORD.

// rewriteAccountSyntax returns query with those forms rewritten.
func rewriteAccountSyntax(ctx context.Context, query string) string {
	if len(query) > 1<<16 || !(containsFold(query, "identified") || containsFold(query, "password")) {
		return query
	}
	toks := lexTokens(query)
	if len(toks) == 0 {
		return query
	}
	switch {
	case toks[0].is("create"), toks[0].is("alter"), toks[0].is("grant"):
		return rewriteIdentified(query, toks)
	case toks[0].is("set") && len(toks) > 1 && toks[1].is("password"):
		return rewriteSetPassword(ctx, query, toks)
	}
	return query
}

func rewriteIdentified(query string, toks []token) string {
	var b strings.Builder
	last := 0
	splice := func(from, to int, with string) {
		b.WriteString(query[last:from])
		b.WriteString(with)
		last = to
	}
	for i := 0; i < len(toks); i++ {
		if !toks[i].is("identified") || i+1 >= len(toks) {
			continue
		}
		next := toks[i+1]
		switch {
		case next.is("by") && i+3 < len(toks) && toks[i+2].is("password") && toks[i+3].kind == tokString:
			splice(next.start, toks[i+2].end, "WITH mysql_native_password AS")
			i += 3
		case (next.is("with") || next.is("via")) && i+2 < len(toks):
			if next.is("via") {
				splice(next.start, next.end, "WITH")
			}
			j := i + 3
			switch {
			case j+1 < len(toks) && toks[j].is("as") && toks[j+1].kind == tokHex:
				splice(toks[j+1].start, toks[j+1].end, stringLiteral(toks[j+1].hexBytes(query)))
				i = j + 1
			case j+4 < len(toks) && toks[j].is("using") && toks[j+1].is("password") && toks[j+2].text(query) == "(" && toks[j+3].kind == tokString && toks[j+4].text(query) == ")":
				splice(toks[j].start, toks[j+4].end, "BY "+toks[j+3].text(query))
				i = j + 4
			case j+1 < len(toks) && toks[j].is("using") && toks[j+1].kind == tokString:
				splice(toks[j].start, toks[j].end, "AS")
				i = j + 1
			}
		}
	}
	if last == 0 {
		return query
	}
	b.WriteString(query[last:])
	return b.String()
}

// rewriteSetPassword turns SET PASSWORD [FOR account] = value into ALTER
// USER; toks[0:2] are SET PASSWORD.
func rewriteSetPassword(ctx context.Context, query string, toks []token) string {
	i := 2
	account := ""
	if i < len(toks) && toks[i].is("for") {
		// The account runs to the '='.
		j := i + 1
		for j < len(toks) && toks[j].text(query) != "=" {
			j++
		}
		if j == i+1 || j >= len(toks) {
			return query
		}
		account = query[toks[i+1].start:toks[j-1].end]
		i = j
	} else {
		account = currentAccount(ctx)
		if account == "" {
			return query
		}
	}
	if i >= len(toks) || toks[i].text(query) != "=" {
		return query
	}
	rest := toks[i+1:]
	var value string
	cleartext := true
	switch {
	case len(rest) >= 4 && rest[0].is("password") && rest[1].text(query) == "(" && rest[2].kind == tokString && rest[3].text(query) == ")":
		value, rest = rest[2].text(query), rest[4:]
	case len(rest) >= 1 && rest[0].kind == tokString:
		value, rest = rest[0].text(query), rest[1:]
		if s, ok := ctx.(*sql.Context); ok {
			if ss := sessionOf(s); ss != nil && ss.replGTID != nil {
				cleartext = false
			}
		}
	default:
		return query
	}
	tail := ""
	if len(rest) > 0 {
		if rest[0].text(query) != ";" {
			return query
		}
		tail = query[rest[0].start:] // the statements after it
	}
	if cleartext {
		return "ALTER USER " + account + " IDENTIFIED BY " + value + tail
	}
	return "ALTER USER " + account + " IDENTIFIED WITH mysql_native_password AS " + value + tail
}

// currentAccount is the account the session logged in as, quoted ("" if
// unknown).
func currentAccount(ctx context.Context) string {
	c, ok := ctx.(*sql.Context)
	if !ok {
		return ""
	}
	s := sessionOf(c)
	if s == nil {
		return ""
	}
	db := s.eng.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	cl := c.Session.Client()
	u := SessionUser(db, rd, cl)
	if u == nil {
		return ""
	}
	return accountSQL(u.User, u.Host)
}

type tokenKind uint8

const (
	tokWord tokenKind = iota
	tokString
	tokQuotedIdent
	tokHex
	tokOther
)

type token struct {
	kind       tokenKind
	start, end int
	word       string // lower case, for tokWord
}

func (t token) is(word string) bool      { return t.kind == tokWord && t.word == word }
func (t token) text(query string) string { return query[t.start:t.end] }

// hexBytes decodes a hex literal (0xAB.. or X'AB..').
func (t token) hexBytes(query string) string {
	s := query[t.start:t.end]
	if s[0] == '0' {
		s = s[2:]
	} else {
		s = s[2 : len(s)-1]
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, _ := hex.DecodeString(s)
	return string(b)
}

// lexTokens splits query into tokens, skipping spaces and comments and
// unwrapping the executable comments (/*!NNNNN ... */) of versions this
// server has, as MySQL's parser does: mysqldump and mariadb-dump send
// START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */. It is enough
// for the patterns above, not a SQL lexer: an unterminated quote ends the
// tokens.
func lexTokens(q string) []token {
	var out []token
	open := 0 // executable comments entered and not yet closed
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "-- ")):
			n := strings.IndexByte(q[i:], '\n')
			if n < 0 {
				return out
			}
			i += n + 1
		case c == '/' && strings.HasPrefix(q[i:], "/*!"):
			// An executable comment: its text is the statement's when
			// this server has its version, as MySQL's parser reads it.
			j := i + 3
			for j < len(q) && j < i+9 && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			v, _ := strconv.Atoi(q[i+3 : j])
			if d := j - i - 3; d == 0 || d >= 5 && v <= binlog.ServerVersionID {
				i, open = j, open+1
				continue
			}
			n := strings.Index(q[i+2:], "*/")
			if n < 0 {
				return out
			}
			i += n + 4
		case c == '*' && open > 0 && strings.HasPrefix(q[i:], "*/"):
			i, open = i+2, open-1
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			n := strings.Index(q[i+2:], "*/")
			if n < 0 {
				return out
			}
			i += n + 4
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // a doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				return out
			}
			kind := tokString
			if c == '`' {
				kind = tokQuotedIdent
			}
			out = append(out, token{kind: kind, start: i, end: j + 1})
			i = j + 1
		case c == '0' && i+1 < len(q) && (q[i+1] == 'x' || q[i+1] == 'X'):
			j := i + 2
			for j < len(q) && isHexDigit(q[j]) {
				j++
			}
			out = append(out, token{kind: tokHex, start: i, end: j})
			i = j
		case (c == 'x' || c == 'X') && i+1 < len(q) && q[i+1] == '\'':
			j := i + 2
			for j < len(q) && isHexDigit(q[j]) {
				j++
			}
			if j >= len(q) || q[j] != '\'' {
				return out
			}
			out = append(out, token{kind: tokHex, start: i, end: j + 1})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			out = append(out, token{kind: tokWord, start: i, end: j, word: strings.ToLower(q[i:j])})
			i = j
		default:
			out = append(out, token{kind: tokOther, start: i, end: i + 1})
			i++
		}
	}
	return out
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// containsFold says whether s contains sub, an ASCII keyword, in any
// letter case.
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	// A byte that cannot start a match (in ASCII case folding, which is
	// all an ASCII sub can match at its own length) is passed over
	// without a call: this runs over every statement's text several
	// times.
	first := sub[0] | 0x20
	for i := 0; i+n <= len(s); i++ {
		if s[i]|0x20 == first && strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

// RedactSecrets returns query with the passwords it carries replaced by
// '<secret>', as MySQL writes statements to its logs: the string after
// IDENTIFIED [WITH plugin] BY, SET PASSWORD ... = 'pw' or PASSWORD('pw'),
// and PASSWORD = 'pw', SOURCE_PASSWORD = 'pw' or MASTER_PASSWORD = 'pw' in
// replication statements. A hash given with AS stays, as in MySQL. A
// statement whose text cannot be read to its end (an unterminated quote)
// is cut where reading stopped.
func RedactSecrets(query string) string {
	if !containsFold(query, "password") && !containsFold(query, "identified") {
		return query
	}
	toks := lexTokens(query)
	var b strings.Builder
	last := 0
	secret := func(t token) {
		b.WriteString(query[last:t.start])
		b.WriteString("'<secret>'")
		last = t.end
	}
	for i, t := range toks {
		if t.kind != tokString || i == 0 {
			continue
		}
		prev := toks[i-1]
		switch {
		case prev.is("by") && i >= 2 && (toks[i-2].is("identified") || i >= 4 && toks[i-4].is("identified") && toks[i-3].is("with")):
			secret(t)
		case prev.text(query) == "=" && i >= 2 && toks[i-2].kind == tokWord && (toks[i-2].word == "password" || strings.HasSuffix(toks[i-2].word, "_password")):
			secret(t)
		case prev.text(query) == "(" && i >= 2 && toks[i-2].is("password"):
			secret(t)
		case prev.text(query) == "=" && len(toks) >= 2 && toks[0].is("set") && toks[1].is("password"):
			secret(t)
		}
	}
	end := len(query)
	if len(toks) > 0 {
		if tail := strings.TrimSpace(query[toks[len(toks)-1].end:]); tail != "" && !strings.HasPrefix(tail, ";") && !strings.HasPrefix(tail, "--") && !strings.HasPrefix(tail, "#") && !strings.HasPrefix(tail, "/*") {
			end = toks[len(toks)-1].end // reading stopped inside a quote
		}
	}
	b.WriteString(query[last:end])
	if end < len(query) {
		b.WriteString(" '<secret>'")
	}
	return b.String()
}
