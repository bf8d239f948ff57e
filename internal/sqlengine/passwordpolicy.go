package sqlengine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Password validation, as MySQL's validate_password component does it.
//
// MySQL checks no password until component_validate_password is installed
// (INSTALL COMPONENT 'file://component_validate_password'): until then its
// validate_password.* variables do not exist and VALIDATE_PASSWORD_STRENGTH
// returns 0. Lockstep does the same. The server keeps which components are
// installed (local to a server and not replicated, as in MySQL) and turns
// validation on and off with SetPasswordValidation. While it is on:
//
//   - the variables are listed and can be set with SET GLOBAL (which needs
//     SYSTEM_VARIABLES_ADMIN, as every SET GLOBAL does);
//   - CREATE USER, ALTER USER and SET PASSWORD given a cleartext password
//     (IDENTIFIED BY, IDENTIFIED WITH plugin BY; a CREATE USER without
//     IDENTIFIED has the empty password) are refused with MySQL's 1819 if
//     the password breaks the policy. A hash (IDENTIFIED WITH plugin AS)
//     cannot be checked and is not, as in MySQL; nor are the statements a
//     replica applies from its source;
//   - the policy (validate_password.policy): LOW asks for
//     validate_password.length characters; MEDIUM adds number_count
//     digits, mixed_case_count lower-case and as many upper-case letters,
//     and special_char_count other characters; STRONG adds a check
//     against a dictionary file, and setting one is refused (1235), so
//     STRONG checks what MEDIUM does, as MySQL's does without a file;
//   - validate_password.check_user_name refuses the session's user name
//     and that name reversed;
//   - validate_password.length is raised to number_count +
//     special_char_count + 2 * mixed_case_count when set below it, as
//     MySQL raises it.
//
// The switch is process-wide, like go-mysql-server's variable registry,
// which holds the variables' values.

// passwordValidation is whether component_validate_password is installed.
var passwordValidation atomic.Bool

// SetPasswordValidation installs (on) or uninstalls the password policy.
// Uninstalling sets the variables back to their defaults, which is what
// the next install finds, as in MySQL.
func SetPasswordValidation(on bool) {
	if !on && passwordValidation.Load() {
		defaults := map[string]any{}
		for name := range sql.SystemVariables.GetAllGlobalVariables() {
			if sv, _, ok := sql.SystemVariables.GetGlobal(name); ok && hasPasswordPrefix(name) {
				defaults[name] = sv.GetDefault()
			}
		}
		_ = sql.SystemVariables.AssignValues(defaults)
	}
	passwordValidation.Store(on)
}

// PasswordValidation reports whether the password policy is installed.
func PasswordValidation() bool { return passwordValidation.Load() }

const validatePasswordPrefix = "validate_password."

// hiddenVariable reports whether name is a variable of a component that
// is not installed: the server behaves as if it did not exist.
func hiddenVariable(name string) bool {
	return hasPasswordPrefix(name) && !passwordValidation.Load()
}

func hasPasswordPrefix(name string) bool {
	return len(name) > len(validatePasswordPrefix) && (name[0] == 'v' || name[0] == 'V') &&
		strings.EqualFold(name[:len(validatePasswordPrefix)], validatePasswordPrefix)
}

// dropHidden removes hidden variables from a listing.
func dropHidden(m map[string]any) {
	if passwordValidation.Load() {
		return
	}
	for name := range m {
		if hiddenVariable(name) {
			delete(m, name)
		}
	}
}

// passwordPolicyVariables are the component's variables go-mysql-server
// does not declare (it has length and the three counts).
func passwordPolicyVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	return []sql.SystemVariable{
		&sql.MysqlSystemVariable{Name: "validate_password.policy", Scope: global, Dynamic: true,
			Type: types.NewSystemEnumType("validate_password.policy", "LOW", "MEDIUM", "STRONG"), Default: "MEDIUM"},
		&sql.MysqlSystemVariable{Name: "validate_password.check_user_name", Scope: global, Dynamic: true,
			Type: types.NewSystemBoolType("validate_password.check_user_name"), Default: int8(1)},
		&sql.MysqlSystemVariable{Name: "validate_password.dictionary_file", Scope: global, Dynamic: true,
			Type: types.NewSystemStringType("validate_password.dictionary_file"), Default: ""},
	}
}

func init() {
	for _, n := range []string{"length", "number_count", "mixed_case_count", "special_char_count"} {
		variableHooks[validatePasswordPrefix+n] = raisePasswordLength
	}
}

// raisePasswordLength is MySQL's adjustment after a change of
// validate_password.length or of a count: the length is at least what the
// counts ask for.
func raisePasswordLength(any) map[string]any {
	p := currentPasswordPolicy()
	if need := p.numbers + p.specials + 2*p.mixedCase; p.length < need {
		return map[string]any{validatePasswordPrefix + "length": need}
	}
	return nil
}

// checkPasswordVariable refuses a dictionary file: none is read.
func checkPasswordVariable(name string, val any) error {
	if strings.EqualFold(name, validatePasswordPrefix+"dictionary_file") && fmt.Sprint(val) != "" {
		return errNotSupported("validate_password.dictionary_file: no dictionary file is read, and STRONG checks what MEDIUM does")
	}
	return nil
}

// passwordPolicy is the variables' values.
type passwordPolicy struct {
	policy                               int // 0 LOW, 1 MEDIUM, 2 STRONG
	length, numbers, mixedCase, specials int
	checkUserName                        bool
}

