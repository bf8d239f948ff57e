package sqlengine

import (
	"context"
	"errors"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// MySQL error numbers not named in vitess.
const (
	erErrorOnWrite         = 1026 // ER_ERROR_ON_WRITE
	erSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	erTableDefChanged      = 1412 // ER_TABLE_DEF_CHANGED
)

func errNotSupported(what string) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s'", what)
}

// mysqlError maps errors from the lock manager, transactions and the commit
// pipeline to MySQL errors; others pass through.
// erCantUpdateWithReadLock is ER_CANT_UPDATE_WITH_READLOCK.
const erCantUpdateWithReadLock = 1223

func mysqlError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lock.ErrLockWaitTimeout):
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, lock.ErrDeadlock):
		return mysql.NewSQLError(mysql.ERLockDeadlock, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	case errors.Is(err, txn.ErrNoSavepoint):
		return mysql.NewSQLError(mysql.ERSPDoesNotExist, "42000", "%s", err.Error())
	case errors.Is(err, context.Canceled):
		return mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "Query execution was interrupted")
	case errors.Is(err, commit.ErrNoSpace):
		return mysql.NewSQLError(erErrorOnWrite, "HY000", "Error writing file 'binlog' (errno: 28 - No space left on device): %s", err.Error())
	case errors.Is(err, commit.ErrReadLocked):
		return mysql.NewSQLError(erCantUpdateWithReadLock, "HY000", "Can't execute the query because you have a conflicting read lock")
	case errors.Is(err, commit.ErrLockWaitTimeout):
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, commit.ErrStopped):
		return mysql.NewSQLError(erErrorOnWrite, "HY000", "Error writing the binary log: %s", err.Error())
	}
	return err
}
