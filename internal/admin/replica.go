package admin

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/replica"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Replica-side statements: CHANGE REPLICATION SOURCE TO (CHANGE MASTER TO),
// START/STOP REPLICA (SLAVE) [IO_THREAD | SQL_THREAD], RESET REPLICA [ALL],
// SHOW REPLICA (SLAVE) STATUS. They are recognised before go-mysql-server
// (whose SHOW REPLICA STATUS cannot report positions or lag).

var (
	changeSource = regexp.MustCompile(`(?is)^\s*change\s+(?:replication\s+source|master)\s+to\s+(.*?)\s*(?:for\s+channel\s+'([^']*)')?\s*;?\s*$`)
	startStop    = regexp.MustCompile(`(?is)^\s*(start|stop)\s+(?:replica|slave)((?:\s*,?\s*(?:io_thread|sql_thread))*)\s*(?:for\s+channel\s+'([^']*)')?\s*;?\s*$`)
	resetReplica = regexp.MustCompile(`(?is)^\s*reset\s+(?:replica|slave)(\s+all)?\s*;?\s*$`)
	showReplica  = regexp.MustCompile(`(?is)^\s*show\s+(replica|slave)\s+status\s*;?\s*$`)
)

// replicaPrefix is a cheap filter for the statements above.
func replicaPrefix(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	if len(q) < 5 {
		return false
	}
	p := q[:5]
	for _, w := range [...]string{"chang", "start", "stop ", "reset", "show "} {
		if strings.EqualFold(p, w) {
			return true
		}
	}
	return false
}

// ReplicaStatement runs query if it is one of the replica-side statements
// above; handled reports whether it was.
func (a *Admin) ReplicaStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if len(query) > 4096 || !replicaPrefix(query) {
		return nil, false, nil
	}
	admin := func() error { return a.SQL.Require(c, sqlengine.NeedReplicaAdmin) }
	if m := showReplica.FindStringSubmatch(query); m != nil {
		if err := a.SQL.Require(c, sqlengine.NeedReplicationClient); err != nil {
			return nil, true, err
		}
		return a.showReplicaStatus(strings.EqualFold(m[1], "slave")), true, nil
	}
	if m := changeSource.FindStringSubmatch(query); m != nil {
		if err := admin(); err != nil {
			return nil, true, err
		}
		if a.Member != nil {
			return nil, true, mysqlerr.NotOnClusterMember("replication from a source")
		}
		if m[2] != "" {
			return nil, true, mysql.NewSQLError(3077, "HY000", "Lockstep replicates from one source: replication channels are not supported")
		}
		opts, err := parseReplicationOptions(m[1])
		if err != nil {
			// MySQL's message starts with a capital.
			msg := err.Error()
			return nil, true, mysql.NewSQLError(1064, "42000", "%s", strings.ToUpper(msg[:1])+msg[1:])
		}
		return &sqltypes.Result{}, true, replicaError(a.Replica.ChangeSource(func(c *replica.SourceConfig) error { return applySourceOptions(c, opts) }))
	}
	if m := startStop.FindStringSubmatch(query); m != nil {
		if err := admin(); err != nil {
			return nil, true, err
		}
		threads := strings.ToLower(m[2])
		io := threads == "" || strings.Contains(threads, "io_thread")
		sqlThread := threads == "" || strings.Contains(threads, "sql_thread")
		if strings.EqualFold(m[1], "start") {
			if a.Member != nil {
				return nil, true, mysqlerr.NotOnClusterMember("replication from a source")
			}
			return &sqltypes.Result{}, true, replicaError(a.Replica.Start(io, sqlThread))
		}
		a.Replica.Stop(io, sqlThread)
		return &sqltypes.Result{}, true, nil
	}
	if m := resetReplica.FindStringSubmatch(query); m != nil {
		if err := a.SQL.Require(c, sqlengine.NeedReload); err != nil {
			return nil, true, err
		}
		return &sqltypes.Result{}, true, replicaError(a.Replica.Reset(m[1] != ""))
	}
	return nil, false, nil
}

