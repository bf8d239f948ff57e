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

// TestUnsupportedSyntax: a syntax error for a form MySQL has and Lockstep
// does not is 1235 naming it; a real syntax error stays 1064, and other
// errors pass.
func TestUnsupportedSyntax(t *testing.T) {
	parse := mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax")
	for _, c := range []struct {
		query string
		num   int
	}{
		{"CREATE FUNCTION f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1", mysql.ERNotSupportedYet},
		{"CREATE DEFINER=`root`@`%` FUNCTION f() RETURNS INT RETURN 1", mysql.ERNotSupportedYet},
		{"/*!50003 DROP FUNCTION IF EXISTS `f` */", mysql.ERNotSupportedYet},
		{"ALTER FUNCTION f COMMENT 'x'", mysql.ERNotSupportedYet},
		{"CREATE PROCEDURE p() BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT; END; SELECT 1; END", mysql.ERNotSupportedYet},
		{"SELECT @r := @r + 1 AS n FROM t", mysql.ERNotSupportedYet},
		{"SELEC 1", mysql.ERParseError},
		{"SELECT 'a := b' FROM", mysql.ERParseError},
	} {
		var se *mysql.SQLError
		if err := unsupportedSyntax(c.query, parse); !errors.As(err, &se) || se.Num != c.num {
			t.Errorf("%s: %v, want %d", c.query, err, c.num)
		}
	}
	other := mysql.NewSQLError(mysql.ERNoSuchTable, "42S02", "Table 'f' doesn't exist")
	if err := unsupportedSyntax("CREATE FUNCTION f", other); err != other {
		t.Errorf("another error changed: %v", err)
	}
}
