package admin

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/binlogreplication"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// primary answers the binlog SHOW statements from the binlog's file list,
// which has its own lock: they never wait for commits. Replicas are served
// by the server's protocol handler, which receives COM_REGISTER_SLAVE and
// the dump commands before go-mysql-server would pass them here.
type primary struct{ a *Admin }

var _ binlogreplication.BinlogPrimaryController = primary{}

// PrimaryController is what go-mysql-server asks for the binary log
// statements it answers itself.
func (a *Admin) PrimaryController() binlogreplication.BinlogPrimaryController { return primary{a} }

func errNotHere() error {
	return mysql.NewSQLError(mysql.ERUnknownComError, mysql.SSUnknownComError, "replication commands are served by the connection handler")
}

func (p primary) RegisterReplica(*sql.Context, *mysql.Conn, string, uint16) error {
	return errNotHere()
}

func (p primary) BinlogDumpGtid(*sql.Context, *mysql.Conn, mysql.GTIDSet) error { return errNotHere() }

func (p primary) ListReplicas(*sql.Context) error { return nil }

// replicationClient is the check of SHOW BINARY LOGS and SHOW BINARY LOG
// STATUS (go-mysql-server's is a placeholder that lets everyone through).
func (p primary) replicationClient(ctx *sql.Context) error {
	db := p.a.SQL.GMS.Analyzer.Catalog.MySQLDb
	if !db.Enabled() || sqlengine.HasNeed(db.UserActivePrivilegeSet(ctx), sqlengine.NeedReplicationClient) {
		return nil
	}
	return sqlengine.NeedReplicationClient.Denied()
}

func (p primary) ListBinaryLogs(ctx *sql.Context) ([]binlogreplication.BinaryLogFileMetadata, error) {
	if err := p.replicationClient(ctx); err != nil {
		return nil, err
	}
	var out []binlogreplication.BinaryLogFileMetadata
	for _, f := range p.a.Binlog.Files() {
		out = append(out, binlogreplication.BinaryLogFileMetadata{Name: f.Name, Size: uint64(f.Size)})
	}
	return out, nil
}

func (p primary) GetBinaryLogStatus(ctx *sql.Context) ([]binlogreplication.BinaryLogStatus, error) {
	if err := p.replicationClient(ctx); err != nil {
		return nil, err
	}
	files := p.a.Binlog.Files()
	cur := files[len(files)-1]
	name, pos := cur.Name, uint(cur.Size)
	if p.a.Member != nil {
		// A member's files may end with entries raft has not committed:
		// its position is what it applied (what replicas get).
		end, _, _ := p.a.Binlog.Published()
		name, pos = p.a.Binlog.Name(end.File), uint(end.Pos)
	}
	return []binlogreplication.BinaryLogStatus{{
		File:          name,
		Position:      pos,
		ExecutedGtids: p.a.GTIDVisible().String(),
	}}, nil
}

// Binlog administration statements GMS does not know. They are answered
// by the handler before GMS sees them.
var (
	purgeTo  = regexp.MustCompile(`(?is)^\s*purge\s+(binary|master)\s+logs\s+to\s+'([^']+)'\s*;?\s*$`)
	purgeBef = regexp.MustCompile(`(?is)^\s*purge\s+(binary|master)\s+logs\s+before\s+(?:timestamp\s*)?'([^']+)'\s*;?\s*$`)
	// BEFORE takes any expression of a date and time, as in MySQL
	// (NOW() - INTERVAL 3 DAY).
	purgeBefExpr = regexp.MustCompile(`(?is)^\s*purge\s+(binary|master)\s+logs\s+before\s+(.+?)\s*;?\s*$`)
	showRepl     = regexp.MustCompile(`(?is)^\s*show\s+(replicas|slave\s+hosts)\s*;?\s*$`)
	// SHOW MASTER LOGS is MySQL's older name for SHOW BINARY LOGS, which
	// go-mysql-server answers; it did not know this one.
	showMasterLogs = regexp.MustCompile(`(?is)^\s*show\s+master\s+logs\s*;?\s*$`)
)

