package sqlengine

// Account changes: how accounts and grants become durable and reach
// replicas.
//
// go-mysql-server keeps the accounts in memory (its mysql database) and,
// after an account statement has changed them, hands the whole set,
// serialized, to a persister. Lockstep's persister (accountLog) commits
// that set as one binlog transaction, as DDL commits:
//
//   - a set_accounts catalog change carrying the set, which storage keeps
//     next to the tables: the change is atomic with its binlog event, and
//     replay after a crash restores it like any other committed change;
//   - the statement, as a Query event, the way MySQL writes it: a password
//     only as its hash (IDENTIFIED WITH plugin AS 'hash'), never in
//     cleartext, so that binlog readers learn no password and replicas
//     (Lockstep, MySQL, MariaDB) that apply the statement get the same
//     account.
//
// Invariants:
//
//   - Outside an account statement, the accounts in memory are the last
//     committed set. go-mysql-server changes memory before it persists, so
//     a commit that fails (read_only, a full disk, a stopped pipeline)
//     leaves memory ahead of what is durable: the persister then puts the
//     committed set back as soon as go-mysql-server releases its lock, and
//     refuses other account changes until it has (each would commit the
//     failed change under its own statement).
//   - A set equal to the committed one commits nothing (FLUSH PRIVILEGES,
//     CREATE USER IF NOT EXISTS of an existing account).
//   - A statement from a replication source commits under the source's
//     GTID (Session.replGTID), as its DDL does.

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// accountLog is go-mysql-server's persister for its mysql database.
type accountLog struct {
	e *Engine

	mu        sync.Mutex
	committed []byte // the set in memory outside account statements
	capture   bool   // the next Persist records the set without committing
	restoring bool   // a failed change is being undone in memory
}

// erUnsupportedPS is ER_UNSUPPORTED_PS.
const erUnsupportedPS = 1295

// accountNote is the account statement a session is running, as parsed.
type accountNote struct {
	st   ast.Statement
	text string
	// super: under read_only, the session held SUPER when the statement
	// was parsed. Persist runs with go-mysql-server's account lock held,
	// so it cannot look the privilege up itself.
	super bool
}

// newAccountNote records account statement st of the session in ctx.
func (e *Engine) newAccountNote(ctx *sql.Context, st ast.Statement, text string) *accountNote {
	n := &accountNote{st: st, text: statementOnly(text)}
	if e.ReadOnly.Load() || e.SuperReadOnly.Load() {
		n.super = e.hasSuper(ctx)
	}
	return n
}

// changeAccounts runs edit on go-mysql-server's accounts for an account
// statement Lockstep answers itself (st as parsed, query its text) and
// commits the result like every account change. read_only is checked and
// the statement noted before the account lock is taken, since both read
// the accounts.
func (e *Engine) changeAccounts(ctx *sql.Context, st ast.Statement, query string, edit func(ed *mysql_db.Editor) error) error {
	if err := e.writable(ctx); err != nil {
		return err
	}
	s := sessionOf(ctx)
	var note *accountNote
	if s != nil {
		note = e.newAccountNote(ctx, st, query)
	}
	db := e.GMS.Analyzer.Catalog.MySQLDb
	ed := db.Editor()
	defer ed.Close()
	if err := edit(ed); err != nil {
		return err
	}
	if s != nil {
		s.account = note
	} else {
		ctx = ctx.WithQuery(statementOnly(query))
	}
	return db.Persist(ctx, ed)
}

// statementOnly is query without surrounding spaces and semicolons.
func statementOnly(query string) string {
	return strings.TrimRight(strings.TrimSpace(query), "; \t\r\n")
}

// requireCreateUser refuses a client without the global CREATE USER
// privilege (1227); replicated statements are not checked.
func (e *Engine) requireCreateUser(ctx *sql.Context) error {
	if s := sessionOf(ctx); s != nil && s.replGTID != nil {
		return nil
	}
	if !e.GMS.Analyzer.Catalog.MySQLDb.UserActivePrivilegeSet(ctx).Has(sql.PrivilegeType_CreateUser) {
		return errNeedCreateUser
	}
	return nil
}

