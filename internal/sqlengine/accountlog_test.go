package sqlengine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

// binlogBytes returns every binlog file of the harness's data directory,
// concatenated.
func binlogBytes(t *testing.T, fs vfs.FS) []byte {
	t.Helper()
	names, err := fs.List("/data")
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, n := range names {
		if !strings.HasPrefix(n, "binlog.0") {
			continue
		}
		f, err := fs.Open("/data/" + n)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		all = append(all, b.Bytes()...)
	}
	if len(all) == 0 {
		t.Fatalf("no binlog file in /data: %v", names)
	}
	return all
}

func (h *harness) user(name, host string) *mysql_db.User {
	db := h.e.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	u, ok := rd.GetUser(mysql_db.UserPrimaryKey{Host: host, User: name})
	if !ok {
		return nil
	}
	return u
}

// connAs is a session of account user@host.
func (h *harness) connAs(user, host string) *conn {
	c := h.conn()
	c.ctx.Session.(*Session).BaseSession = sql.NewBaseSessionWithClientServer("test", sql.Client{User: user, Address: host}, c.ctx.Session.ID())
	return c
}

// dynamicGrant runs a GRANT of dynamic privileges as the server does
// (go-mysql-server refuses them).
func (c *conn) dynamicGrant(q string) {
	c.h.t.Helper()
	handled, err := c.h.e.DynamicGrant(c.ctx, q, func([]string) bool { return true })
	if !handled || err != nil {
		c.h.t.Fatalf("%s: handled %v, %v", q, handled, err)
	}
}

func loadAccounts(t *testing.T, h *harness) {
	t.Helper()
	if _, err := h.e.LoadAccounts(func() ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
}

// TestAccountChangesAreLogged: account statements commit through the
// binlog with hashes only, replay restores them, and a change refused
// under read_only leaves the accounts as they were.
func TestAccountChangesAreLogged(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	loadAccounts(t, h)
	c := h.conn()
	c.exec("CREATE USER app@'%' IDENTIFIED BY 'first-secret'")
	c.exec("CREATE USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'sha-secret'")
	c.exec("GRANT SELECT ON *.* TO app@'%'")
	c.dynamicGrant("GRANT CONNECTION_ADMIN ON *.* TO app@'%'")
	c.exec("ALTER USER app@'%' IDENTIFIED BY 'second-secret'")
	c.exec("CREATE ROLE reader")
	c.exec("DROP ROLE reader")

	log := binlogBytes(t, fs)
	for _, secret := range []string{"first-secret", "second-secret", "sha-secret"} {
		if bytes.Contains(log, []byte(secret)) {
			t.Errorf("the binlog holds the cleartext password %q", secret)
		}
	}
	app := h.user("app", "%")
	if app == nil || app.AuthString == "" {
		t.Fatalf("app@%%: %+v", app)
	}
	for _, want := range []string{
		"CREATE USER 'app'@'%' IDENTIFIED WITH mysql_native_password AS '*",
		"ALTER USER 'app'@'%' IDENTIFIED WITH mysql_native_password AS '" + app.AuthString + "'",
		"CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password AS 0x",
		"GRANT SELECT ON *.* TO app@'%'",
		"GRANT CONNECTION_ADMIN ON *.* TO app@'%'",
		"CREATE ROLE reader",
		"DROP ROLE reader",
	} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("the binlog lacks %q", want)
		}
	}

	// Nothing changed: nothing is committed.
	before := len(binlogBytes(t, fs))
	c.exec("FLUSH PRIVILEGES")
	c.exec("CREATE USER IF NOT EXISTS app@'%'")
	if after := len(binlogBytes(t, fs)); after != before {
		t.Errorf("statements that change no account wrote %d bytes to the binlog", after-before)
	}

	// Refused under read_only (root has SUPER, so super_read_only): the
	// account does not exist afterwards, in memory or in the log.
	h.e.SuperReadOnly.Store(true)
	if _, err := c.query("CREATE USER refused@'%' IDENTIFIED BY 'x'"); err == nil || !strings.Contains(err.Error(), "super-read-only") {
		t.Fatalf("CREATE USER under super_read_only: %v", err)
	}
	if _, err := h.e.DynamicGrant(c.ctx, "GRANT BINLOG_ADMIN ON *.* TO app@'%'", func([]string) bool { return true }); err == nil || !strings.Contains(err.Error(), "super-read-only") {
		t.Fatalf("GRANT of a dynamic privilege under super_read_only: %v", err)
	}
	h.e.SuperReadOnly.Store(false)
	if h.user("refused", "%") != nil {
		t.Fatal("an account refused under super_read_only exists")
	}
	hash := app.AuthString

	// The store is gone: replaying the binlog gives the same accounts.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := crashed.RemoveAll("/data/store"); err != nil {
		t.Fatal(err)
	}
	h.close()
	r := openHarness(t, crashed)
	loadAccounts(t, r)
	got := r.user("app", "%")
	if got == nil || got.AuthString != hash {
		t.Fatalf("after replay app@%%: %+v, want the hash %s", got, hash)
	}
	if !strings.Contains(r.conn().rows("SHOW GRANTS FOR app@'%'"), "CONNECTION_ADMIN") {
		t.Fatalf("after replay, grants of app: %s", r.conn().rows("SHOW GRANTS FOR app@'%'"))
	}
	if r.user("sha", "%") == nil || r.user("reader", "%") != nil {
		t.Fatal("after replay: sha@% missing or the dropped role back")
	}
}

// TestAccountChangeUnderReadOnlyNeedsSuper: under read_only (not super),
// an account without SUPER cannot change accounts, one with SUPER can.
func TestAccountChangeUnderReadOnlyNeedsSuper(t *testing.T) {
	h := newHarness(t)
	loadAccounts(t, h)
	c := h.conn()
	c.exec("CREATE USER admin@'localhost' IDENTIFIED BY 'pw'")
	c.exec("GRANT CREATE USER ON *.* TO admin@'localhost'")
	h.e.ReadOnly.Store(true)
	defer h.e.ReadOnly.Store(false)
	admin := h.connAs("admin", "localhost")
	if _, err := admin.query("CREATE USER x@'%'"); err == nil || !strings.Contains(err.Error(), "--read-only") {
		t.Fatalf("CREATE USER under read_only without SUPER: %v", err)
	}
	c.exec("CREATE USER y@'%'") // root holds SUPER
	if h.user("x", "%") != nil || h.user("y", "%") == nil {
		t.Fatal("read_only: x must not exist, y must")
	}
}
