package sqlengine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	jsonfn "github.com/dolthub/go-mysql-server/sql/expression/function/json"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// JSON_LENGTH and JSON_CONTAINS as MySQL evaluates them.
//
// go-mysql-server's JSON_LENGTH gives NULL for an empty array (MySQL:
// 0) and for the JSON null (MySQL: 1, as for any scalar). Its
// JSON_CONTAINS compares numbers only when the target's is a double: a
// document holding integers (JSON_OBJECT('a', 1), or any document read
// from a JSON column) failed the statement with 1105 "invalid type".
// Both are go-mysql-server's expressions (their names, types and
// printing) with Lockstep's evaluation; numbers are compared exactly,
// whatever Go type holds them.

// jsonFunction is the sql.Function for JSON_LENGTH and JSON_CONTAINS.
func jsonFunction(name string) (sql.Function, bool) {
	switch name {
	case "json_length":
		return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			inner, err := jsonfn.NewJsonLength(ctx, args...)
			if err != nil {
				return nil, err
			}
			return &jsonLength{Expression: inner, args: args}, nil
		}}, true
	case "json_contains":
		return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			inner, err := jsonfn.NewJSONContains(ctx, args...)
			if err != nil {
				return nil, err
			}
			return &jsonContains{Expression: inner, args: args}, nil
		}}, true
	}
	return nil, false
}

// jsonArg evaluates argument pos (from 1) of function name as a JSON
// document, as go-mysql-server's JSON functions read one: nil for NULL,
// text parsed (its numbers exact), a JSON value as it is.
func jsonArg(ctx *sql.Context, row sql.Row, e sql.Expression, name string, pos int) (sql.JSONWrapper, error) {
	v, err := e.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	switch x := v.(type) {
	case sql.JSONWrapper:
		return x, nil
	case string:
		dec := json.NewDecoder(bytes.NewReader([]byte(x)))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil || dec.More() {
			return nil, sql.ErrInvalidJSONText.New(pos, name, x)
		}
		return types.JSONDocument{Val: doc}, nil
	}
	return nil, sql.ErrInvalidJSONArgument.New(pos, name)
}

// jsonAt is the value at path in doc (nil: no such value), path's
// expression NULL giving null.
func jsonAt(ctx *sql.Context, row sql.Row, doc sql.JSONWrapper, pathExpr sql.Expression) (v any, found, null bool, err error) {
	path := "$"
	if pathExpr != nil {
		p, err := pathExpr.Eval(ctx, row)
		if err != nil || p == nil {
			return nil, false, true, err
		}
		s, _, err := types.LongText.Convert(ctx, p)
		if err != nil {
			return nil, false, true, err
		}
		path, _ = s.(string)
	}
	at, err := types.LookupJSONValue(ctx, doc, path)
	if err != nil || at == nil {
		return nil, false, false, err
	}
	v, err = at.ToInterface(ctx)
	return v, err == nil, false, err
}

// jsonLength is JSON_LENGTH(doc[, path]).
type jsonLength struct {
	sql.Expression
	args []sql.Expression
}

func (j *jsonLength) Children() []sql.Expression { return j.args }

func (j *jsonLength) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := j.Expression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &jsonLength{Expression: inner, args: children}, nil
}

func (j *jsonLength) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	doc, err := jsonArg(ctx, row, j.args[0], "json_length", 1)
	if err != nil || doc == nil {
		return nil, err
	}
	var path sql.Expression
	if len(j.args) > 1 {
		path = j.args[1]
	}
	v, found, _, err := jsonAt(ctx, row, doc, path)
	if err != nil || !found {
		return nil, err
	}
	switch x := v.(type) {
	case []any:
		return int64(len(x)), nil
	case map[string]any:
		return int64(len(x)), nil
	}
	return int64(1), nil // a scalar, the JSON null among them
}

// jsonContains is JSON_CONTAINS(target, candidate[, path]).
type jsonContains struct {
	sql.Expression
	args []sql.Expression
}

func (j *jsonContains) Children() []sql.Expression { return j.args }

func (j *jsonContains) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := j.Expression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &jsonContains{Expression: inner, args: children}, nil
}

func (j *jsonContains) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	target, err := jsonArg(ctx, row, j.args[0], "json_contains", 1)
	if err != nil || target == nil {
		return nil, err
	}
	candidate, err := jsonArg(ctx, row, j.args[1], "json_contains", 2)
	if err != nil || candidate == nil {
		return nil, err
	}
	var path sql.Expression
	if len(j.args) > 2 {
		path = j.args[2]
	}
	t, found, null, err := jsonAt(ctx, row, target, path)
	if err != nil || null || !found {
		return nil, err
	}
	c, err := candidate.ToInterface(ctx)
	if err != nil {
		return nil, err
	}
	return jsonContained(t, c), nil
}

// jsonContained reports whether candidate is contained in target, as
// MySQL defines it: scalars when they are equal (numbers by value); an
// array in an array when each of its elements is contained in some
// element of the target; a non-array in an array when it is contained in
// some element; an object in an object when the target has each of its
// keys, with each value contained in the target's.
func jsonContained(target, candidate any) bool {
	switch t := target.(type) {
	case []any:
		return containedInArray(t, candidate)
	case map[string]any:
		return containedInObject(t, candidate)
	}
	switch candidate.(type) {
	case []any, map[string]any:
		return false
	}
	return jsonScalarEqual(target, candidate)
}

func containedInArray(t []any, candidate any) bool {
	var elems []any
	switch c := candidate.(type) {
	case []any:
		elems = c
	default:
		for _, e := range t {
			if jsonContained(e, candidate) {
				return true
			}
		}
		return false
	}
	for _, c := range elems {
		in := false
		for _, e := range t {
			if jsonContained(e, c) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}

func containedInObject(t map[string]any, candidate any) bool {
	var c map[string]any
	switch x := candidate.(type) {
	case map[string]any:
		c = x
	default:
		return false
	}
	for k, v := range c {
		tv, ok := t[k]
		if !ok || !jsonContained(tv, v) {
			return false
		}
	}
	return true
}

// jsonScalarEqual compares two JSON scalars: numbers by value, whatever Go
// type holds them; others when of one kind and equal.
func jsonScalarEqual(a, b any) bool {
	if da, ok := jsonNumber(a); ok {
		db, ok := jsonNumber(b)
		return ok && da.Equal(db)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// jsonNumber is a JSON number's exact value.
func jsonNumber(v any) (decimal.Decimal, bool) {
	switch x := v.(type) {
	case int:
		return decimal.NewFromInt(int64(x)), true
	case int8:
		return decimal.NewFromInt(int64(x)), true
	case int16:
		return decimal.NewFromInt(int64(x)), true
	case int32:
		return decimal.NewFromInt(int64(x)), true
	case int64:
		return decimal.NewFromInt(x), true
	case uint:
		return decimal.NewFromUint64(uint64(x)), true
	case uint8:
		return decimal.NewFromInt(int64(x)), true
	case uint16:
		return decimal.NewFromInt(int64(x)), true
	case uint32:
		return decimal.NewFromInt(int64(x)), true
	case uint64:
		return decimal.NewFromUint64(x), true
	case float32:
		return decimal.NewFromFloat32(x), true
	case float64:
		return decimal.NewFromFloat(x), true
	case decimal.Decimal:
		return x, true
	case json.Number:
		d, err := decimal.NewFromString(string(x))
		return d, err == nil
	}
	return decimal.Decimal{}, false
}
