// Package mysqlerr gives errors the numbers, SQLSTATEs and texts MySQL
// clients expect. go-mysql-server loses some of them: some of its paths
// (the planner's parse step among them) turn an error into text inside a
// generic 1105, some of its errors carry no MySQL number, and many carry
// the generic SQLSTATE HY000 where MySQL sends a specific one that
// clients test (PHP's PDOException code is the SQLSTATE; applications
// look for 23000 to spot a duplicate key). Restore rebuilds what MySQL
// would send; the server runs every statement's error through it.
package mysqlerr

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
)

// MySQL error numbers vitess does not name.
const (
	SpecificAccessDenied   = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	DBAccessDenied         = 1044 // ER_DBACCESS_DENIED_ERROR
	TableAccessDenied      = 1142 // ER_TABLEACCESS_DENIED_ERROR
	ColumnAccessDenied     = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	ReadOnlyTransaction    = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	TooBigScale            = 1425 // ER_TOO_BIG_SCALE
	TooBigPrecision        = 1426 // ER_TOO_BIG_PRECISION
	MBiggerThanD           = 1427 // ER_M_BIGGER_THAN_D
	UnknownStmtHandler     = 1243 // ER_UNKNOWN_STMT_HANDLER
	readOnlyTransactionMsg = "Cannot execute statement in a READ ONLY transaction."
)

// NotSupported is 1235 for what Lockstep does not do (yet): a clear
// refusal, never a silent one.
func NotSupported(what string) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s'", what)
}

// Interrupted is MySQL's error for a statement stopped by KILL QUERY or a
// departed client.
var Interrupted = mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "Query execution was interrupted")

// embedded is the text a MySQL error becomes inside a generic one.
var embedded = regexp.MustCompile(`^(?s)(.*) \(errno (\d+)\) \(sqlstate ([0-9A-Z]{5})\)$`)

// Restore returns the MySQL error embedded in a generic one or named by
// its text, gives a numbered error MySQL's SQLSTATE (and text, where
// go-mysql-server words it differently), and reports a cancelled
// statement as 1317. Other errors pass through.
func Restore(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		return err
	}
	if se.Num != mysql.ERUnknownError {
		for _, k := range reworded {
			if k.num == int(se.Num) && k.re.MatchString(se.Message) {
				return mysql.NewSQLError(k.num, k.state, "%s", k.re.ReplaceAllString(se.Message, k.text))
			}
		}
		state, ok := sqlStates[se.Num]
		if !ok {
			state = se.State
		}
		text, ok := texts[se.Num]
		if !ok {
			text = se.Message
			for _, p := range prefixes[se.Num] {
				text = strings.TrimPrefix(text, p)
			}
		}
		if state != se.State || text != se.Message {
			return mysql.NewSQLError(se.Num, state, "%s", text)
		}
		return err
	}
	if se.Message == context.Canceled.Error() {
		return Interrupted
	}
	m := embedded.FindStringSubmatch(se.Message)
	if m == nil {
		for _, k := range reworded {
			if k.re.MatchString(se.Message) {
				return mysql.NewSQLError(k.num, k.state, "%s", k.re.ReplaceAllString(se.Message, k.text))
			}
		}
		for _, k := range gmsErrors {
			if strings.HasPrefix(se.Message, k.prefix) && strings.HasSuffix(se.Message, k.suffix) && strings.Contains(se.Message, k.contains) {
				text := k.text
				if text == "" {
					text = se.Message
				}
				return mysql.NewSQLError(k.num, k.state, "%s", text)
			}
		}
		return err
	}
	num, _ := strconv.Atoi(m[2])
	// Once more, for MySQL's SQLSTATE where the embedded error has the
	// generic one (the number is no longer 1105: this ends).
	return Restore(mysql.NewSQLError(num, m[3], "%s", m[1]))
}

