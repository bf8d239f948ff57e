package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// showWarnings is SHOW WARNINGS' rows in the order the statement raised
// them, as MySQL lists them. go-mysql-server's session hands its warnings
// over newest first, and its SHOW WARNINGS listed them so: an INSERT
// IGNORE's division by zero came after the zero date of the same row,
// and SHOW WARNINGS LIMIT 1 gave the last warning instead of the first.
func showWarnings(newestFirst plan.ShowWarnings) sql.RowIter {
	rows := make([]sql.Row, 0, len(newestFirst))
	for i := len(newestFirst) - 1; i >= 0; i-- {
		w := newestFirst[i]
		rows = append(rows, sql.NewRow(w.Level, w.Code, w.Message))
	}
	return sql.RowsToRowIter(rows...)
}
