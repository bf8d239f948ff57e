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
//
// Without COLLATE, MySQL 8 gives utf8mb4 the collation
// default_collation_for_utf8mb4 names, utf8mb4_0900_ai_ci, where
// go-mysql-server gives its own default, utf8mb4_0900_bin: after the SET
// NAMES utf8mb4 that drivers and frameworks send at connect, 'a' = 'A'
// was 0. That statement too is given the collation.

var setNamesCollate = regexp.MustCompile(`(?is)^(\s*set\s+names\s+(?:'([^']*)'|"([^"]*)"|(\w+)))(?:\s+collate\s+(?:'([^']*)'|"([^"]*)"|(\w+)))?`)

// utf8mb4Default is MySQL 8's default_collation_for_utf8mb4.
const utf8mb4Default = "utf8mb4_0900_ai_ci"

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
	if collation == "" {
		if cs != sql.CharacterSet_utf8mb4 {
			return query, nil
		}
		collation = utf8mb4Default
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
