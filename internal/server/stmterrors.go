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
// statement (dropError, deniedFor, unsupportedSyntax).
func statementError(query string, err error) error {
	if err == nil {
		return nil
	}
	return unsupportedSyntax(query, deniedFor(query, dropError(query, mysqlerr.Restore(err))))
}

// unsupportedForms are MySQL statements and clauses the parser does not
// know, with what they are called.
var unsupportedForms = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?is)^\s*create\s+(?:definer\s*=\s*\S+\s+)?(?:aggregate\s+)?function\s`), "stored functions (CREATE FUNCTION)"},
	{regexp.MustCompile(`(?is)^\s*drop\s+function\s`), "stored functions (DROP FUNCTION)"},
	{regexp.MustCompile(`(?is)^\s*alter\s+function\s`), "stored functions (ALTER FUNCTION)"},
	{regexp.MustCompile(`(?is)\bget\s+(?:current\s+|stacked\s+)?diagnostics\b`), "GET DIAGNOSTICS"},
	{regexp.MustCompile(`(?s)@[\w$.]+\s*:=`), "assignments to user variables inside expressions (:=); assign them with SET"},
}

// unsupportedSyntax turns the parser's syntax error (1064) for a form
// MySQL has and Lockstep does not yet into 1235 naming it: the statement
// is not wrong, and a client should not be told it is.
func unsupportedSyntax(query string, err error) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != mysql.ERParseError {
		return err
	}
	q := bareStatement(query)
	for _, f := range unsupportedForms {
		if f.re.MatchString(q) {
			return mysqlerr.NotSupported(f.what)
		}
	}
	return err
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