var errNeedCreateUser = mysql.NewSQLError(erSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the CREATE USER privilege(s) for this operation")

// accountKey is the account a statement names ('%' when no host is given).
func accountKey(a ast.AccountName) mysql_db.UserPrimaryKey {
	host := a.Host
	if a.AnyHost || host == "" {
		host = "%"
	}
	return mysql_db.UserPrimaryKey{Host: host, User: a.Name}
}

// writable is Engine.writable for an account change being persisted, from
// what was known when its statement was parsed: read_only may have been
// turned on since.
func (a *accountLog) writable(ctx *sql.Context, n *accountNote) error {
	e := a.e
	if !e.ReadOnly.Load() && !e.SuperReadOnly.Load() {
		return nil
	}
	s := sessionOf(ctx)
	switch {
	case s == nil || s.replGTID != nil:
		return nil // Lockstep's own change, or a replicated one
	case e.SuperReadOnly.Load():
		return errReadOnly("--super-read-only")
	case n == nil || !n.super:
		return errReadOnly("--read-only")
	}
	return nil
}

// isAccountStatement reports whether st changes accounts or grants.
func isAccountStatement(st ast.Statement) bool {
	switch n := st.(type) {
	case *ast.CreateUser, *ast.DropUser, *ast.RenameUser, *ast.CreateRole, *ast.DropRole,
		*ast.GrantPrivilege, *ast.RevokePrivilege, *ast.GrantRole, *ast.RevokeRole,
		*ast.GrantProxy, *ast.RevokeProxy:
		return true
	case *ast.DDL:
		return n.Action == ast.AlterStr && n.Authentication != nil
	}
	return false
}

// LoadAccounts installs the account log as go-mysql-server's persister
// and loads the accounts last committed. A store in which no account
// change was ever committed takes those legacy returns (nil: keep
// go-mysql-server's passwordless root@localhost); fromStore reports which.
func (e *Engine) LoadAccounts(legacy func() ([]byte, error)) (fromStore bool, err error) {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	e.accounts = &accountLog{e: e}
	db.SetPersister(e.accounts)
	data, fromStore, err := e.store.Accounts()
	if err != nil {
		return false, err
	}
	if !fromStore {
		if data, err = legacy(); err != nil {
			return false, err
		}
	}
	ed := db.Editor()
	defer ed.Close()
	ctx := sql.NewEmptyContext()
	if data != nil {
		if err := db.OverwriteUsersAndGrantData(ctx, ed, data); err != nil {
			return fromStore, fmt.Errorf("the saved accounts cannot be read: %w", err)
		}
	}
	// What is in memory now is the committed state a failed change
	// returns to.
	e.accounts.capture = true
	return fromStore, db.Persist(ctx, ed)
}

// Persist commits data, the whole account set after a statement changed it.
func (a *accountLog) Persist(ctx *sql.Context, data []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.capture {
		a.capture = false
		a.committed = append([]byte(nil), data...)
		return nil
	}
	if a.restoring {
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "an account change that failed is being undone; try again")
	}
	if bytes.Equal(a.committed, data) {
		return nil
	}
	var n *accountNote
	if s := sessionOf(ctx); s != nil {
		n, s.account = s.account, nil
	}
	err := a.writable(ctx, n)
	var stmt string
	if err == nil {
		stmt, err = a.statement(ctx, n, data)
	}
	if err == nil {
		c := &storage.CatalogChange{Op: "set_accounts", Accounts: append([]byte(nil), data...)}
		err = a.e.commitCatalog(ctx, "", stmt, c, nil)
	}
	if err != nil {
		a.undo()
		return err
	}
	a.committed = append([]byte(nil), data...)
	return nil
}

// WatchAccounts makes the accounts in memory follow the store's: on a
// cluster member, account changes made on other members reach this one's
// store when their entries are applied, and storage calls
// AccountsChanged. The reload waits for go-mysql-server's lock (an
// account statement of this member may hold it while its own change
// commits, so the applier must not wait for it), then puts the store's
// set in memory unless it already is. Until stop is closed.
func (e *Engine) WatchAccounts(stop <-chan struct{}) {
	changed := make(chan struct{}, 1)
	e.store.AccountsChanged = func() {
		select {
		case changed <- struct{}{}:
		default: // a reload is due already; it reads the latest set
		}
	}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-changed:
				e.accounts.reload()
			}
		}
	}()
}

// reload puts the store's account set in memory if it differs from the
// committed one (WatchAccounts).
func (a *accountLog) reload() {
	db := a.e.GMS.Analyzer.Catalog.MySQLDb
	ed := db.Editor()
	defer ed.Close()
	data, ok, err := a.e.store.Accounts()
	if err != nil || !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if bytes.Equal(data, a.committed) {
		return
	}
	if err := db.OverwriteUsersAndGrantData(sql.NewEmptyContext(), ed, data); err == nil {
		a.committed = data
	}
}

// logUnchanged commits stmt, an account statement that changes nothing
// Lockstep keeps (SET DEFAULT ROLE), so that replicas get it.
func (a *accountLog) logUnchanged(ctx *sql.Context, stmt string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.restoring {
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "an account change that failed is being undone; try again")
	}
	c := &storage.CatalogChange{Op: "set_accounts", Accounts: a.committed}
	return a.e.commitCatalog(ctx, "", stmt, c, nil)
}

