package server

import (
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// SET NAMES charset COLLATE collation: go-mysql-server's parser drops the
// COLLATE clause, so the session kept the character set's default
// collation and compared strings by it (SET NAMES utf8mb4 COLLATE
// utf8mb4_bin left 'a' = 'A' true). The statement is given to it as
// SET NAMES charset, collation_connection = 'collation', which sets what
// MySQL's does; an unknown collation is refused with 1273 and one of
// another character set with 1253, as in MySQL.

var setNamesCollate = regexp.MustCompile(`(?is)^(\s*set\s+names\s+(?:'([^']*)'|"([^"]*)"|(\w+)))\s+collate\s+(?:'([^']*)'|"([^"]*)"|(\w+))`)

const (
	erCollationCharsetMismatch = 1253 // ER_COLLATION_CHARSET_MISMATCH
	erUnknownCollation         = 1273 // ER_UNKNOWN_COLLATION
)

// rewriteSetNames returns query with a leading SET NAMES ... COLLATE
// spelled so that the collation is applied, or query as it is.
func rewriteSetNames(query string) (string, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if !hasPrefixFold(q, "set") {
		return query, nil
	}
	m := setNamesCollate.FindStringSubmatchIndex(query)
	if m == nil {
		return query, nil
	}
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return query[m[2*i]:m[2*i+1]]
	}
	charset := group(2) + group(3) + group(4)
	collation := group(5) + group(6) + group(7)
	cs, err := sql.ParseCharacterSet(charset)
	if err != nil {
		return query, nil // go-mysql-server gives its own error
	}
	coll, err := sql.ParseCollation("", collation, false)
	if err != nil {
		return "", mysql.NewSQLError(erUnknownCollation, "HY000", "Unknown collation: '%s'", collation)
	}
	if !coll.WorksWithCharacterSet(cs) {
		return "", mysql.NewSQLError(erCollationCharsetMismatch, "42000", "COLLATION '%s' is not valid for CHARACTER SET '%s'", collation, charset)
	}
	return group(1) + ", collation_connection = '" + coll.Name() + "'" + query[m[1]:], nil
}
