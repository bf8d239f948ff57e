package sqlengine

import (
	"fmt"
	"reflect"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/shopspring/decimal"
)

// errUnsupportedType is MySQL's 1235 ER_NOT_SUPPORTED_YET.
func errUnsupportedType(col string, t sql.Type) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSUnknownSQLState,
		"This version of Lockstep doesn't yet support '%s columns' (column `%s`)", t.String(), col)
}

// storageColumn maps a GMS column to a storage column.
func storageColumn(c *sql.Column) (row.Column, error) {
	rc := row.Column{Name: c.Name, Nullable: c.Nullable}
	t := c.Type
	switch t.Type() {
	case query.Type_INT8, query.Type_UINT8:
		rc.Type, rc.Unsigned = row.TypeTiny, t.Type() == query.Type_UINT8
	case query.Type_INT16, query.Type_UINT16:
		rc.Type, rc.Unsigned = row.TypeShort, t.Type() == query.Type_UINT16
	case query.Type_INT24, query.Type_UINT24:
		rc.Type, rc.Unsigned = row.TypeInt24, t.Type() == query.Type_UINT24
	case query.Type_INT32, query.Type_UINT32:
		rc.Type, rc.Unsigned = row.TypeLong, t.Type() == query.Type_UINT32
	case query.Type_INT64, query.Type_UINT64:
		rc.Type, rc.Unsigned = row.TypeLongLong, t.Type() == query.Type_UINT64
	case query.Type_FLOAT32:
		rc.Type = row.TypeFloat
	case query.Type_FLOAT64:
		rc.Type = row.TypeDouble
	case query.Type_DECIMAL:
		dt := t.(interface {
			Precision() uint8
			Scale() uint8
		})
		rc.Type, rc.Precision, rc.Scale = row.TypeNewDecimal, int(dt.Precision()), int(dt.Scale())
	case query.Type_BIT:
		rc.Type, rc.Precision = row.TypeBit, int(t.(types.BitType).NumberOfBits())
	case query.Type_YEAR:
		rc.Type = row.TypeYear
	case query.Type_DATE:
		rc.Type = row.TypeDate
	case query.Type_DATETIME, query.Type_TIMESTAMP:
		rc.Type = row.TypeDateTime2
		if t.Type() == query.Type_TIMESTAMP {
			rc.Type = row.TypeTimestamp2
		}
		if dt, ok := t.(sql.DatetimeType); ok {
			rc.Fsp = dt.Precision()
		}
	case query.Type_TIME:
		rc.Type, rc.Fsp = row.TypeTime2, 6
	case query.Type_CHAR, query.Type_BINARY:
		st := t.(sql.StringType)
		rc.Type, rc.RealType = row.TypeString, row.TypeString
		rc.MaxBytes, rc.Collation = int(st.MaxByteLength()), uint16(st.Collation())
	case query.Type_VARCHAR, query.Type_VARBINARY:
		st := t.(sql.StringType)
		rc.Type, rc.MaxBytes, rc.Collation = row.TypeVarchar, int(st.MaxByteLength()), uint16(st.Collation())
	case query.Type_TEXT, query.Type_BLOB:
		st := t.(sql.StringType)
		rc.Type, rc.Collation = row.TypeBlob, uint16(st.Collation())
		switch n := st.MaxByteLength(); {
		case n <= 255:
			rc.PackLen = 1
		case n <= 65535:
			rc.PackLen = 2
		case n <= 16777215:
			rc.PackLen = 3
		default:
			rc.PackLen = 4
		}
	case query.Type_JSON:
		rc.Type, rc.PackLen = row.TypeJSON, 4
	case query.Type_GEOMETRY:
		rc.Type, rc.PackLen, rc.Geometry = row.TypeGeometry, 4, geometryKind(t) // spatial.go
	case query.Type_ENUM:
		et := t.(sql.EnumType)
		rc.Type, rc.RealType, rc.Elements = row.TypeString, row.TypeEnum, et.Values()
		rc.PackLen = 1
		if len(rc.Elements) > 255 {
			rc.PackLen = 2
		}
		rc.Collation = uint16(et.Collation())
	case query.Type_SET:
		st := t.(sql.SetType)
		rc.Type, rc.RealType, rc.Elements = row.TypeString, row.TypeSet, st.Values()
		rc.PackLen = (len(rc.Elements) + 7) / 8
		if rc.PackLen > 4 {
			rc.PackLen = 8
		}
		rc.Collation = uint16(st.Collation())
	default:
		return rc, errUnsupportedType(c.Name, t)
	}
	if err := rc.Validate(); err != nil {
		return rc, errUnsupportedType(c.Name, t)
	}
	return rc, nil
}

