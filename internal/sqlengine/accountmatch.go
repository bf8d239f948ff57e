package sqlengine

import (
	"net"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

// Which account a login is, and which account a session is.
//
// MySQL matches a login to the most specific account that fits the user
// name and the client's host: literal hosts before patterns, patterns
// with a longer literal start before shorter ones, '%' and then '' last,
// and a named user before the anonymous one. go-mysql-server's GetUser
// takes the first fitting account in the order the accounts were made,
// after mapping 127.0.0.1 and ::1 to localhost: with app@'%' made before
// app@'127.0.0.1', a login from 127.0.0.1 was checked against the first's
// password, REQUIRE clause and privileges. LoginAccount is MySQL's rule.
//
// Once logged in, a session names its account exactly (user and host as
// stored), and Lockstep looks it up by that key (SessionUser). Where
// go-mysql-server looks it up itself, for the privilege cache, its
// mapping can still find another account for a session of an account
// whose host is the literal 127.0.0.1 or ::1: the session corrects the
// cached set before each statement (Session.privileges).

// LoginAccount is the account a login as user from host (an IP address,
// or localhost for a local socket) is, or nil.
func LoginAccount(rd *mysql_db.Reader, user, host string) *mysql_db.User {
	var best *mysql_db.User
	bestRank := -1
	names := []string{user}
	if user != "" {
		names = append(names, "") // the anonymous account
	}
	for _, name := range names {
		for _, u := range rd.GetUsersByUsername(name) {
			r, ok := hostRank(u.Host, host)
			if !ok {
				continue
			}
			r = r*2 + boolRank(u.User != "")
			if r > bestRank || r == bestRank && u.Host < best.Host {
				best, bestRank = u, r
			}
		}
	}
	return best
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostRank reports whether an account's host pattern admits a client
// host, and how specific the pattern is (higher: more specific).
func hostRank(pattern, client string) (int, bool) {
	const literal = 1 << 20
	switch pattern {
	case "":
		return 0, true
	case "%":
		return 1, true
	}
	loopback := isLoopback(client)
	if !strings.ContainsAny(pattern, "%_") {
		switch {
		case strings.EqualFold(pattern, client):
			return literal + 2, true
		case loopback && strings.EqualFold(pattern, "localhost"):
			return literal + 1, true
		}
		if ok, matched := netmaskMatch(pattern, client); ok {
			return literal, matched
		}
		return 0, false
	}
	prefix := strings.IndexAny(pattern, "%_")
	if likeFold(pattern, client) || loopback && likeFold(pattern, "localhost") {
		return 2 + prefix, true
	}
	return 0, false
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// netmaskMatch handles a host of the form address/netmask: ok reports
// whether pattern is one, matched whether client is in it.
func netmaskMatch(pattern, client string) (ok, matched bool) {
	addr, mask, found := strings.Cut(pattern, "/")
	if !found {
		return false, false
	}
	a, m, c := net.ParseIP(addr).To4(), net.ParseIP(mask).To4(), net.ParseIP(client).To4()
	if a == nil || m == nil {
		return false, false
	}
	if c == nil {
		return true, false
	}
	for i := range a {
		if a[i]&m[i] != c[i]&m[i] {
			return true, false
		}
	}
	return true, true
}

// likeFold is SQL LIKE without escapes, ASCII case-insensitive: % any run
// of characters, _ any one.
func likeFold(pattern, s string) bool {
	p, t := []rune(strings.ToLower(pattern)), []rune(strings.ToLower(s))
	// Classic two-pointer match with backtracking to the last %.
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '_' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '%':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// SessionUser is the account a session logged in as: the one stored
// under exactly its user and host, or, for a session that names no
// stored account (Lockstep's own), go-mysql-server's match.
func SessionUser(db *mysql_db.MySQLDb, rd *mysql_db.Reader, c sql.Client) *mysql_db.User {
	if u, ok := rd.GetUser(mysql_db.UserPrimaryKey{Host: c.Address, User: c.User}); ok {
		return u
	}
	return db.GetUser(rd, c.User, c.Address, false)
}

// AccountPrivileges is the active privilege set of account u: its own and
// those of every role granted to it (every granted role is active,
// roles.go), as go-mysql-server computes it for the account it finds.
func AccountPrivileges(rd *mysql_db.Reader, u *mysql_db.User) mysql_db.PrivilegeSet {
	set := u.PrivilegeSet.Copy()
	for _, e := range rd.GetToUserRoleEdges(mysql_db.RoleEdgesToKey{ToHost: u.Host, ToUser: u.User}) {
		if role, ok := rd.GetUser(mysql_db.UserPrimaryKey{Host: e.FromHost, User: e.FromUser}); ok {
			set.UnionWith(role.PrivilegeSet)
		}
	}
	return set
}

// privileges brings the session's privilege cache up to date and returns
// it. go-mysql-server fills the cache for the account its GetUser finds
// by the session's user and host; when that is not the session's own
// account (a host of 127.0.0.1 or ::1, which it looks up as localhost,
// beside another account of the same name), the cache is given the own
// account's set, for the same accounts' version. Checked once per
// version; a change of the accounts in the middle of a statement is seen
// at the next.
func (s *Session) privileges(ctx *sql.Context) mysql_db.PrivilegeSet {
	db := s.eng.GMS.Analyzer.Catalog.MySQLDb
	set := db.UserActivePrivilegeSet(ctx)
	_, counter := s.BaseSession.GetPrivilegeSet()
	if s.privChecked && counter == s.privCounter {
		return set
	}
	c := s.Client()
	rd := db.Reader()
	own, ok := rd.GetUser(mysql_db.UserPrimaryKey{Host: c.Address, User: c.User})
	if ok && db.GetUser(rd, c.User, c.Address, false) != own {
		set = AccountPrivileges(rd, own)
		s.BaseSession.SetPrivilegeSet(set, counter)
	}
	rd.Close()
	s.privCounter, s.privChecked = counter, true
	return set
}

// sessionPrivileges is the session's active privilege set.
func (e *Engine) sessionPrivileges(ctx *sql.Context) mysql_db.PrivilegeSet {
	if s := sessionOf(ctx); s != nil {
		return s.privileges(ctx)
	}
	return e.GMS.Analyzer.Catalog.MySQLDb.UserActivePrivilegeSet(ctx)
}