// undo puts the committed accounts back in memory once the statement that
// failed has released go-mysql-server's lock (its editor is still open).
func (a *accountLog) undo() {
	a.restoring = true
	good := a.committed
	db := a.e.GMS.Analyzer.Catalog.MySQLDb
	go func() {
		ed := db.Editor()
		_ = db.OverwriteUsersAndGrantData(sql.NewEmptyContext(), ed, good)
		ed.Close()
		a.mu.Lock()
		a.restoring = false
		a.mu.Unlock()
	}()
}

// statement returns the text the binlog gets for the account statement
// that produced data.
func (a *accountLog) statement(ctx *sql.Context, n *accountNote, data []byte) (string, error) {
	if sessionOf(ctx) == nil {
		// A change Lockstep makes itself: the caller's statement, which
		// carries no password.
		if q := ctx.Query(); q != "" {
			return q, nil
		}
		return "FLUSH PRIVILEGES", nil
	}
	if n == nil {
		// Run without being parsed now: a prepared statement's execution.
		return "", mysql.NewSQLError(erUnsupportedPS, "HY000", "This command is not supported in the prepared statement protocol yet")
	}
	if !carriesPassword(n.st) {
		return n.text, nil
	}
	after := mysql_db.CreateEmptyMySQLDb()
	if err := after.LoadData(ctx, data); err != nil {
		return "", err
	}
	rd := after.Reader()
	defer rd.Close()
	account := func(a ast.AccountName) (string, string) {
		k := accountKey(a)
		u, ok := rd.GetUser(k)
		if !ok {
			return accountSQL(k.User, k.Host), ""
		}
		return accountSQL(k.User, k.Host), identifiedAs(u)
	}
	var b strings.Builder
	switch st := n.st.(type) {
	case *ast.CreateUser:
		b.WriteString("CREATE USER ")
		if st.IfNotExists {
			b.WriteString("IF NOT EXISTS ")
		}
		for i, u := range st.Users {
			if i > 0 {
				b.WriteString(", ")
			}
			name, auth := account(u.AccountName)
			b.WriteString(name)
			if u.Auth1 != nil && auth != "" {
				b.WriteString(auth)
			}
		}
		if st.TLSOptions != nil {
			b.WriteString(requireSQL(st.TLSOptions))
		}
	case *ast.DDL: // ALTER USER
		b.WriteString("ALTER USER ")
		if st.IfExists {
			b.WriteString("IF EXISTS ")
		}
		name, auth := account(st.User)
		b.WriteString(name)
		b.WriteString(auth)
	}
	return b.String(), nil
}

// carriesPassword reports whether an account statement names a cleartext
// password, which the binlog must not get.
func carriesPassword(st ast.Statement) bool {
	switch n := st.(type) {
	case *ast.CreateUser:
		for _, u := range n.Users {
			if u.Auth1 != nil && u.Auth1.Password != "" {
				return true
			}
		}
	case *ast.DDL:
		return n.Authentication != nil && n.Authentication.Password != ""
	}
	return false
}

// identifiedAs is an account's authentication as MySQL writes it in the
// binlog.
func identifiedAs(u *mysql_db.User) string {
	if u.AuthString == "" {
		return fmt.Sprintf(" IDENTIFIED WITH %s", u.Plugin)
	}
	for i := 0; i < len(u.AuthString); i++ {
		if c := u.AuthString[i]; c < 0x20 || c > 0x7e {
			// A caching_sha2_password salt holds any byte: MySQL writes
			// such a hash in hex.
			return fmt.Sprintf(" IDENTIFIED WITH %s AS 0x%X", u.Plugin, u.AuthString)
		}
	}
	return fmt.Sprintf(" IDENTIFIED WITH %s AS %s", u.Plugin, stringLiteral(u.AuthString))
}

func accountSQL(name, host string) string {
	return stringLiteral(name) + "@" + stringLiteral(host)
}

// stringLiteral quotes s as a SQL string that reads back as s whatever
// bytes it holds (the salt of a caching_sha2_password hash may hold any
// byte), read as the binlog's Query events are, without
// NO_BACKSLASH_ESCAPES.
func stringLiteral(s string) string {
	return "'" + literalEscaper.Replace(s) + "'"
}

var literalEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)

func requireSQL(t *ast.TLSOptions) string {
	switch {
	case t.SSL:
		return " REQUIRE SSL"
	case t.X509:
		return " REQUIRE X509"
	}
	var parts []string
	if t.Cipher != "" {
		parts = append(parts, "CIPHER "+stringLiteral(t.Cipher))
	}
	if t.Issuer != "" {
		parts = append(parts, "ISSUER "+stringLiteral(t.Issuer))
	}
	if t.Subject != "" {
		parts = append(parts, "SUBJECT "+stringLiteral(t.Subject))
	}
	if len(parts) == 0 {
		return ""
	}
	return " REQUIRE " + strings.Join(parts, " AND ")
}
