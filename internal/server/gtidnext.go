package server

import (
	"errors"
	"regexp"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
)

// gtid_next, as far as skipping a transaction needs it: after
// SET gtid_next = 'uuid:n', BEGIN and COMMIT commit an empty transaction
// under that GTID (so a replica never applies it), as in MySQL. If the GTID
// is already executed, the commit does nothing. Other statements under a
// fixed gtid_next are refused with a clear error rather than run under a
// GTID they did not get.

var (
	setGTIDNext = regexp.MustCompile(`(?is)^\s*set\s+(?:@@session\.|@@local\.|@@|session\s+|local\s+)?gtid_next\s*=\s*(?:'([^']*)'|"([^"]*)"|(\w+))\s*;?\s*$`)
	beginStmt   = regexp.MustCompile(`(?is)^\s*(begin(\s+work)?|start\s+transaction)\s*;?\s*$`)
	commitStmt  = regexp.MustCompile(`(?is)^\s*commit(\s+work)?\s*;?\s*$`)
	rollbackStm = regexp.MustCompile(`(?is)^\s*rollback(\s+work)?\s*;?\s*$`)
)

func (s *Server) gtidNextStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	// Cheap filter first: this runs before every query.
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 200 && len(q) > 3 && strings.EqualFold(q[:3], "set") && strings.Contains(strings.ToLower(q), "gtid_next") {
		if m := setGTIDNext.FindStringSubmatch(query); m != nil {
			if err := s.require(c, needGTIDNext); err != nil {
				return nil, true, err
			}
			return s.setGTIDNext(c, m)
		}
	}
	v, ok := s.gtidNext.Load(c.ConnectionID)
	if !ok {
		return nil, false, nil
	}
	return s.underGTIDNext(c, query, v.(binlog.GTIDInfo))
}

func (s *Server) setGTIDNext(c *mysql.Conn, m []string) (*sqltypes.Result, bool, error) {
	v := strings.TrimSpace(m[1] + m[2] + m[3])
	if strings.EqualFold(v, "AUTOMATIC") {
		s.gtidNext.Delete(c.ConnectionID)
		return &sqltypes.Result{}, true, nil
	}
	uuid, n, ok := strings.Cut(v, ":")
	id, err := binlog.ParseUUID(uuid)
	gno := uint64(0)
	if ok && err == nil {
		gno, err = parseUint(n)
	}
	if !ok || err != nil || gno == 0 {
		return nil, true, mysql.NewSQLError(1231, "42000", "Variable 'gtid_next' can't be set to the value of '%s'", v)
	}
	if s.member != nil {
		// The cluster numbers every transaction in log order.
		return nil, true, errOnMember("SET gtid_next")
	}
	s.gtidNext.Store(c.ConnectionID, binlog.GTIDInfo{SID: id, GNO: gno})
	return &sqltypes.Result{}, true, nil
}

func (s *Server) underGTIDNext(c *mysql.Conn, query string, g binlog.GTIDInfo) (*sqltypes.Result, bool, error) {
	switch {
	case beginStmt.MatchString(query):
		return &sqltypes.Result{}, true, nil
	case commitStmt.MatchString(query), rollbackStm.MatchString(query):
		s.gtidNext.Delete(c.ConnectionID)
		err := s.sql.CommitGTIDOnly(g)
		if err != nil && !errors.Is(err, commit.ErrGTIDExecuted) {
			return nil, true, mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%v", err)
		}
		return &sqltypes.Result{}, true, nil
	}
	return nil, true, mysql.NewSQLError(1235, "42000", "This version of Lockstep doesn't yet support statements under a fixed gtid_next other than an empty transaction (BEGIN; COMMIT)")
}

func parseUint(s string) (uint64, error) {
	var n uint64
	if s == "" {
		return 0, errors.New("empty")
	}
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + uint64(ch-'0')
		if n >= 1<<63 {
			return 0, errors.New("out of range")
		}
	}
	return n, nil
}
