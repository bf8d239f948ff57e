package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Serving replicas: the handler side of COM_REGISTER_SLAVE and the dump
// commands (the wire wrapper has parsed the dump command; see wire.go),
// the semi-sync variables, and SHOW REPLICAS.

// ComRegisterReplica implements mysql.BinlogReplicaHandler.
func (h handler) ComRegisterReplica(c *mysql.Conn, host string, port uint16, _, _ string) error {
	if err := h.s.require(c, needReplicationSlave); err != nil {
		return err
	}
	h.s.source.Register(c.ConnectionID, source.Registration{Host: host, Port: port})
	return nil
}

// ComBinlogDumpGTID implements mysql.BinlogReplicaHandler. It receives
// every dump command (COM_BINLOG_DUMP too, see wire.go) and hands the
// connection to the source, which closes it when the dump ends.
func (h handler) ComBinlogDumpGTID(c *mysql.Conn, _ string, _ uint64, _ mysql.GTIDSet) error {
	w, ok := c.Conn.(*wireConn)
	var cmd *dumpCommand
	if ok {
		cmd = w.takeDump()
	}
	if cmd == nil {
		return mysql.NewSQLError(mysql.ERUnknownComError, mysql.SSUnknownComError, "binlog dump over this connection is not supported")
	}
	if cmd.err != nil {
		return mysql.NewSQLError(1835, "HY000", "Malformed communication packet: %v", cmd.err)
	}
	if err := h.s.require(c, needReplicationSlave); err != nil {
		return err
	}
	req := h.s.dumpRequest(c, cmd)
	// As MySQL lists it: operators and failover tools find replicas
	// by it, and KILL it to drop one.
	command := "Binlog Dump"
	if cmd.gtidKind {
		command = "Binlog Dump GTID"
	}
	h.s.sql.SetConnectionCommand(c.ConnectionID, command)
	// The dump owns the connection from here; it sends its own errors.
	if err := h.s.source.Dump(w, req); err != nil {
		h.s.log.Debug("dump ended", "conn", c.ConnectionID, "err", err)
	}
	return nil
}

// dumpRequest resolves the replica's session settings into a Request.
func (s *Server) dumpRequest(c *mysql.Conn, cmd *dumpCommand) source.Request {
	uv := func(names ...string) (string, bool) {
		for _, n := range names {
			if v := s.sql.UserVariable(c.ConnectionID, n); v != nil {
				return strings.TrimSpace(fmt.Sprint(v)), true
			}
		}
		return "", false
	}
	req := source.Request{
		ConnID: c.ConnectionID, ServerID: cmd.serverID, Flags: cmd.flags,
		File: cmd.file, Pos: cmd.pos, GTIDs: cmd.gtids,
	}
	if v, ok := uv("source_heartbeat_period", "master_heartbeat_period"); ok {
		if ns, err := strconv.ParseFloat(v, 64); err == nil && ns > 0 {
			req.Heartbeat = time.Duration(ns)
		}
	}
	if v, ok := uv("source_binlog_checksum", "master_binlog_checksum"); ok {
		if strings.EqualFold(v, "NONE") {
			req.Checksum = source.ChecksumNone
		} else {
			req.Checksum = source.ChecksumCRC32
		}
	}
	if v, ok := uv("rpl_semi_sync_replica", "rpl_semi_sync_slave"); ok {
		req.SemiSync = v != "0" && v != ""
	}
	if v, ok := uv("replica_uuid", "slave_uuid"); ok {
		req.UUID = v
	}
	// MariaDB events go to a replica that says where it is in MariaDB GTIDs
	// (@slave_connect_state), and to any client announcing MariaDB's
	// capability on the --mariadb-port listener. @mariadb_slave_capability
	// alone does not decide on the main port: python-mysql-replication and
	// canal set it for MySQL sources too, which ignore it.
	if cmd.gtidKind {
		return req
	}
	if v, ok := uv("slave_connect_state"); ok {
		req.Flavor = source.FlavorMariaDB
		req.MariaDBGTID = v
	}
	if w, ok := c.Conn.(*wireConn); ok && w.l.mariadb {
		if v, ok := uv("mariadb_slave_capability"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 4 {
				req.Flavor = source.FlavorMariaDB
			}
		}
	}
	return req
}

// variableAdder returns a function that appends a system variable to vars
// under its name and each alias (SET GLOBAL keeps them equal), registering
// computed ones.
func variableAdder(vars *[]sql.SystemVariable) func(v *sql.MysqlSystemVariable, aliases ...string) {
	return func(v *sql.MysqlSystemVariable, aliases ...string) {
		for _, name := range append([]string{v.Name}, aliases...) {
			c := *v
			c.Name = name
			*vars = append(*vars, &c)
			if c.ValueFunction != nil {
				sqlengine.RegisterComputedVariable(name)
			}
			if name != v.Name {
				sqlengine.RegisterVariableAlias(v.Name, name)
			}
		}
	}
}