func replicaError(err error) error {
	var re *replica.Error
	if errors.As(err, &re) {
		return mysql.NewSQLError(int(re.Code), "HY000", "%s", re.Msg)
	}
	if err != nil {
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%v", err)
	}
	return nil
}

type replOption struct {
	name  string
	value string
	num   bool // unquoted
}

// parseReplicationOptions splits "NAME = value, NAME = value" (values
// quoted with ' or ", or bare numbers/words).
func parseReplicationOptions(s string) ([]replOption, error) {
	var out []replOption
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		st := i
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		name := strings.ToUpper(s[st:i])
		if name == "" {
			return nil, fmt.Errorf("you have an error in your SQL syntax near '%.40s'", s[st:])
		}
		skip()
		if i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("you have an error in your SQL syntax: expected '=' after %s", name)
		}
		i++
		skip()
		var val string
		num := false
		if i < len(s) && (s[i] == '\'' || s[i] == '"') {
			q := s[i]
			i++
			var sb strings.Builder
			for ; i < len(s); i++ {
				if s[i] == q {
					if i+1 < len(s) && s[i+1] == q { // '' is a quote
						i++
					} else {
						break
					}
				} else if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				sb.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("you have an error in your SQL syntax: unterminated string for %s", name)
			}
			i++
			val = sb.String()
		} else {
			st := i
			for i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
				i++
			}
			val, num = s[st:i], true
			if val == "" {
				return nil, fmt.Errorf("you have an error in your SQL syntax: no value for %s", name)
			}
		}
		out = append(out, replOption{name, val, num})
		skip()
		if i >= len(s) {
			return out, nil
		}
		if s[i] != ',' {
			return nil, fmt.Errorf("you have an error in your SQL syntax near '%.40s'", s[i:])
		}
		i++
	}
}

