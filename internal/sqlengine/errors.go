package sqlengine

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// MySQL error numbers not named in vitess.
const (
	erErrorOnWrite         = 1026 // ER_ERROR_ON_WRITE
	erSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	erTableDefChanged      = 1412 // ER_TABLE_DEF_CHANGED
	erUnknownCommand       = 1047 // ER_UNKNOWN_COM_ERROR (Galera: node not ready)
	erErrorDuringCommit    = 1180 // ER_ERROR_DURING_COMMIT
	erTransCacheFull       = 1197 // ER_TRANS_CACHE_FULL
)

func errNotSupported(what string) error { return mysqlerr.NotSupported(what) }

// mysqlError maps errors from the lock manager, transactions and the commit
// pipeline to MySQL errors; others pass through.
// erCantUpdateWithReadLock is ER_CANT_UPDATE_WITH_READLOCK.
const erCantUpdateWithReadLock = 1223

// erLockNoWait is ER_LOCK_NOWAIT.
const erLockNoWait = 3572

func mysqlError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, row.ErrJSONDepth):
		return mysql.NewSQLError(3157, "22032", "The JSON document exceeds the maximum depth.") // ER_JSON_DOCUMENT_TOO_DEEP
	case errors.Is(err, lock.ErrLockWaitTimeout):
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, lock.ErrDeadlock):
		return mysql.NewSQLError(mysql.ERLockDeadlock, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	case errors.Is(err, txn.ErrLockNoWait):
		return mysql.NewSQLError(erLockNoWait, "HY000", "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set.")
	case errors.Is(err, txn.ErrNoSavepoint):
		return mysql.NewSQLError(mysql.ERSPDoesNotExist, "42000", "%s", err.Error())
	case errors.Is(err, context.Canceled):
		return mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "Query execution was interrupted")
	case errors.Is(err, commit.ErrWriteRefused):
		errno := syscall.ENOSPC
		for _, e := range []syscall.Errno{syscall.EROFS, syscall.EDQUOT} {
			if errors.Is(err, e) {
				errno = e
			}
		}
		return mysql.NewSQLError(erErrorOnWrite, "HY000", "Error writing file 'binlog' (errno: %d - %s): %s", int(errno), osErrorText(errno), err.Error())
	case errors.As(err, new(*storage.TriggerInWrongSchemaError)):
		return mysql.NewSQLError(erTrgInWrongSchema, "HY000", "Trigger in wrong schema")
	case errors.Is(err, commit.ErrReadLocked):
		return mysql.NewSQLError(erCantUpdateWithReadLock, "HY000", "Can't execute the query because you have a conflicting read lock")
	case errors.Is(err, commit.ErrLockWaitTimeout):
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, commit.ErrOutcomeUnknown):
		// Not refused: it may be there after a restart (MySQL aborts the
		// server here, and its clients see the connection lost).
		return mysql.NewSQLError(erErrorDuringCommit, "HY000", "Got error during COMMIT: the binary log failed under it, so the transaction may have been committed: %s", err.Error())
	case errors.Is(err, commit.ErrStopped):
		return mysql.NewSQLError(erErrorOnWrite, "HY000", "Error writing the binary log: %s", err.Error())
	case errors.Is(err, cluster.ErrConflict), errors.Is(err, cluster.ErrNotCommitted):
		// Galera's answer to a certification failure: drivers and ORMs
		// retry a deadlock. ErrNotCommitted is as definite: the
		// transaction did not commit and can run again.
		return mysql.NewSQLError(mysql.ERLockDeadlock, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrStopped):
		return mysql.NewSQLError(erUnknownCommand, "08S01", "WSREP has not yet prepared node for application use")
	case errors.Is(err, cluster.ErrOutcomeUnknown):
		return mysql.NewSQLError(erErrorDuringCommit, "HY000", "Got error during COMMIT: the cluster did not answer in time; the transaction may still commit")
	case errors.Is(err, txn.ErrNotInCluster):
		return errNotSupported(err.Error())
	case errors.Is(err, txn.ErrTrxTooLarge):
		return mysql.NewSQLError(erTransCacheFull, "HY000", "Multi-statement transaction required more than 'wsrep_max_ws_size' bytes of storage (%d on a cluster member); commit it in smaller transactions", txn.MaxClusterTrx)
	}
	return err
}

// osErrorText is errno's text as MySQL prints it (strerror's: "No space
// left on device", "Read-only file system").
func osErrorText(errno syscall.Errno) string {
	s := errno.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
