package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Serving replicas: the handler side of COM_REGISTER_SLAVE and the dump
// commands (the wire wrapper has parsed the dump command; see package protocol),
// the semi-sync variables, and SHOW REPLICAS.

// ComRegisterReplica implements mysql.BinlogReplicaHandler.
func (h handler) ComRegisterReplica(c *mysql.Conn, host string, port uint16, _, _ string) error {
	if err := h.s.sql.Require(c, sqlengine.NeedReplicationSlave); err != nil {
		return err
	}
	h.s.source.Register(c.ConnectionID, source.Registration{Host: host, Port: port})
	return nil
}

// ComBinlogDumpGTID implements mysql.BinlogReplicaHandler. It receives
// every dump command (COM_BINLOG_DUMP too, see package protocol) and hands the
// connection to the source, which closes it when the dump ends.
func (h handler) ComBinlogDumpGTID(c *mysql.Conn, _ string, _ uint64, _ mysql.GTIDSet) error {
	w, ok := c.Conn.(*protocol.Conn)
	var cmd *protocol.DumpCommand
	if ok {
		cmd = w.TakeDump()
	}
	if cmd == nil {
		return mysql.NewSQLError(mysql.ERUnknownComError, mysql.SSUnknownComError, "binlog dump over this connection is not supported")
	}
	if cmd.Err != nil {
		return mysql.NewSQLError(1835, "HY000", "Malformed communication packet: %v", cmd.Err)
	}
	if err := h.s.sql.Require(c, sqlengine.NeedReplicationSlave); err != nil {
		return err
	}
	req := h.s.dumpRequest(c, cmd)
	// As MySQL lists it: operators and failover tools find replicas
	// by it, and KILL it to drop one.
	command := "Binlog Dump"
	if cmd.GTIDKind {
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
func (s *Server) dumpRequest(c *mysql.Conn, cmd *protocol.DumpCommand) source.Request {
	uv := func(names ...string) (string, bool) {
		for _, n := range names {
			if v := s.sql.UserVariable(c.ConnectionID, n); v != nil {
				return strings.TrimSpace(fmt.Sprint(v)), true
			}
		}
		return "", false
	}
	req := source.Request{
		ConnID: c.ConnectionID, ServerID: cmd.ServerID, Flags: cmd.Flags,
		File: cmd.File, Pos: cmd.Pos, GTIDs: cmd.GTIDs,
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
	if cmd.GTIDKind {
		return req
	}
	if v, ok := uv("slave_connect_state"); ok {
		req.Flavor = source.FlavorMariaDB
		req.MariaDBGTID = v
	}
	if w, ok := c.Conn.(*protocol.Conn); ok && w.MariaDBPort() {
		if v, ok := uv("mariadb_slave_capability"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 4 {
				req.Flavor = source.FlavorMariaDB
			}
		}
	}
	return req
}