// toStorage converts a GMS value to the storage value of column c.
func toStorage(ctx *sql.Context, c *row.Column, t sql.Type, v any) (row.Value, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Type {
	case row.TypeTiny, row.TypeShort, row.TypeInt24, row.TypeLong, row.TypeLongLong:
		switch x := v.(type) {
		case int8:
			return signedOrNot(c, int64(x)), nil
		case int16:
			return signedOrNot(c, int64(x)), nil
		case int32:
			return signedOrNot(c, int64(x)), nil
		case int64:
			return signedOrNot(c, x), nil
		case int:
			return signedOrNot(c, int64(x)), nil
		case uint8:
			return unsignedOrNot(c, uint64(x)), nil
		case uint16:
			return unsignedOrNot(c, uint64(x)), nil
		case uint32:
			return unsignedOrNot(c, uint64(x)), nil
		case uint64:
			return unsignedOrNot(c, x), nil
		}
	case row.TypeBit:
		if x, ok := v.(uint64); ok {
			return x, nil
		}
	case row.TypeYear:
		switch x := v.(type) {
		case int16:
			return int64(x), nil
		case int64:
			return x, nil
		}
	case row.TypeFloat:
		switch x := v.(type) {
		case float32:
			if c.Precision > 0 {
				r, _ := roundFloat(c, float64(x)) // coldecl.go
				return float32(r), nil
			}
			return x, nil
		case float64:
			r, _ := roundFloat(c, x)
			return float32(r), nil
		}
	case row.TypeDouble:
		switch x := v.(type) {
		case float64:
			r, _ := roundFloat(c, x)
			return r, nil
		case float32:
			r, _ := roundFloat(c, float64(x))
			return r, nil
		}
	case row.TypeNewDecimal:
		if d, ok := v.(decimal.Decimal); ok {
			return d, nil
		}
	case row.TypeDate, row.TypeDateTime2, row.TypeTimestamp2:
		if x, ok := v.(time.Time); ok {
			return x.UTC(), nil
		}
	case row.TypeTime2:
		if x, ok := v.(types.Timespan); ok {
			return roundTime(time.Duration(x)*time.Microsecond, c.Fsp), nil
		}
	case row.TypeGeometry:
		if b, ok := geometryStorage(v); ok {
			return b, nil
		}
	case row.TypeJSON:
		if x, ok := v.(sql.JSONWrapper); ok {
			doc, err := jsonDocument(ctx, x)
			if err != nil {
				return nil, err
			}
			return row.JSONValue{Doc: doc}, nil
		}
	case row.TypeString, row.TypeVarchar, row.TypeBlob:
		switch c.RealType {
		case row.TypeEnum:
			if x, ok := v.(uint16); ok {
				return uint64(x), nil
			}
		case row.TypeSet:
			if x, ok := v.(uint64); ok {
				return x, nil
			}
		default:
			switch x := v.(type) {
			case string:
				if c.IsText() {
					return x, nil
				}
				return []byte(x), nil
			case []byte:
				if c.IsText() {
					return string(x), nil
				}
				return x, nil
			case sql.StringWrapper:
				s, err := x.Unwrap(ctx)
				if err != nil {
					return nil, err
				}
				return toStorage(ctx, c, t, s)
			case sql.BytesWrapper:
				b, err := x.Unwrap(ctx)
				if err != nil {
					return nil, err
				}
				return toStorage(ctx, c, t, b)
			}
		}
	}
	// Not in canonical form: let the column type convert it, once.
	if t != nil {
		cv, _, err := t.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
		if reflect.TypeOf(cv) != reflect.TypeOf(v) {
			return toStorage(ctx, c, nil, cv)
		}
	}
	return nil, fmt.Errorf("column %s: cannot store a %T", c.Name, v)
}

func signedOrNot(c *row.Column, x int64) row.Value {
	if c.Unsigned {
		if x < 0 {
			return x // rejected by the encoder's range check
		}
		return uint64(x)
	}
	return x
}

func unsignedOrNot(c *row.Column, x uint64) row.Value {
	if c.Unsigned {
		return x
	}
	return int64(x)
}

// fromStorage converts a storage value to what GMS expects for the column.
func fromStorage(c *row.Column, v row.Value) any {
	if v == nil {
		return nil
	}
	switch c.Type {
	case row.TypeTiny:
		if c.Unsigned {
			return uint8(v.(uint64))
		}
		return int8(v.(int64))
	case row.TypeShort:
		if c.Unsigned {
			return uint16(v.(uint64))
		}
		return int16(v.(int64))
	case row.TypeInt24, row.TypeLong:
		if c.Unsigned {
			return uint32(v.(uint64))
		}
		return int32(v.(int64))
	case row.TypeYear:
		return int16(v.(int64))
	case row.TypeTime2:
		return types.Timespan(v.(time.Duration) / time.Microsecond)
	case row.TypeString:
		if c.RealType == row.TypeEnum {
			return uint16(v.(uint64))
		}
	case row.TypeJSON:
		return types.JSONDocument{Val: v.(row.JSONValue).Doc}
	case row.TypeGeometry:
		return geometryValue(v.([]byte))
	}
	return v
}

// isBinaryString reports whether a GMS string type compares by bytes.
func isBinaryString(t sql.Type) bool {
	return types.IsBinaryType(t) || sqltypes.IsBinary(t.Type())
}
