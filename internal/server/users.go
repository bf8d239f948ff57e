package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// userStore keeps accounts and grants (GMS's mysql database) in
// <datadir>/mysql.db, replaced atomically on every change.
//
// The file starts with a magic string and a CRC-32C of the rest, so damage
// is found at start instead of being read as another set of accounts (a
// file without the magic, written by an earlier version, is read as it
// is). Once the file has been written, the store records so (meta
// "accounts"): a data directory whose account store has gone missing
// refuses to start, since starting would give a passwordless root and
// none of the accounts and grants it had, unless --lockstep-reset-accounts
// asks for exactly that.
type userStore struct {
	path     string
	store    *storage.Engine
	recorded atomic.Bool // the store knows the file exists
}

const (
	accountsMeta  = "accounts"
	accountsMagic = "LKACCT1\n"
)

var accountsCRC = crc32.MakeTable(crc32.Castagnoli)

func (u *userStore) Persist(_ *sql.Context, data []byte) error {
	var b bytes.Buffer
	b.WriteString(accountsMagic)
	_ = binary.Write(&b, binary.BigEndian, crc32.Checksum(data, accountsCRC))
	b.Write(data)
	if err := atomicfile.Write(vfs.Default, u.path, b.Bytes()); err != nil {
		return err
	}
	return u.record()
}

// record notes in the store that the account file exists.
func (u *userStore) record() error {
	if u.recorded.Load() {
		return nil
	}
	if err := u.store.SetMeta(accountsMeta, []byte("1")); err != nil {
		return err
	}
	u.recorded.Store(true)
	return nil
}

// decodeAccounts checks the file's checksum and returns GMS's data.
func decodeAccounts(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(accountsMagic))
	if !ok {
		return b, nil // written before the checksum existed
	}
	if len(rest) < 4 {
		return nil, errors.New("truncated")
	}
	data := rest[4:]
	if crc32.Checksum(data, accountsCRC) != binary.BigEndian.Uint32(rest) {
		return nil, errors.New("checksum mismatch")
	}
	return data, nil
}

// loadUsers installs the persister and loads saved accounts, if any.
func (s *Server) loadUsers() error {
	u := &userStore{path: filepath.Join(s.cfg.DataDir, "mysql.db"), store: s.store}
	_, known, err := s.store.Meta(accountsMeta)
	if err != nil {
		return err
	}
	u.recorded.Store(known)
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	db.SetPersister(u)
	raw, err := os.ReadFile(u.path)
	if os.IsNotExist(err) {
		if !known {
			return nil
		}
		if !s.cfg.ResetAccounts {
			return fmt.Errorf("refusing to start: the account store %s is missing from a data directory that had one; starting would give a passwordless root and lose every account and grant. Restore it from a backup, or start once with --lockstep-reset-accounts to recreate root@localhost without a password", u.path)
		}
		s.log.Warn("the account store is missing: recreated with root@localhost and no password (--lockstep-reset-accounts); every other account and grant is gone", "file", u.path)
		db.AddRootAccount()
		ed := db.Editor()
		defer ed.Close()
		return db.Persist(sql.NewEmptyContext(), ed)
	}
	if err != nil {
		return err
	}
	data, err := decodeAccounts(raw)
	if err != nil {
		return fmt.Errorf("refusing to start: the account store %s is damaged (%v). Restore it from a backup, or remove it and start once with --lockstep-reset-accounts to recreate root@localhost without a password", u.path, err)
	}
	// The saved accounts replace the passwordless root a new server
	// starts with, so a dropped or changed root stays as it was left.
	ed := db.Editor()
	err = db.OverwriteUsersAndGrantData(sql.NewEmptyContext(), ed, data)
	ed.Close()
	if err != nil {
		return fmt.Errorf("refusing to start: loading accounts from %s: %w", u.path, err)
	}
	return u.record()
}

// passwordlessRemote lists the accounts that could log in without a
// password from another machine: no password, not locked, not a role, and
// a host other than this machine's own names.
func passwordlessRemote(users []*mysql_db.User) []string {
	var out []string
	for _, u := range users {
		if u.IsRole || u.Locked || u.AuthString != "" {
			continue
		}
		switch strings.ToLower(u.Host) {
		case "localhost", "127.0.0.1", "::1":
			continue
		}
		out = append(out, fmt.Sprintf("'%s'@'%s'", u.User, u.Host))
	}
	sort.Strings(out)
	return out
}

// loopbackOnly reports whether a bind address accepts connections from
// this machine only.
func loopbackOnly(addr string) bool {
	if strings.EqualFold(addr, "localhost") {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// checkExposure refuses to listen beyond loopback while an account can log
// in from elsewhere without a password.
func (s *Server) checkExposure() error {
	if loopbackOnly(s.cfg.BindAddress) {
		return nil
	}
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	var users []*mysql_db.User
	rd.VisitUsers(func(u *mysql_db.User) { users = append(users, u) })
	rd.Close()
	if open := passwordlessRemote(users); len(open) > 0 {
		return fmt.Errorf("refusing to start: --bind-address %s accepts connections from other machines, and %s can log in from them without a password. Start once on 127.0.0.1 and give them passwords (ALTER USER ... IDENTIFIED BY) or drop them", s.cfg.BindAddress, strings.Join(open, ", "))
	}
	return nil
}
