package server

import (
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// MySQL's backup lock: LOCK INSTANCE FOR BACKUP (BACKUP_ADMIN) holds
// other sessions' DDL and account changes back until UNLOCK INSTANCE or
// the session's end, while row changes go on (commit/readlock.go), so a
// logical backup reads tables whose definitions do not change under it.
// MariaDB's BACKUP STAGE, made for mariadb-backup's copy of InnoDB files,
// is refused (1235): CLONE LOCAL DATA DIRECTORY is Lockstep's physical
// backup, and FLUSH TABLES WITH READ LOCK holds commits.
var (
	lockInstance   = regexp.MustCompile(`(?is)^\s*lock\s+instance\s+for\s+backup\s*;?\s*$`)
	unlockInstance = regexp.MustCompile(`(?is)^\s*unlock\s+instance\s*;?\s*$`)
	backupStage    = regexp.MustCompile(`(?is)^\s*backup\s+stage\b`)
)

func (s *Server) backupLockStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if len(query) > 256 {
		return nil, false, nil
	}
	// Every statement passes by here: the first word rules out all but
	// these before any expression runs.
	if q := strings.TrimLeft(query, " \t\r\n\f\v"); !hasPrefixFold(q, "lock") && !hasPrefixFold(q, "unlock") && !hasPrefixFold(q, "backup") {
		return nil, false, nil
	}
	switch {
	case lockInstance.MatchString(query):
		if err := s.sql.Require(c, sqlengine.NeedBackupAdmin); err != nil {
			return nil, true, err
		}
		return s.sessionStatement(c, query, always, func(ctx *sql.Context) (bool, error) {
			return true, s.sql.LockInstanceForBackup(ctx)
		})
	case unlockInstance.MatchString(query):
		return s.sessionStatement(c, query, always, func(ctx *sql.Context) (bool, error) {
			s.sql.UnlockInstance(ctx)
			return true, nil
		})
	case backupStage.MatchString(query):
		return nil, true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'BACKUP STAGE' (MariaDB's; LOCK INSTANCE FOR BACKUP holds DDL back, FLUSH TABLES WITH READ LOCK holds commits, CLONE LOCAL DATA DIRECTORY copies the server)")
	}
	return nil, false, nil
}

func always(string) bool { return true }