func currentPasswordPolicy() passwordPolicy {
	num := func(name string, def int) int {
		if _, v, ok := sql.SystemVariables.GetGlobal(validatePasswordPrefix + name); ok {
			if n, ok := asInt64(v); ok {
				return int(n)
			}
		}
		return def
	}
	p := passwordPolicy{length: num("length", 8), numbers: num("number_count", 1),
		mixedCase: num("mixed_case_count", 1), specials: num("special_char_count", 1), policy: 1, checkUserName: true}
	if _, v, ok := sql.SystemVariables.GetGlobal(validatePasswordPrefix + "policy"); ok {
		switch strings.ToUpper(fmt.Sprint(v)) {
		case "LOW", "0":
			p.policy = 0
		case "STRONG", "2":
			p.policy = 2
		}
	}
	if _, v, ok := sql.SystemVariables.GetGlobal(validatePasswordPrefix + "check_user_name"); ok {
		p.checkUserName = isOn(v)
	}
	return p
}

// classes counts password's digits, lower- and upper-case letters and
// other characters.
func classes(password string) (digits, lower, upper, other int) {
	for _, r := range password {
		switch {
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLower(r):
			lower++
		case unicode.IsUpper(r):
			upper++
		default:
			other++
		}
	}
	return
}

// meets reports whether password satisfies the policy at level (0 LOW,
// 1 MEDIUM; STRONG adds nothing without a dictionary).
func (p passwordPolicy) meets(password string, level int) bool {
	if utf8.RuneCountInString(password) < max(p.length, p.numbers+p.specials+2*p.mixedCase) {
		return false
	}
	if level == 0 {
		return true
	}
	d, l, u, o := classes(password)
	return d >= p.numbers && l >= p.mixedCase && u >= p.mixedCase && o >= p.specials
}

// namesUser reports whether password is user, or user reversed.
func namesUser(password, user string) bool {
	if user == "" {
		return false
	}
	if password == user {
		return true
	}
	r := []rune(user)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return password == string(r)
}

var errPasswordPolicy = mysql.NewSQLError(1819, "HY000", "Your password does not satisfy the current policy requirements")

// checkPasswordPolicy refuses (1819) a statement that gives an account a
// cleartext password breaking the policy, when it is installed.
func checkPasswordPolicy(ctx *sql.Context, st ast.Statement) error {
	if !passwordValidation.Load() {
		return nil
	}
	s := sessionOf(ctx)
	if s == nil || s.replGTID != nil {
		return nil // the server's own statements; a source's
	}
	var passwords []string
	switch n := st.(type) {
	case *ast.CreateUser:
		for _, u := range n.Users {
			if u.Auth1 == nil || u.Auth1.Identity == "" {
				passwords = append(passwords, authPassword(u.Auth1))
			}
		}
	case *ast.DDL:
		if n.Action == ast.AlterStr && n.Authentication != nil && n.Authentication.Identity == "" {
			passwords = append(passwords, n.Authentication.Password)
		}
	}
	if len(passwords) == 0 {
		return nil
	}
	p := currentPasswordPolicy()
	user := ctx.Session.Client().User
	for _, pw := range passwords {
		if !p.meets(pw, min(p.policy, 1)) || (p.checkUserName && namesUser(pw, user)) {
			return errPasswordPolicy
		}
	}
	return nil
}

func authPassword(a *ast.Authentication) string {
	if a == nil {
		return ""
	}
	return a.Password
}

// passwordStrength is MySQL's VALIDATE_PASSWORD_STRENGTH: 0 without the
// component or under 4 characters, 25 under validate_password.length, 50
// for LOW, 75 for MEDIUM, 100 for STRONG (which, without a dictionary, a
// MEDIUM password also is).
func passwordStrength(password string) int {
	if !passwordValidation.Load() || utf8.RuneCountInString(password) < 4 {
		return 0
	}
	p := currentPasswordPolicy()
	switch {
	case !p.meets(password, 0):
		return 25
	case !p.meets(password, 1):
		return 50
	}
	return 100
}

// validatePasswordStrength is VALIDATE_PASSWORD_STRENGTH(password).
type validatePasswordStrength struct {
	expression.UnaryExpressionStub
}

var _ sql.FunctionExpression = (*validatePasswordStrength)(nil)

func validatePasswordStrengthFunction() sql.Function {
	return sql.Function1{Name: "validate_password_strength", Fn: func(_ *sql.Context, arg sql.Expression) sql.Expression {
		return &validatePasswordStrength{expression.UnaryExpressionStub{Child: arg}}
	}}
}

func (f *validatePasswordStrength) FunctionName() string { return "validate_password_strength" }

func (f *validatePasswordStrength) Description() string {
	return "returns an integer to indicate how strong the password is"
}

func (f *validatePasswordStrength) String() string {
	return fmt.Sprintf("validate_password_strength(%s)", f.Child)
}

func (f *validatePasswordStrength) Type(*sql.Context) sql.Type { return types.Int32 }

func (f *validatePasswordStrength) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 1)
	}
	return &validatePasswordStrength{expression.UnaryExpressionStub{Child: children[0]}}, nil
}

func (f *validatePasswordStrength) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := f.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	s, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return nil, err
	}
	pw, _ := s.(string)
	return int32(passwordStrength(pw)), nil
}

// joinComponentVariables makes SET GLOBAL validate_password.length = n
// name one variable: go-mysql-server reads validate_password as a table
// and finds no such variable. (@@validate_password.length and the quoted
// `validate_password.length` already work.)
func joinComponentVariables(st ast.Statement) {
	set, ok := st.(*ast.Set)
	if !ok {
		return
	}
	for _, e := range set.Exprs {
		if e.Name == nil || !e.Name.Qualifier.DbQualifier.IsEmpty() ||
			!strings.EqualFold(e.Name.Qualifier.Name.String(), strings.TrimSuffix(validatePasswordPrefix, ".")) {
			continue
		}
		e.Name = &ast.ColName{Name: ast.NewColIdent(validatePasswordPrefix + e.Name.Name.String())}
	}
}
