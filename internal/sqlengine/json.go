package sqlengine

// JSON columns: go-mysql-server's JSON values are documents of Go values
// (types.JSONDocument and other sql.JSONWrappers); storage keeps MySQL's
// binary JSON (row/json.go), which takes plain Go values.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
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

// Numbers in JSON text written to a JSON column keep their exact value.
//
// go-mysql-server reads JSON text with encoding/json into float64s: an
// integer past 2^53 written as text lost its low digits
// ('{"id": 9007199254740993}' was stored with 9007199254740992), where
// MySQL stores integers as 64-bit integers. Text headed for a JSON
// column (an INSERT's values, an UPDATE's SET: outofrange.go puts the
// call on both paths) is therefore read here first, its integers as
// int64 or uint64 and other numbers as float64, as MySQL's binary JSON
// holds them; go-mysql-server takes the document as it is. Text that is
// not one JSON value is left to go-mysql-server, which refuses it with
// its error (3140).

// exactJSON is v, text for a JSON column, as a document with exact
// integers, and false if v is not text or not a JSON value.
func exactJSON(v any) (types.JSONDocument, bool) {
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	case []byte:
		data = x
	default:
		return types.JSONDocument{}, false
	}
	if int64(len(data)) > types.MaxJsonFieldByteLength {
		return types.JSONDocument{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return types.JSONDocument{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return types.JSONDocument{}, false // more than one value
	}
	doc, ok := exactNumbers(doc, 0)
	if !ok {
		return types.JSONDocument{}, false
	}
	return types.JSONDocument{Val: doc}, true
}

// exactNumbers is doc with its json.Numbers as int64, uint64 or float64.
func exactNumbers(doc any, depth int) (any, bool) {
	if depth > 100 {
		return nil, false // left to go-mysql-server and the encoder's limit
	}
	switch x := doc.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, true
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case []any:
		for i, e := range x {
			v, ok := exactNumbers(e, depth+1)
			if !ok {
				return nil, false
			}
			x[i] = v
		}
	case map[string]any:
		for k, e := range x {
			v, ok := exactNumbers(e, depth+1)
			if !ok {
				return nil, false
			}
			x[k] = v
		}
	}
	return doc, true
}

// exactJSONText is a value headed for a JSON column: text becomes a
// document with exact numbers (exactJSON) before go-mysql-server reads
// it.
type exactJSONText struct {
	valueWrapper
}

var _ sql.Expression = (*exactJSONText)(nil)

func (e *exactJSONText) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(e, len(children), 1)
	}
	return &exactJSONText{valueWrapper: wrap(children[0])}, nil
}

func (e *exactJSONText) Eval(ctx *sql.Context, r sql.Row) (any, error) {
	v, err := e.Child.Eval(ctx, r)
	if err != nil || v == nil {
		return v, err
	}
	if doc, ok := exactJSON(v); ok {
		return doc, nil
	}
	return v, nil
}
