package server

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Failed-login tracking, as MySQL 8 does it for an account with both
// FAILED_LOGIN_ATTEMPTS n and PASSWORD_LOCK_TIME d (days, or UNBOUNDED):
// after n consecutive logins with a wrong password the account is
// blocked for d days, and every login meanwhile, right password or not,
// gets 3955. The count and the block are kept in memory, as in MySQL:
// a successful login, the end of the block, an ALTER USER that sets
// either option or ACCOUNT UNLOCK, and a restart reset them.

const erAccountBlocked = 3955 // ER_USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK

type loginFailures struct {
	mu    sync.Mutex
	now   func() time.Time
	state map[string]*failureState // user@host
}

type failureState struct {
	count int
	until time.Time // blocked until then; zero: not blocked
	ever  bool      // blocked until reset (UNBOUNDED)
}

func newLoginFailures() *loginFailures {
	return &loginFailures{now: time.Now, state: map[string]*failureState{}}
}

func failureKey(u *mysql_db.User) string { return u.User + "@" + u.Host }

// blocked returns 3955 if u is blocked now.
func (l *loginFailures) blocked(u *mysql_db.User) error {
	attempts, days := sqlengine.PasswordLocking(u)
	if attempts == 0 || days == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state[failureKey(u)]
	if st == nil {
		return nil
	}
	if !st.ever && !st.until.IsZero() && !l.now().Before(st.until) {
		delete(l.state, failureKey(u)) // the block is over
		return nil
	}
	if st.ever || !st.until.IsZero() {
		return blockedError(u, days, st, l.now())
	}
	return nil
}

// failed counts a wrong password for u; it returns 3955 if that blocks
// the account, nil otherwise (the caller answers 1045).
func (l *loginFailures) failed(u *mysql_db.User) error {
	attempts, days := sqlengine.PasswordLocking(u)
	if attempts == 0 || days == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state[failureKey(u)]
	if st == nil {
		st = &failureState{}
		l.state[failureKey(u)] = st
	}
	st.count++
	if st.count < attempts {
		return nil
	}
	if days < 0 {
		st.ever = true
	} else {
		st.until = l.now().Add(time.Duration(days) * 24 * time.Hour)
	}
	return blockedError(u, days, st, l.now())
}

// succeeded ends u's run of failures.
func (l *loginFailures) succeeded(u *mysql_db.User) {
	l.reset(u.User, u.Host)
}

// reset forgets user@host's failures and block.
func (l *loginFailures) reset(user, host string) {
	l.mu.Lock()
	delete(l.state, user+"@"+host)
	l.mu.Unlock()
}

func blockedError(u *mysql_db.User, days int, st *failureState, now time.Time) error {
	total, remaining := "unlimited", "unlimited"
	if !st.ever {
		left := int(math.Ceil(st.until.Sub(now).Hours() / 24))
		total, remaining = fmt.Sprint(days), fmt.Sprint(min(max(left, 1), days))
	}
	return mysql.NewSQLError(erAccountBlocked, "HY000",
		"Access denied for user '%s'@'%s'. Account is blocked for %s day(s) (%s day(s) remaining) due to %d consecutive failed logins.",
		u.User, u.Host, total, remaining, st.count)
}