// applySourceOptions sets CHANGE REPLICATION SOURCE TO options (SOURCE_ or
// MASTER_ prefixed, and MariaDB's MASTER_USE_GTID).
func applySourceOptions(c *replica.SourceConfig, opts []replOption) error {
	bad := func(o replOption) error {
		return &replica.Error{Code: 1210, Msg: fmt.Sprintf("Incorrect arguments to CHANGE REPLICATION SOURCE: %s = %s", o.name, o.value)}
	}
	for _, o := range opts {
		name := o.name
		if n, ok := strings.CutPrefix(name, "SOURCE_"); ok {
			name = n
		} else if n, ok := strings.CutPrefix(name, "MASTER_"); ok {
			name = n
		}
		num := func() (uint64, error) {
			n, err := strconv.ParseUint(o.value, 10, 64)
			if err != nil {
				return 0, bad(o)
			}
			return n, nil
		}
		var err error
		var n uint64
		switch name {
		case "HOST":
			c.Host = o.value
		case "PORT":
			if n, err = num(); err == nil && (n == 0 || n > 65535) {
				err = bad(o)
			}
			c.Port = int(n)
		case "USER":
			c.User = o.value
		case "PASSWORD":
			c.Password = o.value
		case "AUTO_POSITION":
			n, err = num()
			c.AutoPosition = n != 0
			if c.AutoPosition {
				c.LogFile, c.LogPos = "", 0
			}
		case "USE_GTID":
			switch strings.ToLower(o.value) {
			case "slave_pos", "current_pos":
				c.AutoPosition = true
				c.LogFile, c.LogPos = "", 0
			case "no":
				c.AutoPosition = false
			default:
				err = bad(o)
			}
		case "LOG_FILE":
			c.LogFile = o.value
			c.AutoPosition = false
		case "LOG_POS":
			n, err = num()
			c.LogPos = n
			c.AutoPosition = false
		case "SSL":
			n, err = num()
			c.SSL = n != 0
		case "SSL_VERIFY_SERVER_CERT":
			n, err = num()
			c.SSLVerify = n != 0
		case "SSL_CA":
			c.SSLCA = o.value
		case "SSL_CERT":
			c.SSLCert = o.value
		case "SSL_KEY":
			c.SSLKey = o.value
		case "HEARTBEAT_PERIOD":
			f, ferr := strconv.ParseFloat(o.value, 64)
			if ferr != nil || f < 0 || f > 4294967 {
				err = bad(o)
			}
			c.HeartbeatPeriod = f
		case "CONNECT_RETRY":
			if n, err = num(); err == nil {
				c.ConnectRetry = int(max(n, 1))
			}
		case "RETRY_COUNT":
			if n, err = num(); err == nil {
				c.RetryCount = max(n, 1)
			}
		case "GET_PUBLIC_KEY", "GET_SOURCE_PUBLIC_KEY":
			// go-mysql's client fetches the RSA key when it needs it.
		default:
			return &replica.Error{Code: 1235, Msg: fmt.Sprintf("This version of Lockstep doesn't yet support CHANGE REPLICATION SOURCE option '%s'", o.name)}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var replicaStatusColumns = []string{
	"Replica_IO_State", "Source_Host", "Source_User", "Source_Port", "Connect_Retry", "Source_Log_File",
	"Read_Source_Log_Pos", "Relay_Log_File", "Relay_Log_Pos", "Relay_Source_Log_File", "Replica_IO_Running",
	"Replica_SQL_Running", "Replicate_Do_DB", "Replicate_Ignore_DB", "Replicate_Do_Table", "Replicate_Ignore_Table",
	"Replicate_Wild_Do_Table", "Replicate_Wild_Ignore_Table", "Last_Errno", "Last_Error", "Skip_Counter",
	"Exec_Source_Log_Pos", "Relay_Log_Space", "Until_Condition", "Until_Log_File", "Until_Log_Pos",
	"Source_SSL_Allowed", "Source_SSL_CA_File", "Source_SSL_CA_Path", "Source_SSL_Cert", "Source_SSL_Cipher",
	"Source_SSL_Key", "Seconds_Behind_Source", "Source_SSL_Verify_Server_Cert", "Last_IO_Errno", "Last_IO_Error",
	"Last_SQL_Errno", "Last_SQL_Error", "Replicate_Ignore_Server_Ids", "Source_Server_Id", "Source_UUID",
	"Source_Info_File", "SQL_Delay", "SQL_Remaining_Delay", "Replica_SQL_Running_State", "Source_Retry_Count",
	"Source_Bind", "Last_IO_Error_Timestamp", "Last_SQL_Error_Timestamp", "Source_SSL_Crl", "Source_SSL_Crlpath",
	"Retrieved_Gtid_Set", "Executed_Gtid_Set", "Auto_Position", "Replicate_Rewrite_DB", "Channel_Name",
	"Source_TLS_Version", "Source_public_key_path", "Get_Source_public_key", "Network_Namespace",
}

// legacyName is the SHOW SLAVE STATUS name of a column.
func legacyName(n string) string {
	if n == "Get_Source_public_key" {
		return "Get_master_public_key"
	}
	return strings.NewReplacer("Source", "Master", "Replica", "Slave").Replace(n)
}

func (a *Admin) showReplicaStatus(legacy bool) *sqltypes.Result {
	res := &sqltypes.Result{}
	st, ok := a.Replica.Status(time.Now())
	for _, n := range replicaStatusColumns {
		if legacy {
			n = legacyName(n)
		}
		res.Fields = append(res.Fields, &querypb.Field{Name: n, Type: sqltypes.VarChar, Charset: 255})
	}
	if !ok {
		return res
	}
	str := sqltypes.NewVarChar
	num := func(n uint64) sqltypes.Value { return sqltypes.NewVarChar(strconv.FormatUint(n, 10)) }
	yn := func(b bool) sqltypes.Value {
		if b {
			return str("Yes")
		}
		return str("No")
	}
	null := sqltypes.NULL
	lag := null
	if st.SecondsBehind >= 0 {
		lag = num(uint64(st.SecondsBehind))
	}
	ts := func(t time.Time) sqltypes.Value {
		if t.IsZero() {
			return str("")
		}
		return str(t.Format("060102 15:04:05"))
	}
	ioRunning := str("No")
	switch st.IORunning {
	case "Yes", "Connecting":
		ioRunning = str(st.IORunning)
	}
	src := st.Source
	lastErrno, lastErr := st.SQLErrno, st.SQLError
	row := []sqltypes.Value{
		str(st.IOState), str(src.Host), str(src.User), num(uint64(src.Port)), num(uint64(src.ConnectRetry)), str(st.SourceLogFile),
		num(uint64(st.ReadSourceLogPos)), str(st.RelayLogFile), num(uint64(st.RelayLogPos)), str(st.ExecSourceLogFile), ioRunning,
		yn(st.SQLRunning), str(""), str(""), str(""), str(""),
		str(""), str(""), num(uint64(lastErrno)), str(lastErr), num(0),
		num(uint64(st.ExecSourceLogPos)), num(uint64(st.RelayLogSpace)), str("None"), str(""), num(0),
		yn(src.SSL), str(src.SSLCA), str(""), str(src.SSLCert), str(""),
		str(src.SSLKey), lag, yn(src.SSLVerify), num(uint64(st.IOErrno)), str(st.IOError),
		num(uint64(st.SQLErrno)), str(st.SQLError), str(""), num(uint64(st.SourceServerID)), str(st.SourceUUID),
		str("mysql.slave_master_info"), num(0), null, str(st.SQLState), num(src.RetryCount),
		str(""), ts(st.IOErrorTime), ts(st.SQLErrorTime), str(""), str(""),
		str(st.RetrievedGTIDs), str(st.ExecutedGTIDs), num(sqlengine.StatusNum(src.AutoPosition)), str(""), str(""),
		str(""), str(""), num(0), str(""),
	}
	res.Rows = append(res.Rows, row)
	return res
}

// ReplicaVariables are the replica's system variables (with the slave_
// aliases MySQL keeps).
func (a *Admin) ReplicaVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	set := &a.Replica.Settings
	var vars []sql.SystemVariable
	add := sqlengine.VariableAdder(&vars)
	notify := func(f func(v any) error) func(*sql.Context, sql.SystemVariableScope, sql.SystemVarValue) error {
		return func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error { return f(v.Val) }
	}
	add(&sql.MysqlSystemVariable{
		Name: "replica_parallel_workers", Scope: global, Dynamic: true,
		Type: types.NewSystemIntType("replica_parallel_workers", 0, replica.MaxWorkers, false), Default: set.Workers.Load(),
		NotifyChanged: notify(func(v any) error { set.Workers.Store(sqlengine.IntValue(v)); return nil }),
	}, "slave_parallel_workers")
	add(&sql.MysqlSystemVariable{
		Name: "replica_parallel_type", Scope: global, Dynamic: true,
		// MySQL's members first, in its order (a number means what it
		// means there: 0 DATABASE, 1 LOGICAL_CLOCK), then Lockstep's.
		Type:    types.NewSystemEnumType("replica_parallel_type", replica.TypeDatabase, replica.TypeLogicalClock, replica.TypeWriteset),
		Default: set.Type.Load().(string),
		NotifyChanged: notify(func(v any) error {
			set.Type.Store(strings.ToUpper(fmt.Sprint(v)))
			return nil
		}),
	}, "slave_parallel_type")
	add(&sql.MysqlSystemVariable{
		Name: "replica_preserve_commit_order", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("replica_preserve_commit_order"), Default: int8(1),
		NotifyChanged: notify(func(v any) error {
			if sqlengine.IntValue(v) == 0 {
				return mysql.NewSQLError(1231, "42000", "Variable 'replica_preserve_commit_order' can't be set to the value of 'OFF': Lockstep replicas always commit in source order")
			}
			return nil
		}),
	}, "slave_preserve_commit_order")
	add(&sql.MysqlSystemVariable{
		Name: "replica_skip_errors", Scope: global, Dynamic: true,
		Type: types.NewSystemStringType("replica_skip_errors"), Default: set.SkipErrors.Load().(string),
		NotifyChanged: notify(func(v any) error { set.SkipErrors.Store(fmt.Sprint(v)); return nil }),
	}, "slave_skip_errors")
	add(&sql.MysqlSystemVariable{
		Name: "replica_net_timeout", Scope: global, Dynamic: true,
		Type: types.NewSystemIntType("replica_net_timeout", 1, 31536000, false), Default: set.NetTimeout.Load(),
		NotifyChanged: notify(func(v any) error { set.NetTimeout.Store(sqlengine.IntValue(v)); return nil }),
	}, "slave_net_timeout")
	add(&sql.MysqlSystemVariable{
		Name: "rpl_semi_sync_replica_enabled", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("rpl_semi_sync_replica_enabled"), Default: int8(sqlengine.StatusNum(set.SemiSync.Load())),
		NotifyChanged: notify(func(v any) error { set.SemiSync.Store(sqlengine.IntValue(v) != 0); return nil }),
	}, "rpl_semi_sync_slave_enabled")
	eng := a.SQL
	add(&sql.MysqlSystemVariable{
		Name: "read_only", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("read_only"), Default: int8(sqlengine.StatusNum(a.ReadOnly || a.SuperReadOnly)),
		NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			on := sqlengine.IntValue(v.Val) != 0
			eng.ReadOnly.Store(on)
			if !on {
				eng.SuperReadOnly.Store(false)
			}
			return nil
		},
	})
	add(&sql.MysqlSystemVariable{
		Name: "super_read_only", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("super_read_only"), Default: int8(sqlengine.StatusNum(a.SuperReadOnly)),
		NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			on := sqlengine.IntValue(v.Val) != 0
			eng.SuperReadOnly.Store(on)
			if on {
				eng.ReadOnly.Store(true)
			}
			return nil
		},
	})
	// As in MySQL: read_only=OFF turns super_read_only off too, and
	// super_read_only=ON turns read_only on.
	sqlengine.RegisterVariableHook("read_only", func(v any) map[string]any {
		if sqlengine.IntValue(v) == 0 {
			return map[string]any{"super_read_only": int8(0)}
		}
		return nil
	})
	sqlengine.RegisterVariableHook("super_read_only", func(v any) map[string]any {
		if sqlengine.IntValue(v) != 0 {
			return map[string]any{"read_only": int8(1)}
		}
		return nil
	})
	add(&sql.MysqlSystemVariable{
		Name: "max_relay_log_size", Scope: global, Dynamic: true,
		Type: types.NewSystemIntType("max_relay_log_size", 0, 1<<30, false), Default: set.MaxRelaySize.Load(),
		NotifyChanged: notify(func(v any) error { set.MaxRelaySize.Store(sqlengine.IntValue(v)); return nil }),
	})
	return vars
}

