package sqlengine

import (
	"context"
	"testing"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// TestRewriteAccountSyntax: the account forms other servers write in their
// binlogs and dumps become the MySQL 8 forms the parser has; anything
// else is left as it is.
func TestRewriteAccountSyntax(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// MariaDB and MySQL 5.7.
		{"CREATE USER a@'%' IDENTIFIED BY PASSWORD '*77B4A70CEFD76DB9415F36D291E74C110D2738E0'",
			"CREATE USER a@'%' IDENTIFIED WITH mysql_native_password AS '*77B4A70CEFD76DB9415F36D291E74C110D2738E0'"},
		{"GRANT SELECT ON *.* TO a IDENTIFIED BY PASSWORD '*AB'", "GRANT SELECT ON *.* TO a IDENTIFIED WITH mysql_native_password AS '*AB'"},
		{"CREATE USER b@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('pw4')",
			"CREATE USER b@'%' IDENTIFIED WITH mysql_native_password BY 'pw4'"},
		{"CREATE USER b IDENTIFIED VIA mysql_native_password USING '*AB'", "CREATE USER b IDENTIFIED WITH mysql_native_password AS '*AB'"},
		// MySQL 8's hex hashes.
		{"CREATE USER c IDENTIFIED WITH caching_sha2_password AS 0x41000A27", `CREATE USER c IDENTIFIED WITH caching_sha2_password AS 'A\0\n\''`},
		{"ALTER USER c IDENTIFIED WITH caching_sha2_password AS X'4142'", "ALTER USER c IDENTIFIED WITH caching_sha2_password AS 'AB'"},
		// SET PASSWORD from a client: cleartext.
		{"SET PASSWORD FOR 'a'@'%' = 'pw'", "ALTER USER 'a'@'%' IDENTIFIED BY 'pw'"},
		{"SET PASSWORD FOR a@'%' = PASSWORD('pw'); SELECT 1", "ALTER USER a@'%' IDENTIFIED BY 'pw'; SELECT 1"},
		// Left alone: quotes and comments respected, other statements.
		{"CREATE USER d IDENTIFIED BY 'PASSWORD'", "CREATE USER d IDENTIFIED BY 'PASSWORD'"},
		{"CREATE USER d /* IDENTIFIED BY PASSWORD 'x' */ IDENTIFIED BY 'y'", "CREATE USER d /* IDENTIFIED BY PASSWORD 'x' */ IDENTIFIED BY 'y'"},
		{"SELECT 'IDENTIFIED BY PASSWORD ''x'''", "SELECT 'IDENTIFIED BY PASSWORD ''x'''"},
		{"SET PASSWORD = 'pw'", "SET PASSWORD = 'pw'"}, // no session to name the account
		{"SET PASSWORD FOR = 'x'", "SET PASSWORD FOR = 'x'"},
		{"CREATE USER e IDENTIFIED BY PASSWORD 'unterminated", "CREATE USER e IDENTIFIED BY PASSWORD 'unterminated"},
	} {
		if got := rewriteAccountSyntax(context.Background(), c.in); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestSetPasswordFromASource: a replicated SET PASSWORD carries a hash
// (MariaDB and MySQL 5.7 write it so), never cleartext.
func TestSetPasswordFromASource(t *testing.T) {
	h := newHarness(t)
	loadAccounts(t, h)
	c := h.conn()
	c.exec("CREATE USER a@'%' IDENTIFIED BY 'old'")
	s := c.ctx.Session.(*Session)
	s.replGTID = nil
	got := rewriteAccountSyntax(c.ctx, "SET PASSWORD FOR 'a'@'%'='*77B4A70CEFD76DB9415F36D291E74C110D2738E0'")
	if got != "ALTER USER 'a'@'%' IDENTIFIED BY '*77B4A70CEFD76DB9415F36D291E74C110D2738E0'" {
		t.Fatalf("from a client: %s", got)
	}
	s.replGTID = &binlog.GTIDInfo{GNO: 1}
	got = rewriteAccountSyntax(c.ctx, "SET PASSWORD FOR 'a'@'%'='*77B4A70CEFD76DB9415F36D291E74C110D2738E0'")
	if got != "ALTER USER 'a'@'%' IDENTIFIED WITH mysql_native_password AS '*77B4A70CEFD76DB9415F36D291E74C110D2738E0'" {
		t.Fatalf("from a source: %s", got)
	}
	// SET PASSWORD without FOR names the session's own account.
	s.replGTID = nil
	if got := rewriteAccountSyntax(c.ctx, "SET PASSWORD = 'new'"); got != "ALTER USER 'root'@'localhost' IDENTIFIED BY 'new'" {
		t.Fatalf("own account: %s", got)
	}
}

func TestRedactSecrets(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"CREATE USER u@'%' IDENTIFIED BY 'pw'", "CREATE USER u@'%' IDENTIFIED BY '<secret>'"},
		{"ALTER USER u IDENTIFIED WITH caching_sha2_password BY \"p'w\" WITH MAX_USER_CONNECTIONS 0", "ALTER USER u IDENTIFIED WITH caching_sha2_password BY '<secret>' WITH MAX_USER_CONNECTIONS 0"},
		{"CREATE USER u IDENTIFIED WITH mysql_native_password AS '*ABC'", "CREATE USER u IDENTIFIED WITH mysql_native_password AS '*ABC'"},
		{"SET PASSWORD FOR u@'%' = 'pw'", "SET PASSWORD FOR u@'%' = '<secret>'"},
		{"SET PASSWORD = PASSWORD('pw')", "SET PASSWORD = PASSWORD('<secret>')"},
		{"CHANGE REPLICATION SOURCE TO SOURCE_HOST='h', SOURCE_USER='r', SOURCE_PASSWORD='pw'", "CHANGE REPLICATION SOURCE TO SOURCE_HOST='h', SOURCE_USER='r', SOURCE_PASSWORD='<secret>'"},
		{"CHANGE MASTER TO MASTER_PASSWORD = 'pw', MASTER_PORT=3306", "CHANGE MASTER TO MASTER_PASSWORD = '<secret>', MASTER_PORT=3306"},
		{"START REPLICA USER='r' PASSWORD='pw'", "START REPLICA USER='r' PASSWORD='<secret>'"},
		{"CREATE USER a IDENTIFIED BY 'x', b IDENTIFIED BY 'y';", "CREATE USER a IDENTIFIED BY '<secret>', b IDENTIFIED BY '<secret>';"},
		{"CREATE USER u IDENTIFIED BY 'unterminated", "CREATE USER u IDENTIFIED BY '<secret>'"},
		{"SELECT 'password' = 'x'", "SELECT 'password' = 'x'"},
	} {
		if got := RedactSecrets(c.in); got != c.want {
			t.Errorf("RedactSecrets(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestContainsFold(t *testing.T) {
	for _, c := range []struct {
		s, sub string
		want   bool
	}{
		{"SELECT d + INTERVAL 1 DAY", "interval", true},
		{"select d + interval 1 day", "interval", true},
		{"SELECT d + InTeRvAl 1 DAY", "interval", true},
		{"SELECT 'intervall'", "interval", true},
		{"SELECT inter val", "interval", false},
		{"SELECT @x", "@x", true},
		{"interva", "interval", false},
		{"", "time", false},
		{"x", "", true},
	} {
		if got := containsFold(c.s, c.sub); got != c.want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", c.s, c.sub, got, c.want)
		}
	}
}