// BinlogStatement runs query if it is one of the binlog administration
// statements; handled reports whether it was.
func (a *Admin) BinlogStatement(c *mysql.Conn, query string) (res *sqltypes.Result, handled bool, err error) {
	if len(query) > 256 || !adminPrefix(query) {
		return nil, false, nil
	}
	if m := showRepl.FindStringSubmatch(query); m != nil {
		if err := a.SQL.Require(c, sqlengine.NeedReplicationSlave); err != nil {
			return nil, true, err
		}
		return a.showReplicas(!strings.EqualFold(m[1], "replicas")), true, nil
	}
	if m := showBinlogEvents.FindStringSubmatch(query); m != nil {
		res, err := a.binlogEvents(c, m)
		return res, true, err
	}
	if showMasterLogs.MatchString(query) {
		if err := a.SQL.Require(c, sqlengine.NeedReplicationClient); err != nil {
			return nil, true, err
		}
		res := &sqltypes.Result{Fields: []*querypb.Field{
			{Name: "Log_name", Type: sqltypes.VarChar, Charset: 255},
			{Name: "File_size", Type: sqltypes.Uint64, Charset: 63},
			{Name: "Encrypted", Type: sqltypes.VarChar, Charset: 255},
		}}
		for _, f := range a.Binlog.Files() {
			res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(f.Name), sqltypes.NewUint64(uint64(f.Size)), sqltypes.NewVarChar("No")})
		}
		return res, true, nil
	}
	ok, err := a.binlogAdmin(c, query)
	if ok {
		return &sqltypes.Result{}, true, err
	}
	return nil, false, nil
}

// adminPrefix is a cheap filter: the admin statements start with FLUSH,
// PURGE or SHOW.
func adminPrefix(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	if len(q) < 5 {
		return false
	}
	p := q[:5]
	return strings.EqualFold(p, "flush") || strings.EqualFold(p, "purge") || strings.EqualFold(p[:4], "show")
}

// flushStatement is FLUSH [NO_WRITE_TO_BINLOG | LOCAL] option, ...; the
// options' names, lower case, one word each (binary_logs for BINARY LOGS).
var flushStatement = regexp.MustCompile(`(?is)^\s*flush\s+(?:(?:no_write_to_binlog|local)\s+)?([a-z_]+(?:\s+logs)?(?:\s*,\s*[a-z_]+(?:\s+logs)?)*)\s*;?\s*$`)

// flush runs the FLUSH statements Lockstep answers itself, after MySQL's
// check that the account holds RELOAD (1227; go-mysql-server refused them
// with 1044 on the mysql database). PRIVILEGES alone goes on to
// go-mysql-server; beside other options (COM_REFRESH, mysqladmin refresh)
// it has nothing to do, since the accounts in memory are always the
// committed ones (sqlengine/accountlog.go).
//
//   - TABLES (without a locking clause, which readlock handles), LOCAL or
//     not, has nothing to do: Lockstep keeps no cache of open tables to
//     close, and a statement never sees a table older than the last DDL.
//     Nor has THREADS (MariaDB's): there is no thread cache.
//     (mariadb-dump --master-data sends FLUSH LOCAL TABLES, which
//     go-mysql-server refused.)
//   - LOGS rotates the binlog (not on a cluster member, whose log raft
//     rotates) and reopens the slow query log, so that a log rotation
//     tool can move the file and then flush; SLOW LOGS only reopens it;
//     BINARY LOGS only rotates.
//   - ERROR LOGS (the server logs to its standard error), GENERAL LOGS
//     (there is no general log), ENGINE LOGS (the store's durability is
//     the binlog's), HOSTS (no host is ever blocked), USER_RESOURCES (no
//     account limits are kept) and OPTIMIZER_COSTS have nothing to do.
//   - STATUS resets the session's status variables (their counts are in
//     the global ones already), sets Max_used_connections to the
//     connections open now and, on a cluster member, starts the flow
//     control counters (wsrep_flow_control_paused and the others) again,
//     as in MySQL and Galera.
//   - RELAY LOGS is refused (1235) rather than ignored.
func (a *Admin) flush(c *mysql.Conn, query string) (handled bool, err error) {
	m := flushStatement.FindStringSubmatch(query)
	if m == nil {
		return false, nil
	}
	var opts []string
	for _, o := range strings.Split(strings.ToLower(m[1]), ",") {
		opts = append(opts, strings.Join(strings.Fields(o), "_"))
	}
	if err := a.SQL.Require(c, sqlengine.NeedReload); err != nil {
		return true, err
	}
	for _, o := range opts {
		switch o {
		case "privileges":
			if len(opts) == 1 {
				return false, nil // go-mysql-server's
			}
		case "relay_logs":
			return true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'FLUSH %s'", strings.ToUpper(strings.ReplaceAll(o, "_", " ")))
		case "reset_replica", "reset_source":
			// COM_REFRESH's REFRESH_SLAVE and REFRESH_MASTER (package protocol).
			return true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'COM_REFRESH with REFRESH_SLAVE or REFRESH_MASTER': send RESET REPLICA or RESET MASTER")
		case "tables", "threads", "logs", "binary_logs", "slow_logs", "error_logs", "general_logs", "engine_logs", "hosts", "user_resources", "optimizer_costs", "status":
		default:
			return false, nil // not a FLUSH this knows: go-mysql-server's error
		}
	}
	for _, o := range opts {
		switch o {
		case "binary_logs":
			if a.Member != nil {
				return true, mysqlerr.NotOnClusterMember("FLUSH BINARY LOGS")
			}
			if err := a.Pipe.Rotate(); err != nil {
				return true, err
			}
		case "logs":
			if a.Member == nil {
				if err := a.Pipe.Rotate(); err != nil {
					return true, err
				}
			}
			a.ReopenSlowLog()
		case "slow_logs":
			a.ReopenSlowLog()
		case "status":
			a.flushStatus(c)
		}
	}
	return true, nil
}