// reworded are go-mysql-server errors that carry no MySQL number (or
// MySQL's number with go-mysql-server's own text) and name things MySQL's
// text names too: the names are carried into MySQL's text.
var reworded = []struct {
	re    *regexp.Regexp
	num   int
	state string
	text  string // the expansion of re's submatches
}{
	{regexp.MustCompile(`^stored procedure "(.*)" does not exist$`), 1305, "42000", "PROCEDURE $1 does not exist"},  // ER_SP_DOES_NOT_EXIST
	{regexp.MustCompile(`^stored procedure "(.*)" already exists$`), 1304, "42000", "PROCEDURE $1 already exists"},  // ER_SP_ALREADY_EXISTS
	{regexp.MustCompile(`^Check constraint "(.*)" violated$`), 3819, "HY000", "Check constraint '$1' is violated."}, // ER_CHECK_CONSTRAINT_VIOLATED
	{regexp.MustCompile(`^can't alter column "(.*)" because it would invalidate check constraint "(.*)"$`), 3959, "HY000", // ER_DEPENDENT_BY_CHECK_CONSTRAINT
		"Check constraint '$2' uses column '$1', hence column cannot be dropped or renamed."},
	// A string longer than its column (strict mode). go-mysql-server does
	// not say which row; MySQL's text would.
	{regexp.MustCompile(`(?s)^string '.*' is too large for column '(.*)'$`), 1406, "22001", "Data too long for column '$1'"}, // ER_DATA_TOO_LONG
	// A value wider than its BIT column.
	{regexp.MustCompile(`^(\d+) is beyond the maximum value that can be held by (\d+) bits$`), 1406, "22001", "Data too long for column: $1 does not fit in BIT($2)"},
	// A value given for a generated column.
	{regexp.MustCompile(`^The value specified for generated column "(.*)" in table "(.*)" is not allowed\.$`), 3105, "HY000", "The value specified for generated column '$1' in table '$2' is not allowed."}, // ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN
	// A table that does not exist (MySQL names it with its database,
	// which go-mysql-server's text lacks).
	{regexp.MustCompile(`^table not found: (.*)$`), 1146, "42S02", "Table '$1' doesn't exist"}, // ER_NO_SUCH_TABLE
	// A function that does not exist.
	{regexp.MustCompile(`^function: '(.*)' not found$`), 1305, "42000", "FUNCTION $1 does not exist"}, // ER_SP_DOES_NOT_EXIST
	// A number out of its column's range (strict mode). go-mysql-server
	// names neither column nor row; MySQL's text would.
	{regexp.MustCompile(`^(\S+) out of range for ([a-z]+(?:\(\d+(?:,\d+)?\))?(?: unsigned)?)$`), 1264, "22003", "Out of range value for column: $1 does not fit in $2"}, // ER_WARN_DATA_OUT_OF_RANGE
	{regexp.MustCompile(`^ambiguous column name "(.*)", it's present in all these tables: .*$`), 1052, "23000", "Column '$1' is ambiguous"},                             // ER_NON_UNIQ_ERROR
	{regexp.MustCompile("^duplicate column name: `(.*)`$"), 1060, "42S21", "Duplicate column name '$1'"},                                                                // ER_DUP_FIELDNAME
	{regexp.MustCompile(`^Column "(.*)" already exists$`), 1060, "42S21", "Duplicate column name '$1'"},                                                                 // ER_DUP_FIELDNAME
	// A column the table has not, named by ALTER TABLE (MODIFY, CHANGE,
	// RENAME COLUMN, ALTER COLUMN, AFTER) or a statement's columns. (An
	// ALTER TABLE ... DROP COLUMN of it is 1091: the server's dropError.)
	{regexp.MustCompile(`^table "(.*)" does not have column "(.*)"$`), 1054, "42S22", "Unknown column '$2' in '$1'"}, // ER_BAD_FIELD_ERROR
	// go-mysql-server's text for MySQL's number: a column no table in the
	// statement has (MySQL names the clause; this says 'field list'), and
	// DROP INDEX of an index the table has not.
	{regexp.MustCompile(`^column "(.*)" could not be found in any table in scope$`), 1054, "42S22", "Unknown column '$1' in 'field list'"},           // ER_BAD_FIELD_ERROR
	{regexp.MustCompile(`^error: can't drop '(.*)'; check that column/key exists$`), 1091, "42000", "Can't DROP '$1'; check that column/key exists"}, // ER_CANT_DROP_FIELD_OR_KEY
	// DROP CHECK or DROP CONSTRAINT of a name the table has not.
	{regexp.MustCompile(`^Constraint "(.*)" does not exist$`), 3940, "HY000", "Constraint '$1' does not exist."}, // ER_CONSTRAINT_NOT_FOUND
	// A table, column, index, check or foreign key name past 64
	// characters (go-mysql-server's only use of the error).
	{regexp.MustCompile("^invalid identifier: `(.*)`$"), 1059, "42000", "Identifier name '$1' is too long"}, // ER_TOO_LONG_IDENT
	// Text or bytes a spatial function cannot read as a geometry.
	{regexp.MustCompile(`^invalid data type for JSON data in argument (\d+) to function (\w+); a JSON string or JSON type is required$`), 3146, "22032", "Invalid data type for JSON data in argument $1 to function $2; a JSON string or JSON type is required."}, // ER_INVALID_TYPE_FOR_JSON
	{regexp.MustCompile(`^too many key parts specified; max (\d+) parts allowed$`), 1070, "42000", "Too many key parts specified; max $1 parts allowed"},                                                                                                           // ER_TOO_MANY_KEY_PARTS
	{regexp.MustCompile(`^invalid GIS data provided to function (?i:(st_\w+))$`), 3037, "22023", "Invalid GIS data provided to function $1."},                                                                                                                      // ER_GIS_INVALID_DATA
}

