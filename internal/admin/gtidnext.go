package admin

import (
	"errors"
	"regexp"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// SET gtid_next and the statements after it. The session's transaction
// commits under the GTID (sqlengine/gtidnext.go); here the statement is
// checked (SYSTEM_VARIABLES_ADMIN, SESSION_VARIABLES_ADMIN or
// REPLICATION_APPLIER, or SUPER; not on a cluster member, which numbers
// every transaction in log order), and the statements under a GTID that
// is executed already are answered with OK without running, as MySQL
// skips them, until the transaction's COMMIT or ROLLBACK. After that, a
// statement other than SET, COMMIT or ROLLBACK (which have nothing to
// end) is refused with 1837 until gtid_next is set again.

var (
	setGTIDNext = regexp.MustCompile(`(?is)^\s*set\s+(?:@@session\.|@@local\.|@@|session\s+|local\s+)?gtid_next\s*=\s*(?:'([^']*)'|"([^"]*)"|(\w+))\s*;?\s*$`)
	commitStmt  = regexp.MustCompile(`(?is)^\s*commit(\s+work)?\s*;?\s*$`)
	rollbackStm = regexp.MustCompile(`(?is)^\s*rollback(\s+work)?\s*;?\s*$`)
	setStmt     = regexp.MustCompile(`(?is)^\s*set\s`)
)

// GTIDNextStatement runs SET gtid_next, and answers the statements of a
// transaction under an executed GTID (see above); handled reports
// whether it did.
func (a *Admin) GTIDNextStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	// Cheap filter first: this runs before every query.
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 200 && len(q) > 3 && strings.EqualFold(q[:3], "set") && strings.Contains(strings.ToLower(q), "gtid_next") {
		if m := setGTIDNext.FindStringSubmatch(query); m != nil {
			if err := a.SQL.Require(c, sqlengine.NeedGTIDNext); err != nil {
				return nil, true, err
			}
			return a.setGTIDNext(c, m)
		}
	}
	g, set, used := a.SQL.GTIDNext(c.ConnectionID)
	if !set || setStmt.MatchString(query) {
		return nil, false, nil
	}
	if used {
		if commitStmt.MatchString(query) || rollbackStm.MatchString(query) {
			// No transaction to end (mysqlbinlog ends its output with a
			// ROLLBACK): nothing to do.
			return &sqltypes.Result{}, true, nil
		}
		return nil, true, sqlengine.ErrGTIDNextUsed(g)
	}
	if a.Pipe == nil || !a.Pipe.Executed(g.SID, g.GNO) {
		return nil, false, nil // the statement runs, and commits under g
	}
	// Executed already: the transaction is skipped.
	if commitStmt.MatchString(query) || rollbackStm.MatchString(query) {
		a.SQL.UseGTIDNext(c.ConnectionID)
	}
	return &sqltypes.Result{}, true, nil
}

func (a *Admin) setGTIDNext(c *mysql.Conn, m []string) (*sqltypes.Result, bool, error) {
	v := strings.TrimSpace(m[1] + m[2] + m[3])
	if strings.EqualFold(v, "AUTOMATIC") {
		a.SQL.SetGTIDNext(c.ConnectionID, nil)
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
	if a.Member != nil {
		// The cluster numbers every transaction in log order.
		return nil, true, mysqlerr.NotOnClusterMember("SET gtid_next")
	}
	if a.SQL.HasUncommittedWrites(c.ConnectionID) {
		return nil, true, mysql.NewSQLError(1766, "HY000", "The system variable gtid_next cannot be set when there is an ongoing transaction.")
	}
	a.SQL.SetGTIDNext(c.ConnectionID, &binlog.GTIDInfo{SID: id, GNO: gno})
	return &sqltypes.Result{}, true, nil
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
