package sqlengine

import (
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
)

// gtid_next, as MySQL has it. After SET gtid_next = 'uuid:n' (the server
// checks the privilege and refuses it on a cluster member), the
// session's next transaction commits under that GTID instead of a new
// one: so mysqlbinlog's output, which sets it before each transaction,
// replays with the source's GTIDs, and BEGIN; COMMIT skips a transaction
// on a replica by committing an empty one under its GTID.
//
//   - The transaction may be an explicit one (its COMMIT, also with
//     nothing written, uses the GTID), an autocommit statement that
//     writes, or a DDL statement. A statement that writes nothing outside
//     a transaction leaves the GTID for the next one.
//   - Once a transaction has committed or been rolled back under it, the
//     next statement is refused (1837) until gtid_next is set again, as
//     in MySQL; SET statements still run.
//   - A GTID already executed makes its transaction a no-op, as in MySQL:
//     the server answers its statements with OK without running them
//     (admin/gtidnext.go), so replaying a binlog twice applies it once.
//     A transaction that finds its GTID executed only when it commits (by
//     another session in between) commits nothing.
//   - The fast path leaves these statements to go-mysql-server.

// SetGTIDNext sets connection connID's gtid_next to g, or to AUTOMATIC
// for nil.
func (e *Engine) SetGTIDNext(connID uint32, g *binlog.GTIDInfo) {
	if v, ok := e.sessions.Load(connID); ok {
		s := v.(*Session)
		s.gtidNext, s.gtidNextUsed = g, false
	}
}

// GTIDNext returns connection connID's fixed gtid_next, if it has one,
// and whether a transaction has used it.
func (e *Engine) GTIDNext(connID uint32) (g binlog.GTIDInfo, set, used bool) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return g, false, false
	}
	s := v.(*Session)
	if s.gtidNext == nil {
		return g, false, false
	}
	return *s.gtidNext, true, s.gtidNextUsed
}

// UseGTIDNext records that a transaction used connection connID's
// gtid_next (a skipped one, answered by the server).
func (e *Engine) UseGTIDNext(connID uint32) {
	if v, ok := e.sessions.Load(connID); ok {
		v.(*Session).gtidNextUsed = true
	}
}

// ErrGTIDNextUsed is MySQL's 1837 for a statement after the transaction
// that used gtid_next.
func ErrGTIDNextUsed(g binlog.GTIDInfo) error {
	return mysql.NewSQLError(1837, "HY000", "When @@SESSION.GTID_NEXT is set to a GTID, you must explicitly set it to a different value after a COMMIT or ROLLBACK. Please check GTID_NEXT variable manual page for detailed explanation. Current @@SESSION.GTID_NEXT is '%s'.", gtidText(g))
}

func gtidText(g binlog.GTIDInfo) string { return fmt.Sprintf("%s:%d", g.SID, g.GNO) }

// commitUnderGTIDNext is CommitTransaction under a fixed gtid_next.
func (s *Session) commitUnderGTIDNext(ctx *sql.Context) error {
	explicit := explicitTransaction(ctx)
	t := s.tx
	s.tx = nil
	writes := t != nil && t.HasWrites()
	if !writes && !explicit {
		if t != nil {
			t.Rollback()
		}
		return nil // nothing written: the GTID waits for the transaction
	}
	if s.gtidNextUsed {
		if t != nil {
			t.Rollback()
		}
		return ErrGTIDNextUsed(*s.gtidNext)
	}
	if explicit {
		sql.IncrementStatusVariable(ctx, "Com_commit", 1)
	}
	s.gtidNextUsed = true
	g := *s.gtidNext
	var err error
	if writes {
		t.Ctx, t.ReadLockWait = ctx, s.readLockWait(ctx)
		err = t.CommitAs(g)
	} else {
		if t != nil {
			t.Rollback()
		}
		err = s.eng.txns.CommitGTIDOnly(g)
	}
	if errors.Is(err, commit.ErrGTIDExecuted) {
		return nil // executed meanwhile: the transaction is skipped
	}
	return mysqlError(err)
}

// keepGTIDNext returns the GTID a DDL statement of s commits under, if
// gtid_next is fixed, and records that it is used.
func (s *Session) keepGTIDNext() (*binlog.GTIDInfo, error) {
	if s.gtidNext == nil {
		return nil, nil
	}
	if s.gtidNextUsed {
		return nil, ErrGTIDNextUsed(*s.gtidNext)
	}
	s.gtidNextUsed = true
	g := *s.gtidNext
	return &g, nil
}

// HasUncommittedWrites reports whether connection connID's transaction
// has written something it has not committed.
func (e *Engine) HasUncommittedWrites(connID uint32) bool {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return false
	}
	s := v.(*Session)
	return s.tx != nil && !s.tx.Ended() && s.tx.HasWrites()
}
