package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
)

func lockedUser(attrs string) *mysql_db.User {
	u := &mysql_db.User{User: "u", Host: "%"}
	if attrs != "" {
		u.Attributes = &attrs
	}
	return u
}

func errNum(err error) int {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se.Num
	}
	return 0
}

// TestLoginFailures walks MySQL's rules: n failures block for d days,
// any login is refused while blocked, the block ends with time, a
// success before the n-th failure starts the count again, UNBOUNDED lasts
// until reset, and an account without both options is never blocked.
func TestLoginFailures(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLoginFailures()
	l.now = func() time.Time { return now }

	u := lockedUser(`{"Password_locking":{"failed_login_attempts":3,"password_lock_time_days":2}}`)
	for i := 0; i < 2; i++ {
		if err := l.failed(u); err != nil {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	l.succeeded(u)
	for i := 0; i < 2; i++ {
		if err := l.failed(u); err != nil {
			t.Fatalf("after a success, failure %d: %v", i+1, err)
		}
	}
	err := l.failed(u)
	if errNum(err) != 3955 || !strings.Contains(err.Error(), "blocked for 2 day(s) (2 day(s) remaining) due to 3 consecutive failed logins") {
		t.Fatalf("third failure: %v", err)
	}
	now = now.Add(36 * time.Hour)
	if err := l.blocked(u); errNum(err) != 3955 || !strings.Contains(err.Error(), "(1 day(s) remaining)") {
		t.Fatalf("a day and a half later: %v", err)
	}
	now = now.Add(12 * time.Hour)
	if err := l.blocked(u); err != nil {
		t.Fatalf("two days later: %v", err)
	}
	if err := l.failed(u); err != nil {
		t.Fatalf("the count starts again after the block: %v", err)
	}

	ever := lockedUser(`{"Password_locking":{"failed_login_attempts":1,"password_lock_time_days":-1}}`)
	if err := l.failed(ever); errNum(err) != 3955 || !strings.Contains(err.Error(), "blocked for unlimited day(s)") {
		t.Fatalf("UNBOUNDED: %v", err)
	}
	now = now.Add(1000 * 24 * time.Hour)
	if err := l.blocked(ever); errNum(err) != 3955 {
		t.Fatalf("UNBOUNDED, much later: %v", err)
	}
	l.reset("u", "%")
	if err := l.blocked(ever); err != nil {
		t.Fatalf("after a reset: %v", err)
	}

	for _, attrs := range []string{"", `{"Password_locking":{"failed_login_attempts":1,"password_lock_time_days":0}}`, `{"Password_locking":{"failed_login_attempts":0,"password_lock_time_days":5}}`, `not json`} {
		v := lockedUser(attrs)
		for i := 0; i < 5; i++ {
			if err := l.failed(v); err != nil {
				t.Fatalf("%q: failure %d: %v", attrs, i, err)
			}
		}
		if err := l.blocked(v); err != nil {
			t.Fatalf("%q: %v", attrs, err)
		}
	}
}
