package server

import (
	"errors"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

func TestDropError(t *testing.T) {
	unknown := mysql.NewSQLError(mysql.ERBadFieldError, "42S22", "Unknown column 'zz' in 't'")
	for _, c := range []struct {
		query string
		num   int
	}{
		{"ALTER TABLE t DROP COLUMN zz", mysql.ERCantDropFieldOrKey},
		{"alter table t drop zz", mysql.ERCantDropFieldOrKey},
		{"ALTER TABLE t DROP COLUMN a, DROP COLUMN `zz`", mysql.ERCantDropFieldOrKey},
		{"/* c */ ALTER TABLE t DROP `ZZ`", mysql.ERCantDropFieldOrKey},
		{"ALTER TABLE t MODIFY zz INT", mysql.ERBadFieldError},
		{"ALTER TABLE t DROP COLUMN a, MODIFY zz INT", mysql.ERBadFieldError},
		{"SELECT zz FROM t WHERE x = 'drop zz'", mysql.ERBadFieldError},
	} {
		var se *mysql.SQLError
		if err := dropError(c.query, unknown); !errors.As(err, &se) || se.Num != c.num {
			t.Errorf("%s: %v, want %d", c.query, err, c.num)
		}
	}
	other := mysql.NewSQLError(mysql.ERDupFieldName, "42S21", "Duplicate column name 'zz'")
	if err := dropError("ALTER TABLE t DROP zz", other); err != other {
		t.Errorf("another error changed: %v", err)
	}
}