func (a *Admin) binlogAdmin(c *mysql.Conn, query string) (handled bool, err error) {
	if ok, err := a.flush(c, query); ok {
		return true, err
	}
	switch {
	case purgeTo.MatchString(query), purgeBefExpr.MatchString(query):
		if err := a.SQL.Require(c, sqlengine.NeedBinlogAdmin); err != nil {
			return true, err
		}
	}
	switch {
	case purgeTo.MatchString(query):
		name := purgeTo.FindStringSubmatch(query)[2]
		for _, f := range a.Binlog.Files() {
			if f.Name == name {
				return true, a.purgeStatement(c, f.Num)
			}
		}
		return true, mysql.NewSQLError(mysql.ERUnknownError, "HY000", "Target log not found in binlog index (%s)", name)
	case purgeBef.MatchString(query):
		v := purgeBef.FindStringSubmatch(query)[2]
		t, err := time.ParseInLocation("2006-01-02 15:04:05", strings.TrimSpace(v), time.Local)
		if err != nil {
			if t, err = time.ParseInLocation("2006-01-02", strings.TrimSpace(v), time.Local); err != nil {
				return true, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to PURGE LOGS BEFORE: %q", v)
			}
		}
		return true, a.purgeStatement(c, FirstKept(a.Binlog.Files(), t))
	case purgeBefExpr.MatchString(query):
		expr := purgeBefExpr.FindStringSubmatch(query)[2]
		t, err := a.SQL.EvalDatetime(c.ConnectionID, expr)
		if err != nil {
			return true, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to PURGE LOGS BEFORE: %v", err)
		}
		// The session's wall clock, as the quoted form is read.
		loc := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
		return true, a.purgeStatement(c, FirstKept(a.Binlog.Files(), loc))
	}
	return false, nil
}

// erWarnPurgeLogInUse is MySQL's ER_WARN_PURGE_LOG_IN_USE.
const erWarnPurgeLogInUse = 1867

// purgeStatement runs a PURGE BINARY LOGS that asked to remove the files
// before number keep, with MySQL's warning when connected replicas kept
// some of them.
func (a *Admin) purgeStatement(c *mysql.Conn, keep int) error {
	held, err := a.purge(keep)
	if err != nil {
		return err
	}
	if ctx, ok := a.SQL.SessionContext(c.ConnectionID); ok {
		ctx.Session.ClearWarnings()
		if held != nil {
			ctx.Session.Warn(&sql.Warning{Level: "Warning", Code: erWarnPurgeLogInUse,
				Message: fmt.Sprintf("file %s was not purged because it was being read by %d thread(s), purged only %d out of %d files.",
					held.file, held.readers, held.purged, held.asked)})
		}
	}
	return nil
}

// purgeHeld says that connected replicas kept a purge from removing every
// file it was asked to: file is the oldest one they still read, readers
// how many replicas read a file the purge would have removed, purged and
// asked how many files it removed and would have removed.
type purgeHeld struct {
	file          string
	readers       int
	purged, asked int
}

