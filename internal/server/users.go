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

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

// Accounts and grants are committed through the binlog into the store
// (sqlengine's accountlog.go). Earlier versions kept them in
// <datadir>/mysql.db instead, replaced atomically on every change, with a
// magic string and a CRC-32C of the rest, and recorded in the store (meta
// "accounts") that the file existed. Such a data directory still starts
// with the accounts of its file, and a missing or damaged file still
// refuses to start (starting would give a passwordless root and none of
// the accounts and grants it had) unless --lockstep-reset-accounts asks
// for exactly that. The first account change moves the accounts into the
// store; the next start removes the file.
const (
	legacyAccountsMeta  = "accounts"
	legacyAccountsMagic = "LKACCT1\n"
)

var accountsCRC = crc32.MakeTable(crc32.Castagnoli)

// decodeAccounts checks a legacy account file's checksum and returns
// go-mysql-server's data.
func decodeAccounts(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(legacyAccountsMagic))
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

// loadUsers loads the committed accounts, or a legacy account file's.
func (s *Server) loadUsers() error {
	path := filepath.Join(s.cfg.DataDir, "mysql.db")
	fromStore, err := s.sql.LoadAccounts(func() ([]byte, error) { return s.legacyAccounts(path) })
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if fromStore {
		if err := os.Remove(path); err == nil {
			s.log.Info("removed the account file of an earlier version: the accounts are in the store", "file", path)
		} else if !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// legacyAccounts reads a legacy account file (nil: none, keep the new
// server's root).
func (s *Server) legacyAccounts(path string) ([]byte, error) {
	v, _, err := s.store.Meta(legacyAccountsMeta)
	if err != nil {
		return nil, err
	}
	known := string(v) == "1"
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		if !known {
			return nil, nil
		}
		if !s.cfg.ResetAccounts {
			return nil, fmt.Errorf("the account store %s is missing from a data directory that had one; starting would give a passwordless root and lose every account and grant. Restore it from a backup, or start once with --lockstep-reset-accounts to recreate root@localhost without a password", path)
		}
		s.log.Warn("the account store is missing: recreated with root@localhost and no password (--lockstep-reset-accounts); every other account and grant is gone", "file", path)
		return nil, s.store.SetMeta(legacyAccountsMeta, []byte("0"))
	}
	if err != nil {
		return nil, err
	}
	data, err := decodeAccounts(raw)
	if err != nil {
		return nil, fmt.Errorf("the account store %s is damaged (%v). Restore it from a backup, or remove it and start once with --lockstep-reset-accounts to recreate root@localhost without a password", path, err)
	}
	return data, nil
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

// passwordless lists the accounts that can log in without a password
// (from anywhere), for the start-up message.
func (s *Server) passwordless() []string {
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	var out []string
	rd.VisitUsers(func(u *mysql_db.User) {
		if !u.IsRole && !u.Locked && u.AuthString == "" {
			out = append(out, fmt.Sprintf("'%s'@'%s'", u.User, u.Host))
		}
	})
	sort.Strings(out)
	return out
}