// gmsErrors are go-mysql-server errors that carry no MySQL number, by
// message prefix, with the error MySQL gives for the same mistake.
var gmsErrors = []struct {
	prefix, suffix string
	contains       string // "" matches any middle
	num            int
	state          string
	text           string // "" keeps go-mysql-server's message
}{
	{"number of values does not match number of columns provided", "", "", mysql.ERWrongValueCountOnRow, "21S01", "Column count doesn't match value count at row 1"},
	{"no database selected", "", "", mysql.ERNoDb, "3D000", "No database selected"},
	{"Duplicate key name ", "", "", mysql.ERDupKeyName, "42000", ""},
	{"table with name ", " already exists", "", mysql.ERTableExists, "42S01", ""},
	{"the view ", " already exists", "", mysql.ERTableExists, "42S01", ""},
	{"trigger \"", "\" does not exist", "", 1360, "HY000", "Trigger does not exist"}, // ER_TRG_DOES_NOT_EXIST
	// Writes through a view (views are read-only here).
	{"expected insert destination to be resolved or unresolved table", "", "", 1288, "HY000", "The target table of the INSERT is not updatable"},
	{"table doesn't support UPDATE", "", "", 1288, "HY000", "The target table of the UPDATE is not updatable"},
	{"table doesn't support DELETE FROM", "", "", 1288, "HY000", "The target table of the DELETE is not updatable"},
	{"the view ", " does not exist", "", mysql.ERBadTable, "42S02", ""},
	{"column \"", "\" could not be found in any table in scope", "", mysql.ERBadFieldError, "42S22", ""},
	// A table or index a foreign key needs.
	{"cannot drop table `", "", "` as it is referenced in foreign key `", 3730, "HY000", ""}, // ER_FK_CANNOT_DROP_PARENT
	{"cannot drop index: `", "", "` is used by foreign key `", 1553, "HY000", ""},            // ER_DROP_INDEX_FK
	// Constraints MySQL refuses with numbers of their own.
	{"duplicate foreign key constraint name `", "", "", 1826, "HY000", ""},                    // ER_FK_DUP_NAME
	{"cannot use SET NULL as column `", "` is non-nullable", "", 1830, "HY000", ""},           // ER_FK_COLUMN_NOT_NULL
	{"cannot drop column `", "", "` as it is used in foreign key `", 1828, "HY000", ""},       // ER_FK_COLUMN_CANNOT_DROP
	{"missing index for foreign key `", "", "` on the referenced table `", 1822, "HY000", ""}, // ER_FK_NO_INDEX_PARENT
	{"column type mismatch on `", "", "` and `", 3780, "HY000", ""},                           // ER_FK_INCOMPATIBLE_COLUMNS
	{"foreign key `", "", "` was not found on the table `", 1091, "42000", ""},                // ER_CANT_DROP_FIELD_OR_KEY
	{"Foreign key cascade delete/update exceeds max depth of 15.", "", "", 3008, "HY000", ""}, // ER_FK_DEPTH_EXCEEDED
	{"cannot truncate table ", "", " as it is referenced in foreign key ", 1701, "42000", ""}, // ER_TRUNCATE_ILLEGAL_FK
	{"database does not support temporary tables", "", "", mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'temporary tables'"},
	{"TIME length not yet supported", "", "", mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'TIME with fractional seconds (TIME(n))'"},
	// A privilege missing: go-mysql-server says neither which nor at what
	// level. The server turns a statement on tables into 1142; others
	// stay 1227.
	{"command denied to user ", "", "", SpecificAccessDenied, "42000", ""},
	// A database the account has no privilege on (USE, COM_INIT_DB,
	// SHOW TABLES): MySQL's 1044.
	{"Access denied for user ", "'", "", DBAccessDenied, "42000", ""},
	// go-mysql-server stops a recursive CTE after a fixed 10,001
	// iterations (cte_max_recursion_depth shows that, read-only).
	// ONLY_FULL_GROUP_BY (go-mysql-server's text, the column without
	// its database).
	{"Expression #", "this is incompatible with sql_mode=only_full_group_by", " is not in GROUP BY clause", 1055, "42000", ""}, // ER_WRONG_FIELD_WITH_GROUP
	{"WITH RECURSIVE iteration limit exceeded", "", "", 3636, "HY000", "Recursive query aborted after 10001 iterations. @@cte_max_recursion_depth is 10000 here and cannot be changed"},
	// A value an ENUM or SET column has no member for (strict mode).
	{"Data truncated for column '", "", "", mysql.ERWarnDataTruncated, "01000", ""}, // WARN_DATA_TRUNCATED
	{"Incorrect datetime value: '", "'", "", mysql.ERTruncatedWrongValue, "22007", ""},
	// Bytes a column's character set cannot read (strict mode).
	{"Incorrect string value: '", "", "' for column '", 1366, "HY000", ""}, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
	{"incompatible type for default value", "", "", 1067, "42000", ""},     // ER_INVALID_DEFAULT
	{"Variable '", "'", "' can't be set to the value of '", mysql.ERWrongValueForVar, "42000", ""},
	{"Variable '", " is a read only variable", "", mysql.ERIncorrectGlobalLocalVar, "HY000", ""},
	{"Variable '", " is a GLOBAL variable and should be set with SET GLOBAL", "", mysql.ERGlobalVariable, "HY000", ""},
	{"Unknown system variable '", "'", "", mysql.ERUnknownSystemVariable, "HY000", ""},
	// ALTER TABLE of a temporary table.
	{"table ", " cannot be altered", "", mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'ALTER TABLE of a temporary table'"},
	// DROP TEMPORARY TABLE of a table that is not a temporary one.
	{"Unknown table '", "'", "", mysql.ERBadTable, "42S02", ""},
	// JSON: a document that does not parse, and an index on a JSON column.
	{"Invalid JSON text", "", "", 3140, "22032", ""},                                                                    // ER_INVALID_JSON_TEXT
	{"JSON column '", "' supports indexing only via generated columns on a specified JSON path", "", 3152, "42000", ""}, // ER_JSON_USED_AS_KEY
	// Spatial values and indexes. A value a geometry column cannot take
	// (another kind of geometry, bytes that are none) is 1416, as MySQL
	// gives it; text a function cannot read as one is 3037.
	{"Cannot get geometry object from data you sent to the GEOMETRY field", "", "", 1416, "22003", "Cannot get geometry object from data you send to the GEOMETRY field"}, // ER_CANT_CREATE_GEOMETRY_OBJECT
	{"invalid GIS data provided to function ", "Type.Convert", "", 1416, "22003", "Cannot get geometry object from data you send to the GEOMETRY field"},
	{"The SRID of the geometry does not match the SRID of the column '", "", "", 3643, "HY000", ""},                                                     // ER_WRONG_SRID_FOR_COLUMN
	{"All parts of a SPATIAL index must be NOT NULL", "", "", 1252, "42000", ""},                                                                        // ER_SPATIAL_CANT_HAVE_NULL
	{"a SPATIAL index may only contain a geometrical type column", "", "", 1687, "42000", "A SPATIAL index may only contain a geometrical type column"}, // ER_SPATIAL_MUST_HAVE_GEOM_COL
}

// sqlStates are MySQL's SQLSTATEs for errors go-mysql-server sends with
// its generic HY000.
var sqlStates = map[int]string{
	mysql.ERDupEntry:           "23000",
	mysql.ERBadNullError:       "23000",
	mysql.ERDupKeyName:         "42000",
	mysql.ERCantDropFieldOrKey: "42000",
	mysql.ERNoSuchTable:        "42S02",
	mysql.ERBadDb:              "42000",
	mysql.ERTableExists:        "42S01",
	mysql.ERBadFieldError:      "42S22",
	mysql.ERDataTooLong:        "22001",
	mysql.ERNotSupportedYet:    "42000",
	ReadOnlyTransaction:        "25006",
	mysql.ERRowIsReferenced2:   "23000", // a parent row with children
	mysql.ErNoReferencedRow2:   "23000", // a child row without a parent
	1242:                       "21000", // ER_SUBQUERY_NO_1_ROW
	1072:                       "42000", // ER_KEY_COLUMN_DOES_NOT_EXITS
}

// prefixes are what go-mysql-server puts before MySQL's message.
var prefixes = map[int][]string{
	mysql.ERDupEntry: {"duplicate unique key given: ", "duplicate primary key given: "},
}

// texts are MySQL's messages where go-mysql-server words an error
// differently.
var texts = map[int]string{
	ReadOnlyTransaction: readOnlyTransactionMsg,
	1242:                "Subquery returns more than 1 row",
}

// NotOnClusterMember refuses on a cluster member what only a single
// server does (1235).
func NotOnClusterMember(what string) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s on a cluster node'", what)
}
