package server

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
)

// userStore keeps accounts and grants (GMS's mysql database) in
// <datadir>/mysql.db, replaced atomically on every change.
type userStore struct{ path string }

func (u userStore) Persist(_ *sql.Context, data []byte) error {
	return atomicfile.Write(vfs.Default, u.path, data)
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
