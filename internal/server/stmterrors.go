package server

import (
	"errors"
	"regexp"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// statementError is the error a statement ends with, as MySQL numbers
// it: go-mysql-server's error restored to MySQL's number and text
// (mysqlerr.Restore), then the cases where MySQL's number depends on the
// statement (dropError, deniedFor).
func statementError(query string, err error) error {
	if err == nil {
		return nil
	}
	return deniedFor(query, dropError(query, mysqlerr.Restore(err)))
}

// alterTable matches the start of ALTER TABLE, and dropName each DROP
// [COLUMN] name in it, capturing the name (quoted or not).
var (
	alterTable = regexp.MustCompile(`(?is)^\s*alter\s+(?:online\s+|ignore\s+)*table\s`)
	dropName   = regexp.MustCompile("(?i)\\bdrop\\s+(?:column\\s+)?(`[^`]+`|[^\\s,;`]+)")
)

// dropError: a column the statement names that the table lacks is 1054
// "Unknown column", except the column of an ALTER TABLE ... DROP COLUMN,
// which MySQL refuses with 1091 "Can't DROP 'c'; check that column/key
// exists".
func dropError(query string, err error) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != mysql.ERBadFieldError || !strings.HasPrefix(se.Message, "Unknown column '") {
		return err
	}
	q := bareStatement(query)
	if !alterTable.MatchString(q) {
		return err
	}
	col := strings.TrimPrefix(se.Message, "Unknown column '")
	i := strings.IndexByte(col, '\'')
	if i < 0 {
		return err
	}
	col = col[:i]
	for _, m := range dropName.FindAllStringSubmatch(q, -1) {
		if strings.EqualFold(strings.Trim(m[1], "`"), col) {
			return mysql.NewSQLError(mysql.ERCantDropFieldOrKey, "42000", "Can't DROP '%s'; check that column/key exists", col)
		}
	}
	return err
}
