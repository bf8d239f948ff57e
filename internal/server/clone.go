package server

// CLONE LOCAL DATA DIRECTORY [=] 'dir': an online physical backup, as
// MySQL's clone plugin makes one. The copy is a data directory a server
// starts on as it is (lockstep serve --datadir dir), holding every
// transaction committed up to one point of the binlog and none after it:
//
//  1. The store is checkpointed (storage.Engine.Checkpoint: flushed, then
//     its files hard-linked where the file system allows): the effects of
//     the transactions up to some position P, recorded in the copy.
//  2. The binlog is copied up to a published position E at or after the
//     store's position as read after the checkpoint, so E >= P: whole
//     transactions, never cut back, synced in the copy.
//
// The copy's server starts as any server after a crash does: it replays
// the binlog from P to E into its store. Commits go on meanwhile; they
// wait for nothing but the store's flush. What the copy leaves out, as
// MySQL's clone does: auto.cnf (the copy's server makes its own UUID, so
// it can replicate from this one), the TLS files (made anew at its first
// start), the replication settings (replica-source.json), the pid file.
// Binlog files purged meanwhile fail the copy, which is then removed.
//
// On a cluster member the binlog is published up to what the member has
// applied, so the copy holds committed entries only (raft.state, the
// member's place in the cluster, is not copied): it starts as a single
// server with the cluster's data and GTIDs up to that point, a backup of
// the cluster, and can replicate from any member by GTID.
//
// It needs BACKUP_ADMIN (or SUPER); one runs at a time (3634). CLONE
// INSTANCE FROM (a copy over the network) is refused with 1235.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// MySQL's errors for CLONE.
const (
	erCantCreateDB    = 1006 // ER_CANT_CREATE_DB
	erDBCreateExists  = 1007 // ER_DB_CREATE_EXISTS
	erWrongArguments  = 1210 // ER_WRONG_ARGUMENTS
	erCloneInProgress = 3634 // ER_CLONE_IN_PROGRESS
)

var (
	cloneLocalStatement = regexp.MustCompile(`(?is)^\s*clone\s+local\s+data\s+directory\s*(?:=\s*)?('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")\s*;?\s*$`)
	cloneStatementWord  = regexp.MustCompile(`(?is)^\s*clone\s+(local|instance)\b`)
)

// cloneStatement answers CLONE.
func (s *Server) cloneStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 5 || !strings.EqualFold(q[:5], "clone") || !cloneStatementWord.MatchString(q) {
		return nil, false, nil
	}
	if err := s.sql.Require(c, sqlengine.NeedBackupAdmin); err != nil {
		return nil, true, err
	}
	m := cloneLocalStatement.FindStringSubmatch(q)
	if m == nil {
		if strings.EqualFold(cloneStatementWord.FindStringSubmatch(q)[1], "instance") {
			return nil, true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'CLONE INSTANCE FROM' (a copy over the network); CLONE LOCAL DATA DIRECTORY makes a copy on this machine")
		}
		return nil, true, mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; CLONE LOCAL DATA DIRECTORY [=] 'directory'")
	}
	if err := s.cloneLocal(unquoteSQLString(m[1])); err != nil {
		return nil, true, err
	}
	return &sqltypes.Result{}, true, nil
}

// unquoteSQLString reads a quoted SQL string literal: the quote doubled
// or backslash-escaped stands for itself, a backslash escapes the next
// character.
func unquoteSQLString(lit string) string {
	quote, body := lit[0], lit[1:len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		switch ch := body[i]; {
		case ch == '\\' && i+1 < len(body):
			i++
			b.WriteByte(body[i])
		case ch == quote && i+1 < len(body) && body[i+1] == quote:
			i++
			b.WriteByte(quote)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// cloneLocal writes the copy into dir (see the top of the file).
func (s *Server) cloneLocal(dir string) (err error) {
	if !filepath.IsAbs(dir) {
		return mysql.NewSQLError(erWrongArguments, "HY000", "Incorrect arguments to CLONE LOCAL DATA DIRECTORY: %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	data, _ := filepath.Abs(s.cfg.DataDir)
	if rel, err := filepath.Rel(data, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return mysql.NewSQLError(erWrongArguments, "HY000", "Incorrect arguments to CLONE LOCAL DATA DIRECTORY: %s is inside the data directory", dir)
	}
	if _, err := os.Stat(dir); err == nil {
		return mysql.NewSQLError(erDBCreateExists, "HY000", "Can't create database '%s'; database exists", dir)
	}
	if !s.cloneMu.TryLock() {
		return mysql.NewSQLError(erCloneInProgress, "HY000", "Concurrent clone in progress. Please try after clone is complete.")
	}
	defer s.cloneMu.Unlock()
	began := time.Now()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return mysql.NewSQLError(erCantCreateDB, "HY000", "Can't create database '%s' (%v)", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := s.store.Checkpoint(filepath.Join(dir, "store")); err != nil {
		return fmt.Errorf("CLONE: checkpointing the store: %w", err)
	}
	end, err := s.publishedPast(s.store.Applied())
	if err != nil {
		return err
	}
	if err := s.blog.CopyTo(dir, end); err != nil {
		return fmt.Errorf("CLONE: copying the binlog: %w", err)
	}
	s.log.Info("CLONE LOCAL DATA DIRECTORY written", "directory", dir, "binlog_file", s.blog.Name(end.File), "binlog_position", end.Pos, "seconds", time.Since(began).Seconds())
	return nil
}

// publishedPast waits (at most 10 s) until the binlog's published end is
// at or after pos, and returns it: the committer may apply a group to the
// store a moment before the flusher publishes it.
func (s *Server) publishedPast(pos binlog.Position) (binlog.Position, error) {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		end, changed, closed := s.blog.Published()
		switch {
		case !end.Less(pos):
			return end, nil
		case closed:
			return end, errors.New("CLONE: the binlog closed")
		}
		select {
		case <-changed:
		case <-deadline.C:
			return end, fmt.Errorf("CLONE: the binlog was not published up to the store's position %d:%d in 10 s", pos.File, pos.Pos)
		}
	}
}
