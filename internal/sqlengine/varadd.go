package sqlengine

import (
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
)

// VariableAdder returns a function that appends a system variable to vars
// under its name and each alias (SET GLOBAL keeps them equal), registering
// computed ones.
func VariableAdder(vars *[]sql.SystemVariable) func(v *sql.MysqlSystemVariable, aliases ...string) {
	return func(v *sql.MysqlSystemVariable, aliases ...string) {
		for _, name := range append([]string{v.Name}, aliases...) {
			c := *v
			c.Name = name
			*vars = append(*vars, &c)
			if c.ValueFunction != nil {
				RegisterComputedVariable(name)
			}
			if name != v.Name {
				RegisterVariableAlias(v.Name, name)
			}
		}
	}
}

// IntValue reads a system variable's value (as SET gives it to a
// NotifyChanged hook, or as GetGlobal returns it) as an integer: booleans
// are 0 and 1, and what is not a number is 0.
func IntValue(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int8:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// StatusNum is a boolean as a status or system variable's 0 or 1.
func StatusNum(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
