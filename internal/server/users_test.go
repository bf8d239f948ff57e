package server

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// capture is a persister that keeps what it is given.
type capture struct{ data []byte }

func (c *capture) Persist(_ *sql.Context, data []byte) error { c.data = data; return nil }

// legacyAccountFile returns the bytes an earlier version wrote to
// mysql.db for one account old@'%'.
func legacyAccountFile(t *testing.T) []byte {
	t.Helper()
	db := mysql_db.CreateEmptyMySQLDb()
	c := &capture{}
	db.SetPersister(c)
	ed := db.Editor()
	ed.PutUser(&mysql_db.User{User: "old", Host: "%", Plugin: "mysql_native_password",
		AuthString: "*D0F0FF97D55500939E8A3C1C66AB30D5F3D4ACCB", PrivilegeSet: mysql_db.NewPrivilegeSet()})
	if err := db.Persist(sql.NewEmptyContext(), ed); err != nil {
		t.Fatal(err)
	}
	ed.Close()
	var b bytes.Buffer
	b.WriteString(legacyAccountsMagic)
	_ = binary.Write(&b, binary.BigEndian, crc32.Checksum(c.data, accountsCRC))
	b.Write(c.data)
	return b.Bytes()
}

// openTestServer opens the storage and SQL layers of a server on fs, with
// its data directory (for mysql.db) at dir.
func openTestServer(t *testing.T, fs vfs.FS, dir string, reset bool) *Server {
	t.Helper()
	cfg := &commit.Config{ServerID: 1, ServerUUID: binlog.UUID{9}}
	cfg.SyncBinlog.Store(1)
	cfg.FlushLogAtTrxCommit.Store(1)
	cfg.MaxBinlogSize.Store(1 << 30)
	p, st, _, _, err := commit.Open(commit.OpenOptions{FS: fs, Dir: "/data", Collator: sqlengine.Collator{}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); st.Close() })
	return &Server{
		cfg:   Config{DataDir: dir, ResetAccounts: reset},
		store: st, pipe: p,
		sql: sqlengine.New(st, p, lock.New()),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func hasUser(s *Server, name string) bool {
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	return len(rd.GetUsersByUsername(name)) > 0
}

// TestLegacyAccountFile: a data directory of an earlier version, whose
// accounts are in mysql.db, starts with them; the first account change
// moves them into the store, and the next start removes the file. A
// missing or damaged file is refused unless a reset is asked for.
func TestLegacyAccountFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mysql.db")
	legacy := legacyAccountFile(t)
	fs := vfs.NewMem()

	s := openTestServer(t, fs, dir, false)
	if err := s.store.SetMeta(legacyAccountsMeta, []byte("1")); err != nil {
		t.Fatal(err)
	}
	// Missing, then damaged: refused.
	if err := s.loadUsers(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing mysql.db: %v", err)
	}
	damaged := append([]byte(nil), legacy...)
	damaged[len(damaged)/2] ^= 1
	if err := os.WriteFile(file, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.loadUsers(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged mysql.db: %v", err)
	}

	// Intact: its accounts are loaded, and the file stays until they are
	// in the store.
	if err := os.WriteFile(file, legacy, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.loadUsers(); err != nil {
		t.Fatal(err)
	}
	if !hasUser(s, "old") || hasUser(s, "root") {
		t.Fatal("the legacy accounts were not loaded in place of the new server's root")
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("mysql.db removed before the accounts were in the store: %v", err)
	}
	// An account change commits the whole set to the store.
	if handled, err := s.sql.AccountStatement(sql.NewEmptyContext(), "GRANT BINLOG_ADMIN ON *.* TO old@'%'", func([]string) bool { return true }); !handled || err != nil {
		t.Fatalf("GRANT: %v %v", handled, err)
	}
	s2 := &Server{cfg: s.cfg, store: s.store, pipe: s.pipe, sql: sqlengine.New(s.store, s.pipe, lock.New()), log: s.log}
	if err := s2.loadUsers(); err != nil {
		t.Fatal(err)
	}
	if !hasUser(s2, "old") {
		t.Fatal("the accounts in the store lack old@%")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("mysql.db still there once the accounts are in the store: %v", err)
	}

	// A reset, asked for, gives a passwordless root in place of a lost file.
	fs2 := vfs.NewMem()
	dir2 := t.TempDir()
	r := openTestServer(t, fs2, dir2, true)
	if err := r.store.SetMeta(legacyAccountsMeta, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := r.loadUsers(); err != nil {
		t.Fatal(err)
	}
	if !hasUser(r, "root") {
		t.Fatal("no root after --lockstep-reset-accounts")
	}
}