// semiSyncVariables are the rpl_semi_sync_source_* system variables and
// their rpl_semi_sync_master_* aliases, which SET GLOBAL keeps equal.
func (s *Server) semiSyncVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	semi := s.source.Semi
	var vars []sql.SystemVariable
	add := variableAdder(&vars)
	b2i := func(b bool) int8 {
		if b {
			return 1
		}
		return 0
	}
	boolVar := func(name string, get func() bool, set func(bool)) *sql.MysqlSystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: true, Type: types.NewSystemBoolType(name), Default: b2i(get()),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				set(toInt64(v.Val) != 0)
				return nil
			},
		}
	}
	intVar := func(name string, lo, hi int64, get func() int64, set func(int64)) *sql.MysqlSystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: true, Type: types.NewSystemIntType(name, lo, hi, false), Default: get(),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				set(toInt64(v.Val))
				return nil
			},
		}
	}
	add(boolVar("rpl_semi_sync_source_enabled", semi.Enabled, semi.SetEnabled), "rpl_semi_sync_master_enabled")
	add(intVar("rpl_semi_sync_source_timeout", 0, 1<<32-1, semi.Timeout, semi.SetTimeout), "rpl_semi_sync_master_timeout")
	add(intVar("rpl_semi_sync_source_wait_for_replica_count", 1, 65535, semi.WaitForReplicaCount, semi.SetWaitForReplicaCount), "rpl_semi_sync_master_wait_for_slave_count")
	add(boolVar("rpl_semi_sync_source_wait_no_replica", semi.WaitNoReplica, semi.SetWaitNoReplica), "rpl_semi_sync_master_wait_no_slave")
	waitPoint := func() string {
		if semi.AfterCommit() {
			return "AFTER_COMMIT"
		}
		return "AFTER_SYNC"
	}
	add(&sql.MysqlSystemVariable{
		Name: "rpl_semi_sync_source_wait_point", Scope: global, Dynamic: true,
		Type:    types.NewSystemEnumType("rpl_semi_sync_source_wait_point", "AFTER_SYNC", "AFTER_COMMIT"),
		Default: waitPoint(),
		NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			semi.SetAfterCommit(strings.EqualFold(fmt.Sprint(v.Val), "AFTER_COMMIT"))
			return nil
		},
	}, "rpl_semi_sync_master_wait_point")
	add(&sql.MysqlSystemVariable{
		Name: "gtid_domain_id", Scope: global, Dynamic: false,
		Type: types.NewSystemIntType("gtid_domain_id", 0, 1<<32-1, false), Default: s.cfg.GTIDDomainID,
	})
	add(&sql.MysqlSystemVariable{
		Name: "gtid_strict_mode", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("gtid_strict_mode"), Default: int8(0),
	})
	add(&sql.MysqlSystemVariable{
		Name: "binlog_row_value_options", Scope: global, Dynamic: false,
		Type: types.NewSystemStringType("binlog_row_value_options"), Default: "",
	})
	add(&sql.MysqlSystemVariable{
		Name: "gtid_purged", Scope: global, Dynamic: false,
		Type: types.NewSystemStringType("gtid_purged"), Default: "",
		ValueFunction: func() (any, error) { return s.gtidPurged(), nil },
	})
	return vars
}

// gtidPurged is the set of GTIDs no longer in any binlog file: the
// Previous_gtids of the oldest file.
func (s *Server) gtidPurged() string {
	set, err := s.blog.PreviousGTIDs(s.blog.Files()[0].Num)
	if err != nil {
		s.log.Warn("reading gtid_purged", "err", err)
		return ""
	}
	return set.String()
}

// semiSyncStatus adds Rpl_semi_sync_source_* (and _master_) status
// variables.
func (s *Server) semiSyncStatus(live map[string]func() any) {
	semi := s.source.Semi
	st := &semi.Stats
	onOff := func(b bool) any {
		if b {
			return "ON"
		}
		return "OFF"
	}
	vals := map[string]func() any{
		"status":                func() any { return onOff(semi.Status()) },
		"clients":               func() any { return uint64(semi.Clients()) },
		"yes_tx":                func() any { return st.YesTx.Load() },
		"no_tx":                 func() any { return st.NoTx.Load() },
		"wait_sessions":         func() any { return uint64(max(st.WaitSessions.Load(), 0)) },
		"tx_avg_wait_time":      func() any { return semi.AvgWaitMicros() },
		"tx_wait_time":          func() any { return st.WaitNanos.Load() / 1000 },
		"tx_waits":              func() any { return st.Waits.Load() },
		"timefunc_failures":     func() any { return uint64(0) },
		"no_times":              func() any { return st.Timeouts.Load() },
		"received_acks":         func() any { return st.Acks.Load() },
		"wait_pos_backtraverse": func() any { return uint64(0) },
	}
	for k, f := range vals {
		live["Rpl_semi_sync_source_"+k] = f
		live["Rpl_semi_sync_master_"+k] = f
	}
}

// showReplicas answers SHOW REPLICAS / SHOW SLAVE HOSTS.
func (s *Server) showReplicas(legacy bool) *sqltypes.Result {
	names := []string{"Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"}
	if legacy {
		names = []string{"Server_id", "Host", "Port", "Master_id", "Slave_UUID"}
	}
	typesOf := []querypb.Type{sqltypes.Uint32, sqltypes.VarChar, sqltypes.Uint32, sqltypes.Uint32, sqltypes.VarChar}
	res := &sqltypes.Result{}
	for i, n := range names {
		res.Fields = append(res.Fields, &querypb.Field{Name: n, Type: typesOf[i], Charset: 255})
	}
	for _, r := range s.source.Replicas() {
		res.Rows = append(res.Rows, []sqltypes.Value{
			sqltypes.NewUint32(r.ServerID),
			sqltypes.NewVarChar(r.Host),
			sqltypes.NewUint32(uint32(r.Port)),
			sqltypes.NewUint32(s.cfg.ServerID),
			sqltypes.NewVarChar(r.UUID),
		})
	}
	return res
}
