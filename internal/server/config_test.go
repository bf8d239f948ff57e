package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return FromFlags(fs)
}

func TestConfigPrecedenceAndSpellings(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	os.WriteFile(cnf, []byte(`
# comments and other programs' sections are ignored
[client]
port = 1
[mysqld]
port = 3307
sync_binlog = 0
max-binlog-size = 64M
loose-innodb-buffer-pool-size = 1G
skip-name-resolve
binlog_transaction_dependency_tracking = commit_order
[lockstep]
binlog_parallel_flush = ON
lockstep_gomaxprocs = 8
lockstep_log_level = warn
`), 0o644)
	c, err := parse(t, "--defaults-file", cnf, "--sync_binlog=5", "--binlog-group-commit-sync-delay", "250", "--lockstep-log-level=debug")
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3307 || c.SyncBinlog != 5 || c.MaxBinlogSize != 64<<20 || c.SyncDelayMicros != 250 ||
		!c.ParallelFlush || c.DependencyTracking != commit.CommitOrder || c.GoMaxProcs != 8 || c.LogLevel != slog.LevelDebug {
		t.Fatalf("config %+v", c)
	}
	d := Defaults()
	if d.Port != 3306 || d.BindAddress != "127.0.0.1" || d.DataDir != "./lockstep-data" || d.SyncBinlog != 1 || d.DependencyTracking != commit.WriteSet || d.GoMaxProcs != 0 || d.LogLevel != slog.LevelInfo {
		t.Fatalf("defaults %+v", d)
	}
}

func TestConfigRejectsBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "70000"},
		{"--max-binlog-size", "12x"},
		{"--binlog-parallel-flush", "maybe"},
		{"--innodb-flush-log-at-trx-commit", "-1"},
		{"--datadir", ""},
		{"--lockstep-gomaxprocs", "-2"},
		{"--lockstep-log-level", "loud"},
	} {
		if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), strings.TrimLeft(args[0], "-")) {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, err := parse(t, "--defaults-file", "/nonexistent/my.cnf"); err == nil {
		t.Fatal("missing defaults file accepted")
	}
}

func TestPasswordlessRemoteAccounts(t *testing.T) {
	users := []*mysql_db.User{
		{User: "root", Host: "localhost"},
		{User: "app", Host: "%", AuthString: "*ABC"},
		{User: "open", Host: "%"},
		{User: "lan", Host: "10.0.0.%"},
		{User: "locked", Host: "%", Locked: true},
		{User: "role", Host: "%", IsRole: true},
		{User: "v6", Host: "::1"},
	}
	got := strings.Join(passwordlessRemote(users), ",")
	if got != "'lan'@'10.0.0.%','open'@'%'" {
		t.Fatalf("passwordless remote accounts: %s", got)
	}
	for addr, want := range map[string]bool{"127.0.0.1": true, "127.0.0.2": true, "::1": true, "localhost": true, "0.0.0.0": false, "::": false, "10.1.2.3": false, "db.example": false} {
		if loopbackOnly(addr) != want {
			t.Errorf("loopbackOnly(%q) = %v", addr, !want)
		}
	}
}

// FuzzDefaultsFile: any --defaults-file content is applied or refused with
// an error; it never panics.
func FuzzDefaultsFile(f *testing.F) {
	f.Add([]byte("[mysqld]\nport=3307\nsync_binlog=0\nloose-foo=1\n"))
	f.Add([]byte("[lockstep]\nread-only\nmax_allowed_packet=16M\n[client]\nuser=x\n"))
	f.Add([]byte("[mysqld]\nbinlog_transaction_dependency_tracking = WRITESET\nssl-ca=/x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Defaults()
		_ = c.applyFileBytes("fuzz.cnf", data)
	})
}

// The HTTP endpoint's default port follows the SQL port, so that two
// servers on different SQL ports do not collide on it.
func TestHTTPListenPort(t *testing.T) {
	for _, tc := range []struct {
		port, http, want int
	}{
		{3306, HTTPPortAuto, 8080},
		{3307, HTTPPortAuto, 8081},
		{64000, HTTPPortAuto, 0},
		{0, HTTPPortAuto, 0},
		{3307, 9000, 9000},
		{3307, 0, 0},
	} {
		c := Defaults()
		c.Port, c.HTTPPort = tc.port, tc.http
		if got := c.HTTPListenPort(); got != tc.want {
			t.Errorf("port %d, --http-port %d: %d, want %d", tc.port, tc.http, got, tc.want)
		}
	}
	c := Defaults()
	if err := c.applyFileBytes("my.cnf", []byte("[lockstep]\nhttp-port=auto\n")); err != nil || c.HTTPPort != HTTPPortAuto {
		t.Fatalf("http-port=auto: %d, %v", c.HTTPPort, err)
	}
}

// A cluster member has no commit groups: their settings are refused
// rather than ignored, and their defaults pass.
func TestGroupCommitOptionsOnMember(t *testing.T) {
	member := []string{"--wsrep-cluster-address", "gcomm://127.0.0.1:4567"}
	c, err := parse(t, member...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.groupCommitOnMember(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, opt := range []string{
		"--binlog-group-commit-sync-delay=100",
		"--binlog-group-commit-sync-no-delay-count=8",
		"--lockstep-binlog-group-commit-gather=OFF",
		"--binlog-parallel-flush=ON",
	} {
		c, err := parse(t, append(member, opt)...)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.SplitN(opt, "=", 2)[0], "--")
		if err := c.groupCommitOnMember(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s on a member: %v", opt, err)
		}
	}
}

// TestConfigFixedSettingsInFiles: a my.cnf may state the settings Lockstep
// always has (binlog_format = ROW, gtid_mode = ON, the utf8mb4 server
// character set...), and any other value of them is refused at start,
// never ignored.
func TestConfigFixedSettingsInFiles(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.cnf")
	os.WriteFile(ok, []byte(`
[mysqld]
binlog_format = ROW
binlog-row-image = full
gtid_mode = ON
enforce_gtid_consistency = ON
log_replica_updates
character-set-server = utf8mb4
collation-server = utf8mb4_0900_ai_ci
log-bin = mysql-bin
`), 0o644)
	if _, err := parse(t, "--defaults-file", ok); err != nil {
		t.Fatalf("the settings Lockstep has were refused: %v", err)
	}
	for _, line := range []string{
		"binlog_format = STATEMENT",
		"binlog-row-image = MINIMAL",
		"gtid_mode = OFF",
		"enforce-gtid-consistency = WARN",
		"log-slave-updates = OFF",
		"character-set-server = latin1",
		"collation-server = utf8mb4_general_ci",
	} {
		bad := filepath.Join(dir, "bad.cnf")
		os.WriteFile(bad, []byte("[mysqld]\n"+line+"\n"), 0o644)
		_, err := parse(t, "--defaults-file", bad)
		name := strings.TrimSpace(strings.SplitN(line, "=", 2)[0])
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%q: %v, want it refused by name", line, err)
		}
	}
}
