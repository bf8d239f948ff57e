package sqlengine

// JSON columns: go-mysql-server's JSON values are documents of Go values
// (types.JSONDocument and other sql.JSONWrappers); storage keeps MySQL's
// binary JSON (row/json.go), which takes plain Go values.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"
)

// jsonDocument is the document of a JSON value in the Go values the
// binary encoding takes. A document holding anything else (a nested
// wrapper, a typed map) is normalized through its JSON text.
func jsonDocument(ctx *sql.Context, w sql.JSONWrapper) (any, error) {
	doc, err := w.ToInterface(ctx)
	if err != nil {
		return nil, err
	}
	if plainJSON(doc, 0) {
		return doc, nil
	}
	text, err := types.JSONDocument{Val: doc}.JSONString()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("JSON value: %w", err)
	}
	return out, nil
}

// plainJSON reports whether doc holds only values the binary encoding
// takes as they are.
func plainJSON(doc any, depth int) bool {
	if depth > 100 {
		return true // the encoder refuses it with MySQL's error
	}
	switch x := doc.(type) {
	case nil, bool, string, int64, uint64, float64, int, int8, int16, int32, uint, uint8, uint16, uint32, float32,
		json.Number, decimal.Decimal, time.Time:
		return true
	case []any:
		for _, e := range x {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// errJSONKey is MySQL's 3152 ER_JSON_USED_AS_KEY.
func errJSONKey(col string) error {
	return mysql.NewSQLError(3152, "42000", "JSON column '%s' supports indexing only via generated columns on a specified JSON path", col)
}
