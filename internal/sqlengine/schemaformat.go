package sqlengine

// SHOW CREATE TABLE's comments, written as MySQL writes them.
//
// go-mysql-server's formatter escapes a double quote in a table or
// column comment as \" (MySQL leaves it alone) and does not escape an
// index comment at all, so a comment holding a quote came back
// different from MySQL's, and an index comment holding one made a
// statement that does not parse (a dump that cannot be restored).
// schemaFormatter is go-mysql-server's formatter with the comments
// escaped as MySQL's SHOW CREATE TABLE does (sql_show.cc,
// append_unescaped): a backslash doubled, a quote doubled, NUL, newline,
// carriage return and Ctrl-Z as \0, \n, \r and \Z. The same formatter
// writes the CREATE TABLE text the binlog carries.
//
// The default of an ENUM or SET column, too: go-mysql-server printed the
// number it stores (DEFAULT '1' for ENUM('x','y') DEFAULT 'x'), which
// MySQL, MariaDB and Lockstep refuse as a default, so a dump of such a
// table did not restore and a replica stopped at its CREATE TABLE. It is
// written as the member's name, or the members' names for a SET.

import (
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

type schemaFormatter struct{ *sql.MySqlSchemaFormatter }

var _ sql.SchemaFormatter = schemaFormatter{}

// formatter is the formatter Lockstep's engines use.
var formatter sql.SchemaFormatter = schemaFormatter{&sql.MySqlSchemaFormatter{}}

var commentEscaper = strings.NewReplacer(`\`, `\\`, `'`, `''`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)

// quoteComment is comment as a quoted SQL string, as MySQL writes it.
func quoteComment(comment string) string {
	return "'" + commentEscaper.Replace(comment) + "'"
}

func (f schemaFormatter) GenerateCreateTableStatement(tblName string, colStmts []string, temp, autoInc, tblCharsetName, tblCollName, comment string) string {
	stmt := f.MySqlSchemaFormatter.GenerateCreateTableStatement(tblName, colStmts, temp, autoInc, tblCharsetName, tblCollName, "")
	if comment != "" {
		stmt += " COMMENT=" + quoteComment(comment)
	}
	return stmt
}

func (f schemaFormatter) GenerateCreateTableColumnDefinition(col *sql.Column, colDefault, onUpdate string, tableCollation sql.CollationID) string {
	plain := *col
	plain.Comment = ""
	plain.Virtual = isVirtual(col)
	colDefault = memberDefault(col.Type, colDefault)
	onUpdate = memberDefault(col.Type, onUpdate)
	stmt := f.MySqlSchemaFormatter.GenerateCreateTableColumnDefinition(&plain, colDefault, onUpdate, tableCollation)
	if col.Comment != "" {
		stmt += " COMMENT " + quoteComment(col.Comment)
	}
	return stmt
}

func (f schemaFormatter) GenerateCreateTableIndexDefinition(isUnique, isSpatial, isFullText, isVector bool, indexID string, indexCols []string, comment string) (string, bool) {
	stmt, ok := f.MySqlSchemaFormatter.GenerateCreateTableIndexDefinition(isUnique, isSpatial, isFullText, isVector, indexID, indexCols, "")
	if comment != "" {
		stmt += " COMMENT " + quoteComment(comment)
	}
	return stmt, ok
}

// memberDefault turns the default go-mysql-server prints for an ENUM or
// SET column, its stored number quoted ('2'), into the members' names
// ('b'); any other default is returned as it is.
func memberDefault(t sql.Type, def string) string {
	if len(def) < 3 || def[0] != '\'' || def[len(def)-1] != '\'' {
		return def
	}
	n, err := strconv.ParseUint(def[1:len(def)-1], 10, 64)
	if err != nil {
		return def
	}
	switch t := t.(type) {
	case types.EnumType:
		if name, ok := t.At(int(n)); ok {
			return quoteComment(name)
		}
	case types.SetType:
		if names, err := t.BitsToString(n); err == nil {
			return quoteComment(names)
		}
	}
	return def
}