// ReplicaStatus adds the Replica_* status variables.
func (a *Admin) ReplicaStatus(live map[string]func() any) {
	st := &a.Replica.Stats
	live["Replica_transactions_retrieved"] = func() any { return st.Retrieved.Load() }
	live["Replica_transactions_applied"] = func() any { return st.Applied.Load() }
	live["Replica_transactions_skipped"] = func() any { return st.Skipped.Load() }
	live["Replica_rows_skipped_errors"] = func() any { return st.SkippedErrors.Load() }
	live["Replica_prefetch_used"] = func() any { return st.PrefetchUsed.Load() }
	live["Replica_prefetch_stale"] = func() any { return st.PrefetchStale.Load() }
	live["Replica_apply_queue"] = func() any { return uint64(st.Pending()) }
	live["Replica_dependency_distance_avg"] = func() any {
		n := st.DepDistN.Load()
		if n == 0 {
			return "0.0000"
		}
		return fmt.Sprintf("%.4f", float64(st.DepDistSum.Load())/float64(n))
	}
	live["Replica_parallelism_avg"] = func() any { return fmt.Sprintf("%.4f", st.ParallelismAvg()) }
	live["Replica_running"] = func() any {
		if st, ok := a.Replica.Status(time.Now()); ok && st.SQLRunning && st.IORunning == "Yes" {
			return "ON"
		}
		return "OFF"
	}
	live["Slave_running"] = live["Replica_running"]
}