// purge removes binlog files before number keep, but never one the store
// may still need for recovery (everything at or after the file holding the
// store's durable position), never the current file, and, as MySQL, never
// one a connected replica has yet to finish reading, nor any after it
// (held says which, when that kept files the purge asked for). A replica
// not connected is not protected: it will find its files gone.
func (a *Admin) purge(keep int) (held *purgeHeld, err error) {
	asked, names := 0, map[int]string{}
	for _, f := range a.Binlog.Files() {
		names[f.Num] = f.Name
		if f.Num < keep {
			asked++
		}
	}
	if a.Source != nil {
		readers, first := 0, 0
		for _, r := range a.Source.Replicas() {
			if r.Sent.File > 0 && r.Sent.File < keep {
				readers++
				if first == 0 || r.Sent.File < first {
					first = r.Sent.File
				}
			}
		}
		if readers > 0 {
			keep = first
			held = &purgeHeld{file: names[first], readers: readers, asked: asked}
		}
	}
	var gone []string
	if a.Member != nil {
		gone, err = a.Member.Compact(keep)
		if len(gone) > 0 {
			a.Log.Info("purged binary logs (the cluster log now starts later)", "files", strings.Join(gone, ","))
		}
	} else {
		gone, err = a.purgeLocal(keep)
	}
	if held != nil {
		held.purged = len(gone)
		a.Log.Info("binary logs kept for connected replicas", "first_kept", held.file, "replicas", held.readers)
	}
	if err != nil {
		return nil, fmt.Errorf("purging binary logs: %w", err)
	}
	return held, nil
}

// purgeLocal purges a single server's files before keep, and never one
// the store may still need for recovery.
func (a *Admin) purgeLocal(keep int) ([]string, error) {
	durable, err := a.Store.Flush()
	if err != nil {
		return nil, err
	}
	if durable.File > 0 && keep > durable.File {
		keep = durable.File
	}
	gone, err := a.Binlog.Purge(keep)
	if len(gone) > 0 {
		a.Log.Info("purged binary logs", "files", strings.Join(gone, ","))
	}
	return gone, err
}

// purgeBefore purges the files whose successor was started before t (that
// is, files whose last write is older than t).
func (a *Admin) purgeBefore(t time.Time) error {
	_, err := a.purge(FirstKept(a.Binlog.Files(), t))
	return err
}

// FirstKept is the number of the first binlog file a purge of the files
// older than t keeps: the last one started before t still holds events
// from after t, and the current file is always kept.
func FirstKept(files []binlog.FileInfo, t time.Time) int {
	for i := 0; i+1 < len(files); i++ {
		if !files[i+1].Created.Before(t) {
			return files[i].Num
		}
	}
	return files[len(files)-1].Num
}

// ExpireLogs purges, every minute until stop closes, the files older than
// binlog_expire_logs_seconds (0 = never).
func (a *Admin) ExpireLogs(stop <-chan struct{}) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		_, v, ok := sql.SystemVariables.GetGlobal("binlog_expire_logs_seconds")
		secs := sqlengine.IntValue(v)
		if !ok || secs <= 0 {
			continue
		}
		if err := a.purgeBefore(time.Now().Add(-time.Duration(secs) * time.Second)); err != nil {
			a.Log.Warn("binlog expiry failed", "err", err)
		}
	}
}

// flushStatus is FLUSH STATUS (see flush): the session's counts go back
// to zero (they are in the global ones already), the server resets what
// it keeps (Max_used_connections), and a cluster member starts its flow
// control counters again.
func (a *Admin) flushStatus(c *mysql.Conn) {
	if ctx, ok := a.SQL.SessionContext(c.ConnectionID); ok {
		for name, v := range ctx.Session.GetAllStatusVariables(ctx) {
			if _, isCount := v.Value().(uint64); isCount {
				ctx.Session.SetStatusVariable(ctx, name, uint64(0))
			}
		}
	}
	if a.FlushStatus != nil {
		a.FlushStatus(c.ConnectionID)
	}
	if a.Member != nil {
		a.Member.ResetFlowStats()
	}
}

// BinlogBytes is the size of the binlog files.
func (a *Admin) BinlogBytes() uint64 {
	var n uint64
	for _, f := range a.Binlog.Files() {
		n += uint64(max(f.Size, 0))
	}
	return n
}
