package server

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dolthub/go-mysql-server/sql"
)

// userStore keeps accounts and grants (GMS's mysql database) in
// <datadir>/mysql.db, replaced atomically on every change.
type userStore struct{ path string }

func (u userStore) Persist(_ *sql.Context, data []byte) error {
	tmp := u.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, u.path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(u.path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// loadUsers installs the persister and loads saved accounts, if any.
func (s *Server) loadUsers() error {
	u := userStore{path: filepath.Join(s.cfg.DataDir, "mysql.db")}
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	db.SetPersister(u)
	data, err := os.ReadFile(u.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := db.LoadData(sql.NewEmptyContext(), data); err != nil {
		return fmt.Errorf("loading accounts from %s: %w", u.path, err)
	}
	// root@localhost without a password is always there.
	db.AddRootAccount()
	return nil
}
